"""Joint queries P(Q | e) with hard and soft evidence (fwcore.query) and marginal MAP
(fwcore.infer_mmap): against brute force on random models, and against pgmpy's and
pyAgrum's own answers on the asia and sprinkler networks (those tests skip, saying why,
without the library)."""
import math
import time
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.results import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from networks import (brute_joint, evidence_cases, random_factor_graph,  # noqa: E402
                      random_network)

DATA = Path(__file__).parent / "data"
ASIA, SPRINKLER = DATA / "asia.bif", DATA / "sprinkler.xml"


def models():
    """(name, model, evidence with hard and soft parts) for the brute-force tests."""
    grid = fwcore.random_grid(3, 3, coupling=1.5, seed=0)
    potts = fwcore.potts_grid(2, 3, n_labels=3, seed=1)
    fg = random_factor_graph(2)
    net = random_network(8, 3, max_card=3)
    return [("grid", grid, {4: 1, 0: [0.3, 0.9]}),
            ("potts", potts, {"x2": [0.2, 0.0, 0.7]} if potts.names else {2: [0.2, 0.0, 0.7]}),
            ("factor-graph", fg, {3: 0, 5: list(np.linspace(1.0, 0.1, fg.card[5]))}),
            ("bayes-net", net, {net.names[7]: net.states[7][0], net.names[2]: [0.5, 0.1, 2.0][
                :net.card[2]]})]


def brute_table(model, evidence, q):
    """P(x_Q | e) by enumeration, axes in the order of ``q``; and log of the evidence's
    mass relative to the model's (log Z_e − log Z)."""
    x, p = brute_joint(model)
    like = np.ones(len(x))
    for v, obs in (evidence or {}).items():
        i = model.var_index(v)
        lam = (np.asarray(obs, dtype=float) if isinstance(obs, (list, np.ndarray)) else
               np.eye(model.card[i])[model.state_index(i, obs)])
        like *= lam[x[:, i]]
    w = p * like
    table = np.zeros([int(model.card[v]) for v in q])
    np.add.at(table, tuple(x[:, v] for v in q), w)
    return table / w.sum(), math.log(w.sum())


@pytest.mark.parametrize("name, model, evidence", models(), ids=[m[0] for m in models()])
def test_joint_queries_equal_brute_force(name, model, evidence):
    rng = np.random.default_rng(0)
    log_z = fwcore.exact_inference(model).log_z
    for size in (1, 2, 3):
        q = [int(v) for v in rng.choice(model.n_vars, size=size, replace=False)]
        for e in (None, evidence):
            res = fwcore.query(model, q, e)
            table, log_mass = brute_table(model, e, q)
            np.testing.assert_allclose(res.table, table, atol=1e-12)
            assert res.log_z == pytest.approx(log_z + log_mass, abs=1e-10)
            assert res.status is Status.CONVERGED and res.certified and res.variables == tuple(q)


def test_queries_by_name_and_the_p_accessor():
    asia = fwcore.read_model(ASIA)
    res = fwcore.query(asia, ["lung", "bronc"], {"dysp": "yes", "smoke": [0.3, 0.7]})
    assert res.names == ("lung", "bronc") and res.states == (("yes", "no"), ("yes", "no"))
    assert res.p(lung="yes", bronc="no") == pytest.approx(res.table[0, 1])
    assert res.p(lung=0, bronc=1) == res.table[0, 1]
    assert res.table.sum() == pytest.approx(1.0)
    # the query's log_z is the evidence's log-probability (with its likelihoods)
    hard = fwcore.query(asia, ["lung"], {"dysp": "yes"})
    assert hard.log_z == pytest.approx(
        fwcore.exact_inference(fwcore.apply_evidence(asia, {"dysp": "yes"})).log_z)


def test_query_refusals():
    grid = fwcore.random_grid(3, 3, seed=0)
    with pytest.raises(ValueError, match="variable 'nope' is not in the model"):
        fwcore.query(grid, ["nope"])
    with pytest.raises(ValueError, match="variables names a variable twice"):
        fwcore.query(grid, [1, 1])
    with pytest.raises(ValueError, match="variables is empty"):
        fwcore.query(grid, [])
    with pytest.raises(TypeError, match="variables must be a list"):
        fwcore.query(grid, 3)
    with pytest.raises(ValueError, match="joint table of the 9 query variables has 512 "
                                         "entries, over memory_limit"):
        fwcore.query(grid, list(range(9)), memory_limit=1000)
    with pytest.raises(ValueError, match=r"a joint query needs exact elimination.*2500 "
                                         r"variables.*method='auto' answers it"):
        fwcore.query(fwcore.random_grid(50, 50, seed=0), [0, 2499], method="exact",
                     memory_limit=2**22)
    with pytest.raises(ValueError, match="evidence has probability zero"):
        fwcore.query(fwcore.PairwiseMRF([2, 2], None, [(0, 1)],
                                        [np.where(np.eye(2) > 0, 0.0, -np.inf)]),
                     [0], {0: 0, 1: 1})


