"""Barrier FW marginal inference (fwcore.marginals) against exact answers."""

import numpy as np
import pytest

from fwcore.exact import exact_inference
from fwcore.generators import potts_grid, random_clique, random_grid
from fwcore import barrier_fw, infer, loopy_bp, trbp
from fwcore.fw import MFWCorrection, correct, frank_wolfe
from fwcore.marginals.barrier_fw import MarginalPolytope
from fwcore.marginals.trw import TRWObjective
from fwcore.oracles import resolve_oracle
from fwcore.model import PairwiseMRF
from fwcore.results import Status
from fwcore.marginals.rho import matrix_tree_rho, max_spanning_forest
from fwcore.io.uai import read_pr, read_uai


def random_tree(n, card, seed):
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(0, j)), j) for j in range(1, n)]
    cards = rng.integers(2, card + 1, n)
    unary = [rng.normal(0, 1, c) for c in cards]
    pair = [rng.normal(0, 1.5, (cards[i], cards[j])) for i, j in edges]
    return PairwiseMRF(cards, unary, edges, pair)


def rho_polytope_ok(model, rho):
    n_comp = model.n_components()
    return ((rho >= -1e-12).all() and (rho <= 1 + 1e-12).all() and
            abs(rho.sum() - (model.n_vars - n_comp)) < 1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_tree_gives_exact_marginals_and_log_z(seed):
    model = random_tree(7, 3, seed)
    ex = exact_inference(model)
    res = barrier_fw(model, oracle="exact", tol=1e-7, rho_updates=2, max_iter=5000)
    assert res.certified and res.status is Status.CONVERGED
    np.testing.assert_allclose(res.info["rho"], 1.0)
    assert res.log_z_upper >= ex.log_z - 1e-9
    assert res.log_z_upper - ex.log_z < 1e-5
    np.testing.assert_allclose(res.mu, ex.mu, atol=2e-3)


@pytest.mark.parametrize("make", [lambda s: random_clique(6, 2.0, seed=s),
                                  lambda s: random_grid(3, 3, seed=s),
                                  lambda s: potts_grid(2, 3, n_labels=3, coupling=2.0, seed=s)])
@pytest.mark.parametrize("seed", range(2))
def test_bound_with_exact_oracle_is_above_log_z(make, seed):
    model = make(seed)
    ex = exact_inference(model)
    res = barrier_fw(model, oracle="exact", rho_updates=3, tol=0.1)
    assert res.certified and res.gap >= -1e-9
    assert res.log_z_upper >= ex.log_z - 1e-9
    assert rho_polytope_ok(model, res.info["rho"])
    # the bound is TRW + gap, and the TRW value matches the returned marginals and rho
    trw = TRWObjective(model, res.info["rho"]).trw(res.mu)
    assert res.info["primal"] == pytest.approx(trw, abs=1e-9)
    assert res.log_z_upper <= res.info["primal"] + res.gap + 1e-12
    # the interval: the best vertex's score and the mean-field bound from mu
    assert -np.inf < res.log_z_lower <= ex.log_z + 1e-9
    for node in res.node_marginals:
        assert node.min() > 0 and node.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["clique10/1", "clique10/201", "clique10/801",
                                  "grid5x5/gridWi5Tr1"])
def test_bound_on_shared_instances(instances, name):
    path = instances / "fw-inference" / f"{name}.uai"
    model = read_uai(path)
    log_z = read_pr(f"{path}.PR")
    res = barrier_fw(model, oracle="exact", rho_updates=2)
    assert res.certified
    assert res.log_z_upper >= log_z - 1e-4
    assert res.log_z_upper - log_z < 3.0


def test_marginal_polytope_beats_local_polytope_on_strong_clique():
    model = random_clique(8, 4.0, seed=1)
    ex = exact_inference(model)
    m_res = barrier_fw(model, oracle="exact", rho_updates=2)
    l_res = barrier_fw(model, domain="local", rho_updates=2)
    err = lambda r: np.mean([abs(a[1] - b[1]) for a, b in zip(r.node_marginals, ex.node_marginals)])  # noqa: E731
    assert m_res.log_z_upper < l_res.log_z_upper
    assert err(m_res) < err(l_res)


