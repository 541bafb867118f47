"""Model constructors for common graphs and the seeded synthetic families of the papers.

Structural builders (`grid`, `complete`, `bipartite`) take the potentials; the `random_*`
generators draw them reproducibly from ``seed``. Spin-form potentials (Barrier FW Sec. 5)
map x ∈ {0, 1} to s = 2x − 1: a field θ_i s_i is the table [−θ_i, θ_i] and a coupling
θ_ij s_i s_j the table [[θ_ij, −θ_ij], [−θ_ij, θ_ij]].
"""
import numpy as np

from .checks import SEED, Interval, Kind, check_params, validate_params
from .model import PairwiseMRF

__all__ = ["grid_edges", "grid", "complete", "bipartite", "random_clique", "random_grid",
           "random_rbm", "potts_grid", "frustrated_clique", "segmentation_crf", "skip_grid"]

#: intensity means of background (x = 0) and foreground (x = 1) in `segmentation_crf`
SEGMENTATION_MEANS = (0.3, 0.7)
_SIZE = Interval(1, integer=True)
_NONNEG = Interval(0.0)
_FLAG = Kind(lambda v: isinstance(v, (bool, np.bool_)), "True or False")
_GRID = {"h": _SIZE, "w": _SIZE}
#: the structural builders leave their potentials to the model constructor's checks
_POTENTIALS = ("unary", "pairwise", "card")
#: the arguments shared by the random families
_RANDOM = {"coupling": _NONNEG, "field": _NONNEG, "seed": SEED}
_OFFSETS = Kind(lambda o: isinstance(o, (tuple, list)), "a tuple of offsets")


@validate_params(_GRID)
def grid_edges(h, w):
    """Edges of an h × w 4-connected grid, variable r*w + c; for each cell in row-major
    order its right neighbour, then its down neighbour."""
    return _offset_edges(h, w, 1)


def _offset_edges(h, w, d):
    """Edges from each cell (r, c), in row-major order, to (r, c + d) then to (r + d, c),
    where those exist; variable r*w + c."""
    v = np.arange(h * w, dtype=np.int64).reshape(h, w)
    r, c = np.divmod(v, w)
    pairs = np.stack([np.stack([v, v + d], -1), np.stack([v, v + d * w], -1)], 2)
    keep = np.stack([c + d < w, r + d < h], -1)
    return pairs[keep].reshape(-1, 2)


@validate_params(_GRID, unchecked=_POTENTIALS)
def grid(h, w, unary=None, pairwise=None, card=2):
    """An h × w grid MRF; edges in the order of `grid_edges`."""
    return _build(h * w, grid_edges(h, w), unary, pairwise, card)


@validate_params({"n": _SIZE}, unchecked=_POTENTIALS)
def complete(n, unary=None, pairwise=None, card=2):
    """The complete graph K_n; edges (i, j), i < j, in lexicographic order."""
    i, j = np.triu_indices(n, k=1)
    return _build(n, np.stack([i, j], axis=1), unary, pairwise, card)


@validate_params({"n_left": _SIZE, "n_right": _SIZE}, unchecked=_POTENTIALS)
def bipartite(n_left, n_right, unary=None, pairwise=None, card=2):
    """The complete bipartite graph: variables 0..n_left-1 on the left, the rest on the
    right; edges (i, n_left + j) in row-major order of (i, j)."""
    i, j = np.meshgrid(np.arange(n_left), np.arange(n_right), indexing="ij")
    edges = np.stack([i.ravel(), n_left + j.ravel()], axis=1)
    return _build(n_left + n_right, edges, unary, pairwise, card)


def _build(n, edges, unary, pairwise, card):
    """The model over ``edges`` with the given tables: arrays (n, k) and (E, k, k) are
    taken whole by the constructor, a 2-D ``pairwise`` array is the table of every edge
    (broadcast, not copied), sequences go table by table."""
    card_arr = np.broadcast_to(np.asarray(card, dtype=np.int64), (n,))
    if unary is not None and not isinstance(unary, (list, tuple)):
        unary = np.asarray(unary, dtype=np.float64)
    if pairwise is not None and not isinstance(pairwise, (list, tuple)):
        pairwise = np.asarray(pairwise, dtype=np.float64)
        if pairwise.ndim == 2:  # one table shared by every edge
            pairwise = np.broadcast_to(pairwise, (len(edges), *pairwise.shape))
    return PairwiseMRF(card_arr, unary, edges, pairwise)