# -- marginal MAP --------------------------------------------------------------------------

@pytest.mark.parametrize("name, model, evidence", models(), ids=[m[0] for m in models()])
def test_marginal_map_equals_brute_force(name, model, evidence):
    rng = np.random.default_rng(1)
    for size in (1, 2, 4):
        q = [int(v) for v in rng.choice(model.n_vars, size=size, replace=False)]
        for e in (None, evidence):
            res = fwcore.infer_mmap(model, q, e)
            table, _ = brute_table(model, e, q)
            best = np.unravel_index(np.argmax(table), table.shape)
            assert tuple(res.assignment) == tuple(best)
            assert res.probability == pytest.approx(table.max(), rel=1e-10)
            assert res.optimal and res.gap == 0.0 and res.variables == tuple(q)


def test_marginal_map_differs_from_map_where_it_should():
    """The classic example: the MAP's state of Q is not the marginal MAP."""
    # x0 in {0, 1}; x1..x3 binary; x0 = 0 concentrates on one state of the rest, x0 = 1
    # spreads over all eight: P(x0 = 1) is larger, but its best joint state is smaller
    card = [2, 2, 2, 2]
    joint = np.full((2, 2, 2, 2), 0.55 / 8)
    joint[0] = 0.0
    joint[0, 0, 0, 0] = 0.45
    model = fwcore.FactorGraph(card, [((0, 1, 2, 3), np.log(np.where(joint > 0, joint, 1e-300)))])
    assert fwcore.exact_map(model).assignment[0] == 0
    res = fwcore.infer_mmap(model, [0])
    assert res.assignment.tolist() == [1] and res.probability == pytest.approx(0.55)


def test_marginal_map_by_name_and_its_result():
    asia = fwcore.read_model(ASIA)
    res = fwcore.infer_mmap(asia, ["lung", "tub", "bronc"], {"xray": "yes", "dysp": "yes"})
    table = fwcore.query(asia, ["lung", "tub", "bronc"], {"xray": "yes", "dysp": "yes"}).table
    assert res.probability == pytest.approx(table.max())
    best = np.unravel_index(np.argmax(table), table.shape)
    assert res.named() == {v: ("yes", "no")[k] for v, k in zip(["lung", "tub", "bronc"], best)}
    assert res.score == res.upper_bound and res.certified and res.method == "exact"
    with pytest.raises(ValueError, match=r"marginal MAP needs exact elimination.*"
                                         r"method='auto' answers it"):
        fwcore.infer_mmap(fwcore.random_grid(50, 50, seed=0), [0, 1], method="exact",
                          memory_limit=2**22)


# -- past exact reach: estimated from weighted samples, log P(e) certified ---------------

def check_estimated(res, exact):
    """An estimated joint table against the exact one, and what is certified about log Z."""
    assert res.estimated and res.method == "wmb/importance" and res.certified
    assert res.log_z_lower <= exact.log_z <= res.log_z_upper          # certified
    assert res.log_z_estimate_lower <= exact.log_z <= res.log_z_estimate_upper  # 95%
    assert abs(res.log_z - exact.log_z) < 0.05
    assert res.table.shape == exact.table.shape and res.table.sum() == pytest.approx(1.0)
    assert (res.table[exact.table == 0] == 0).all()
    assert np.abs(res.table - exact.table).max() < 4 / np.sqrt(res.info["ess"])
    assert "certified, width" in res.message and "estimated from" in res.message


def test_joint_query_of_a_bayesian_network_past_exact_reach():
    """log P(e) of a network with evidence (zeros in its CPTs) bounded by weighted
    mini-bucket, estimated by its samples; P(Q | e) from their weights."""
    net = random_network(100, 0)
    evidence = evidence_cases(net, 0)[0]
    q = [net.names[0], net.names[1]]
    res = fwcore.query(net, q, evidence, memory_limit=2**18, seed=0)
    exact = fwcore.query(net, q, evidence)
    assert exact.method == "exact" and not exact.estimated
    check_estimated(res, exact)
    assert res.names == exact.names and res.p(**{q[0]: 1, q[1]: 1}) == res.table[1, 1]


