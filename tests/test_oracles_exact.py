"""Exact, LP and matching oracles, the portfolio and infer_map, against brute force."""
import itertools
import math
import sys
import time

import numpy as np
import pytest

from fwcore.generators import grid, random_grid
from fwcore.map import infer_map
from fwcore.model import PairwiseMRF
from fwcore.oracles.base import resolve_oracle
from fwcore.oracles.exact_oracles import Toulbar2Oracle
from fwcore.oracles.lp import LocalPolytopeLP
from fwcore.matching.oracles import max_weight_bipartite_matching, max_weight_perfect_matching
from fwcore.results import MapResult, Status

HAVE_TB2 = Toulbar2Oracle.is_available()
EXACT = ["bruteforce", "ilp", "elimination"] + (["toulbar2"] if HAVE_TB2 else [])


def enumerate_max(model, scores):
    """Reference: max over all assignments of <scores, mu(x)>."""
    xs = np.array(list(itertools.product(*[range(c) for c in model.card])))
    return float(model.score(xs, scores).max())


def random_model(seed, forest=False, binary=False, p_inf=0.15):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    card = np.full(n, 2) if binary else rng.integers(1, 4, n)
    if forest:
        edges = [(int(rng.integers(0, j)), j) for j in range(1, n) if rng.random() < 0.8]
    else:
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    model = PairwiseMRF(card, edges=edges)
    scores = rng.normal(scale=2.0, size=model.dim)
    scores[rng.random(model.dim) < p_inf] = -np.inf
    return model, scores


def same(a, b, tol=1e-7):
    return a == b or math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# -- exact oracles vs enumeration -----------------------------------------------------

@pytest.mark.parametrize("method", EXACT + ["tree"])
@pytest.mark.parametrize("binary", [True, False])
def test_exact_oracles_match_enumeration(method, binary):
    for seed in range(25):
        model, scores = random_model(seed, forest=(method == "tree"), binary=binary)
        oracle = resolve_oracle(method, model)
        for s in (scores, -np.abs(scores)):             # the oracle is reused across calls
            opt = enumerate_max(model, s)
            x = oracle.argmax(s)
            assert x.dtype == np.int32 and x.shape == (model.n_vars,)
            assert same(float(model.score(x, s)), opt), (method, seed)
            bound = oracle.upper_bound()
            assert bound is not None and (bound >= opt - 1e-9 or opt == bound == -np.inf)
            assert oracle.status is Status.CONVERGED
        assert oracle.n_calls == 2


@pytest.mark.parametrize("method", EXACT + ["tree", "lp"])
def test_all_forbidden_gives_minus_inf(method):
    model = PairwiseMRF([2, 3], edges=[(0, 1)])
    scores = np.zeros(model.dim)
    scores[model.edge_off[0]:] = -np.inf                 # every edge state impossible
    oracle = resolve_oracle(method, model)
    x = oracle.argmax(scores)
    assert model.score(x, scores) == -np.inf and oracle.upper_bound() == -np.inf


def test_tree_on_forest_with_isolated_vertices():
    model = PairwiseMRF([3, 2, 4, 2, 3, 1], edges=[(0, 2), (2, 3), (1, 4)])
    rng = np.random.default_rng(3)
    scores = rng.normal(size=model.dim)
    x = resolve_oracle("tree", model).argmax(scores)
    assert same(float(model.score(x, scores)), enumerate_max(model, scores))


def test_ilp_bound_with_gap_is_valid():
    model = random_grid(4, 4, coupling=3.0, seed=2)
    oracle = resolve_oracle("ilp", model, mip_rel_gap=0.5, time_limit=30)
    x = oracle.argmax(model.theta)
    opt = infer_map(model, "bruteforce").score
    assert oracle.upper_bound() >= opt - 1e-9 and model.score(x) <= opt + 1e-9


