"""BIF and XMLBIF files, the BAYES form of `write_uai`, pyAgrum's table order warning, and
`to_pgmpy` / `to_pyagrum`: round trips through fwcore, pgmpy and pyAgrum keep names,
states and log P(e) (the pgmpy and pyAgrum tests skip, saying why, without them)."""
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.bayes import bayes_form
from fwcore.io.bif import read_bif, read_xmlbif, write_bif, write_xmlbif

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from networks import evidence_cases, random_network  # noqa: E402

DATA = Path(__file__).parent / "data"
ASIA = DATA / "asia.bif"
SPRINKLER = DATA / "sprinkler.xml"


def log_p(model, evidence):
    return fwcore.exact_inference(fwcore.apply_evidence(model, evidence)).log_z


def assert_same_network(a, b, cases):
    assert a.names == b.names and a.states == b.states
    assert list(a.card) == list(b.card)
    for e in [{}, *cases]:
        assert log_p(a, e) == pytest.approx(log_p(b, e), abs=1e-12)


# -- fwcore's own reader and writers ----------------------------------------------------

def test_asia_reads_with_names_states_and_its_known_posteriors():
    asia = fwcore.read_model(ASIA)
    assert asia.names == ("asia", "tub", "smoke", "lung", "bronc", "either", "xray", "dysp")
    assert asia.states == (("yes", "no"),) * 8
    res = fwcore.exact_inference(asia)
    assert res.log_z == pytest.approx(0.0, abs=1e-12)
    named = asia.named(res.node_marginals)
    # P(lung = yes) = 0.5 * 0.1 + 0.5 * 0.01; P(tub = yes) = 0.01 * 0.05 + 0.99 * 0.01
    assert named["lung"][0] == pytest.approx(0.055)
    assert named["tub"][0] == pytest.approx(0.0104)
    e = {"xray": "yes", "dysp": "yes"}
    x = np.array(list(np.ndindex(*asia.card)))
    p = np.exp([asia.score(r) for r in x])
    seen = (x[:, 6] == 0) & (x[:, 7] == 0)
    assert log_p(asia, e) == pytest.approx(math.log(p[seen].sum()))


def test_bif_grammar_comments_quotes_defaults_and_tables(tmp_path):
    text = """/* a block comment */ network "n" { property "software x"; }
    variable "A" { type discrete [ 2 ] { a0 a1 }; property "position = (1, 2)"; }
    variable B { type discrete[3]{b0,b1,b2}; }  // spaces or commas between states
    probability ( "A" ) { table 0.25 0.75 ; }
    probability ( B | A ) {
      default 0.2, 0.3, 0.5;
      (a1) 1, 0, 0;
    }
    """
    (tmp_path / "m.bif").write_text(text)
    m = read_bif(tmp_path / "m.bif")
    assert m.names == ("A", "B") and m.states == (("a0", "a1"), ("b0", "b1", "b2"))
    p = np.exp(m.pairwise(0))
    np.testing.assert_allclose(p, [[0.2, 0.3, 0.5], [1, 0, 0]])
    np.testing.assert_allclose(np.exp(m.unary(0)), [0.25, 0.75])
    # a table with parents lists the child's axis slowest (as pgmpy and pyAgrum read it)
    (tmp_path / "t.bif").write_text(text.replace(
        "default 0.2, 0.3, 0.5;\n      (a1) 1, 0, 0;", "table 0.2 1.0 0.3 0.0 0.5 0.0;"))
    np.testing.assert_allclose(np.exp(read_bif(tmp_path / "t.bif").pairwise(0)), p)


@pytest.mark.parametrize("seed", range(6))
def test_round_trips_keep_names_states_and_log_p_of_evidence(tmp_path, seed):
    model = random_network(9, seed)
    cases = evidence_cases(model, seed)
    for write, read, suffix in [(write_bif, read_bif, ".bif"),
                                (write_xmlbif, read_xmlbif, ".xml"),
                                (write_bif, fwcore.read_model, ".bif.gz"),
                                (write_xmlbif, fwcore.read_model, ".xmlbif")]:
        write(model, tmp_path / f"m{suffix}")
        assert_same_network(model, read(tmp_path / f"m{suffix}"), cases)


