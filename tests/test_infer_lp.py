"""infer_lp: the MAP LP-relaxation solvers of Smooth and Strong, against exact answers
(trees, brute force) and the local-polytope LP solved by HiGHS."""
import itertools

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from fwcore import generators
from fwcore.exact import exact_map
from fwcore.lp_relax import METHODS, CardinalityFactor, Factor, infer_lp, primal
from fwcore.lp_relax.local import l2max
from fwcore.lp_relax.examples import kolmogorov_example
from fwcore.lp_relax.regions import Regions
from fwcore.model import PairwiseMRF
from fwcore.oracles.lp import LocalPolytopeLP
from fwcore.results import Status

# (gamma, reg, max_iter, bound tolerance) per method on trees
TREE_SETTINGS = {
    "subgradient": (None, None, 300, 1e-6),
    "mplp": (None, None, 50, 1e-9),
    "softmax-cd": (0.05, None, 50, 1e-9),
    "softmax-gd": (0.05, None, 800, 1e-6),
    "softmax-agd": (0.05, None, 300, 1e-6),
    "l2-gd": (0.05, None, 800, 1e-6),
    "l2-agd": (0.05, None, 300, 1e-6),
    "bcfw": (None, 0.05, 300, 5e-3),
    "smooth-strong-agd": (0.05, 0.05, 200, 1e-6),
    "sdca": (0.05, 0.05, 300, 1e-3),
}


def random_tree(seed, n=7, max_card=3):
    rng = np.random.default_rng(seed)
    card = rng.integers(2, max_card + 1, size=n)
    edges = [(int(rng.integers(0, v)), v) for v in range(1, n)]
    unary = [rng.normal(size=c) for c in card]
    pairwise = [2 * rng.normal(size=(card[i], card[j])) for i, j in edges]
    return PairwiseMRF(card, unary, edges, pairwise)


def lp_optimum(model):
    oracle = LocalPolytopeLP(model)
    oracle.argmax_marginals(model.theta)
    return oracle.upper_bound()


def test_methods_table_is_complete():
    assert set(TREE_SETTINGS) == set(METHODS)


@pytest.mark.parametrize("method", list(TREE_SETTINGS))
def test_tree_decodes_exact_map_and_bound_converges(method):
    gamma, reg, max_iter, bound_tol = TREE_SETTINGS[method]
    kw = {k: v for k, v in (("gamma", gamma), ("reg", reg)) if v is not None}
    for seed in range(2):
        model = random_tree(seed)
        opt = exact_map(model)
        res = infer_lp(model, method=method, max_iter=max_iter, tol=1e-9, **kw)
        assert res.score == pytest.approx(opt.score, abs=1e-9)
        assert res.score == pytest.approx(model.score(res.assignment))
        assert (opt.score - 1e-9 <= res.upper_bound
                <= opt.score + bound_tol * max(1.0, abs(opt.score)))
        cols = res.trace.columns()
        assert cols["primal"].shape == cols["bound"].shape == cols["score"].shape == (res.n_iter,)
        assert np.all(np.diff(cols["bound"]) <= 0) and np.all(np.diff(cols["score"]) >= 0)
        np.testing.assert_array_equal(cols["gap"], cols["bound"] - cols["score"])
        assert cols["bound"][-1] == res.upper_bound and cols["score"][-1] == res.score


@pytest.mark.parametrize("seed", range(3))
def test_smoothed_optima_respect_sandwich_bounds(seed):
    """eq. 5 for soft-max, and g* - qγ/2 <= g̃* <= g* for the L2 dual (Sec. 4.2), with g*
    the LP optimum from HiGHS; every iterate's g(δ) bounds the LP from above."""
    model = generators.potts_grid(3, 3, n_labels=3, coupling=2.0, seed=seed)
    lp = lp_optimum(model)
    gamma = 0.5
    l2 = infer_lp(model, method="l2-agd", gamma=gamma, max_iter=3000, tol=1e-10)
    width = l2.info["smoothing_width"]
    assert width == pytest.approx(0.5 * gamma * (model.n_vars + model.n_edges))
    assert lp - 1e-6 <= l2.objective <= lp + width + 1e-6           # shifted: g* <= g̃* + qγ/2
    assert l2.objective - width <= lp + 1e-6                        # unshifted: g̃* <= g*
    assert l2.objective - width >= lp - width - 1e-6
    soft = infer_lp(model, method="softmax-cd", gamma=gamma, max_iter=3000, tol=1e-12)
    log_w = (np.log(model.card).sum()
             + sum(np.log(model.card[i] * model.card[j]) for i, j in model.edges))
    assert soft.info["smoothing_width"] == pytest.approx(gamma * log_w)
    assert lp - 1e-6 <= soft.objective <= lp + gamma * log_w + 1e-6
    # the soft-max and L2 duals (and the smooth-and-strong pair) meet their own optima
    agd = infer_lp(model, method="softmax-agd", gamma=gamma, max_iter=3000, tol=1e-10)
    assert agd.objective == pytest.approx(soft.objective, abs=1e-5)
    for res in (l2, soft, agd):
        assert lp - 1e-7 <= res.trace.columns()["bound"].min() and res.score <= lp + 1e-7