def test_soft_evidence_query_on_a_grid_past_exact_reach():
    grid = fwcore.random_grid(14, 14, coupling=1.0, seed=5)
    evidence = {5: 1, 100: 0, 150: [0.3, 0.7], 60: [0.9, 0.1]}
    res = fwcore.query(grid, [0, 17, 195], evidence, memory_limit=2**22, seed=0)
    check_estimated(res, fwcore.query(grid, [0, 17, 195], evidence))
    again = fwcore.query(grid, [0, 17, 195], evidence, memory_limit=2**22, seed=0)
    np.testing.assert_array_equal(res.table, again.table)
    assert res.status is Status.STALLED and res.success


def test_query_past_exact_reach_under_max_time():
    big = fwcore.random_grid(60, 60, coupling=1.0, seed=0)
    t0 = time.perf_counter()
    res = fwcore.query(big, [0, 1799], {5: 1}, max_time=1.0)
    assert time.perf_counter() - t0 < 3.0
    assert res.status is Status.MAX_TIME and res.success and res.estimated
    assert res.info["n_samples"] > 0 and res.table.shape == (2, 2)
    assert res.log_z_lower <= res.log_z <= res.log_z_upper


# -- peers ---------------------------------------------------------------------------------

@pytest.fixture
def gum():
    return pytest.importorskip("pyagrum", reason="pyAgrum is not installed (pip install "
                               "'fwcore[pyagrum]')")


def _aligned(tensor, names):
    """A pyAgrum tensor's array with its axes in the order of ``names``."""
    axes = list(reversed(tensor.names))
    return np.transpose(np.asarray(tensor.toarray()), [axes.index(v) for v in names])


CASES = [(ASIA, ["lung", "bronc"], {"xray": "yes", "dysp": "yes"}),
         (ASIA, ["either", "smoke", "tub"], {"xray": [0.8, 0.3], "asia": "yes"}),
         (ASIA, ["dysp"], {"lung": [0.5, 0.25], "bronc": [0.1, 0.4]}),
         (SPRINKLER, ["Sprinkler", "Rain"], {"WetGrass": "T"}),
         (SPRINKLER, ["Cloudy", "Rain"], {"WetGrass": [0.2, 0.9], "Sprinkler": "F"})]


@pytest.mark.parametrize("path, q, evidence", CASES)
def test_joint_and_soft_evidence_queries_equal_pyagrums(gum, path, q, evidence):
    model = fwcore.read_model(path)
    bn = gum.loadBN(str(path.with_suffix(".bif"))) if path.suffix == ".bif" else \
        fwcore.to_pyagrum(model)
    ie = gum.LazyPropagation(bn)
    ie.setEvidence({v: (list(map(float, s)) if isinstance(s, list) else s)
                    for v, s in evidence.items()})
    ie.addJointTarget(set(q))
    ie.makeInference()
    res = fwcore.query(model, q, evidence)
    np.testing.assert_allclose(res.table, _aligned(ie.jointPosterior(set(q)), q), atol=1e-6)
    # MMAP on the same query: the most likely cell of the joint
    mm = fwcore.infer_mmap(model, q, evidence)
    assert mm.probability == pytest.approx(res.table.max(), abs=1e-12)


@pytest.fixture
def pgmpy():
    return pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install "
                               "'fwcore[pgmpy]')")


@pytest.mark.parametrize("path, q, evidence", CASES)
def test_joint_and_soft_evidence_queries_equal_pgmpys(pgmpy, path, q, evidence):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import VariableElimination
    model = fwcore.read_model(path)
    bn = fwcore.to_pgmpy(model)
    hard = {v: s for v, s in evidence.items() if not isinstance(s, list)}
    virtual = [TabularCPD(v, len(s), (np.array(s)[:, None] / sum(s)).tolist(),
                          state_names={v: list(model.states[model.var_index(v)])})
               for v, s in evidence.items() if isinstance(s, list)]
    answer = VariableElimination(bn).query(q, evidence=hard or None,
                                           virtual_evidence=virtual or None, joint=True,
                                           show_progress=False)
    table = np.transpose(answer.values, [answer.variables.index(v) for v in q])
    np.testing.assert_allclose(fwcore.query(model, q, evidence).table, table, atol=1e-12)


# -- files and the command line ------------------------------------------------------------

