"""Matching distributions (fwcore.matching.inference): Ryser's permanent and exact marginals
against itertools brute force (also with the Gray-code blocks forced small), the reweighted entropy
and its line derivatives against finite differences, the matching polytopes' oracles against
enumeration, FW on the Bethe free energy against Huang & Jebara BP, the Gurvits / RW
sandwich, general perfect matchings with the blossom oracle, and the errors."""
import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

import fwcore.matching.inference as fm
from fwcore.matching.inference import (BipartiteMatchingPolytope, MatchingFreeEnergy,
                             PerfectMatchingPolytope, bethe_bp, entropy_line_derivatives,
                             exact_matching_marginals, exact_perfect_matching_marginals,
                             log_permanent, matching_marginals, permanent, reweighted_entropy)
from fwcore.results import Status


# -- brute-force twins ----------------------------------------------------------------------

def brute_permanent(A):
    n = len(A)
    return sum(np.prod(A[np.arange(n), p]) for p in itertools.permutations(range(n)))


def brute_marginals(W):
    n = len(W)
    perms = np.array(list(itertools.permutations(range(n))))
    scores = W[np.arange(n), perms].sum(axis=1)
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    marg = np.zeros((n, n))
    for perm, q in zip(perms, p):
        marg[np.arange(n), perm] += q
    return marg, log_z


def brute_perfect_matchings(n):
    """Every perfect matching of K_n as a set of edges (i < j), by filtering all pairings."""
    out = set()
    for perm in itertools.permutations(range(n)):
        out.add(tuple(sorted(tuple(sorted(perm[k:k + 2])) for k in range(0, n, 2))))
    return sorted(out)


def bethe_entropy_twin(T, rho):
    c = 2 * rho - 1
    return float(sum(c * (1 - t) * math.log(1 - t) - t * math.log(t) for t in T.ravel()))


# -- permanents and exact marginals ------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_permanent_matches_brute_force(n):
    rng = np.random.default_rng(n)
    A = rng.random((n, n)) * 3
    A[rng.random((n, n)) < 0.3] = 0.0
    assert permanent(A) == pytest.approx(brute_permanent(A), rel=1e-10, abs=1e-300)
    B = rng.normal(size=(n, n))
    assert permanent(B) == pytest.approx(brute_permanent(B), rel=1e-9, abs=1e-12)
    if brute_permanent(A) > 0:
        assert log_permanent(A) == pytest.approx(math.log(brute_permanent(A)), abs=1e-10)


def test_permanent_zero_patterns_and_scale():
    A = np.ones((4, 4))
    A[2] = 0.0
    assert permanent(A) == 0.0 and log_permanent(A) == -math.inf
    T = np.triu(np.ones((5, 5)))  # a single permutation: the identity
    assert permanent(T) == pytest.approx(1.0)
    big = np.full((6, 6), 1e60)  # perm = 720e360 overflows; its log does not
    assert log_permanent(big) == pytest.approx(math.log(720) + 360 * math.log(10))
    assert permanent(np.eye(7) * 2.0) == pytest.approx(128.0)


@pytest.mark.parametrize("seed", range(4))
def test_exact_marginals_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 2 + seed
    W = rng.normal(size=(n, n)) * 2
    if seed:
        W[rng.random((n, n)) < 0.25] = -np.inf
        W[np.arange(n), rng.permutation(n)] = 0.0  # keep one feasible permutation
    marg, log_z = exact_matching_marginals(W)
    ref, ref_log_z = brute_marginals(W)
    assert log_z == pytest.approx(ref_log_z, abs=1e-10)
    np.testing.assert_allclose(marg, ref, atol=1e-12)


def test_gray_code_blocks(monkeypatch):
    """Force the Gray-code walk over most columns (2 columns per vectorised block)."""
    monkeypatch.setattr(fm, "_LOW_BITS", 2)
    rng = np.random.default_rng(7)
    W = rng.normal(size=(6, 6))
    marg, log_z = exact_matching_marginals(W)
    ref, ref_log_z = brute_marginals(W)
    assert log_z == pytest.approx(ref_log_z, abs=1e-10)
    np.testing.assert_allclose(marg, ref, atol=1e-12)
    B = rng.normal(size=(6, 6))
    assert permanent(B) == pytest.approx(brute_permanent(B), rel=1e-10)