def test_smooth_and_strong_primal_meets_dual():
    """SDCA (primal, Sec. 4.3) and AGD on the smooth-and-strong dual reach one value,
    and the BCFW duality gap closes (Alg. 1)."""
    model = generators.random_grid(3, 3, coupling=1.0, seed=4)
    lp = lp_optimum(model)
    agd = infer_lp(model, method="smooth-strong-agd", gamma=0.5, reg=0.5, max_iter=4000, tol=1e-11)
    sdca = infer_lp(model, method="sdca", gamma=0.5, reg=0.5, max_iter=4000, tol=1e-9)
    assert sdca.objective == pytest.approx(agd.objective, abs=1e-4)
    assert sdca.measure <= 1e-6
    short = infer_lp(model, method="bcfw", reg=0.1, max_iter=100, tol=0.0)
    bcfw = infer_lp(model, method="bcfw", reg=0.1, max_iter=2000, tol=0.0)
    # infer_lp stops once the bound meets the score (after about 350 passes, where the
    # last bits of rounding decide); the solver itself runs all 2000 passes
    steps = primal.primal_solver(Regions(model), "bcfw", 0.1, 0.0, "sort", 0)
    gap = [next(steps)[3] for _ in range(2000)]
    assert gap[-1] <= 1e-2 and gap[-1] < 0.2 * gap[99] and gap[99] == pytest.approx(short.measure)
    # eq. 9: the strongly convex optimum (between f(μ) and f(μ) + gap) lies above the LP's
    assert bcfw.objective * (1 + bcfw.measure) >= lp - 1e-9
    for res in (agd, sdca, bcfw):
        assert res.upper_bound >= lp - 1e-7


def test_pivot_and_sort_projection_agree():
    model = generators.potts_grid(3, 3, n_labels=3, seed=5)
    a = infer_lp(model, method="l2-agd", gamma=0.1, max_iter=60, projection="sort")
    b = infer_lp(model, method="l2-agd", gamma=0.1, max_iter=60, projection="pivot")
    np.testing.assert_allclose(a.trace.columns()["primal"], b.trace.columns()["primal"], rtol=1e-10)


def test_simplex_projection_matches_qp():
    """u = argmax_{u ∈ Δ} uᵀh - γ/2‖u‖² (eq. 11) against SLSQP; -inf entries get 0."""
    rng = np.random.default_rng(0)
    for projection in ("sort", "pivot"):
        for width, scale, gamma in [(1, 1.0, 1.0), (4, 1.0, 0.5), (7, 10.0, 0.1), (9, 0.01, 2.0)]:
            h = scale * rng.normal(size=(3, width))
            value, u = l2max(h, gamma, projection)
            for r in range(3):
                qp = minimize(lambda v: -(v @ h[r] - 0.5 * gamma * v @ v),
                              np.full(width, 1 / width), jac=lambda v: -(h[r] - gamma * v),
                              bounds=[(0, None)] * width,
                              constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1}],
                              method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
                np.testing.assert_allclose(u[r], qp.x, atol=1e-6)
                assert value[r] == pytest.approx(-qp.fun, abs=1e-8)
        h = np.array([[0.3, -np.inf, 0.1, -np.inf]])
        value, u = l2max(h, 0.5, projection)
        np.testing.assert_allclose(u, [[0.7, 0.0, 0.3, 0.0]], atol=1e-12)
        assert np.isfinite(value).all()