@pytest.mark.skipif(not HAVE_TB2,
                    reason="pytoulbar2 not installed (pip install 'fwcore[toulbar2]')")
def test_toulbar2_coarse_scale_bound_still_valid():
    for seed in range(10):
        model, scores = random_model(seed)
        opt = enumerate_max(model, scores)
        oracle = resolve_oracle("toulbar2", model, scale=3.0)     # heavy rounding of costs
        x = oracle.argmax(scores)
        assert float(model.score(x, scores)) >= opt - 2 * (model.n_vars + model.n_edges) / 3.0
        assert oracle.upper_bound() >= opt - 1e-9 or opt == -np.inf


def test_toulbar2_missing_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "pytoulbar2", None)   # import now raises ImportError
    assert not Toulbar2Oracle.is_available()
    with pytest.raises(ValueError, match=r"fwcore\[toulbar2\]"):
        resolve_oracle("toulbar2", PairwiseMRF([2, 2], edges=[(0, 1)]))


# -- local-polytope LP ----------------------------------------------------------------

def check_in_local_polytope(model, mu):
    nodes, edges = model.split_marginals(mu)
    assert (mu >= -1e-9).all()
    for p in nodes:
        assert np.isclose(p.sum(), 1.0)
    for e, (i, j) in enumerate(model.edges):
        assert np.allclose(edges[e].sum(axis=1), nodes[i], atol=1e-8)
        assert np.allclose(edges[e].sum(axis=0), nodes[j], atol=1e-8)


def test_lp_integral_and_optimal_on_trees():
    for seed in range(25):
        model, scores = random_model(seed, forest=True, p_inf=0.0)
        scores = np.round(scores)                         # ties: a vertex is still integral
        lp = LocalPolytopeLP(model)
        mu = lp.argmax_marginals(scores)
        opt = enumerate_max(model, scores)
        assert np.allclose(mu, np.round(mu), atol=1e-9)
        x = lp.argmax(scores)
        assert (np.allclose(mu, model.marginal_vector(x), atol=1e-9) or
                same(float(mu @ scores), opt))
        assert same(float(model.score(x, scores)), opt) and same(lp.upper_bound(), opt)


def test_lp_is_a_relaxation():
    for seed in range(25):
        model, scores = random_model(seed)
        lp = LocalPolytopeLP(model)
        mu = lp.argmax_marginals(scores)
        opt = enumerate_max(model, scores)
        if lp.upper_bound() == -np.inf:                   # L itself has no finite point
            assert opt == -np.inf
            continue
        check_in_local_polytope(model, mu)
        assert lp.upper_bound() >= opt - 1e-7 or opt == -np.inf
        finite = np.isfinite(scores)
        assert (mu[~finite] == 0).all()
        assert same(float(mu[finite] @ scores[finite]), lp.upper_bound(), tol=1e-6)


def test_lp_fractional_on_frustrated_triangle():
    # three binary variables, each edge rewards disagreement: MAP = 2, L optimum = 3 at 1/2
    table = np.array([[0.0, 1.0], [1.0, 0.0]])
    model = PairwiseMRF([2, 2, 2], edges=[(0, 1), (1, 2), (0, 2)], pairwise=[table] * 3)
    lp = LocalPolytopeLP(model)
    mu = lp.argmax_marginals(model.theta)
    assert np.isclose(lp.upper_bound(), 3.0) and enumerate_max(model, model.theta) == 2.0
    assert np.allclose(mu[:6], 0.5)


# -- matchings ------------------------------------------------------------------------

def test_bipartite_matching_vs_permutations():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 6))
        W = rng.normal(size=(n, n))
        W[rng.random((n, n)) < 0.3] = -np.inf
        perms = [p for p in itertools.permutations(range(n))
                 if np.isfinite(W[np.arange(n), p]).all()]
        if not perms:
            with pytest.raises(ValueError, match="no perfect matching"):
                max_weight_bipartite_matching(W)
            continue
        mate, weight = max_weight_bipartite_matching(W)
        assert sorted(mate) == list(range(n))
        best = max(W[np.arange(n), p].sum() for p in perms)
        assert same(weight, best) and same(W[np.arange(n), mate].sum(), best)


