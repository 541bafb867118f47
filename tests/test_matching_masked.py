"""Matching marginals on masked graphs (issue 18; MLE-Struct App. D.3): W = -inf outside the
graph, FW on the face its perfect matchings span, against brute force over the graph's
perfect matchings; the learners' predict_marginals on masked inputs; bad masks."""
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from fwcore.learn.mle_struct import MLEStruct
from scipy.special import xlogy

from fwcore.matching.inference import (exact_matching_marginals, exact_perfect_matching_marginals,
                                       log_permanent, matching_marginals)
from fwcore.results import Status


def bipartite_matchings(A):
    n = A.shape[0]
    return [np.array(p) for p in itertools.permutations(range(n)) if A[np.arange(n), p].all()]


def general_matchings(A):
    """Every perfect matching of the graph A (symmetric bool) as mate arrays."""
    out = []

    def extend(mate, free):
        if not free:
            out.append(np.array(mate))
            return
        i = free[0]
        for j in free[1:]:
            if A[i, j]:
                mate[i], mate[j] = j, i
                extend(mate, [f for f in free[1:] if f != j])

    extend([0] * A.shape[0], list(range(A.shape[0])))
    return out


def vertex(mate):
    V = np.zeros((len(mate), len(mate)))
    V[np.arange(len(mate)), mate] = 1.0
    return V


def brute_free_energy_optimum(W, mates, rho, graph):
    """min of F_ρ(τ) = −<W, τ> − H_ρ(τ) over the convex hull of the graph's perfect matchings,
    τ = Σ_k α_k v_k with α = softmax(z) (BFGS on z); returns (log Z_ρ = −min F, marginals)."""
    V = np.array([vertex(m) for m in mates])
    iu = np.triu_indices(W.shape[0], 1) if graph == "general" else None
    Wf = np.where(V.any(axis=0), W, 0.0)

    def free_energy(z):
        a = np.exp(z - z.max())
        T = np.tensordot(a / a.sum(), V, axes=1)
        t = T[iu] if graph == "general" else T.ravel()
        w = Wf[iu] if graph == "general" else Wf.ravel()
        t = np.clip(t, 0.0, 1.0)
        h = (2 * rho - 1) * xlogy(1 - t, 1 - t).sum() - xlogy(t, t).sum()  # App. C
        return -(w @ t) - h, T

    res = minimize(lambda z: free_energy(z)[0], np.zeros(len(mates)), method="BFGS",
                   options={"gtol": 1e-10})
    return -res.fun, free_energy(res.x)[1]


def masked_bipartite(seed):
    """N = 5: row 0 may only take column 0 (edge (0, 0) is in every perfect matching), so
    the allowed edges (i, 0), i > 0, are in none."""
    rng = np.random.default_rng(seed)
    A = rng.random((5, 5)) < 0.6
    A[0] = False
    A[0, 0] = True
    A[1:, 0] = True
    A[np.arange(1, 5), np.array([2, 3, 4, 1])] = True  # a perfect matching of the rest
    return A, rng.normal(size=(5, 5))


def masked_general(seed):
    """n = 8: vertex 0 has the single neighbour 1 (edge {0, 1} in every perfect matching, so
    {1, 2}, {1, 3} in none); two triangles joined by a bridge on the rest."""
    rng = np.random.default_rng(seed)
    A = np.zeros((8, 8), dtype=bool)
    for i, j in [(0, 1), (1, 2), (1, 3), (2, 3), (3, 4), (2, 4), (5, 6), (6, 7), (5, 7),
                 (4, 5), (3, 6), (2, 7)]:
        A[i, j] = A[j, i] = True
    W = rng.normal(size=(8, 8))
    return A, W + W.T


@pytest.mark.parametrize("graph", ["bipartite", "general"])
@pytest.mark.parametrize("rho", [1.0, 0.5])
def test_masked_marginals_against_brute_force(graph, rho):
    A, W = masked_bipartite(1) if graph == "bipartite" else masked_general(1)
    mates = bipartite_matchings(A) if graph == "bipartite" else general_matchings(A)
    freq = np.mean([vertex(m) for m in mates], axis=0)
    always, never = (freq == 1.0) & A, (freq == 0.0) & A
    assert always.any() and never.any()  # the masks test both kinds of clamped edge
    # ρ = 1 on a general graph: the Bethe entropy vanishes along even cycles, and here the
    # optimum is a vertex of the face, where the FW gap stays positive (a valid, loose bound)
    boundary = graph == "general" and rho == 1.0
    res = matching_marginals(np.where(A, W, -np.inf), graph=graph, entropy="trw", rho=rho,
                             tol=1e-10, max_iter=300 if boundary else 10000)
    P = res.marginals
    assert boundary or (res.status is Status.CONVERGED and res.gap <= 1e-10)
    np.testing.assert_array_equal(P[~A], 0.0)
    np.testing.assert_array_equal(P[never], 0.0)
    np.testing.assert_array_equal(P[always], 1.0)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    log_z, T = brute_free_energy_optimum(W, mates, rho, graph)
    assert res.log_z - 1e-12 <= res.log_z_upper and log_z <= res.log_z_upper + 1e-12
    # the brute force's τ approaches a vertex only as fast as its softmax weights do
    assert log_z - 1e-10 <= res.log_z <= log_z + (1e-6 if boundary else 1e-8)
    np.testing.assert_allclose(P, T, atol=2e-4)  # BFGS on mixture weights: τ to ~1e-4
    # the support agrees with the exact distribution's (brute force)
    Wm = np.where(A, W, -np.inf)
    if graph == "general":
        np.fill_diagonal(Wm, 0.0)
    exact = (exact_perfect_matching_marginals(Wm) if graph == "general"
             else exact_matching_marginals(Wm))[0]
    if boundary:  # the Bethe optimum is one perfect matching of the graph
        assert any(np.abs(P - vertex(m)).max() < 1e-6 for m in mates)
        return
    np.testing.assert_array_equal(exact > 1e-12, P > 0)  # Ryser rounds to ~1e-16
    np.testing.assert_array_equal(np.isclose(exact, 1.0, rtol=0, atol=1e-12), P == 1.0)


