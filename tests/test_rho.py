"""Edge appearance probabilities: matrix-tree theorem vs a dense pseudo-inverse, spanning
forests, validation; and the selected-inversion kernel vs a dense inverse."""
import numpy as np
import pytest
from scipy.sparse import csc_matrix
from scipy.sparse.linalg import splu

import fwcore
from fwcore._linalg import selected_inverse
from fwcore.marginals.rho import (check_rho, coupling_weights, initial_rho, matrix_tree_rho,
                                  max_spanning_forest, uniform_rho)

MODELS = [
    fwcore.random_grid(6, 4, seed=0),
    fwcore.random_clique(9, seed=1),
    fwcore.random_rbm(3, 5, seed=2),
    fwcore.PairwiseMRF([2] * 7, None, [(0, 1), (1, 2), (3, 4), (4, 5), (3, 5)]),  # 3 components
]


def dense_rho(model, w):
    """Twin: rho_e = w_e (e_i - e_j)^T L^+ (e_i - e_j) with a dense pseudo-inverse."""
    n, e = model.n_vars, model.edges.astype(int)
    lap = np.zeros((n, n))
    for (i, j), x in zip(e, w):
        lap[i, i] += x
        lap[j, j] += x
        lap[i, j] -= x
        lap[j, i] -= x
    p = np.linalg.pinv(lap)
    return w * (p[e[:, 0], e[:, 0]] + p[e[:, 1], e[:, 1]] - 2 * p[e[:, 0], e[:, 1]])


@pytest.mark.parametrize("model", MODELS)
def test_matrix_tree_rho_matches_dense_twin_and_sums_to_forest_size(model):
    for w in (None, coupling_weights(model)):
        rho = matrix_tree_rho(model, w)
        np.testing.assert_allclose(
            rho, dense_rho(model, np.ones(model.n_edges) if w is None else w), atol=1e-10)
        assert np.isclose(rho.sum(), model.n_vars - model.n_components())
        check_rho(model, rho)


def test_forest_gets_rho_one_and_uniform_rho_on_clique_equals_matrix_tree():
    tree = fwcore.PairwiseMRF([2] * 5, None, [(0, 1), (1, 2), (1, 3), (3, 4)])
    np.testing.assert_allclose(matrix_tree_rho(tree), 1.0)
    clique = fwcore.random_clique(7, seed=0)
    np.testing.assert_allclose(matrix_tree_rho(clique), uniform_rho(clique))


def test_selected_inverse_matches_dense_inverse_on_the_factor_pattern():
    rng = np.random.default_rng(0)
    n = 40
    a = rng.random((n, n)) * (rng.random((n, n)) < 0.1)
    a = csc_matrix(a + a.T + n * np.eye(n))
    lu = splu(a, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options=dict(SymmetricMode=True))
    fac = lu.L.tocsc()
    zval, zdiag = np.zeros(fac.nnz), np.zeros(n)
    selected_inverse(fac.indptr.astype(np.int64), fac.indices.astype(np.int32), fac.data,
                     lu.U.diagonal(), zval, zdiag)
    q = np.argsort(lu.perm_r)
    want = np.linalg.inv(a.toarray()[np.ix_(q, q)])
    rows = fac.indices
    cols = np.repeat(np.arange(n), np.diff(fac.indptr))
    lower = rows > cols
    np.testing.assert_allclose(zval[lower], want[rows[lower], cols[lower]], atol=1e-14)
    np.testing.assert_allclose(zdiag, np.diag(want), atol=1e-14)


def test_max_spanning_forest_keeps_zero_weight_edges_that_connect():
    edges = np.array([(0, 1), (1, 2), (0, 2), (2, 3)])
    chosen = max_spanning_forest(4, edges, np.array([1.0, 2.0, 3.0, 0.0]))
    np.testing.assert_array_equal(chosen, [0, 1, 1, 1])


@pytest.mark.parametrize("rho, match", [
    (np.ones(3), "shape"),
    (np.full(24 + 14, 2.0), "\\[0, 1\\]"),
    (np.full(38, 0.1), "sum to n_c - 1"),
])
def test_check_rho_rejects_points_outside_the_spanning_tree_polytope(rho, match):
    model = fwcore.random_grid(5, 4, seed=0)  # 20 nodes, 31 edges
    rho = rho if rho.shape == (3,) else np.resize(rho, model.n_edges)
    with pytest.raises(ValueError, match=match):
        check_rho(model, rho)


