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