def test_fw_over_local_polytope_equals_trbp_fixed_point():
    model = random_grid(3, 3, coupling=1.0, seed=3)
    rho = np.full(model.n_edges, 8 / 12)
    fw = barrier_fw(model, domain="local", rho=rho, rho_updates=0, tol=1e-9, max_iter=20000)
    bp = trbp(model, rho=rho, rho_updates=0, tol=1e-12, max_iter=20000)
    assert bp.converged and fw.converged
    assert fw.info["primal"] == pytest.approx(bp.info["primal"], abs=1e-6)
    np.testing.assert_allclose(fw.mu, bp.mu, atol=1e-4)
    # over L the bound is above max over M
    assert (fw.log_z_upper
            >= barrier_fw(model, oracle="exact", rho=rho, rho_updates=0,
                          tol=1e-3).info["primal"] - 1e-6)


def test_approximate_oracles():
    model = random_clique(7, 2.0, seed=4)
    ex = exact_inference(model)
    # oracles that prove nothing: the bound is certified by the tree decomposition
    icm = barrier_fw(model, oracle="icm", local_search=True, seed=0, rho_updates=2)
    assert icm.certified_gap is None and icm.info["n_icm_calls"] > 0
    func = barrier_fw(model, oracle=lambda s: np.zeros(7, dtype=np.int32), rho_updates=0)
    trws = barrier_fw(model, oracle="trws", rho_updates=2)
    for res in (icm, func, trws):
        assert res.certified and res.log_z_upper >= ex.log_z - 1e-9


def test_loopy_bp_is_exact_on_a_tree():
    model = random_tree(6, 3, seed=5)
    ex = exact_inference(model)
    res = loopy_bp(model, tol=1e-12)
    np.testing.assert_allclose(res.mu, ex.mu, atol=1e-8)
    assert res.log_z_upper == pytest.approx(ex.log_z, abs=1e-8)
    tr = trbp(model, rho_updates=2, tol=1e-12)
    assert tr.log_z_upper == pytest.approx(ex.log_z, abs=1e-8)


def test_trbp_rho_stays_in_spanning_tree_polytope():
    a = random_clique(4, 1.0, seed=0)
    # two components: a 4-clique and a 3-cycle
    edges = np.vstack([a.edges, [[4, 5], [5, 6], [4, 6]]])
    pair = [a.pairwise(e) for e in range(a.n_edges)] + [np.eye(2)] * 3
    model = PairwiseMRF([2] * 7, None, edges, pair)
    for res in (trbp(model, rho_updates=4),
                barrier_fw(model, oracle="exact", rho_updates=4, rho="coupling"),
                barrier_fw(model, oracle="exact", rho_updates=4, rho_step="fixed")):
        assert rho_polytope_ok(model, res.info["rho"])
        assert res.info["n_rho_updates"] == 4