@pytest.mark.parametrize("graph", ["bipartite", "general"])
def test_masked_marginals_are_exact_where_the_entropy_is(graph):
    """Two edge-disjoint perfect matchings on k edges each: H_ρ = k (2 − 2ρ) h(p), exact at
    ρ = 1 − 1/(2k), so FW gives the exact marginals and log Z (Ryser / enumeration)."""
    rng = np.random.default_rng(2)
    if graph == "bipartite":  # identity ∪ cyclic shift in K_{3,3}
        A, k = np.eye(3, dtype=bool) | np.roll(np.eye(3, dtype=bool), 1, axis=1), 3
        W = rng.normal(size=(3, 3))
    else:  # a 6-cycle in K_6
        A, k = np.zeros((6, 6), dtype=bool), 3
        for i in range(6):
            A[i, (i + 1) % 6] = A[(i + 1) % 6, i] = True
        W = rng.normal(size=(6, 6))
        W = W + W.T
    Wm = np.where(A, W, -np.inf)
    res = matching_marginals(Wm, graph=graph, entropy="trw", rho=1 - 1 / (2 * k), tol=1e-12)
    if graph == "general":
        np.fill_diagonal(Wm, 0.0)
        exact, log_z = exact_perfect_matching_marginals(Wm)
    else:
        exact, log_z = exact_matching_marginals(Wm)
        assert np.isclose(log_z, log_permanent(np.where(A, np.exp(W), 0.0)))
    np.testing.assert_allclose(res.marginals, exact, atol=1e-7)
    assert res.log_z <= log_z + 1e-12 <= res.log_z_upper + 2e-12
    assert abs(res.log_z - log_z) < 1e-11


def test_one_perfect_matching_is_exact():
    A = np.zeros((4, 4), dtype=bool)
    A[[0, 1, 2, 3], [1, 0, 3, 2]] = True
    A[0, 0] = True  # an edge in no perfect matching
    W = np.arange(16.0).reshape(4, 4)
    res = matching_marginals(np.where(A, W, -np.inf), entropy="trw")
    np.testing.assert_array_equal(res.marginals, vertex(np.array([1, 0, 3, 2])))
    assert res.log_z == res.log_z_upper == W[[0, 1, 2, 3], [1, 0, 3, 2]].sum()
    assert res.status is Status.CONVERGED and res.certified and res.method == "exact"


def test_no_perfect_matching_or_bp_with_a_mask_raise():
    W = np.zeros((4, 4))
    W[:, 0] = -np.inf  # column 0 cannot be matched
    with pytest.raises(ValueError, match="W has no perfect matching"):
        matching_marginals(W)
    G = np.zeros((6, 6))
    G[:3, 3:] = G[3:, :3] = -np.inf  # two triangles: odd components
    with pytest.raises(ValueError, match="W has no perfect matching"):
        matching_marginals(G, graph="general")
    with pytest.raises(ValueError, match="-inf"):
        matching_marginals(np.where(np.eye(3) > 0, 0.0, -np.inf), method="bp")


@pytest.mark.parametrize("graph", ["bipartite", "general"])
def test_predict_marginals_on_masked_inputs(graph):
    rng = np.random.default_rng(3)
    if graph == "bipartite":
        A, _ = masked_bipartite(4)
        mates = bipartite_matchings(A)
        G = rng.normal(size=(5, 5, 2))
    else:
        A, _ = masked_general(4)
        mates = general_matchings(A)
        G = rng.normal(size=(8, 8, 2))
        G = G + G.transpose(1, 0, 2)
    X = [(G, A), G]  # a masked and a complete input
    Y = [mates[0], mates[1]]
    m = MLEStruct(reg=1.0, entropy="bethe", model=graph, max_iter=20).fit(X, Y)
    P = m.predict_marginals(X, tol=1e-9)
    W = G @ m.coef_
    ref = matching_marginals(np.where(A, W, -np.inf), graph=graph, tol=1e-9).marginals
    np.testing.assert_allclose(P[0], ref, atol=1e-7)
    freq = np.mean([vertex(p) for p in mates], axis=0)
    np.testing.assert_array_equal(P[0][freq == 0.0], 0.0)
    np.testing.assert_array_equal(P[0][freq == 1.0], 1.0)
    log_z, T = brute_free_energy_optimum(W, mates, 1.0, graph)
    np.testing.assert_allclose(P[0], T, atol=2e-4)
    np.testing.assert_allclose(P[1], matching_marginals(W, graph=graph, tol=1e-9).marginals,
                               atol=1e-7)
    bad = A.copy()
    if graph == "bipartite":
        bad[:, 1] = False  # column 1 unmatched
    else:
        bad[0, 1] = bad[1, 0] = False  # vertex 0 isolated
    with pytest.raises(ValueError, match=r"X\[1\] allowed admits no perfect matching"):
        m.predict_marginals([G if graph == "bipartite" else (G, A), (G, bad)])
    with pytest.raises(ValueError, match=r"X\[0\] allowed admits no perfect matching"):
        m.predict([(G, bad)])