def _brute_cardinality(f, scores):
    m = f.scope.size
    xs = np.array(list(itertools.product([0, 1], repeat=m)))
    vals = f.table[xs.sum(axis=1)] + scores[np.arange(m), xs].sum(axis=1)
    mm = np.array([[vals[xs[:, i] == k].max() for k in (0, 1)] for i in range(m)])
    return vals.max(), mm


@pytest.mark.parametrize("seed", range(25))
def test_cardinality_factor_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 9))
    f = CardinalityFactor(np.arange(m), s0=rng.uniform(0, m), t=rng.uniform(0, m / 3),
                          weight=rng.uniform(0.1, 3))
    scores = rng.normal(size=(m, 2)) * rng.choice([0.1, 1, 5])
    if seed % 5 == 0:
        scores = np.round(scores)   # ties
    best, mm = _brute_cardinality(f, scores)
    x = f.maximize(scores)
    assert f.potential(x) + scores[np.arange(m), x].sum() == pytest.approx(best)
    np.testing.assert_allclose(f.max_marginals(scores), mm, atol=1e-12)
    # the generic clamping fallback of Factor agrees too
    np.testing.assert_allclose(Factor.max_marginals(f, scores), mm, atol=1e-12)


def _lp_with_factor(model, f):
    """Local-polytope LP with the cardinality factor's states enumerated (tiny models)."""
    n, E = model.n_vars, model.n_edges
    xs = np.array(list(itertools.product([0, 1], repeat=n)))
    nv, ne, nc = 2 * n, 4 * E, xs.shape[0]
    c = np.concatenate([model.theta, f.table[xs.sum(axis=1)]])
    rows = []
    for i in range(n):
        r = np.zeros(nv + ne + nc)
        r[2 * i:2 * i + 2] = 1
        rows.append((r, 1.0))
        for k in (0, 1):
            r = np.zeros(nv + ne + nc)
            r[nv + ne:][xs[:, i] == k] = 1
            r[2 * i + k] -= 1
            rows.append((r, 0.0))
    for e, (i, j) in enumerate(model.edges):
        for k in (0, 1):
            r = np.zeros(nv + ne + nc)
            r[nv + 4 * e + 2 * k:nv + 4 * e + 2 * k + 2] = 1
            r[2 * i + k] -= 1
            rows.append((r, 0.0))
            r = np.zeros(nv + ne + nc)
            r[[nv + 4 * e + k, nv + 4 * e + 2 + k]] = 1
            r[2 * j + k] -= 1
            rows.append((r, 0.0))
    a, b = np.array([r for r, _ in rows]), np.array([v for _, v in rows])
    res = linprog(-c, A_eq=a, b_eq=b, bounds=(0, None), method="highs")
    best = max(model.score(x) + f.potential(x) for x in xs)
    return -res.fun, best


def test_global_cardinality_factor_methods():
    model = generators.random_grid(2, 4, coupling=1.5, field=1.0, seed=7)
    f = CardinalityFactor(np.arange(8), s0=2.0, t=0.5, weight=2.0)
    lp, best = _lp_with_factor(model, f)
    for method, kw, tol in [("subgradient", {}, 2e-2), ("mplp", {}, None),
                            ("bcfw", {"reg": 0.01}, 5e-2)]:
        res = infer_lp(model, method=method, factors=[f], max_iter=2000, tol=1e-9, **kw)
        assert res.score == pytest.approx(model.score(res.assignment) + f.potential(res.assignment))
        assert res.score <= best + 1e-9 and res.upper_bound >= lp - 1e-7
        if tol is not None:
            assert res.upper_bound <= lp + tol * max(1.0, abs(lp))


def test_kolmogorov_example_mplp_stalls_smoothing_converges():
    """Smooth and Strong Fig. 1 in miniature: MPLP stays at δ = 0 on an arc-consistent
    model whose LP optimum is lower; the smoothed methods go below the stalled value."""
    model = kolmogorov_example(1)
    lp = lp_optimum(model)
    mplp = infer_lp(model, method="mplp", max_iter=50)
    assert mplp.status is Status.STALLED and mplp.upper_bound > lp + 0.5
    soft = infer_lp(model, method="softmax-agd", gamma=0.01, max_iter=2000)
    assert soft.upper_bound < lp + 0.05


