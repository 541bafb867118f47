"""Synthetic learning tasks (for examples, tests and benchmarks): binary segmentation on
grid CRFs and point-set matching."""
import numpy as np

from ..checks import SEED, Interval, validate_params
from ..generators import grid_edges
from .crf import CRFExample

__all__ = ["synthetic_segmentation", "segmentation_images", "noisy_point_matching"]

_COUNT = Interval(0, integer=True)
_SIZE = Interval(1, integer=True)
_NONNEG = Interval(0.0)


@validate_params({"n_images": _COUNT, "size": _SIZE, "noise": _NONNEG, "smooth": _NONNEG,
                  "seed": SEED})
def synthetic_segmentation(n_images, size=12, noise=1.0, smooth=2.0, seed=0):
    """(X, Y): smooth random binary masks (thresholded Gaussian-filtered noise) observed
    through additive Gaussian noise of standard deviation ``noise``. Node features
    (1, observation), edge features (1, exp(−|observation difference|)), both with a bias,
    so a CRF can learn a contrast-sensitive Potts prior."""
    from scipy.ndimage import gaussian_filter
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


@validate_params({"n_examples": _COUNT, "n_points": _SIZE, "noise": _NONNEG, "seed": SEED})
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


@validate_params({"n_images": _SIZE, "size": Interval(8, integer=True), "seed": SEED})
def segmentation_images(n_images, size=100, seed=0):
    """(images [n, size, size, 3] in [0, 1], masks [n, size, size] of 0/1): figure-ground
    scenes for a segmentation benchmark at realistic sizes. Each scene has a background of
    a random colour with smooth shading and fine texture, and one to three foreground
    blobs (ellipses with boundaries roughened by smooth noise) of a warmer colour that
    shifts from scene to scene and with coarser, stronger texture; the whole image then
    gets sensor noise. Neither colour nor texture alone separates the classes in every
    scene (`segmentation_features` gives a CRF both, with contrast-sensitive edges)."""
    from scipy.ndimage import gaussian_filter
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:size, 0:size] / size
    images = np.empty((n_images, size, size, 3))
    masks = np.empty((n_images, size, size), dtype=np.int32)
    for k in range(n_images):
        inside = np.full((size, size), -1.0)
        for _ in range(rng.integers(1, 4)):
            cy, cx = rng.uniform(0.2, 0.8, 2)
            ry, rx = rng.uniform(0.08, 0.3, 2)
            a = rng.uniform(0, np.pi)
            dy, dx = rows - cy, cols - cx
            u, v = dy * np.cos(a) + dx * np.sin(a), -dy * np.sin(a) + dx * np.cos(a)
            inside = np.maximum(inside, 1.0 - (u / ry) ** 2 - (v / rx) ** 2)
        rough = gaussian_filter(rng.normal(size=(size, size)), size / 25)
        mask = inside + 0.3 * rough / rough.std() > 0.0
        background = rng.uniform(0.2, 0.8, 3)
        foreground = np.clip(background + rng.normal([0.2, 0.0, -0.15], 0.12), 0.0, 1.0)
        shade = gaussian_filter(rng.normal(size=(size, size)), size / 8)
        fine = gaussian_filter(rng.normal(size=(size, size, 3)), (0.7, 0.7, 0))
        coarse = gaussian_filter(rng.normal(size=(size, size, 3)), (1.5, 1.5, 0))
        image = np.where(mask[..., None], foreground + 0.5 * coarse,
                         background + 0.15 * fine)
        image += 0.06 * (shade / shade.std())[..., None]
        image += rng.normal(0.0, 0.06, image.shape)
        images[k] = np.clip(image, 0.0, 1.0)
        masks[k] = mask
    return images, masks