def test_query_files_and_the_mmap_command(tmp_path, capsys):
    from fwcore.cli import main
    model = fwcore.random_grid(4, 4, coupling=1.0, seed=2)
    fwcore.write_uai(model, tmp_path / "m.uai")
    (tmp_path / "m.query").write_text("3\n9 2 14\n")
    assert fwcore.read_query(tmp_path / "m.query") == [2, 9, 14]  # ascending, as Merlin
    fwcore.write_evid(tmp_path / "m.evid", {5: 1})
    assert main(["mmap", str(tmp_path / "m.uai"), "--query-file", str(tmp_path / "m.query"),
                 "--evid", str(tmp_path / "m.evid"), "--out", str(tmp_path / "ans")]) == 0
    expected = fwcore.infer_mmap(model, [2, 9, 14], {5: 1})
    np.testing.assert_array_equal(fwcore.read_map(tmp_path / "ans.MMAP"), expected.assignment)
    assert f"P(answer | evidence) = {expected.probability:.6g}" in capsys.readouterr().out
    for text, msg in [("2 4 4", "variable 4 is a query variable twice"),
                      ("3 1 2", "declares 3 query variables but has only 2")]:
        (tmp_path / "bad.query").write_text(text)
        with pytest.raises(ValueError, match=msg):
            fwcore.read_query(tmp_path / "bad.query")


def test_the_sample_command_writes_csv(tmp_path, capsys):
    from fwcore.cli import main
    assert main(["sample", str(ASIA), "-n", "50", "--seed", "3", "--out",
                 str(tmp_path / "s")]) == 0
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "asia,tub,smoke,lung,bronc,either,xray,dysp" and len(lines) == 51
    got = np.loadtxt(tmp_path / "s.csv", delimiter=",", skiprows=1, dtype=int)
    expected = fwcore.sample(fwcore.read_model(ASIA), 50, seed=3).samples
    np.testing.assert_array_equal(got, expected)
    assert "50 samples by exact/forward sampling" in capsys.readouterr().out