def _spin_unary(field):
    return np.stack([-field, field], axis=1)


def _spin_pairwise(coupling):
    c = np.asarray(coupling, dtype=np.float64)
    return np.stack([np.stack([c, -c], -1), np.stack([-c, c], -1)], -2)


@validate_params({"n": _SIZE, **_RANDOM})
def random_clique(n=10, coupling=2.0, field=1.0, seed=None):
    """Barrier FW's clique family: K_n, binary, θ_i ~ U[−field, field],
    θ_ij ~ U[−coupling, coupling], in spin form."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(-field, field, n)
    m = n * (n - 1) // 2
    c = rng.uniform(-coupling, coupling, m)
    return complete(n, _spin_unary(f), _spin_pairwise(c))


@validate_params({"h": _SIZE, "w": [_SIZE, None], **_RANDOM})
def random_grid(h, w=None, coupling=4.0, field=1.0, seed=None):
    """Barrier FW's grid family: unary [θ_i, −θ_i] with θ_i ~ U[−field, field], pairwise
    [w, −w; −w, w] with w ~ U[−coupling, coupling]."""
    w = h if w is None else w
    rng = np.random.default_rng(seed)
    f = rng.uniform(-field, field, h * w)
    edges = grid_edges(h, w)
    c = rng.uniform(-coupling, coupling, len(edges))
    return grid(h, w, _spin_unary(-f), _spin_pairwise(c))


@validate_params({"n_visible": _SIZE, "n_hidden": _SIZE, **_RANDOM})
def random_rbm(n_visible=20, n_hidden=20, coupling=1.0, field=1.0, seed=None):
    """A restricted Boltzmann machine in spin form: complete bipartite graph between
    visible and hidden units, θ_i ~ U[−field, field], θ_ij ~ U[−coupling, coupling]."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(-field, field, n_visible + n_hidden)
    c = rng.uniform(-coupling, coupling, n_visible * n_hidden)
    return bipartite(n_visible, n_hidden, _spin_unary(f), _spin_pairwise(c))


@validate_params({"h": _SIZE, "w": [_SIZE, None], "n_labels": _SIZE, **_RANDOM})
def potts_grid(h, w=None, n_labels=3, coupling=1.0, field=1.0, seed=None):
    """A multi-label Potts grid: θ_i(k) ~ U[−field, field], θ_ij(k, l) = β_ij [k = l] with
    β_ij ~ U[−coupling, coupling] (mixed attractive and repulsive edges)."""
    w = h if w is None else w
    rng = np.random.default_rng(seed)
    unary = rng.uniform(-field, field, (h * w, n_labels))
    edges = grid_edges(h, w)
    beta = rng.uniform(-coupling, coupling, len(edges))
    k, n_node = n_labels, h * w * n_labels
    theta = np.zeros(n_node + len(edges) * k * k)  # the flat layout, written in place
    theta[:n_node] = unary.ravel()
    theta[n_node:].reshape(len(edges), k * k)[:, ::k + 1] = beta[:, None]  # diagonals
    theta.flags.writeable = False  # taken without a copy
    return PairwiseMRF.from_flat(np.full(h * w, k), edges, theta)


