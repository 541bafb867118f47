"""Point-set matching features (fwcore.learn.features): shapes, histogram sums, invariance to
translation and scale, equivariance to reordering the points, a brute-force shape context,
bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fwcore.learn.features import distance_profile, matching_features, shape_context


def points(n=12, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 2)) * 50 + 100


def brute_shape_context(p, n_radial, n_angular):
    """Point by point: log-polar bin of every other point (ring edges 1/8 .. 2 mean dists)."""
    n = len(p)
    scale = np.mean([np.linalg.norm(p[i] - p[j]) for i in range(n) for j in range(n) if i != j])
    edges = np.exp(np.linspace(np.log(0.125), np.log(2.0), n_radial + 1))
    h = np.zeros((n, n_radial, n_angular))
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            dx, dy = (p[j] - p[i]) / scale
            r = sum(np.hypot(dx, dy) > e for e in edges[1:-1])
            a = int(np.floor((np.arctan2(dy, dx) % (2 * np.pi)) / (2 * np.pi / n_angular)))
            h[i, r, min(a, n_angular - 1)] += 1.0 / (n - 1)
    return h


@pytest.mark.parametrize("n_radial, n_angular", [(5, 12), (3, 4), (1, 1)])
def test_shape_context_matches_brute_force(n_radial, n_angular):
    p = points(9, seed=1)
    sc = shape_context(p, n_radial, n_angular)
    assert sc.shape == (9, n_radial, n_angular)
    np.testing.assert_allclose(sc, brute_shape_context(p, n_radial, n_angular), atol=1e-12)
    np.testing.assert_allclose(sc.sum(axis=(1, 2)), 1.0)


def test_distance_profile_is_quantiles_of_normalised_distances():
    p = points(7, seed=2)
    d = np.linalg.norm(p[:, None] - p[None], axis=2)
    d /= d[~np.eye(7, dtype=bool)].mean()
    prof = distance_profile(p, 3)
    for i in range(7):
        others = np.sort(np.delete(d[i], i))
        np.testing.assert_allclose(prof[i], [others[0], np.median(others), others[-1]])
    np.testing.assert_allclose(distance_profile(p, 1)[:, 0], prof[:, 1])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)),
       scale=st.floats(1e-2, 1e2))
def test_features_invariant_to_translation_and_scale(seed, shift, scale):
    P, Q = points(10, seed), points(10, seed + 1)
    G = matching_features(P, Q)
    assert G.shape == (10, 10, 10)
    assert np.isfinite(G).all() and (G <= 0).all()
    moved = matching_features(P * scale + np.array(shift), Q / scale - np.array(shift))
    np.testing.assert_allclose(moved, G, atol=1e-9)


def test_features_follow_the_point_order_and_vanish_on_identical_points():
    P, rng = points(11, seed=3), np.random.default_rng(4)
    pr, pc = rng.permutation(11), rng.permutation(11)
    G = matching_features(P, P, n_radial=4, n_angular=6, n_quantiles=3)
    assert G.shape == (11, 11, 7)
    np.testing.assert_array_equal(G[np.arange(11), np.arange(11)], 0.0)
    np.testing.assert_allclose(matching_features(P[pr], P[pc], 4, 6, 3), G[np.ix_(pr, pc)])
    assert matching_features(P[:5], P, 4, 6, 3).shape == (5, 11, 7)  # sizes may differ


def test_ring_feature_is_minus_chi_square():
    P, Q = points(8, seed=5), points(8, seed=6)
    a, b = shape_context(P, 2, 3), shape_context(Q, 2, 3)
    G = matching_features(P, Q, n_radial=2, n_angular=3, n_quantiles=2)
    i, j = 2, 5
    for r in range(2):
        x, y = a[i, r], b[j, r]
        chi2 = 0.5 * sum((u - v) ** 2 / (u + v) for u, v in zip(x, y) if u + v > 0)
        assert np.isclose(G[i, j, r], -chi2)
    dp, dq = distance_profile(P, 2), distance_profile(Q, 2)
    np.testing.assert_allclose(G[i, j, 2:], -np.abs(dp[i] - dq[j]))


def test_bad_inputs_raise_clear_errors():
    P = points(5)
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        shape_context(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"n >= 2"):
        distance_profile(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="finite"):
        matching_features(P, np.full((5, 2), np.nan))
    with pytest.raises(ValueError, match="coincide"):
        shape_context(np.ones((4, 2)))
    with pytest.raises(TypeError, match="numeric"):
        matching_features(P.astype(str), P)
    with pytest.raises(ValueError, match="Q must have shape"):
        matching_features(P, P[:, 0])
    for kw, error in (({"n_radial": 0}, ValueError), ({"n_angular": 2.5}, ValueError),
                      ({"n_quantiles": True}, TypeError)):
        with pytest.raises(error, match=next(iter(kw)) + " must be an integer >= 1"):
            matching_features(P, P, **kw)