def test_the_commands_past_exact_reach(tmp_path, capsys):
    """`fwcore sample` writes weighted samples with their weights; `fwcore mmap` answers
    by the search, stating what is certified and what is sampled."""
    from fwcore.cli import main
    model = fwcore.random_grid(14, 14, coupling=1.0, seed=0)
    fwcore.write_uai(model, tmp_path / "g.uai")
    assert main(["sample", str(tmp_path / "g.uai"), "-n", "200", "--seed", "0",
                 "--memory-limit", "4", "--out", str(tmp_path / "s")]) == 0
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0].endswith(",x195,weight") and len(lines) == 201
    got = np.loadtxt(tmp_path / "s.csv", delimiter=",", skiprows=1)
    expected = fwcore.sample(model, 200, seed=0, memory_limit=4 * 2**20)
    np.testing.assert_array_equal(got[:, :-1], expected.samples)
    np.testing.assert_allclose(got[:, -1], expected.weights, rtol=1e-9)
    out = capsys.readouterr().out
    assert "200 samples by wmb/importance sampling" in out and "(certified, width" in out
    (tmp_path / "g.query").write_text("2\n0 195\n")
    assert main(["mmap", str(tmp_path / "g.uai"), "--query-file", str(tmp_path / "g.query"),
                 "--memory-limit", "4", "--max-time", "2", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "by branch and bound" in out and "max_time: stopped at the time limit" in out
    assert "(certified), ~" in out and fwcore.read_map(tmp_path / "a.MMAP").shape == (2,)


def test_marginal_map_past_its_max_time_returns_its_best_answer():
    """An exact elimination cut by max_time goes on as the search: the best answer so
    far, with its certified bound, never a TimeoutError."""
    grid = fwcore.random_grid(16, 16, coupling=1.0, seed=0)
    q = list(range(0, 256, 17))
    t0 = time.perf_counter()
    res = fwcore.infer_mmap(grid, q, max_time=1.0, seed=0)
    assert time.perf_counter() - t0 < 3.0
    assert res.status is Status.MAX_TIME and res.success and res.method == "search"
    assert res.assignment.shape == (len(q),) and res.upper_bound >= res.score > -np.inf
    assert fwcore.infer_mmap(grid, q[:3], max_time=60).optimal


def mmap_truth(model, q, evidence=None):
    """log Σ_r exp score(q, r) for every joint state of q (an exact joint query)."""
    table = fwcore.query(model, q, evidence, method="exact")
    with np.errstate(divide="ignore"):
        return table.log_z + np.log(table.table)


@pytest.mark.parametrize("make, q, evidence, memory", [
    (lambda: fwcore.random_grid(7, 7, coupling=1.0, seed=1), [0, 6, 24, 42, 48, 10, 38], None,
     2**13),
    (lambda: fwcore.potts_grid(6, 6, n_labels=3, seed=2), [0, 5, 30, 35, 14], {20: 1}, 2**13),
    (lambda: random_factor_graph(9, scale=2.0), [0, 3, 6], {1: 0}, 2**6),
], ids=["grid", "potts-evidence", "factor-graph"])
def test_marginal_map_search_equals_brute_force(make, q, evidence, memory):
    """Past the constrained elimination's reach (a small memory_limit), branch and bound
    over the query variables, nodes solved exactly once enough is conditioned on:
    converged, its score the brute-force maximum, its bound equal to it."""
    model = make()
    truth = mmap_truth(model, q, evidence)
    res = fwcore.infer_mmap(model, q, evidence, memory_limit=memory, seed=0, method="search")
    assert res.method == "search" and res.status is Status.CONVERGED and res.optimal
    assert res.info["nodes"] > res.info["exact_nodes"] > 1      # a search, not one node
    assert res.score == pytest.approx(truth.max(), abs=1e-9)
    assert truth[tuple(res.assignment)] == pytest.approx(truth.max(), abs=1e-9)
    assert res.upper_bound == pytest.approx(res.score, abs=1e-6)


def test_marginal_map_search_on_a_network_with_an_observed_query_variable():
    """Zeros in the CPTs, evidence by name, one query variable observed: the search keeps
    it at its observed state and equals brute force."""
    net = random_network(14, 3, max_card=3)
    evidence = evidence_cases(net, 0)[0]
    q = [v for v in net.names if v not in evidence][:3] + [next(iter(evidence))]
    truth = mmap_truth(net, q, evidence)
    res = fwcore.infer_mmap(net, q, evidence, memory_limit=2**6, method="search", seed=0)
    assert res.status is Status.CONVERGED and res.info["nodes"] > 1
    assert res.score == pytest.approx(truth.max(), abs=1e-9)
    assert res.named() == fwcore.infer_mmap(net, q, evidence).named()
    assert res.named()[q[-1]] == evidence[q[-1]]


def test_marginal_map_bound_holds_past_exact_reach():
    """Weighted mini-bucket's nodes: the bound holds the brute-force maximum, the score is
    a certified lower bound on the answer's log-mass, the best answer comes first."""
    grid = fwcore.random_grid(14, 14, coupling=1.0, seed=2)
    q = [0, 17, 100, 195]
    truth = mmap_truth(grid, q)
    res = fwcore.infer_mmap(grid, q, memory_limit=2**22, max_time=4.0, seed=0)
    assert res.method == "search" and res.status is Status.MAX_TIME and res.success
    assert res.upper_bound >= truth.max() >= truth[tuple(res.assignment)] >= res.score
    # time-sliced, so only loose figures of quality (unloaded: the best answer, gap 0.6,
    # its estimate within 0.01 of its log-mass; the root's product bound is 40 nats off)
    assert truth[tuple(res.assignment)] > truth.max() - 1.0
    assert res.upper_bound - res.score < 5.0
    assert "proven gap" in res.message


@pytest.mark.parametrize("name", ["Promedus_17", "linkage_12"])
def test_marginal_map_bound_holds_on_shared_models(instances, name):
    """Shared models past exact reach, a query set of four variables: Σ_q P(q, e) = P(e),
    so the maximum is between log P(e) − log |Q| and log P(e) (the reference log Z):
    the bound must reach the first, the answer's certified score stay under the second."""
    folder = instances / "uai2014-beyond"
    model = fwcore.read_model(folder / f"{name}.uai")
    evidence = fwcore.read_evid(folder / f"{name}.uai.evid")
    log_z = fwcore.read_pr(folder / f"{name}.uai.PR")
    free = [v for v in range(model.n_vars) if v not in evidence]
    q = sorted(np.random.default_rng(0).choice(free, 4, replace=False).tolist())
    t0 = time.perf_counter()
    res = fwcore.infer_mmap(model, q, evidence, max_time=8.0, seed=0)
    assert time.perf_counter() - t0 < 12.0
    assert res.method == "search" and res.certified and res.success
    assert res.upper_bound >= log_z - math.log(np.prod(model.card[q])) - 1e-6
    assert res.score <= log_z + 1e-6