def test_write_uai_keeps_the_bayes_form(tmp_path):
    model = random_network(8, 1)
    fwcore.write_uai(model, tmp_path / "m.uai")
    text = (tmp_path / "m.uai").read_text()
    assert text.startswith("BAYES\n")
    back = fwcore.read_uai(tmp_path / "m.uai")
    for e in evidence_cases(model, 1):
        e = {model.var_index(v): model.state_index(model.var_index(v), s) for v, s in e.items()}
        assert log_p(back, e) == pytest.approx(log_p(model, e), abs=1e-12)
    # a Markov network stays MARKOV; so does a model whose CPTs lost their normalisation
    fwcore.write_uai(fwcore.random_grid(3, 3, seed=0), tmp_path / "g.uai")
    assert (tmp_path / "g.uai").read_text().startswith("MARKOV\n")
    asia = fwcore.read_model(ASIA)
    fwcore.write_uai(asia, tmp_path / "asia.uai")
    assert (tmp_path / "asia.uai").read_text().startswith("BAYES\n")
    assert log_p(fwcore.read_uai(tmp_path / "asia.uai"), {6: 0, 7: 0}) == pytest.approx(
        log_p(asia, {"xray": "yes", "dysp": "yes"}), abs=1e-12)


def test_bayes_form_finds_cpts_in_any_axis_order_and_refuses_markov_networks():
    # a pairwise network whose edge is stored (B, A) with A the child: the first axis
    m = fwcore.PairwiseMRF([2, 2], [None, np.log([0.3, 0.7])], [(0, 1)],
                           [np.log([[0.9, 0.2], [0.1, 0.8]])])
    form = bayes_form(m)
    assert form.parents == ((1,), ()) and list(form.order) == [1, 0]
    np.testing.assert_allclose(form.cpts[0], [[0.9, 0.1], [0.2, 0.8]])
    assert bayes_form(fwcore.random_grid(2, 2, seed=0)) is None
    assert bayes_form(fwcore.PairwiseMRF([2, 2])) is None  # no CPTs
    cycle = fwcore.FactorGraph([2, 2], [((0, 1), np.log(np.full((2, 2), 0.5))),
                                        ((1, 0), np.log(np.full((2, 2), 0.5)))])
    assert bayes_form(cycle) is None
    with pytest.raises(ValueError, match="not a Bayesian network.*write_uai"):
        write_bif(fwcore.random_grid(2, 2, seed=0), "unused.bif")


@pytest.mark.parametrize("text, msg", [
    ("variable A { type discrete [ 2 ] { a }; }", r"line 1.*declares 2 states and names 1"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5; }",
     r"line 2.*table of 'A' has 1 numbers; it needs 2"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( B ) { table 0.5 0.5; }",
     r"line 2.*'B' has no declaration"),
    ("variable A { type discrete [ 2 ] { a, b }; }", r"'A' has no probability block"),
    (("variable A { type discrete [ 2 ] { a, b }; }\n"
      "variable B { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5 0.5; }\n"
      "probability ( B | A ) { (a) 0.5 0.5; }"), r"line 4.*no row for \(b\) and no default"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.6 0.6; }",
     r"line 2.*row summing to 1.2, not 1"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table -0.5 1.5; }",
     r"negative or non-finite"),
    ("variable A { type discrete [ 2 ] { a, b }; }\nprobability ( A ) { table 0.5 x; }",
     r"line 2, token 'x': expected a number"),
    ("node A { }", r"line 1, token 'node': expected 'network', 'variable' or 'probability'"),
    ("variable A { type discrete [ 2 ] { a, b };", r"end of file"),
])
def test_malformed_bif_files_name_the_line(tmp_path, text, msg):
    (tmp_path / "bad.bif").write_text(text)
    with pytest.raises(ValueError, match=msg):
        read_bif(tmp_path / "bad.bif")