def test_exact_marginals_larger_n_are_doubly_stochastic():
    W = np.random.default_rng(3).normal(size=(14, 14))
    marg, _ = exact_matching_marginals(W)
    assert (marg >= -1e-12).all()
    np.testing.assert_allclose(marg.sum(axis=0), 1.0, atol=1e-8)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-8)


def test_exact_general_matchings_match_brute_force():
    rng = np.random.default_rng(0)
    n = 6
    W = rng.normal(size=(n, n))
    W = W + W.T
    matchings = brute_perfect_matchings(n)
    assert len(matchings) == 15
    scores = np.array([sum(W[i, j] for i, j in m) for m in matchings])
    log_z = logsumexp(scores)
    ref = np.zeros((n, n))
    for m, s in zip(matchings, scores):
        for i, j in m:
            ref[i, j] += math.exp(s - log_z)
            ref[j, i] += math.exp(s - log_z)
    marg, got = exact_perfect_matching_marginals(W)
    assert got == pytest.approx(log_z, abs=1e-12)
    np.testing.assert_allclose(marg, ref, atol=1e-12)


# -- entropy, objective and domains --------------------------------------------------------

@pytest.mark.parametrize("rho", [0.0, 0.5, 0.8, 1.0])
def test_entropy_value_gradient_and_line_derivatives(rho):
    rng = np.random.default_rng(1)
    T = rng.random((4, 4)) * 0.8 + 0.1
    h, g = reweighted_entropy(T.ravel(), rho)
    assert h == pytest.approx(bethe_entropy_twin(T, rho), rel=1e-12)
    d = rng.normal(size=16) * 0.01
    eps = 1e-6
    fd = (reweighted_entropy(T.ravel() + eps * d, rho)[0]
          - reweighted_entropy(T.ravel() - eps * d, rho)[0]) / (2 * eps)
    assert g @ d == pytest.approx(fd, rel=1e-6)
    d1, d2 = entropy_line_derivatives(T.ravel(), d, 0.3, rho)
    H = lambda t: reweighted_entropy(T.ravel() + t * d, rho)[0]  # noqa: E731
    assert d1 == pytest.approx((H(0.3 + eps) - H(0.3 - eps)) / (2 * eps), rel=1e-5)
    dd = (entropy_line_derivatives(T.ravel(), d, 0.3 + eps, rho)[0]
          - entropy_line_derivatives(T.ravel(), d, 0.3 - eps, rho)[0]) / (2 * eps)
    assert d2 == pytest.approx(dd, rel=1e-5)
    assert entropy_line_derivatives(T.ravel(), d, 1e3, rho) == (-math.inf, -math.inf)


def test_free_energy_is_zero_entropy_at_vertices_and_log_n_at_uniform():
    n = 5
    h, _ = reweighted_entropy(np.eye(n).ravel(), 1.0)
    assert h == 0.0
    obj = MatchingFreeEnergy(np.zeros(n * n), 0.5)  # RW entropy of 1/N is N log N
    assert obj.value_grad(np.full(n * n, 1.0 / n))[0] == pytest.approx(-n * math.log(n))


def test_bipartite_polytope_oracle_matches_enumeration():
    rng = np.random.default_rng(2)
    dom = BipartiteMatchingPolytope(5)
    g = rng.normal(size=25)
    perms = np.array(list(itertools.permutations(range(5))), dtype=np.int32)
    vals = dom.inner(g, perms)
    s = dom.lmo(g)
    assert dom.inner(g, s[None, :])[0] == pytest.approx(vals.min())
    x = np.zeros(25)
    dom.add(x, perms[17], 2.0)
    assert x @ g == pytest.approx(2.0 * vals[17])
    np.testing.assert_allclose(dom.to_matrix(x).sum(axis=1), 2.0)