def test_initial_rho_resolves_rules_functions_numbers_and_arrays():
    grid = fwcore.random_grid(5, 4, seed=0)  # 20 nodes, 31 edges
    np.testing.assert_array_equal(initial_rho(grid), matrix_tree_rho(grid))
    np.testing.assert_array_equal(initial_rho(grid, "coupling"),
                                  matrix_tree_rho(grid, coupling_weights(grid)))
    for rho in ("uniform", uniform_rho, 19 / 31, list(uniform_rho(grid))):
        np.testing.assert_array_equal(initial_rho(grid, rho), uniform_rho(grid))
    np.testing.assert_array_equal(initial_rho(grid, entropy="bethe"), 1.0)
    # a reweighted entropy outside the spanning-tree polytope (the learners' 0.5 on grids)
    np.testing.assert_array_equal(initial_rho(grid, 0.5, tree_polytope=False), 0.5)
    with pytest.raises(ValueError, match="sum to n_c - 1"):
        initial_rho(grid, 0.5)
    with pytest.raises(ValueError, match=r"rho must lie in \[0, 1\]"):
        initial_rho(grid, lambda m: np.full(m.n_edges, 1.5), tree_polytope=False)
    with pytest.raises(ValueError, match="entropy='bethe' has rho = 1"):
        initial_rho(grid, "uniform", entropy="bethe")
    with pytest.raises(ValueError, match="rho must be one of 'matrix-tree', 'coupling'"):
        initial_rho(grid, "spanning")
    with pytest.raises(ValueError, match="rho must be .*a number >= 0 and <= 1"):
        initial_rho(grid, 1.5)


_MASK = (1 << 64) - 1


def _splitmix_randint(state, m):
    """(new state, uniform integer in [0, m)): `fwcore._kernels._randint`'s splitmix64
    step and multiply-shift, in Python integers."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return state, ((z >> 32) * m) >> 32


def balanced_trees_twin(n, edges, n_trees, seed, block=1024):
    """`fwcore._kernels.balanced_trees` in NumPy and plain Python: per forest, the edges
    from a random one on, shuffled (Fisher-Yates, last entry down) within blocks of
    ``block``, stably sorted by count so far, then Kruskal's."""
    n_edges, state = len(edges), seed
    count = np.zeros(n_edges)
    for _ in range(n_trees):
        state, start = _splitmix_randint(state, n_edges)
        order = (start + np.arange(n_edges)) % n_edges
        for lo in range(0, n_edges, block):
            hi = min(lo + block, n_edges)
            for t in range(hi - 1, lo, -1):
                state, j = _splitmix_randint(state, t - lo + 1)
                order[t], order[lo + j] = order[lo + j], order[t]
        parent = list(range(n))

        def find(u):
            while parent[u] != u:
                u = parent[u]
            return u
        chosen = []
        for e in order[np.argsort(count[order], kind="stable")]:
            a, b = find(edges[e, 0]), find(edges[e, 1])
            if a != b:
                parent[a] = b
                chosen.append(e)
        count[chosen] += 1
    return count


@pytest.mark.parametrize("model", MODELS + [fwcore.random_grid(40, 40, seed=0)],
                         ids=["grid", "clique", "rbm", "components", "grid-40"])
def test_balanced_trees_match_their_twin_and_lie_in_the_polytope(model):
    """`balanced_tree_rho` against its twin (the same forests, edge counts equal), in the
    spanning-tree polytope (`check_rho`: every forest spans each component), and on the
    grid within 4 / n_trees of uniform (the forests take the edges used least: 2.5 / 40
    measured)."""
    from fwcore.marginals.rho import balanced_tree_rho
    for n_trees, seed in ((1, 0), (7, 3), (20, 11)):
        rho = balanced_tree_rho(model, n_trees, seed)
        twin = balanced_trees_twin(model.n_vars, model.edges, n_trees, seed, block=1024)
        np.testing.assert_array_equal(rho, twin / n_trees)
        check_rho(model, rho)
    if model.n_vars == 1600:
        assert np.abs(balanced_tree_rho(model, 40) - uniform_rho(model)).max() <= 4 / 40 + 1e-12
    assert np.array_equal(initial_rho(model, "balanced-trees"), balanced_tree_rho(model))


def test_balanced_trees_stop_at_their_time_limit_with_one_forest_at_least():
    """A time limit already passed: one whole forest (a vertex of the polytope)."""
    from fwcore.marginals.rho import balanced_tree_rho
    model = fwcore.random_grid(200, 200, seed=0)
    rho = balanced_tree_rho(model, 1000, time_limit=1e-9)
    assert set(np.unique(rho)) == {0.0, 1.0}
    check_rho(model, rho)