def all_perfect_matchings(vertices):
    if not vertices:
        yield []
        return
    i = vertices[0]
    for k in range(1, len(vertices)):
        rest = vertices[1:k] + vertices[k + 1:]
        for m in all_perfect_matchings(rest):
            yield [(i, vertices[k])] + m


@pytest.mark.parametrize("kind", ["normal", "integer", "ties"])
def test_general_matching_vs_brute_force(kind):
    rng = np.random.default_rng(["normal", "integer", "ties"].index(kind))
    for _ in range(60):
        n = 2 * int(rng.integers(1, 6))                  # n <= 10
        if kind == "normal":
            W = rng.normal(size=(n, n))
        elif kind == "integer":
            W = rng.integers(-5, 6, size=(n, n)).astype(float)
        else:
            W = rng.integers(0, 2, size=(n, n)) * 100.0
        W = W + W.T
        mate, weight = max_weight_perfect_matching(W)
        assert (mate[mate] == np.arange(n)).all() and (mate != np.arange(n)).all()
        best = max(sum(W[i, j] for i, j in m) for m in all_perfect_matchings(list(range(n))))
        assert same(weight, best, tol=1e-9)
        assert same(W[np.arange(n), mate].sum() / 2, best, tol=1e-9)


def test_general_matching_vs_networkx():
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(7)
    for n in (12, 20, 40):
        W = rng.normal(size=(n, n))
        W = W + W.T
        _, weight = max_weight_perfect_matching(W)
        g = nx.Graph()
        g.add_weighted_edges_from((i, j, W[i, j]) for i in range(n) for j in range(i + 1, n))
        ref = nx.max_weight_matching(g, maxcardinality=True)
        assert len(ref) == n // 2 and same(weight, sum(W[i, j] for i, j in ref), tol=1e-9)


