"""Converters from pgmpy, pyAgrum and networkx, checked against the other library's own
exact inference (each test skips, saying why, when its library is not installed)."""
import math

import numpy as np
import pytest

import fwcore
from fwcore.io.convert import from_networkx, from_pgmpy, from_pyagrum


def test_pgmpy_bayesian_network_matches_pgmpy_variable_elimination():
    pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install 'fwcore[pgmpy]')")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork
    bn = DiscreteBayesianNetwork([("A", "C"), ("B", "C"), ("C", "D")])
    bn.add_cpds(TabularCPD("A", 2, [[0.3], [0.7]]),
                TabularCPD("B", 3, [[0.2], [0.5], [0.3]]),
                TabularCPD("C", 2, [[0.9, 0.1, 0.5, 0.4, 0.2, 1.0],
                                    [0.1, 0.9, 0.5, 0.6, 0.8, 0.0]],
                           evidence=["A", "B"], evidence_card=[2, 3]),
                TabularCPD("D", 2, [[0.6, 0.25], [0.4, 0.75]], evidence=["C"], evidence_card=[2]))
    model = from_pgmpy(bn)
    names = model.names
    assert isinstance(model, fwcore.FactorGraph) and sorted(names) == ["A", "B", "C", "D"]
    res = fwcore.exact_inference(model)
    assert res.log_z == pytest.approx(0.0, abs=1e-12)
    ve = VariableElimination(bn)
    for i, v in enumerate(names):
        np.testing.assert_allclose(res.node_marginals[i], ve.query([v]).values, atol=1e-12)
    # evidence D = 1, by name: log P(D = 1) and the posterior of A, read by name
    clamped = fwcore.exact_inference(fwcore.apply_evidence(model, {"D": 1}))
    joint = ve.query(["D"]).values[1]
    assert clamped.log_z == pytest.approx(math.log(joint))
    np.testing.assert_allclose(model.named(clamped.node_marginals)["A"],
                               ve.query(["A"], evidence={"D": 1}).values, atol=1e-12)


def test_pgmpy_state_names_are_kept_for_evidence_and_answers():
    pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install 'fwcore[pgmpy]')")
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork
    bn = DiscreteBayesianNetwork([("Rain", "WetGrass")])
    bn.add_cpds(TabularCPD("Rain", 2, [[0.8], [0.2]], state_names={"Rain": ["no", "yes"]}),
                TabularCPD("WetGrass", 3, [[0.9, 0.1], [0.05, 0.3], [0.05, 0.6]],
                           evidence=["Rain"], evidence_card=[2],
                           state_names={"WetGrass": ["dry", "damp", "wet"],
                                        "Rain": ["no", "yes"]}))
    model = from_pgmpy(bn)
    assert model.names == ("Rain", "WetGrass")
    assert model.states == (("no", "yes"), ("dry", "damp", "wet"))
    wet = fwcore.exact_inference(fwcore.apply_evidence(model, {"WetGrass": "wet"}))
    expected = VariableElimination(bn).query(["Rain"], evidence={"WetGrass": "wet"})
    np.testing.assert_allclose(model.named(wet.node_marginals)["Rain"], expected.values)
    assert model.named(fwcore.exact_map(model).assignment) == {"Rain": "no", "WetGrass": "dry"}
    with pytest.raises(ValueError, match="has no state 'soaked': give one of 'dry'"):
        fwcore.apply_evidence(model, {"WetGrass": "soaked"})


def test_pgmpy_markov_network_becomes_a_pairwise_model():
    pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install 'fwcore[pgmpy]')")
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.models import DiscreteMarkovNetwork
    mn = DiscreteMarkovNetwork([("A", "B"), ("B", "C")])
    ab = DiscreteFactor(["A", "B"], [2, 3], np.arange(1.0, 7.0))
    cb = DiscreteFactor(["C", "B"], [2, 3], [1.0, 0.0, 2.0, 3.0, 1.0, 5.0])
    mn.add_factors(ab, cb)
    model = from_pgmpy(mn)
    assert isinstance(model, fwcore.PairwiseMRF) and model.names == ("A", "B", "C")
    joint = ab.values[:, :, None] * cb.values.T[None, :, :]          # (A, B, C)
    assert fwcore.exact_inference(model).log_z == pytest.approx(math.log(joint.sum()))
    assert model.theta[np.isneginf(model.theta)].size == 1             # the zero entry


@pytest.fixture
def gum():
    return pytest.importorskip("pyagrum", reason="pyAgrum is not installed (pip install "
                               "'fwcore[pyagrum]')")


def test_pyagrum_bayes_net_matches_lazy_propagation(gum):
    gum.initRandom(3)
    bn = gum.fastBN("A->C<-B[3];C->D[4];A->D")
    model = from_pyagrum(bn)
    names = model.names
    assert isinstance(model, fwcore.FactorGraph) and len(names) == 4
    assert model.states[names.index("B")] == ("0", "1", "2")
    res = fwcore.exact_inference(model)
    assert res.log_z == pytest.approx(0.0, abs=1e-12)
    ie = gum.LazyPropagation(bn)
    ie.makeInference()
    for i, v in enumerate(names):
        np.testing.assert_allclose(res.node_marginals[i], ie.posterior(v).toarray(), atol=1e-12)


def test_pyagrum_markov_random_field(gum):
    gum.initRandom(4)
    mrf = gum.fastMRF("A--B--C;C--A;C--D[3]")
    model = from_pyagrum(mrf)
    names = model.names
    ie = gum.ShaferShenoyMRFInference(mrf)
    ie.makeInference()
    res = fwcore.exact_inference(model)
    for i, v in enumerate(names):
        np.testing.assert_allclose(res.node_marginals[i], ie.posterior(v).toarray(), atol=1e-12)


def test_networkx_graph_with_log_potentials():
    nx = pytest.importorskip("networkx", reason="networkx is not installed")
    g = nx.Graph()
    g.add_node("b", card=3, unary=[0.0, 1.0, -np.inf])
    g.add_node("a", unary=[0.5, 0.0])
    g.add_node("c", card=2)
    table = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]])    # [x_b, x_a]: b comes first
    g.add_edge("a", "b", pairwise=table)
    g.add_edge("c", "b")
    model = from_networkx(g)
    assert model.names == ("b", "a", "c") and list(model.card) == [3, 2, 2]
    clamped = fwcore.exact_inference(fwcore.apply_evidence(model, {"c": 1}))
    np.testing.assert_allclose(model.named(clamped.node_marginals)["c"], [0.0, 1.0])
    x = [1, 0, 1]  # b = 1, a = 0, c = 1
    assert model.score(x) == pytest.approx(1.0 + 0.5 + table[1, 0])
    with pytest.raises(ValueError, match="neither"):
        bad = nx.Graph()
        bad.add_node(0)
        from_networkx(bad)
    with pytest.raises(ValueError, match="undirected"):
        from_networkx(nx.DiGraph([(0, 1)]))


def test_converters_refuse_other_objects():
    for convert in (from_pgmpy, from_pyagrum, from_networkx):
        with pytest.raises(TypeError, match="must be"):
            convert(object())