def test_malformed_xmlbif_files(tmp_path):
    for text, msg in [("<BIF><NETWORK>", "not an XML file"),
                      ("<BIF><NETWORK><VARIABLE><NAME>A</NAME></VARIABLE></NETWORK></BIF>",
                       "'A' needs distinct OUTCOME"),
                      (("<BIF><NETWORK><VARIABLE><NAME>A</NAME><OUTCOME>a</OUTCOME>"
                        "<OUTCOME>b</OUTCOME></VARIABLE><DEFINITION><FOR>A</FOR><TABLE>1"
                        "</TABLE></DEFINITION></NETWORK></BIF>"), "has 1 numbers; it needs 2")]:
        (tmp_path / "bad.xml").write_text(text)
        with pytest.raises(ValueError, match=msg):
            read_xmlbif(tmp_path / "bad.xml")


def test_write_refuses_names_the_format_cannot_hold(tmp_path):
    asia = fwcore.read_model(ASIA)
    odd = fwcore.FactorGraph(asia.card, asia.factors,
                             names=["visit asia", *asia.names[1:]], states=asia.states)
    with pytest.raises(ValueError, match="'visit asia' has a character"):
        write_bif(odd, tmp_path / "m.bif")


# -- pyAgrum ------------------------------------------------------------------------------

@pytest.fixture
def gum():
    return pytest.importorskip("pyagrum", reason="pyAgrum is not installed (pip install "
                               "'fwcore[pyagrum]')")


def _gum_log_p(gum, bn, evidence):
    if not evidence:
        return 0.0
    ie = gum.LazyPropagation(bn)
    ie.setEvidence(evidence)
    ie.makeInference()
    return math.log(ie.evidenceProbability())


@pytest.mark.parametrize("seed", range(4))
def test_round_trip_through_pyagrum_files_and_objects(tmp_path, gum, seed):
    model = random_network(9, seed)
    cases = evidence_cases(model, seed)
    write_bif(model, tmp_path / "m.bif")
    write_xmlbif(model, tmp_path / "m.bifxml")  # pyAgrum's suffix for XMLBIF
    # pyAgrum 3.3.1 reads a BIF file's numbers as single-precision floats (0.123456789
    # -> 0.12345679104328156): its networks from files agree to ~1e-7 only
    for bn, tol in [(gum.loadBN(str(tmp_path / "m.bif")), 1e-6), (fwcore.to_pyagrum(model), 1e-9)]:
        assert [bn.variable(i).name() for i in range(model.n_vars)] == list(model.names)
        assert [tuple(bn.variable(i).labels()) for i in range(model.n_vars)] == \
            list(model.states)
        for e in cases:
            assert _gum_log_p(gum, bn, e) == pytest.approx(log_p(model, e), abs=tol)
        back = fwcore.from_pyagrum(bn)
        gum.saveBN(bn, str(tmp_path / "g.bif"))
        for again in (back, read_bif(tmp_path / "g.bif")):
            assert again.names == model.names and again.states == model.states
            for e in [{}, *cases]:
                assert log_p(again, e) == pytest.approx(log_p(model, e), abs=tol)
    # pyAgrum's XMLBIF writer prints 6 digits
    bn = gum.loadBN(str(tmp_path / "m.bifxml"))
    gum.saveBN(bn, str(tmp_path / "g.bifxml"))
    back = fwcore.read_model(tmp_path / "g.bifxml")
    for e in cases:
        assert log_p(back, e) == pytest.approx(log_p(model, e), abs=1e-4)


def test_to_pyagrum_markov_network_matches_its_log_z(gum):
    model = fwcore.potts_grid(2, 3, n_labels=3, seed=0)
    mrf = fwcore.to_pyagrum(model)
    assert isinstance(mrf, gum.MarkovRandomField)
    back = fwcore.from_pyagrum(mrf)
    assert fwcore.exact_inference(back).log_z == pytest.approx(
        fwcore.exact_inference(model).log_z, abs=1e-9)
    ie = gum.ShaferShenoyMRFInference(mrf)
    ie.makeInference()
    np.testing.assert_allclose(np.asarray(ie.posterior("x0").toarray()),
                               fwcore.exact_inference(model).node_marginals[0], atol=1e-9)