def test_matching_errors():
    with pytest.raises(ValueError, match="even"):
        max_weight_perfect_matching(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        max_weight_perfect_matching(np.arange(4.0).reshape(2, 2))
    with pytest.raises(ValueError, match="finite"):
        max_weight_perfect_matching(np.full((2, 2), -np.inf))
    with pytest.raises(ValueError, match="NaN"):
        max_weight_bipartite_matching(np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="more rows"):
        max_weight_bipartite_matching(np.zeros((3, 2)))


# -- portfolio and infer_map ----------------------------------------------------------

@pytest.mark.parametrize("threads", [False, True])
def test_portfolio_keeps_best_and_min_bound(threads):
    model, scores = random_model(5, p_inf=0.0)
    worst = np.zeros(model.n_vars, dtype=int)
    members = [lambda s: worst, "lp", "ilp", lambda s: worst]
    oracle = resolve_oracle("portfolio", model, members=members, threads=threads)
    x = oracle.argmax(scores)
    opt = enumerate_max(model, scores)
    assert same(float(model.score(x, scores)), opt)
    assert oracle.best == "ilp" or same(oracle.member_scores[oracle.best], opt)
    assert same(oracle.upper_bound(), opt)             # min of the LP and ILP bounds
    assert set(oracle.member_scores) == {"function0", "lp", "ilp", "function3"}


def test_portfolio_default_members_or_clear_error():
    model = random_grid(3, 3, seed=0)
    try:
        oracle = resolve_oracle("portfolio", model)
    except ValueError as err:
        assert "members" in str(err)
        return
    x = oracle.argmax(model.theta)
    assert model.score(x) == max(oracle.member_scores.values())


def test_infer_map_fields_and_auto():
    tree_model, _ = random_model(1, forest=True)
    tiny = random_grid(2, 3, seed=1)
    small = random_grid(5, 5, seed=1)
    # over AUTO_ELIMINATION_VARS variables; attractive, so the ILP is solved at its root
    big = grid(33, 33, unary=np.random.default_rng(0).normal(size=(33 * 33, 2)),
               pairwise=np.eye(2))
    big_exact = "toulbar2" if HAVE_TB2 else "ilp"
    for model, method, expected in ((tree_model, "auto", "tree"), (tiny, "auto", "bruteforce"),
                                    (big, "exact", big_exact), (big, "auto", "portfolio"),
                                    (small, "auto", "elimination")):
        res = infer_map(model, method, max_time=30)
        assert isinstance(res, MapResult) and res.method == expected
        assert res.assignment.shape == (model.n_vars,) and res.time >= 0
        assert same(res.score, float(model.score(res.assignment)))
        assert res.status is Status.CONVERGED
        # toulbar2 solves integer costs: its bound is widened by the rounding, (n + E) / scale
        assert res.optimal or (expected == "toulbar2" and res.gap <= 1e-6 * abs(res.score))
    assert same(infer_map(small, "toulbar2" if HAVE_TB2 else "ilp").score, res.score)
    lp = infer_map(small, "lp")
    assert lp.upper_bound >= res.score - 1e-7 and lp.score <= res.score + 1e-9


def test_errors():
    cycle = random_grid(2, 2, seed=0)
    with pytest.raises(ValueError, match="unknown oracle 'nope'.*auto.*ilp"):
        infer_map(cycle, "nope")
    with pytest.raises(ValueError, match="cycle.*ilp"):
        resolve_oracle("tree", cycle)
    with pytest.raises(ValueError, match="max_states"):
        resolve_oracle("bruteforce", random_grid(5, 5, seed=0))
    with pytest.raises(ValueError, match="max_time"):
        infer_map(cycle, max_time=-1)
    with pytest.raises(ValueError, match="time_limit"):  # its deprecated alias
        infer_map(cycle, time_limit=-1)
    with pytest.raises(ValueError, match="mip_rel_gap"):
        resolve_oracle("ilp", cycle, mip_rel_gap=2)
    with pytest.raises(TypeError, match="unknown option gap for oracle 'ilp'; its options: "
                                        "time_limit, mip_rel_gap, memory_limit"):
        resolve_oracle("ilp", cycle, gap=0.1)
    with pytest.raises(ValueError, match="length 24"):
        resolve_oracle("ilp", cycle).argmax(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        resolve_oracle("tree", PairwiseMRF([2])).argmax(np.array([0.0, np.nan]))
    with pytest.raises(TypeError, match="PairwiseMRF"):
        resolve_oracle("lp", "model")


# -- reference instances --------------------------------------------------------------

UAI = ["Grids_12", "DBN_14", "Segmentation_11", "Segmentation_12", "CSP_11",
       "ObjectDetection_11", "pdb1akg"]
TIME_LIMIT = 20.0


@pytest.mark.parametrize("name", UAI)
def test_reference_map_scores(instances, name):
    from fwcore.io.uai import read_map, read_uai
    path = instances / "uai2014" / f"{name}.uai"
    model = read_uai(path)
    ref = float(model.score(read_map(f"{path}.MAP")))
    methods = EXACT[1:] + (["tree"] if model.n_edges == model.n_vars - model.n_components()
                           else [])
    unfinished = []
    for method in methods:
        options = {"time_limit": TIME_LIMIT} if method in ("ilp", "toulbar2") else {}
        try:
            oracle = resolve_oracle(method, model, **options)
        except ValueError as err:  # elimination whose tables exceed its memory_limit
            assert method == "elimination" and "memory_limit" in str(err)
            continue
        x = oracle.argmax(model.theta)
        bound = oracle.upper_bound()
        assert bound is None or bound >= ref - 1e-6 * max(1.0, abs(ref)), method
        if oracle.status is Status.MAX_TIME:
            unfinished.append(method)
            continue
        assert same(float(model.score(x)), ref, tol=1e-9), method
    if unfinished:
        pytest.skip(f"{', '.join(unfinished)} did not finish {name} within {TIME_LIMIT} s")


# -- enumeration over a binary vertex cover (issue 14: exact calls on RBMs) ---------------

def bipartite_model(seed, n_cover, n_free, max_card=3, p_inf=0.1):
    """Complete bipartite: n_cover binary variables, n_free with 1..max_card states."""
    rng = np.random.default_rng(seed)
    card = np.concatenate([np.full(n_cover, 2), rng.integers(1, max_card + 1, n_free)])
    edges = [(i, n_cover + j) for i in range(n_cover) for j in range(n_free)]
    model = PairwiseMRF(card, edges=edges)
    scores = rng.normal(scale=2.0, size=model.dim)
    scores[rng.random(model.dim) < p_inf] = -np.inf
    return model, scores


def test_cover_matches_enumeration():
    for seed in range(40):
        model, scores = (random_model(seed, binary=True) if seed % 2 else
                         bipartite_model(seed, int(seed % 5), 3))
        oracle = resolve_oracle("cover", model)
        for s in (scores, -np.abs(scores)):
            opt = enumerate_max(model, s)
            x = oracle.argmax(s)
            assert same(float(model.score(x, s)), opt), seed
            assert oracle.status is Status.CONVERGED and oracle.upper_bound() == model.score(x, s)


def test_cover_past_the_resync_matches_elimination():
    # 2^14 cover states: the incremental sums are recomputed every 4096 Gray steps
    model, scores = bipartite_model(3, 14, 4, p_inf=0.05)
    cover, elim = resolve_oracle("cover", model), resolve_oracle("elimination", model)
    assert cover.cover.size == 14
    for s in (scores, np.random.default_rng(1).normal(size=model.dim) * 3):
        assert same(float(model.score(cover.argmax(s), s)),
                    float(model.score(elim.argmax(s), s)))


def test_cover_time_limit_returns_a_labelling_without_bound():
    model, scores = bipartite_model(0, 26, 2, p_inf=0.0)
    oracle = resolve_oracle("cover", model)
    x = oracle.argmax(scores, time_limit=0.02)
    assert oracle.status is Status.MAX_TIME and oracle.upper_bound() is None
    assert np.isfinite(model.score(x, scores))


def test_cover_refuses_large_or_non_binary_covers():
    with pytest.raises(ValueError, match="max_cover=3"):
        resolve_oracle("cover", bipartite_model(0, 4, 4, max_card=2)[0], max_cover=3)
    triangle = PairwiseMRF([3, 3, 3], edges=[(0, 1), (1, 2), (0, 2)])
    with pytest.raises(ValueError, match="non-binary"):
        resolve_oracle("cover", triangle)
    with pytest.raises(ValueError, match="max_cover"):
        resolve_oracle("cover", triangle, max_cover=-1)


def test_bruteforce_keeps_its_time_limit_with_the_best_state_so_far():
    # 2**24 states (about 10 s to enumerate): a 0.2 s limit stops between chunks
    model = random_grid(4, 6, coupling=1.0, seed=0)
    oracle = resolve_oracle("bruteforce", model, max_states=2**30)
    t0 = time.perf_counter()
    x = oracle.argmax(model.theta, time_limit=0.2)
    assert time.perf_counter() - t0 < 2.0 and oracle.status is Status.MAX_TIME
    assert oracle.upper_bound() is None and np.isfinite(model.score(x))
    small = random_grid(3, 3, coupling=1.0, seed=0)  # complete within the limit: exact
    exact = resolve_oracle("bruteforce", small)
    y = exact.argmax(small.theta, time_limit=10.0)
    assert exact.status is Status.CONVERGED and exact.upper_bound() == small.score(y)
    assert small.score(y) == infer_map(small, "elimination").score
