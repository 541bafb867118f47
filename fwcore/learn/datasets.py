"""Synthetic learning tasks (for examples, tests and benchmarks): binary segmentation on
grid CRFs and point-set matching."""
import numpy as np
from scipy.ndimage import gaussian_filter

from ..generators import grid_edges
from .crf import CRFExample

__all__ = ["synthetic_segmentation", "noisy_point_matching"]


def synthetic_segmentation(n_images, size=12, noise=1.0, smooth=2.0, seed=0):
    """(X, Y): smooth random binary masks (thresholded Gaussian-filtered noise) observed
    through additive Gaussian noise of standard deviation ``noise``. Node features
    (1, observation), edge features (1, exp(−|observation difference|)), both with a bias,
    so a CRF can learn a contrast-sensitive Potts prior."""
    rng = np.random.default_rng(seed)
    edges = grid_edges(size, size)
    X, Y = [], []
    for _ in range(n_images):
        field = gaussian_filter(rng.normal(size=(size, size)), smooth)
        y = (field > np.median(field)).astype(np.int32).ravel()
        obs = y + noise * rng.normal(size=y.shape)
        u = np.stack([np.ones_like(obs), obs], axis=1)
        v = np.stack([np.ones(len(edges)), np.exp(-np.abs(obs[edges[:, 0]] - obs[edges[:, 1]]))],
                     axis=1)
        X.append(CRFExample(u, edges, v))
        Y.append(y)
    return X, Y


def noisy_point_matching(n_examples, n_points=10, noise=0.03, seed=0):
    """(X, Y) for bipartite matching: uniform points p in the unit square and a randomly
    permuted noisy copy q (q[y] = p + noise·N(0, 1)); the edge feature of (i, j) is
    −(p_i − q_j)² per coordinate, and Y holds the permutations y."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_examples):
        p = rng.random((n_points, 2))
        y = rng.permutation(n_points)
        q = np.empty_like(p)
        q[y] = p + noise * rng.normal(size=p.shape)
        X.append(-(p[:, None, :] - q[None, :, :]) ** 2)
        Y.append(y)
    return X, Y