@validate_params({"n": _SIZE, **_RANDOM})
def frustrated_clique(n=10, coupling=2.0, field=0.1, seed=None):
    """A fully frustrated binary clique: every coupling repulsive, θ_ij = −|U[0, coupling]|
    in spin form, so no assignment satisfies all edges; weak random fields."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(-field, field, n)
    c = -rng.uniform(0.0, coupling, n * (n - 1) // 2)
    return complete(n, _spin_unary(f), _spin_pairwise(c))


@validate_params({**_GRID, "n_shapes": Interval(0, integer=True),
                  "noise": Interval(0.0, lo_open=True), "lam": _NONNEG,
                  "repulsive": Interval(0.0, 1.0), "seed": SEED, "return_image": _FLAG})
def segmentation_crf(h=100, w=120, n_shapes=3, noise=0.25, lam=1.0, repulsive=0.03,
                     seed=None, return_image=False):
    """A binary image-segmentation CRF of the size of Barrier FW's Horses (Sec. 5; N about
    12,000 at the default 100 × 120), on a synthetic image drawn from ``seed``.

    The truth is the union of ``n_shapes`` random ellipses (foreground, x = 1); the image
    is its intensity, `SEGMENTATION_MEANS` (background, foreground), plus Gaussian noise
    of standard deviation ``noise``. Variable r*w + c is pixel (r, c), edges those of
    `grid_edges`. Unary: the Gaussian log-likelihood of the pixel's intensity I_i under each
    class, θ_i(x) = −(I_i − m_x)² / (2 noise²). Pairwise: contrast-sensitive Potts,
    θ_ij(x_i, x_j) = w_ij [x_i = x_j] with w_ij = lam exp(−β (I_i − I_j)²) and
    β = 1 / (2 mean over edges of (I_i − I_j)²) (GrabCut's choice); then a random
    ``repulsive`` fraction of the edges (round(repulsive × E) of them) get −w_ij, so the
    model is near-submodular, not submodular.

    Returns the `PairwiseMRF`; with ``return_image=True`` the tuple (model, image, truth):
    the noisy image, float64 (h, w), and the foreground mask, bool (h, w).
    """
    rng = np.random.default_rng(seed)
    side = min(h, w)
    centre = rng.uniform(0.15, 0.85, (n_shapes, 2)) * [h, w]
    axes = rng.uniform(0.1, 0.3, (n_shapes, 2)) * side + 0.5
    angle = rng.uniform(0.0, np.pi, n_shapes)
    dr = np.arange(h)[None, :, None] - centre[:, 0, None, None]
    dc = np.arange(w)[None, None, :] - centre[:, 1, None, None]
    cos, sin = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    inside = (((dr * cos + dc * sin) / axes[:, 0, None, None]) ** 2
              + ((dc * cos - dr * sin) / axes[:, 1, None, None]) ** 2) <= 1.0
    truth = inside.any(axis=0) if n_shapes else np.zeros((h, w), dtype=bool)
    means = np.asarray(SEGMENTATION_MEANS)
    image = means[truth.astype(np.int64)] + noise * rng.standard_normal((h, w))
    intensity = image.ravel()
    unary = -(intensity[:, None] - means) ** 2 / (2.0 * noise ** 2)
    edges = grid_edges(h, w)
    d2 = (intensity[edges[:, 0]] - intensity[edges[:, 1]]) ** 2
    mean_d2 = d2.mean() if d2.size else 0.0
    beta = 1.0 / (2.0 * mean_d2) if mean_d2 > 0 else 0.0
    weight = lam * np.exp(-beta * d2)
    weight[rng.choice(len(edges), int(round(repulsive * len(edges))), replace=False)] *= -1
    model = grid(h, w, unary, weight[:, None, None] * np.eye(2))
    return (model, image, truth) if return_image else model


@validate_params({"h": _SIZE, "w": [_SIZE, None], "offsets": _OFFSETS, **_RANDOM})
def skip_grid(h=80, w=None, offsets=(1, 2, 4), coupling=1.0, field=1.0, seed=None):
    """A frustrated binary grid with skip edges, like Barrier FW's Chinese characters
    (Sec. 5: "not a grid due to skip edges that tie nodes at various offsets", submodular
    and supermodular potentials mixed); 6,400 variables at the default 80 × 80.

    Variable r*w + c is cell (r, c). For each offset d in ``offsets``, in that order, each
    cell in row-major order is joined to (r, c + d) and then to (r + d, c) where they
    exist (offsets=(1,) gives `grid_edges`). Spin form: θ_i ~ U[−field, field] with
    unary [−θ_i, θ_i], θ_ij ~ U[−coupling, coupling] with pairwise
    [[θ_ij, −θ_ij], [−θ_ij, θ_ij]], fields drawn first.
    """
    w = h if w is None else w
    offsets = [check_params({f"offsets[{k}]": _SIZE}, **{f"offsets[{k}]": d})[f"offsets[{k}]"]
               for k, d in enumerate(offsets)]
    if not offsets:
        raise ValueError("offsets must hold at least one offset, e.g. (1, 2, 4)")
    if len(set(offsets)) < len(offsets):
        raise ValueError(f"offsets must be distinct (each would repeat its edges); got {offsets}")
    rng = np.random.default_rng(seed)
    edges = np.concatenate([_offset_edges(h, w, d) for d in offsets])
    f = rng.uniform(-field, field, h * w)
    c = rng.uniform(-coupling, coupling, len(edges))
    return _build(h * w, edges, _spin_unary(f), _spin_pairwise(c), 2)