def test_rho_line_search_minimises_the_bound_along_the_fw_direction():
    """One line-searched rho update (corrections only) lands at the minimum of
    B(a) = max_M TRW(mu; rho0 + a d) over a grid of separate runs at fixed rho, where
    d = (max spanning tree on the edge mutual information at mu*(rho0)) - rho0."""
    model = random_clique(6, 1.0, seed=2)
    rho0 = matrix_tree_rho(model)
    first = barrier_fw(model, oracle="exact", rho=rho0, rho_updates=0, tol=1e-6)
    mi = [float(np.sum(t * np.log(t / np.outer(first.node_marginals[i], first.node_marginals[j]))))
          for (i, j), t in zip(model.edges, first.edge_marginals)]
    d = max_spanning_forest(model.n_vars, model.edges, np.array(mi)) - rho0
    grid = np.linspace(0.0, 1.0, 11)
    bound = [barrier_fw(model, oracle="exact", rho=np.clip(rho0 + a * d, 0, 1), rho_updates=0,
                   tol=1e-6).info["primal"]
             for a in grid]
    assert 0 < np.argmin(bound) < len(grid) - 1  # an interior minimum
    res = barrier_fw(model, oracle="exact", rho=rho0, rho_updates=1, tol=1e-6, rho_tol=0.05)
    step = float((res.info["rho"] - rho0) @ d / (d @ d))
    np.testing.assert_allclose(res.info["rho"], rho0 + step * d, atol=1e-12)
    assert abs(step - grid[np.argmin(bound)]) <= 0.1
    assert res.info["primal"] <= min(bound) + 1e-4
    fixed = barrier_fw(model, oracle="exact", rho=rho0, rho_updates=1, tol=1e-6, rho_tol=0.05,
                  rho_step="fixed")
    np.testing.assert_allclose(fixed.info["rho"], rho0 + 2 / 3 * d, atol=1e-12)
    # corrections capped at 100 steps cannot resolve mu* to a gap of 1e-6: the fixed step
    unresolved = barrier_fw(model, oracle="exact", rho=rho0, rho_updates=1, tol=1e-6, rho_tol=1e-6)
    np.testing.assert_allclose(unresolved.info["rho"], rho0 + 2 / 3 * d, atol=1e-12)


@pytest.mark.parametrize("delta", [0.0, 0.02])
def test_correction_kernel_takes_the_engines_steps(delta):
    """Barrier FW Alg. 5 in one kernel call (`TRWObjective.correction`) against the
    engine's own steps (`MFWCorrection` without a kernel) from the same vertices of a
    Barrier FW run: the same steps, vertices and weights up to rounding."""
    model = random_clique(8, 2.0, seed=4)
    dom = MarginalPolytope(model, resolve_oracle("exact", model), 0)
    obj = TRWObjective(model, matrix_tree_rho(model))
    run = frank_wolfe(obj, dom, method="fcfw", delta=0.02, max_iter=15, tol=0.0, trace=False,
                      corrections=[MFWCorrection(max_steps=3)])
    for tol, steps in ((1e-3, 100), (0.0, 40)):
        py, fused = (correct(obj, dom, (run.atoms, run.weights), MFWCorrection(
            steps, tol=tol, kernel=kernel), delta=delta) for kernel in (None, obj.correction))
        assert fused.n_iter == py.n_iter and fused.status is py.status
        np.testing.assert_array_equal(fused.atoms, py.atoms)
        np.testing.assert_allclose(fused.weights, py.weights, atol=1e-10)
        np.testing.assert_allclose(fused.x, py.x, atol=1e-10)
        np.testing.assert_allclose(fused.gap, py.gap, rtol=1e-8, atol=1e-12)


def test_default_local_search_is_reproducible():
    model = random_clique(8, 2.0, seed=3)
    a = barrier_fw(model, oracle="exact", rho_updates=2)
    b = barrier_fw(model, oracle="exact", rho_updates=2)
    assert a.info["n_icm_calls"] > 0
    np.testing.assert_array_equal(a.mu, b.mu)
    plain = barrier_fw(model, oracle="exact", rho_updates=2, local_search=False)
    assert plain.info["n_icm_calls"] == 0


def test_stops_on_callback_and_max_time():
    model = random_grid(4, 4, seed=0)
    seen = []
    res = barrier_fw(model, oracle="exact", tol=1e-9,
                     callback=lambda r: seen.append(r) or len(seen) < 5)
    assert res.status is Status.INTERRUPTED and len(seen) == 5
    assert res.certified and np.isfinite(res.log_z_upper)
    assert [r.iteration for r in res.trace] == list(range(5))
    res = barrier_fw(model, oracle="exact", tol=1e-12, max_iter=10**6, max_time=0.3)
    assert res.status is Status.MAX_TIME and res.time < 3.0
    assert res.log_z_upper >= exact_inference(model).log_z - 1e-9