def test_general_polytope_oracle_matches_enumeration():
    rng = np.random.default_rng(3)
    n = 6
    dom = PerfectMatchingPolytope(n)
    g = rng.normal(size=dom.dim)
    atoms = []
    for m in brute_perfect_matchings(n):
        mate = np.empty(n, dtype=np.int32)
        for i, j in m:
            mate[i], mate[j] = j, i
        atoms.append(mate)
    atoms = np.array(atoms)
    vals = dom.inner(g, atoms)
    for a, v in zip(atoms, vals):
        x = np.zeros(dom.dim)
        dom.add(x, a, 1.0)
        assert x.sum() == n // 2 and x @ g == pytest.approx(v)
    s = dom.lmo(g)
    assert dom.inner(g, s[None, :])[0] == pytest.approx(vals.min())
    assert dom.u0 @ g == pytest.approx(vals.mean())  # u0 is the average of all matchings


# -- marginal inference --------------------------------------------------------------------

def _doubly_stochastic(M):
    assert (M > 0).all()
    np.testing.assert_allclose(M.sum(axis=0), 1.0, atol=1e-9)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("n,seed", [(3, 0), (4, 1), (5, 2), (6, 3), (8, 4)])
def test_fw_bethe_equals_bp_and_gurvits_sandwich(n, seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n, n)) * 1.5
    fw = matching_marginals(W, method="fw", tol=1e-7)
    bp = matching_marginals(W, method="bp", tol=1e-12)
    rw = matching_marginals(W, entropy="trw", tol=1e-6)
    assert fw.status is Status.CONVERGED and bp.status is Status.CONVERGED
    assert fw.gap <= 1e-7 and bp.gap <= 1e-6
    _doubly_stochastic(fw.marginals)
    _doubly_stochastic(bp.marginals)
    assert fw.log_z == pytest.approx(bp.log_z, abs=1e-5)
    np.testing.assert_allclose(fw.marginals, bp.marginals, atol=1e-4)
    _, log_z = exact_matching_marginals(W)
    # Gurvits: log perm_B <= log perm <= log perm_B + (N/2) log 2; RW: log perm <= log Z_RW
    assert fw.log_z <= log_z + 1e-9
    assert log_z <= fw.log_z_upper + 0.5 * n * math.log(2)
    assert log_z <= rw.log_z_upper + 1e-9
    assert rw.log_z >= fw.log_z  # H_RW >= H_B pointwise


def test_bp_at_low_temperature_reports_no_certificate():
    """beta = 100 (App. F's W = beta unif[0, 1]), N = 10: BP's beliefs underflow to 0, so its
    gap is inf (no certificate, no Hungarian call), while FW converges with a gap over M;
    both give the same marginals."""
    W = 100.0 * np.random.default_rng(0).random((10, 10))
    bp = bethe_bp(W, tol=1e-13, max_iter=300)
    fw = matching_marginals(W, tol=1e-9)
    assert (bp.marginals == 0.0).any()
    assert bp.gap == math.inf and bp.log_z_upper == math.inf and bp.n_oracle_calls == 0
    assert fw.status is Status.CONVERGED and fw.gap <= 1e-9
    np.testing.assert_allclose(bp.marginals, fw.marginals, atol=1e-9)


@pytest.mark.parametrize("fw_method", ["fw", "away", "fcfw"])
def test_fw_variants_reach_the_bethe_optimum(fw_method):
    W = np.random.default_rng(9).normal(size=(4, 4))
    ref = bethe_bp(W, tol=1e-12)
    res = matching_marginals(W, fw_method=fw_method, tol=1e-5, max_iter=3000)
    assert ref.log_z - 1e-9 <= res.log_z_upper and res.log_z <= ref.log_z + 1e-9
    assert res.log_z == pytest.approx(ref.log_z, abs=1e-4)


def test_fw_marginals_close_to_exact_when_peaked():
    rng = np.random.default_rng(5)
    n = 6
    W = rng.random((n, n))
    W[np.arange(n), rng.permutation(n)] += 6.0
    exact, _ = exact_matching_marginals(W)
    res = matching_marginals(W, tol=1e-7)
    _doubly_stochastic(res.marginals)
    np.testing.assert_allclose(res.marginals, exact, atol=2e-3)


