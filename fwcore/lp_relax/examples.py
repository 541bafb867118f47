"""Models for the experiments of Smooth and Strong Sec. 5 (benchmarks and tests).

- `kolmogorov_example`: an arc-consistent model whose LP optimum lies below the dual at
  δ = 0, so non-smooth coordinate descent cannot move (in the spirit of Kolmogorov 2006,
  used for Fig. 1);
- `segmentation`: a binary grid segmentation model with a global cardinality factor
  (Fig. 2 right; a synthetic image stands in for the Weizmann horses).
"""
import numpy as np

from ..generators import grid_edges
from ..model import PairwiseMRF
from .factors import CardinalityFactor

__all__ = ["kolmogorov_example", "segmentation"]


def kolmogorov_example(copies=1, weight=1.0, seed=None):
    """``copies`` disjoint gadgets. Each has a ternary hub B and, for each label b of B, a
    triangle B-X-Y of binary variables whose allowed pairs (score 0; others -weight)
    force μ_B(b) = 0 in the local polytope (X1 = B_o2, Y1 = B_b + B_o2, X1 = Y1), while
    every label keeps a support on every edge (arc consistency). So g(0) = 0 is a fixed
    point of MPLP, yet no relaxed labelling uses only allowed pairs: the LP optimum is
    < 0. ``seed`` adds small random node scores (kept below the gap)."""
    card, edges, tables = [], [], []
    for _ in range(int(copies)):
        hub = len(card)
        card.append(3)
        for b in range(3):
            o1, o2 = [o for o in range(3) if o != b]
            x, y = len(card), len(card) + 1
            card += [2, 2]
            xb = np.full((2, 3), -weight)          # X0 - {B_o1, B_b}, X1 - B_o2
            xb[0, [o1, b]] = 0.0
            xb[1, o2] = 0.0
            by = np.full((3, 2), -weight)          # B_o1 - Y0, B_b - Y1, B_o2 - Y1
            by[o1, 0] = by[b, 1] = by[o2, 1] = 0.0
            edges += [(x, hub), (hub, y), (x, y)]
            tables += [xb, by, np.where(np.eye(2) > 0, 0.0, -weight)]
    unary = None
    if seed is not None:
        rng = np.random.default_rng(seed)
        unary = [1e-3 * weight * rng.random(c) for c in card]
    return PairwiseMRF(card, unary, edges, tables)


def segmentation(h=150, w=150, smoothness=1.0, noise=1.0, card_weight=0.01, seed=0):
    """Foreground/background segmentation of a noisy synthetic image (an ellipse) on an
    h × w 4-connected grid: unary log-likelihood ratios from the noisy intensities, Potts
    smoothness on the edges, and the global cardinality factor of Li and Zemel,
    θ_c = -card_weight · max{0, |Σ x - s0| - t}², s0 the true foreground area, t = s0/5.
    Returns (model, factor, truth)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    truth = (((yy - 0.55 * h) / (0.3 * h)) ** 2
             + ((xx - 0.45 * w) / (0.22 * w)) ** 2 < 1).astype(int)
    image = truth + noise * rng.normal(size=truth.shape)
    # log N(image; 1, noise) - log N(image; 0, noise), with a bias towards foreground
    llr = (image - 0.5) / noise ** 2 + 0.3
    unary = np.stack([np.zeros(h * w), llr.ravel()], axis=1)
    edges = grid_edges(h, w)
    pairwise = np.broadcast_to(smoothness * np.eye(2), (len(edges), 2, 2))
    model = PairwiseMRF(np.full(h * w, 2), unary, edges, pairwise)
    s0 = float(truth.sum())
    factor = CardinalityFactor(np.arange(h * w), s0=s0, t=s0 / 5, weight=card_weight)
    return model, factor, truth.ravel()