def test_stops_on_callback_and_time_with_best_assignment():
    model = generators.random_grid(6, 6, coupling=3.0, seed=2)
    seen = []
    res = infer_lp(model, method="subgradient", max_iter=100, tol=0.0,
                   callback=lambda it: seen.append(it) or it.iteration < 3)
    assert res.status is Status.INTERRUPTED and res.n_iter == 3 and len(seen) == 3
    assert (res.score == res.trace.columns()["score"].max()
            == pytest.approx(model.score(res.assignment)))
    assert seen == list(res.trace) and seen[-1].bound == res.upper_bound
    res = infer_lp(model, method="bcfw", max_iter=10**6, tol=0.0, max_time=0.05)
    assert res.status is Status.MAX_TIME and res.n_iter >= 1
    assert res.score == pytest.approx(model.score(res.assignment))


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"method": "trws"}, ValueError, "method must be one of 'subgradient', 'mplp'"),
    ({"method": "l2-agd", "gamma": 0.0}, ValueError, "gamma must be a number > 0"),
    ({"method": "bcfw", "reg": -1.0}, ValueError, "reg must be a number > 0"),
    ({"method": "sdca", "gamma": "1"}, TypeError, "gamma must be a number > 0; got str"),
    ({"max_iter": 0}, ValueError, "max_iter must be an integer >= 1"),
    ({"max_iter": 2.5}, ValueError, "max_iter must be an integer >= 1"),
    ({"tol": np.nan}, ValueError, "tol must be a number >= 0"),
    ({"max_time": 0}, ValueError, "max_time must be a number > 0 or None"),
    ({"callback": 3}, TypeError, "callback must be a callable or None"),
    ({"projection": "fast"}, ValueError, "projection must be one of 'sort', 'pivot'"),
    ({"seed": "x"}, TypeError, "seed must be an int >= 0 or None"),
    ({"method": "l2-agd", "factors": [CardinalityFactor([0, 1], 1)]}, ValueError,
     "with factors use one of subgradient, mplp, bcfw"),
    ({"factors": [object()]}, TypeError, "factors\\[0\\] must be a fwcore Factor"),
    ({"factors": [CardinalityFactor([0, 9], 1)]}, ValueError, "scope indexes variable 9"),
])
def test_bad_arguments(kwargs, exc, match):
    model = generators.random_grid(2, 2, seed=0)
    with pytest.raises(exc, match=match):
        infer_lp(model, **kwargs)


def test_bad_models_and_factors():
    with pytest.raises(TypeError, match="model must be a fwcore.PairwiseMRF"):
        infer_lp(np.zeros(3))
    ternary = generators.potts_grid(2, 2, n_labels=3, seed=0)
    with pytest.raises(ValueError, match="scope must hold binary variables"):
        infer_lp(ternary, factors=[CardinalityFactor([0, 1], 1)])
    with pytest.raises(ValueError, match="s0 must be"):
        CardinalityFactor([0, 1], -1)
    with pytest.raises(ValueError, match="scope must not repeat"):
        CardinalityFactor([0, 0], 1)
    dead = PairwiseMRF([2], [[-np.inf, -np.inf]])
    with pytest.raises(ValueError, match="no feasible assignment"):
        infer_lp(dead)


def test_impossible_states_are_never_decoded():
    model = generators.potts_grid(3, 3, n_labels=3, seed=1)
    theta = model.theta.copy()
    theta[model.node_off[4]] = -np.inf          # variable 4 cannot take state 0
    model = model.with_theta(theta)
    opt = exact_map(model)
    for method in METHODS:
        res = infer_lp(model, method=method, max_iter=200)
        assert np.isfinite(res.score) and res.assignment[4] != 0
        assert (res.upper_bound >= opt.score - 1e-9
                and np.isfinite(res.trace.columns()["primal"]).all())


def test_protein_instance(instances):
    from fwcore.io.uai import read_map, read_uai
    path = instances / "uai2014" / "pdb1akg.uai"
    if not path.exists():
        pytest.skip(f"{path} not found")
    model = read_uai(path)
    ref = model.score(read_map(str(path) + ".MAP"))
    res = infer_lp(model, method="mplp", max_iter=200)
    # a forest: the LP is tight, so coordinate descent certifies the MAP
    assert (res.score == pytest.approx(ref, abs=1e-6)
            and res.upper_bound == pytest.approx(ref, abs=1e-6))