def test_budgets_return_best_iterate():
    W = np.random.default_rng(0).normal(size=(7, 7))
    res = matching_marginals(W, tol=0.0, max_iter=5)
    assert res.status is Status.MAX_ITER and res.n_iter == 5 and res.gap > 0
    _doubly_stochastic(res.marginals)
    bp = bethe_bp(W, tol=0.0, max_iter=3)
    assert bp.status is Status.MAX_ITER and bp.n_iter == 3
    _doubly_stochastic(bp.marginals)


def test_general_matchings_fw_with_blossom():
    rng = np.random.default_rng(4)
    n = 6
    W = rng.normal(size=(n, n))
    W = W + W.T
    np.fill_diagonal(W, 0.0)
    exact, log_z = exact_perfect_matching_marginals(W)
    rw = matching_marginals(W, graph="general", entropy="trw", tol=1e-6)
    bethe = matching_marginals(W, graph="general", tol=1e-6)
    for res in (rw, bethe):
        assert res.status is Status.CONVERGED
        M = res.marginals
        np.testing.assert_allclose(M, M.T)
        assert np.all(np.diag(M) == 0.0)
        np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-9)
    assert log_z <= rw.log_z_upper + 1e-9  # RW entropy bounds the entropy on any graph
    assert bethe.log_z <= rw.log_z + 1e-9
    assert np.abs(bethe.marginals - exact).max() < 0.1
    # peaked: a planted matching dominates, the Bethe marginals follow it
    P = np.zeros((n, n))
    P[[0, 1, 2, 3, 4, 5], [3, 4, 5, 0, 1, 2]] = 6.0
    peaked = matching_marginals(W * 0.1 + P, graph="general", tol=1e-7)
    exact, _ = exact_perfect_matching_marginals(W * 0.1 + P)
    np.testing.assert_allclose(peaked.marginals, exact, atol=5e-3)


# -- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,match", [
    (np.ones((2, 3)), "square"),
    (np.ones(4), "square"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), r"\+inf"),
    (np.zeros((0, 0)), "empty"),
])
def test_bad_matrices(bad, match):
    for fn in (permanent, exact_matching_marginals, matching_marginals, bethe_bp):
        with pytest.raises(ValueError, match=match):
            fn(bad)


def test_bad_arguments():
    W = np.zeros((3, 3))
    with pytest.raises(TypeError, match="numeric"):
        permanent(np.array([["a"]]))
    with pytest.raises(ValueError, match="-inf"):  # BP needs finite weights; FW takes a mask
        matching_marginals(np.array([[0.0, -np.inf], [0.0, 0.0]]), method="bp")
    np.testing.assert_array_equal(
        matching_marginals(np.array([[0.0, -np.inf], [0.0, 0.0]])).marginals, np.eye(2))
    with pytest.raises(ValueError, match="no perfect matching"):
        exact_matching_marginals(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="N <= 20"):
        log_permanent(np.ones((21, 21)))
    with pytest.raises(ValueError, match="nonnegative"):
        log_permanent(-np.ones((2, 2)))
    with pytest.raises(ValueError, match="method must be one of 'fw', 'bp'; got 'mcmc'"):
        matching_marginals(W, method="mcmc")
    with pytest.raises(ValueError, match="entropy must be one of 'trw', 'bethe'; got 'rw'"):
        matching_marginals(W, entropy="rw")
    with pytest.raises(ValueError, match="rho must be a number >= 0 and <= 1 or None; got 1.5"):
        matching_marginals(W, entropy="trw", rho=1.5)
    with pytest.raises(ValueError, match="entropy='bethe' has rho = 1 on every edge"):
        matching_marginals(W, rho=0.5)
    with pytest.raises(ValueError, match="rho must be a number >= 0 and <= 1; got -0.1"):
        reweighted_entropy(np.full(4, 0.5), rho=-0.1)
    with pytest.raises(ValueError, match="tol must be a number >= 0"):
        bethe_bp(W, tol=-1.0)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 0"):
        matching_marginals(W, max_iter=1.5)
    with pytest.raises(ValueError, match="n must be an integer >= 4"):
        PerfectMatchingPolytope(2)
    with pytest.raises(ValueError, match="n must be even"):
        PerfectMatchingPolytope(5)
    with pytest.raises(ValueError, match="Bethe"):
        matching_marginals(W, method="bp", entropy="trw")
    with pytest.raises(ValueError, match="even"):
        matching_marginals(W, graph="general")
    with pytest.raises(ValueError, match="symmetric"):
        matching_marginals(np.arange(16.0).reshape(4, 4), graph="general")
    with pytest.raises(ValueError, match="delta must be a number > 0 and <= 0.5"):
        matching_marginals(W, delta=0.0)
    with pytest.raises(ValueError, match="graph must be one of 'bipartite', 'general'"):
        matching_marginals(W, graph="tree")


