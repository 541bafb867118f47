"""UAI model, answer and evidence files: round trips, the shared instances, hand-written
files with known θ, malformed files (hand-written and fuzzed)."""
import itertools
import math
import pathlib
import subprocess
import sys

import numpy as np
import fwcore
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fwcore.exact import exact_inference
from fwcore.generators import potts_grid, random_clique, random_grid, random_rbm
from fwcore.model import PairwiseMRF
from fwcore.io import read_model
from fwcore.io.uai import (apply_evidence, read_evid, read_map, read_mar, read_pr, read_uai,
                        write_evid, write_map, write_mar, write_pr, write_uai)

FUZZ = settings(max_examples=50, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _file(tmp_path, text, name="m.uai"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _mixed_model():
    """Cards 1..4, an isolated variable, -inf entries, edges given reversed."""
    rng = np.random.default_rng(3)
    card = [3, 1, 4, 2, 2]
    edges = [(2, 0), (3, 2), (1, 0), (0, 3)]
    unary = [rng.normal(size=c) for c in card]
    unary[0][1] = -np.inf
    pair = [rng.normal(size=(card[i], card[j])) for i, j in edges]
    pair[0][3, 1] = -np.inf
    pair[1][:, 2] = -np.inf
    return PairwiseMRF(card, unary, edges, pair)


def _assert_same(a, b):
    np.testing.assert_array_equal(a.card, b.card)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(np.isneginf(a.theta), np.isneginf(b.theta))
    fin = np.isfinite(a.theta)
    np.testing.assert_allclose(a.theta[fin], b.theta[fin], rtol=1e-12, atol=1e-14)


# -- round trips ------------------------------------------------------------------------

@pytest.mark.parametrize("model", [
    random_clique(6, coupling=8.0, seed=1), random_grid(3, 4, seed=2),
    potts_grid(3, 3, n_labels=4, seed=3), random_rbm(3, 4, seed=4), _mixed_model(),
    PairwiseMRF([2, 3]), PairwiseMRF([]),
], ids=["clique", "grid", "potts", "rbm", "mixed", "no-edges", "empty"])
def test_write_read_round_trip(tmp_path, model):
    p = tmp_path / "m.uai"
    write_uai(model, p)
    _assert_same(model, read_uai(p))


def test_round_trip_at_the_exp_range_limits(tmp_path):
    theta_max, theta_min = math.log(np.finfo(float).max), math.log(np.finfo(float).tiny)
    m = PairwiseMRF([3], [np.array([theta_max * (1 - 1e-15), theta_min * (1 - 1e-15), 0.0])])
    write_uai(m, tmp_path / "m.uai")
    _assert_same(m, read_uai(tmp_path / "m.uai"))


@pytest.mark.parametrize("value, where", [(710.0, "variable 1"), (-709.0, "variable 1"),
                                          (1e300, "variable 1")])
def test_write_refuses_unwritable_potentials(tmp_path, value, where):
    m = PairwiseMRF([2, 2], [np.zeros(2), np.array([0.0, value])])
    with pytest.raises(ValueError, match=where):
        write_uai(m, tmp_path / "m.uai")
    m = PairwiseMRF([2, 2], None, [(0, 1)], [np.array([[0.0, value], [0, 0]])])
    with pytest.raises(ValueError, match=r"edge 0 \(0, 1\)"):
        write_uai(m, tmp_path / "m.uai")


def test_write_uai_needs_a_model(tmp_path):
    with pytest.raises(TypeError, match="PairwiseMRF"):
        write_uai(np.zeros(3), tmp_path / "m.uai")


# -- hand-written files ------------------------------------------------------------------

# Repeated scopes, a reversed pairwise scope, an unused variable (3), arbitrary line
# breaks, tabs and trailing spaces, zeros, lower-case header.
TINY = """markov
4
2 3 2   2
6
1 0
2 1 0\t
1 0
2 0 1
2 2 1
1 1

2 0.5 2.0
6
1 2
3 4   0 6
2  4.0 0.25
6 1 0 0
3 0 1
6 1e0 2 3 4 5 0
3 1 1 .5
"""


def test_hand_written_file(tmp_path):
    m = read_uai(_file(tmp_path, TINY))
    np.testing.assert_array_equal(m.card, [2, 3, 2, 2])
    np.testing.assert_array_equal(m.edges, [(0, 1), (1, 2)])   # first-appearance order
    log = lambda a: np.log(np.array(a, dtype=float))  # noqa: E731
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(m.unary(0), log([0.5 * 4.0, 2.0 * 0.25]))
        np.testing.assert_allclose(m.unary(1), log([1, 1, 0.5]))
        np.testing.assert_array_equal(m.unary(2), [0, 0])
        np.testing.assert_array_equal(m.unary(3), [0, 0])
        # factor "2 1 0" is a 3x2 table [x1, x0]; "2 0 1" a 2x3 table [x0, x1]
        expect01 = log([[1, 3, 0], [2, 4, 6]]) + log([[1, 0, 0], [3, 0, 1]])
        np.testing.assert_array_equal(m.pairwise(0), expect01)
        np.testing.assert_allclose(m.pairwise(1), log([[1, 2, 3], [4, 5, 0]]).T)
    # 0 * 0 stays -inf, never NaN
    assert np.isneginf(m.pairwise(0)[0, 2]) and not np.isnan(m.theta).any()


def test_clique10_theta_matches_a_direct_parse(instances):
    path = instances / "fw-inference" / "clique10" / "1.uai"
    m = read_uai(path)
    tok = path.read_text().split()
    n, n_fac = int(tok[1]), int(tok[2 + 10])
    pos, scopes = 3 + n, []
    for _ in range(n_fac):
        a = int(tok[pos])
        scopes.append(tuple(int(v) for v in tok[pos + 1:pos + 1 + a]))
        pos += 1 + a
    edges = [s for s in scopes if len(s) == 2]
    np.testing.assert_array_equal(m.edges, edges)  # this file: i < j, each scope once
    for s in scopes:
        size = int(tok[pos])
        table = np.array([float(v) for v in tok[pos + 1:pos + 1 + size]])
        pos += 1 + size
        got = m.unary(s[0]) if len(s) == 1 else m.pairwise(edges.index(s)).ravel()
        np.testing.assert_allclose(got, np.log(table), rtol=1e-15)
    assert pos == len(tok)


# -- the shared instances ----------------------------------------------------------------

def test_every_shared_instance_and_its_answers(instances):
    paths = sorted(instances.glob("fw-inference/*/*.uai")) + sorted(instances.glob("uai2014/*.uai"))
    assert len(paths) == 107, f"expected the 107 shared instances, found {len(paths)}"
    for path in paths:
        m = read_uai(path)
        assert not np.isnan(m.theta).any()
        mar = read_mar(f"{path}.MAR")
        assert [len(p) for p in mar] == list(m.card), path
        assert math.isfinite(read_pr(f"{path}.PR")), path
        answers = [a for a in (f"{path}.MAP", f"{path}.MPE") if (path.parent / a).exists()]
        assert len(answers) == 1, path
        x = read_map(answers[0])
        assert np.isfinite(m.score(m.check_assignment(x))), path  # a possible state


def test_zero_entries_become_neg_inf(instances):
    m = read_uai(instances / "uai2014" / "ObjectDetection_11.uai")
    assert np.isneginf(m.theta).any() and not np.isnan(m.theta).any()


def test_instance_rewrite_round_trip(instances, tmp_path):
    for name in ("ObjectDetection_11", "pdb1akg", "CSP_11"):
        m = read_uai(instances / "uai2014" / f"{name}.uai")
        write_uai(m, tmp_path / "m.uai")
        _assert_same(m, read_uai(tmp_path / "m.uai"))


# -- answer and evidence files -----------------------------------------------------------

def test_pr_is_log10_on_disk(tmp_path):
    assert read_pr(_file(tmp_path, "PR\n2.0\n")) == pytest.approx(2 * math.log(10), rel=1e-15)
    assert read_pr(_file(tmp_path, "PR\n1\n-0.5\n")) == pytest.approx(-0.5 * math.log(10))
    assert read_pr(_file(tmp_path, "PR -inf")) == -math.inf
    for log_z in (0.0, -3.25, 1234.5678901234567, -math.inf):
        write_pr(tmp_path / "z.PR", log_z)
        got = read_pr(tmp_path / "z.PR")
        assert got == log_z or math.isclose(got, log_z, rel_tol=1e-15)
    assert float((tmp_path / "z.PR").read_text().split()[1]) == -math.inf
    write_pr(tmp_path / "z.PR", math.log(100.0))
    assert float((tmp_path / "z.PR").read_text().split()[1]) == pytest.approx(2.0)
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="log_z"):
            write_pr(tmp_path / "z.PR", bad)


def test_mar_round_trip_and_old_form(tmp_path):
    marg = [np.array([0.25, 0.75]), np.array([1.0]), np.array([0.1, 0.2, 0.7])]
    write_mar(tmp_path / "m.MAR", marg)
    for a, b in zip(read_mar(tmp_path / "m.MAR"), marg):
        np.testing.assert_array_equal(a, b)
    old = read_mar(_file(tmp_path, "MAR\n1\n2 2 0.5 0.5 1 1.0\n"))
    assert [list(p) for p in old] == [[0.5, 0.5], [1.0]]
    with pytest.raises(ValueError, match="node_marginals"):
        write_mar(tmp_path / "m.MAR", [np.array([0.5, np.nan])])


def test_map_headers_and_old_form(tmp_path):
    x = np.array([2, 0, 1, 0])
    for header in ("MAP", "MPE"):
        write_map(tmp_path / "x", x, header=header)
        assert (tmp_path / "x").read_text().split()[0] == header
        np.testing.assert_array_equal(read_map(tmp_path / "x"), x)
    np.testing.assert_array_equal(read_map(_file(tmp_path, "MPE\n1\n3 0 1 1\n")), [0, 1, 1])
    np.testing.assert_array_equal(read_map(_file(tmp_path, "MAP 1 1")), [1])  # current form
    with pytest.raises(ValueError, match="header"):
        write_map(tmp_path / "x", x, header="MAR")
    with pytest.raises(ValueError, match="assignment"):
        write_map(tmp_path / "x", [0.5, 1])


def test_evidence_files(tmp_path):
    ev = {3: 1, 0: 2}
    write_evid(tmp_path / "e.evid", ev)
    assert read_evid(tmp_path / "e.evid") == ev
    assert read_evid(_file(tmp_path, "1\n2 3 1 0 2\n")) == ev   # older: sample count 1
    assert read_evid(_file(tmp_path, "0")) == {}
    assert read_evid(_file(tmp_path, "1 0 1")) == {0: 1}
    with pytest.raises(ValueError, match="twice"):
        read_evid(_file(tmp_path, "2 1 1 1 1"))
    with pytest.raises(TypeError, match="mapping"):
        write_evid(tmp_path / "e.evid", [(0, 1)])


def test_multi_case_evidence_files(tmp_path):
    path = _file(tmp_path, "3\n1 0 1\n2 0 0 2 1\n0\n")   # the UAI 2010 form: 3 cases
    assert [read_evid(path, case=k) for k in range(3)] == [{0: 1}, {0: 0, 2: 1}, {}]
    with pytest.raises(ValueError, match="holds 3 evidence cases .*pass case=0..2"):
        read_evid(path)
    with pytest.raises(ValueError, match="case 3 asked for; the file holds cases 0..2"):
        read_evid(path, case=3)
    with pytest.raises(ValueError, match="case 1 asked for, but the file holds one"):
        read_evid(_file(tmp_path, "1 0 1"), case=1)


def test_comments_compression_and_standard_streams(tmp_path, monkeypatch, capsys):
    import io
    m = _mixed_model()
    for suffix in ("", ".gz", ".xz", ".bz2"):  # written by suffix, read by content
        path = tmp_path / f"m.uai{suffix}"
        write_uai(m, path)
        np.testing.assert_allclose(fwcore.read_model(path).theta, m.theta, rtol=1e-15)
        plain = tmp_path / "plain"  # a compressed file needs no suffix to be read
        plain.write_bytes(path.read_bytes())
        np.testing.assert_allclose(read_uai(plain).theta, m.theta, rtol=1e-15)
    commented = "\n".join(f"{line}  # a comment" for line in
                          (tmp_path / "m.uai").read_text().splitlines())
    np.testing.assert_allclose(read_uai(_file(tmp_path, "# pyAgrum\n" + commented)).theta,
                               m.theta, rtol=1e-15)
    text = (tmp_path / "m.uai").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    np.testing.assert_allclose(fwcore.read_model("-").theta, m.theta, rtol=1e-15)
    write_map("-", [0, 1, 2])
    assert capsys.readouterr().out == "MAP\n3 0 1 2\n"
    (tmp_path / "bad.uai.gz").write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(ValueError, match="bad.uai.gz: not a readable .gz file"):
        read_uai(tmp_path / "bad.uai.gz")


def test_bayes_tables_must_be_conditional_distributions(tmp_path):
    lines = ["BAYES", "2", "2 2", "2", "1 0", "2 0 1", "", "2", "0.3 0.7", "", "4",
             "0.5 0.9 0.5 0.1"]  # P(x1 | x0) written child-major: rows sum to 1.4, 0.6
    path = _file(tmp_path, "\n".join(lines))
    with pytest.raises(ValueError, match=r"line 12.*factor 1 \(scope 0 1, declared at line 6\) "
                       r"is not a conditional probability table of its child x1.*x0 = 0 "
                       r"sum to 1.4.*unnormalized='warn'"):
        read_uai(path)
    with pytest.warns(UserWarning, match="factor 1"):
        fg = read_uai(path, unnormalized="warn")
    assert fwcore.exact_inference(fg).log_z == pytest.approx(np.log(0.3 * 1.4 + 0.7 * 0.6))
    with pytest.raises(ValueError, match="unnormalized must be one of 'error', 'warn'"):
        read_uai(path, unnormalized="ignore")


def test_apply_evidence_is_the_conditional(tmp_path):
    m = _mixed_model()
    ev = {2: 3, 4: 0}
    c = apply_evidence(m, ev)
    xs = np.array(list(itertools.product(*[range(k) for k in m.card])))
    consistent = (xs[:, 2] == 3) & (xs[:, 4] == 0)
    np.testing.assert_array_equal(c.score(xs)[consistent], m.score(xs)[consistent])
    assert np.isneginf(c.score(xs)[~consistent]).all()
    np.testing.assert_array_equal(c.edges, m.edges)
    for bad, msg in [({5: 0}, "variable 5 is not in the model: give an index 0..4"),
                     ({1: 1}, "variable 1 has no state 1: give an index 0..0"),
                     ({-1: 0}, "variable -1 is not in the model"),
                     ({0: 0.5}, "variable 0 has no state 0.5")]:
        with pytest.raises((ValueError, TypeError), match=msg):
            apply_evidence(m, bad)


# -- numbers beyond a double's range ------------------------------------------------------

@pytest.mark.parametrize("token, theta", [
    ("1e-400", -400 * math.log(10)), ("2.5e-330", math.log(2.5) - 330 * math.log(10)),
    ("0.00012345678901234567890123e-320", math.log(1.2345678901234567) - 324 * math.log(10)),
    ("1e400", 400 * math.log(10)), ("1e-0400", -400 * math.log(10)), ("0.25", math.log(0.25)),
])
def test_table_entries_beyond_a_double_are_read_in_log_space(tmp_path, token, theta):
    m = read_uai(_file(tmp_path, f"MARKOV\n1\n2\n1\n1 0\n2\n1 {token}\n"))
    assert m.theta[0] == 0.0 and m.theta[1] == pytest.approx(theta, rel=1e-14)


@pytest.mark.parametrize("zeros", [30, 5000])
def test_integers_with_leading_zeros_are_read(tmp_path, zeros):
    m = read_uai(_file(tmp_path, f"MARKOV\n1\n{'0' * zeros}2\n1\n1 {'0' * zeros}\n"
                                 f"{'0' * zeros}2\n1 0.5\n"))
    assert m.card.tolist() == [2] and m.theta[1] == pytest.approx(math.log(0.5))


def test_a_higher_order_factor_costs_memory_in_proportion_to_its_table(tmp_path):
    """One (N, 2, 2) factor: 4N entries in the file, O(N) in the reduction (it was a
    4N-state auxiliary variable with an N x 4N table: 13 GB for N = 20,000)."""
    n = 20_000
    rng = np.random.default_rng(0)
    table = rng.random(4 * n) + 0.1
    text = f"MARKOV\n3\n{n} 2 2\n1\n3 0 1 2\n{4 * n}\n" + " ".join(map(str, table))
    fg = read_uai(_file(tmp_path, text + "\n"))
    assert fg.reduced.dim <= 2 * table.size
    assert exact_inference(fg).log_z == pytest.approx(np.logaddexp.reduce(np.log(table)))


@pytest.mark.parametrize("zero", ["0", "0.0", "-0", "0e-400", "-0.000e5", ".0"])
def test_only_a_written_zero_is_an_impossible_state(tmp_path, zero):
    m = read_uai(_file(tmp_path, f"MARKOV\n1\n2\n1\n1 0\n2\n1 {zero}\n"))
    assert m.theta[0] == 0.0 and m.theta[1] == -np.inf


def test_small_answer_values_read_as_zero(tmp_path):
    assert read_pr(_file(tmp_path, "PR\n1e-400\n")) == 0.0
    assert [list(p) for p in read_mar(_file(tmp_path, "MAR\n1 2 1e-400 1\n"))] == [[0, 1]]


def test_variables_in_no_factor_within_the_cap_are_read(tmp_path):
    m = read_uai(_file(tmp_path, "MARKOV\n3\n1000 2 2\n1\n2 1 2\n4\n1 1 1 1\n"))
    assert m.dim == 1008 and (m.theta == 0).all()


# -- malformed files ---------------------------------------------------------------------

@pytest.mark.parametrize("text, msg", [
    ("MARKOV\n3\n2 2 2\n1\n3 0 1 0\n8\n1 1 1 1 1 1 1 1\n", "line 5.*twice"),
    ("MARKOV\n2\n2 2\n1\n3 0 1 0\n8\n1 1 1 1 1 1 1 1\n", "arity of factor 0 must be in 0..2"),
    ("BAYES\n3\n2 2 2\n1\n3 0 1 2\n4\n1 1 1 1\n", "needs 8 table entries"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 -1 1 1\n", "negative"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n3\n1 1 1\n", "needs 4 table entries"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1 1\n", "file ends"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1 1 1 7\n", "extra content"),
    ("MARKOV\n2\n2 2\n1\n2 0 2\n4\n1 1 1 1\n", "0..1"),
    ("MARKOV\n2\n2 2\n1\n2 1 1\n4\n1 1 1 1\n", "twice"),
    ("MARKOV\n2\n2 0\n0\n", "cardinality"),
    ("MARKOV\n1\n2\n1\n1 0\n2\n1 nan\n", "expected a number"),
    ("MARKOV\n1\n2\n1\n1 0\n2\n1 inf\n", "expected a number"),
    ("MARKOV\n1\n2\n1\n1 0\n2\n1 -1e-400\n", "line 7, token '-1e-400': negative"),
    ("MARKOV\n1\n2\n1\n1 0\n2\n1 1e1000000000000000\n", "line 7.*exponent"),
    ("MARKOV\n1\n2\n1\n1 0\n2\n1 1_0\n", "expected a number"),
    ("MARKOV\n1\n2_0\n0\n", "integer"),
    ("MARKOV\n1\n134217728\n0\n", ("line 3.*variable 0 has 134217728 states but is in "
                                   "no factor.*MAX_UNUSED_STATES")),
    ("MARKOV\n3\n2 2147483647 2\n1\n2 0 2\n4\n1 1 1 1\n", "line 3, token '2147483647'"),
    ("MARKOV\n2\n2 134217728\n1\n2 0 1\n268435456\n1 1\n", "file ends inside"),
    ("MARKOV\n1\n99999999999999999999999\n0\n", "too large"),
    ("MARKOV\n1000000\n2 2\n0\n", "declares 1000000 variables"),
    ("MARKOV\n1\n2\n1000000\n", "declares 1000000 factors"),
    ("FACTORGRAPH\n", "header"),
    ("", "file ends"),
])
def test_malformed_model_files(tmp_path, text, msg):
    p = _file(tmp_path, text)
    with pytest.raises(ValueError, match=msg) as err:
        read_uai(p)
    assert str(p) in str(err.value)


def test_error_names_the_line(tmp_path):
    text = "MARKOV\n2\n2 2\n2\n1 0\n1 1\n\n2\n1 1\n\n2\n1 x\n"
    with pytest.raises(ValueError, match=r"line 12, token 'x'"):
        read_uai(_file(tmp_path, text))


def test_binary_garbage(tmp_path):
    p = tmp_path / "g.uai"
    p.write_bytes(b"MARKOV\n1\n\xff\xfe\x00\n")
    with pytest.raises(ValueError, match=r"line 3"):
        read_uai(p)


@pytest.mark.parametrize("reader, text, msg", [
    (read_mar, "MAR\n1 2 0.5 0.6\n", "sums to"),
    (read_mar, "MAR\n1 2 0.5 1.5\n", r"outside \[0, 1\]"),
    (read_mar, "MAR\n1 2 -1e-400 1\n", "line 2, token '-1e-400': negative"),
    (read_mar, "MAR\n2 2 0.5 0.5\n", "file ends"),
    (read_mar, "MAR\n1 2 0.5 0.5 2 0.5 0.5\n", "extra content"),
    (read_pr, "PR\n", "file ends"),
    (read_pr, "PR\n1.0 2.0\n", "extra content"),
    (read_pr, "PR\nnan\n", "expected a number"),
    (read_pr, "MAR\n1.0\n", "header"),
    (read_map, "MAP\n3 0 1\n", "declares 3 variables"),
    (read_map, "MAP\n2 0 -1\n", "0..2147483646"),
    (read_map, "MAP\n1 99999999999999999999\n", "line 2.*must be in 0..2147483646"),
    (read_pr, "PR\n1e308\n", "line 2, token '1e308': log10 Z is too large"),
    (read_pr, "PR\n-1e308\n", "too large"),
    (read_evid, "1 0 9999999999\n", "0..2147483646"),
    (read_map, "MPE\n2 0 1 1\n", "extra content"),
    (read_evid, "2 0 1\n", "declares 2 evidence"),
    (read_evid, "1 0 1 5\n", "extra content"),
    (read_evid, "1 a 1\n", "integer"),
])
def test_malformed_answer_files(tmp_path, reader, text, msg):
    p = _file(tmp_path, text, "a.txt")
    with pytest.raises(ValueError, match=msg) as err:
        reader(p)
    assert str(p) in str(err.value)


# -- fuzzing -----------------------------------------------------------------------------

NASTY = ["0", "1", "2", "3", "-1", "-0", "+2", "1.5", "1e400", "-1e400", "nan", "inf",
         "-inf", "0x10", "1_0", "\u0663", "abc", "2147483647", "99999999999", "1" * 30,
         "MARKOV", "BAYES", "\x00", ".", "e5", "1e-320", "MAP", "PR"]


def _fuzzed(data, text):
    """Truncate ``text`` at a random point, or replace/delete/insert/duplicate tokens."""
    op = data.draw(st.sampled_from(["truncate", "replace", "delete", "insert", "dup"]))
    if op == "truncate":
        return text[:data.draw(st.integers(0, len(text)))]
    toks = text.split()
    for _ in range(data.draw(st.integers(1, 3))):
        if not toks:
            break
        k = data.draw(st.integers(0, len(toks) - 1))
        if op == "replace":
            toks[k] = data.draw(st.sampled_from(NASTY))
        elif op == "delete":
            del toks[k]
        elif op == "insert":
            toks.insert(k, data.draw(st.sampled_from(NASTY)))
        else:
            toks.insert(k, toks[k])
    sep = data.draw(st.sampled_from([" ", "\n", " \t\n"]))
    return sep.join(toks)


def _check_fuzzed(reader, path, text):
    path.write_bytes(text.encode("utf-8"))
    try:
        return reader(path)
    except ValueError as err:
        assert str(path) in str(err)
        return None


@pytest.fixture(scope="module")
def written_model_text(tmp_path_factory):
    """A written model (multi-label, -inf entries) as a second fuzzing base."""
    p = tmp_path_factory.mktemp("uai") / "base.uai"
    write_uai(_mixed_model(), p)
    return p.read_text()


@FUZZ
@given(data=st.data())
def test_fuzz_read_uai(tmp_path, written_model_text, data):
    text = data.draw(st.sampled_from([TINY, written_model_text]))
    m = _check_fuzzed(read_uai, tmp_path / "f.uai", _fuzzed(data, text))
    if m is not None:  # the corruption happened to be a valid file: a valid model
        assert isinstance(m, PairwiseMRF)
        assert not np.isnan(m.theta).any() and not np.isposinf(m.theta).any()
        assert m.dim == m.theta.size


@FUZZ
@given(data=st.data())
def test_fuzz_answer_readers(tmp_path, data):
    reader, text = data.draw(st.sampled_from([
        (read_mar, "MAR\n3 2 0.25 0.75 1 1 3 0.5 0.25 0.25\n"),
        (read_map, "MAP\n4 1 0 2 1\n"),
        (read_map, "MPE\n1\n3 0 1 1\n"),
        (read_pr, "PR\n-12.5\n"),
        (read_evid, "2 0 1 3 2\n"),
        (read_evid, "1\n1 4 0\n"),
    ]))
    out = _check_fuzzed(reader, tmp_path / "a.txt", _fuzzed(data, text))
    if reader is read_mar and out is not None:
        assert all(p.ndim == 1 and np.isfinite(p).all() for p in out)
    elif reader is read_map and out is not None:
        assert out.dtype == np.int64 and (out >= 0).all()
    elif reader is read_pr and out is not None:
        assert isinstance(out, float) and not math.isnan(out) and out != math.inf
    elif out is not None:
        assert all(isinstance(v, int) and v >= 0 and s >= 0 for v, s in out.items())


def test_fuzz_runner_finds_nothing_on_a_short_run():
    """bench/fuzz_readers.py (run with its default 5,000 files per reader before a
    release) on 40 files per reader: it exits 1 if it finds a crash, an exception other
    than ValueError or a silent misread."""
    runner = pathlib.Path(__file__).parents[1] / "bench" / "fuzz_readers.py"
    done = subprocess.run([sys.executable, str(runner), "--n", "40", "--seed", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(f"{r:8}{40:>7}{0:>9}{0:>16}{0:>10}" in done.stdout
               for r in ("uai", "mar", "pr", "map", "evid")), done.stdout


def test_read_model_picks_the_reader_from_the_suffix(tmp_path):
    model = random_grid(3, seed=1)
    path = tmp_path / "grid.UAI"  # suffixes are matched in any case
    write_uai(model, path)
    for source in (path, str(path)):
        np.testing.assert_array_equal(read_model(source).theta, read_uai(path).theta)
    other = tmp_path / "grid.net"  # Hugin's format: no reader
    other.write_text(path.read_text())
    with pytest.raises(ValueError, match=r"grid\.net.*no model reader for suffix '\.net'.*\.bif"):
        read_model(other)
    with pytest.raises(TypeError, match="path must be a file path"):
        read_model(3)
