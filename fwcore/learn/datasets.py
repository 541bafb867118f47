"""A synthetic binary segmentation task on grid CRFs (for examples, tests and benchmarks)."""
import numpy as np
from scipy.ndimage import gaussian_filter

from .crf import CRFExample

__all__ = ["grid_edges", "synthetic_segmentation"]


def grid_edges(height, width):
    """4-neighbour edges (i < j) of a height × width grid, row-major variables."""
    idx = np.arange(height * width).reshape(height, width)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return np.concatenate([right, down])


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