def test_single_item():
    res = matching_marginals(np.array([[2.5]]))
    assert res.log_z == 2.5 and res.marginals[0, 0] == 1.0
    assert exact_matching_marginals(np.array([[2.5]]))[1] == pytest.approx(2.5)


def test_safeguarded_newton_finds_a_root_next_to_zero():
    """A line search of the Bethe free energy met by FW on a 3 x 3 W (7.5 N(0, 1)): three
    entries at 3.2e-14 grow and three at 1 - 6.5e-14 shrink along d, so phi' rises from
    -2.1 to 0 within 4e-14 and phi'' there is ~1e25 times larger than at gamma = 0.2. A stop on
    an absolute bracket width (tol * gamma_max) returned 0, a step that does not move and
    stalls FW; the root is 3.4e-14."""
    from scipy.optimize import brentq
    from fwcore.fw.linesearch import safeguarded_newton
    x = np.array([3.240764175572323e-14, 0.9999999999999352, 0.9999999999999353,
                  3.240764175572431e-14, 3.240764175572404e-14, 0.9999999999999352])
    d = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0]) * 0.9999999999999029
    energy = MatchingFreeEnergy(-1.191851204829213 / (d @ d) * d, rho=1.0)
    dphi = lambda t: energy.phi_derivatives(x, d, t)  # noqa: E731
    root = brentq(lambda t: dphi(t)[0], 0.0, 0.5, xtol=1e-30, rtol=1e-14)
    assert 1e-14 < root < 1e-13
    for tol, max_iter in [(1e-12, 200), (1e-10, 100)]:
        t = safeguarded_newton(dphi, dphi(0.0)[0], 1.0, tol=tol, max_iter=max_iter)
        assert 0 < t and t == pytest.approx(root, rel=1e-6)
    assert energy.line_search(x, d, 1.0) == pytest.approx(root, rel=1e-6)


def test_results_carry_the_shared_fields():
    W = np.random.default_rng(2).normal(size=(5, 5))
    for res, method in [(matching_marginals(W, tol=1e-6), "fw"),
                        (matching_marginals(W, entropy="trw", tol=1e-6), "fw"),
                        (bethe_bp(W, tol=1e-10), "bp"),
                        (matching_marginals(np.array([[1.0]])), "exact")]:
        assert res.method == method and res.status is Status.CONVERGED and res.time >= 0
        assert res.log_z_upper == res.log_z + res.gap and res.gap >= -1e-12
        assert res.certified == (res.rho <= 0.5 or method == "exact")
        cols = res.trace.columns()
        assert set(cols) >= {"iteration", "time", "primal", "gap", "n_oracle_calls"}
        assert cols["iteration"][-1] == res.n_iter
        if method == "fw":
            assert len(res.trace) == res.n_iter + 1                # the start and every step
            assert cols["n_oracle_calls"][-1] <= res.n_oracle_calls
            assert np.all(np.diff(cols["primal"]) <= 1e-12)        # exact line search descends
        if method == "bp":
            assert len(res.trace) == 1 and res.n_oracle_calls == 1
            assert cols["primal"][-1] == pytest.approx(-res.log_z) and cols["gap"][-1] == res.gap