def test_regions_reparameterisation_keeps_scores():
    """Σ_r θ̂_r(x_r) = score(x) for any δ (eq. 2 reparameterises), on a model with mixed
    cardinalities (every table at its own size)."""
    rng = np.random.default_rng(3)
    card = [2, 5, 3, 1, 4]
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (1, 4)]
    model = PairwiseMRF(card, [rng.normal(size=c) for c in card], edges,
                        [rng.normal(size=(card[i], card[j])) for i, j in edges])
    regions = Regions(model)
    d = rng.normal(size=regions.n_messages)
    hn, he = regions.node_hat(d), regions.edge_hat(d)
    assert hn.size == sum(card) and he.size == model.dim - sum(card)
    for _ in range(5):
        x = np.array([rng.integers(c) for c in card])
        i, j = regions.ends
        total = (hn[regions.node_off[:-1] + x].sum()
                 + he[regions.edge_off[:-1] + x[i] * regions.card[j] + x[j]].sum())
        assert total == pytest.approx(model.score(x))


@pytest.mark.parametrize("method", list(METHODS))
def test_edgeless_model_is_solved_exactly(method):
    model = PairwiseMRF([2, 3], [[0.0, 1.0], [2.0, 0.0, 1.0]])
    res = infer_lp(model, method=method, max_iter=20)
    assert res.status is Status.CONVERGED and res.score == res.upper_bound == 3.0
    np.testing.assert_array_equal(res.assignment, [1, 0])


def test_result_carries_the_shared_fields():
    model = generators.random_grid(3, 3, coupling=1.0, seed=1)
    res = infer_lp(model, method="bcfw", reg=0.1, max_iter=7, tol=0.0)
    assert res.status is Status.MAX_ITER and res.n_iter == len(res.trace) == 7
    assert res.method == "bcfw" and res.n_oracle_calls == 0 and res.time > 0
    assert res.certified and res.gap == res.upper_bound - res.score >= -1e-9
    assert res.info["reg"] == 0.1 and res.info["gamma"] is None
    cols = res.trace.columns()
    np.testing.assert_array_equal(cols["iteration"], np.arange(1, 8))
    assert np.all(np.diff(cols["time"]) >= 0) and cols["primal"][-1] == res.objective
    assert np.isnan(cols["delta"]).all()


def mixed_loopy(seed, n=6):
    """A loopy model with cardinalities 1 to 5 (every table at its own size)."""
    rng = np.random.default_rng(seed)
    card = rng.integers(1, 6, size=n)
    edges = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.6]
    unary = [rng.normal(size=c) for c in card]
    pairwise = [2 * rng.normal(size=(card[i], card[j])) for i, j in edges]
    return PairwiseMRF(card, unary, edges, pairwise)


# (gamma, reg, max_iter, distance of the best bound from the LP optimum, relative)
MIXED_SETTINGS = {
    "subgradient": (None, None, 1000, 1e-3),
    "mplp": (None, None, 200, None),      # may stall above the LP optimum
    "softmax-cd": (0.01, None, 1000, 1e-3),
    "softmax-gd": (0.1, None, 1000, 1e-3),
    "softmax-agd": (0.01, None, 1000, 1e-3),
    "l2-gd": (0.1, None, 1000, 1e-3),
    "l2-agd": (0.01, None, 1000, 1e-3),
    "bcfw": (None, 0.1, 1000, 1e-2),
    "smooth-strong-agd": (0.01, 0.01, 1000, 1e-3),
    "sdca": (0.01, 0.01, 1000, 1e-3),
}


@pytest.mark.parametrize("method", list(MIXED_SETTINGS))
def test_mixed_cardinality_bounds_meet_the_lp_optimum(method):
    assert set(MIXED_SETTINGS) == set(METHODS)
    """On loopy models whose cardinalities differ (1 to 5 states), every bound is at least
    the LP optimum from HiGHS and each convergent method's best bound comes close to it."""
    gamma, reg, max_iter, rel = MIXED_SETTINGS[method]
    kw = {k: v for k, v in (("gamma", gamma), ("reg", reg)) if v is not None}
    for seed in range(3):
        model = mixed_loopy(seed)
        lp = lp_optimum(model)
        res = infer_lp(model, method=method, max_iter=max_iter, tol=1e-9, **kw)
        assert res.upper_bound >= lp - 1e-7 * max(1.0, abs(lp))
        assert res.score <= lp + 1e-7 * max(1.0, abs(lp))
        assert res.score == pytest.approx(model.score(res.assignment))
        if rel is not None:
            assert res.upper_bound - lp <= rel * max(1.0, abs(lp)), (seed, res.upper_bound, lp)
