"""Features for the learners: image features for grid-CRF segmentation
(`segmentation_features`), and point-set matching features for learning graph matching
(MLE-Struct Sec. 4.1.2; the setup of Caetano et al. 2009 on the CMU house and hotel
sequences).

Each point gets two translation- and scale-invariant descriptors of where the other points
lie, distances divided by the set's mean pairwise distance:

* `shape_context`: a log-polar histogram (Belongie et al. 2002) of the other points'
  relative positions, ``n_radial`` log-spaced rings from 1/8 to 2 (nearer or farther
  points go in the first or last ring) times ``n_angular`` sectors, as fractions;
* `distance_profile`: ``n_quantiles`` evenly spaced quantiles of the distances to the
  other points.

`matching_features` turns them into the edge features [n, m, F] of a bipartite matching
model (`fwcore.learn.matching_model`): for point i of frame P and point j of frame Q, one
feature per ring, −χ²(ring of SC_i, ring of SC_j), then one per quantile,
−|d_i(q) − d_j(q)|, so F = n_radial + n_quantiles and every feature is 0 for identical
descriptors.
"""

import numpy as np

from ..checks import Interval, validate_params
from ..generators import grid_edges

__all__ = ["segmentation_features", "shape_context", "distance_profile", "matching_features"]

#: names of `segmentation_features`' node and edge features, in column order
SEGMENTATION_NODE_FEATURES = ("bias", "red", "green", "blue", "red_context", "green_context",
                              "blue_context", "texture", "gradient", "colour_outlier")
SEGMENTATION_EDGE_FEATURES = ("bias", "colour_contrast", "texture_contrast")


def segmentation_features(image):
    """A `fwcore.learn.crf.CRFExample` on the 4-connected pixel grid of an RGB ``image``
    [h, w, 3] with values in [0, 1], with the features of a classic CRF segmentation
    pipeline (`SEGMENTATION_NODE_FEATURES`, `SEGMENTATION_EDGE_FEATURES`):

    * node: a bias; the colour smoothed at σ = 1 and, for context, at σ = 4 pixels; the
      texture energy (local standard deviation, σ = 2, of the intensity minus its σ = 1
      smoothing, times 3); the gradient magnitude of the smoothed intensity; the colour's
      distance from the image's median colour (the background's, when it covers most of
      the image);
    * edge: a bias; the contrast-sensitive Potts weight exp(−β‖c_i − c_j‖²) with
      β = 1 / (2 mean ‖c_i − c_j‖²) over the image's edges (Boykov & Jolly 2001; Rother
      et al. 2004), and the same for the texture energy."""
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 3 or image.shape[2] != 3 or min(image.shape[:2]) < 2:
        raise ValueError(f"image must have shape (h, w, 3) with h, w >= 2; got {image.shape}")
    if not np.isfinite(image).all():
        raise ValueError("image contains NaN or inf; pixel values must be finite")
    from scipy.ndimage import gaussian_filter, sobel
    from .crf import CRFExample
    h, w, _ = image.shape
    colour = gaussian_filter(image, (1, 1, 0))
    context = gaussian_filter(image, (4, 4, 0))
    grey = image.mean(axis=2)
    detail = grey - gaussian_filter(grey, 1)
    texture = 3.0 * np.sqrt(gaussian_filter(detail ** 2, 2))
    smooth = gaussian_filter(grey, 1)
    gradient = np.hypot(sobel(smooth, 0), sobel(smooth, 1))
    outlier = np.linalg.norm(colour - np.median(colour.reshape(-1, 3), axis=0), axis=2)
    node = np.column_stack([np.ones(h * w), colour.reshape(-1, 3), context.reshape(-1, 3),
                            texture.ravel(), gradient.ravel(), outlier.ravel()])
    edges = grid_edges(h, w)
    flat = colour.reshape(-1, 3)
    d_colour = ((flat[edges[:, 0]] - flat[edges[:, 1]]) ** 2).sum(axis=1)
    d_texture = (texture.ravel()[edges[:, 0]] - texture.ravel()[edges[:, 1]]) ** 2
    edge = np.column_stack([np.ones(len(edges)),
                            np.exp(-d_colour / (2.0 * max(d_colour.mean(), 1e-12))),
                            np.exp(-d_texture / (2.0 * max(d_texture.mean(), 1e-12)))])
    return CRFExample(node, edges, edge)