_CLIQUE4 = random_clique(4, seed=0)


@pytest.mark.parametrize("call, error, match", [
    (lambda m: barrier_fw(m, oracle="exact", delta=0.3), ValueError, "delta"),
    (lambda m: barrier_fw(m, oracle="exact", delta=0.0), ValueError, "delta"),
    (lambda m: barrier_fw(m, oracle="exact", delta_init=0.5), ValueError, "delta_init"),
    (lambda m: barrier_fw(m, oracle="exact", delta="fixed"), ValueError, "delta"),
    (lambda m: barrier_fw(m, oracle="nope"), ValueError, "valid names"),
    (lambda m: barrier_fw(m, oracle="exact", rho=np.ones(3)), ValueError, "shape"),
    (lambda m: barrier_fw(m, oracle="exact", rho=np.ones(m.n_edges)), ValueError, "sum"),
    (lambda m: barrier_fw(m, oracle="exact", rho="spanning"), ValueError, "rho"),
    (lambda m: barrier_fw(m, oracle="exact", rho_step="exact"), ValueError, "rho_step"),
    (lambda m: barrier_fw(m, oracle="exact", rho_tol=0.0), ValueError, "rho_tol"),
    (lambda m: barrier_fw(m, oracle="exact", tol=0.0), ValueError, "tol"),
    (lambda m: barrier_fw(m, oracle="exact", domain="polytope"), ValueError, "domain"),
    (lambda m: barrier_fw(m, domain="local", oracle="icm"), ValueError, "local"),
    (lambda m: infer("model.uai"), TypeError, "PairwiseMRF"),
    (lambda m: barrier_fw(m, oracle="exact", callback=3), TypeError, "callback"),
    (lambda m: trbp(m, damping=1.0), ValueError, "damping"),
])
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(_CLIQUE4)


def test_impossible_states():
    """-inf log-potentials: exact on a tree, a valid bound on a loopy model, and the
    impossible states keep (at most contraction-sized) zero mass."""
    rng = np.random.default_rng(0)
    card, edges = [2, 3, 3, 2], [(0, 1), (1, 2), (1, 3)]
    unary = [rng.normal(size=c) for c in card]
    tables = [rng.normal(size=(card[i], card[j])) for i, j in edges]
    tables[0][0, 1] = tables[1][2, 0] = unary[2][1] = -np.inf
    tree = PairwiseMRF(card, unary, edges, tables)
    ex = exact_inference(tree)
    res = barrier_fw(tree, oracle="exact", tol=1e-6)
    assert res.certified and abs(res.log_z_upper - ex.log_z) < 1e-6
    np.testing.assert_allclose(res.mu, ex.mu, atol=1e-5)
    loopy = PairwiseMRF(card, unary, edges + [(0, 3), (2, 3)],
                        tables + [np.array([[0.0, -np.inf], [1.0, 0.5]]), rng.normal(size=(3, 2))])
    ex = exact_inference(loopy)
    for res in (barrier_fw(loopy, oracle="exact"), barrier_fw(loopy, domain="local")):
        assert res.certified and res.log_z_upper >= ex.log_z - 1e-9
        assert res.mu[np.isneginf(loopy.theta)].max() <= 1e-3
    assert trbp(loopy).mu[np.isneginf(loopy.theta)].max() == 0.0


def test_max_time_caps_each_oracle_call_and_leaves_the_oracle_unchanged():
    from fwcore.oracles.approximate import TRWSOracle

    class Recording(TRWSOracle):
        limits = []

        def _argmax(self, scores, init, time_limit):
            self.limits.append(time_limit)
            return super()._argmax(scores, init, time_limit)

    model = random_clique(8, coupling=2.0, seed=0)
    oracle = Recording(model, time_limit=100.0)
    res = barrier_fw(model, oracle=oracle, max_time=5.0, rho_updates=1)
    assert oracle.time_limit == 100.0
    assert Recording.limits and all(t is not None and t <= 5.0 for t in Recording.limits)
    assert res.time < 10.0