def test_pyagrum_uai_files_warn_at_read_time(tmp_path, gum):
    bn = gum.fastBN("A->C<-B;C->D;A->D")
    gum.saveBN(bn, str(tmp_path / "bn.uai"))
    with pytest.warns(UserWarning, match="looks written by pyAgrum.*CPTs of two or more "
                                         "parents.*from_pyagrum"):
        fwcore.read_uai(tmp_path / "bn.uai")
    mrf = gum.fastMRF("A--B--C;C--D")
    gum.saveMRF(mrf, str(tmp_path / "mrf.uai"))
    with pytest.warns(UserWarning, match="factors of three or more variables"):
        fwcore.read_uai(tmp_path / "mrf.uai")
    # no warning where pyAgrum's order is the format's (at most one parent), nor on the
    # same network written by fwcore
    gum.saveBN(gum.fastBN("A->B->C"), str(tmp_path / "chain.uai"))
    fwcore.write_uai(fwcore.from_pyagrum(bn), tmp_path / "own.uai")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fwcore.read_uai(tmp_path / "chain.uai")
        fwcore.read_uai(tmp_path / "own.uai")


# -- pgmpy --------------------------------------------------------------------------------

@pytest.fixture
def pgmpy():
    return pytest.importorskip("pgmpy", reason="pgmpy is not installed (pip install "
                               "'fwcore[pgmpy]')")


def _pgmpy_log_p(bn, evidence):
    from pgmpy.inference import VariableElimination
    if not evidence:
        return 0.0
    names = list(evidence)
    joint = VariableElimination(bn).query(names, joint=True, show_progress=False)
    return math.log(joint.get_value(**evidence))


@pytest.mark.parametrize("seed", range(3))
def test_round_trip_through_pgmpy_files_and_objects(tmp_path, pgmpy, seed):
    from pgmpy.readwrite import BIFReader, BIFWriter, XMLBIFReader, XMLBIFWriter
    model = random_network(8, seed)
    cases = evidence_cases(model, seed)
    write_bif(model, tmp_path / "m.bif")
    write_xmlbif(model, tmp_path / "m.xml")
    for bn in [BIFReader(str(tmp_path / "m.bif")).get_model(),
               XMLBIFReader(str(tmp_path / "m.xml")).get_model(), fwcore.to_pgmpy(model)]:
        for e in cases:
            assert _pgmpy_log_p(bn, e) == pytest.approx(log_p(model, e), abs=1e-9)
        back = fwcore.from_pgmpy(bn)
        assert {v: back.states[back.var_index(v)] for v in back.names} == dict(
            zip(model.names, model.states))
        for e in cases:
            assert log_p(back, e) == pytest.approx(log_p(model, e), abs=1e-9)
        BIFWriter(bn).write_bif(str(tmp_path / "p.bif"))
        XMLBIFWriter(bn).write_xmlbif(str(tmp_path / "p.xml"))
        for path in ("p.bif", "p.xml"):
            again = fwcore.read_model(tmp_path / path)
            for e in cases:
                assert log_p(again, e) == pytest.approx(log_p(model, e), abs=1e-9)


def test_to_pgmpy_markov_network(pgmpy):
    from pgmpy.inference import VariableElimination
    model = fwcore.potts_grid(2, 2, n_labels=3, seed=1)
    mn = fwcore.to_pgmpy(model)
    assert type(mn).__name__ == "DiscreteMarkovNetwork"
    exact = fwcore.exact_inference(model)
    p = VariableElimination(mn).query(["x3"], show_progress=False).values
    np.testing.assert_allclose(p / p.sum(), exact.node_marginals[3], atol=1e-9)