#: inner and outer ring radii of the shape context, in mean pairwise distances
R_INNER, R_OUTER = 0.125, 2.0


def _check_points(points, name):
    p = np.asarray(points)
    if p.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a numeric array of shape (n, 2); got dtype {p.dtype}")
    p = p.astype(np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 2:
        raise ValueError(f"{name} must have shape (n, 2) with n >= 2 points (one 'x y' row "
                         f"each); got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError(f"{name} contains NaN or inf; coordinates must be finite")
    return p


_COUNT = Interval(1, integer=True)


def _normalised_offsets(p, name):
    """Offsets p_j − p_i [n, n, 2] and distances [n, n] over the mean pairwise distance."""
    diff = p[None, :, :] - p[:, None, :]
    dist = np.hypot(diff[..., 0], diff[..., 1])
    n = len(p)
    scale = dist.sum() / (n * (n - 1))
    if scale <= 0.0:
        raise ValueError(f"{name}: all points coincide; the scale (mean pairwise distance) is 0")
    return diff / scale, dist / scale


@validate_params({"n_radial": _COUNT, "n_angular": _COUNT}, unchecked=("points",))
def shape_context(points, n_radial=5, n_angular=12):
    """Log-polar histograms [n, n_radial, n_angular] of the other points' positions relative
    to each point (fractions of the n − 1 others, rows sum to 1)."""
    p = _check_points(points, "points")
    diff, dist = _normalised_offsets(p, "points")
    n = len(p)
    inner = np.geomspace(R_INNER, R_OUTER, n_radial + 1)[1:-1]  # ring boundaries
    ring = np.searchsorted(inner, dist)
    angle = np.arctan2(diff[..., 1], diff[..., 0]) % (2 * np.pi)
    sector = np.minimum((angle * n_angular / (2 * np.pi)).astype(np.int64), n_angular - 1)
    hist = np.zeros((n, n_radial * n_angular))
    rows, cols = np.nonzero(~np.eye(n, dtype=bool))
    np.add.at(hist, (rows, ring[rows, cols] * n_angular + sector[rows, cols]), 1.0 / (n - 1))
    return hist.reshape(n, n_radial, n_angular)


@validate_params({"n_quantiles": _COUNT}, unchecked=("points",))
def distance_profile(points, n_quantiles=5):
    """Quantiles [n, n_quantiles] at levels 0, 1/(q−1), ..., 1 (0.5 if q = 1) of each point's
    distances to the others, in mean pairwise distances."""
    p = _check_points(points, "points")
    _, dist = _normalised_offsets(p, "points")
    n = len(p)
    others = dist[~np.eye(n, dtype=bool)].reshape(n, n - 1)
    levels = np.linspace(0.0, 1.0, n_quantiles) if n_quantiles > 1 else np.array([0.5])
    return np.quantile(others, levels, axis=1).T


def _chi2(a, b):
    """½ Σ (a − b)² / (a + b) over the last axis, 0/0 = 0."""
    s = a + b
    return 0.5 * np.sum(np.divide((a - b) ** 2, s, out=np.zeros_like(s), where=s > 0), axis=-1)


@validate_params({"n_radial": _COUNT, "n_angular": _COUNT, "n_quantiles": _COUNT},
                 unchecked=("P", "Q"))
def matching_features(P, Q, n_radial=5, n_angular=12, n_quantiles=5):
    """Edge features G [n, m, n_radial + n_quantiles] for matching point i of P to point j
    of Q: −χ² per shape-context ring, then −|difference| per distance quantile."""
    P, Q = _check_points(P, "P"), _check_points(Q, "Q")
    sp, sq = shape_context(P, n_radial, n_angular), shape_context(Q, n_radial, n_angular)
    dp, dq = distance_profile(P, n_quantiles), distance_profile(Q, n_quantiles)
    rings = -_chi2(sp[:, None], sq[None, :])
    dists = -np.abs(dp[:, None, :] - dq[None, :, :])
    return np.concatenate([rings, dists], axis=2)
