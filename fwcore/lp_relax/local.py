"""Local problems of one region, shared by the dual and primal solvers (Smooth and
Strong eq. 2, 6, 11): the L2-smoothed maxima over a region's simplex (the soft-max ones
are `Segments.softmax`), the maxima of global factors and the non-smooth dual g(δ) they
add up to."""
import numpy as np

from .._kernels import project_simplex_pivot, project_simplex_sort

__all__ = ["l2max", "factor_max", "nonsmooth_dual"]

_FLOOR = -1e300   # stands for -inf in the projection kernels (projected to exactly 0)


def l2max(h, gamma, projection, segments=None):
    """max_{u ∈ Δ} uᵀh - γ/2 ‖u‖² over each row of h (R, W), or over each segment of the
    flat vector h (`Segments`), and its maximiser u = Π_Δ(h/γ) (eq. 11), by the sort or
    pivot simplex projection kernel. Returns (values per row or segment, u shaped as h)."""
    if segments is None:
        rows, width = h.shape
        offsets = np.arange(rows + 1, dtype=np.int64) * width
    else:
        rows, offsets = segments.count, segments.offsets
    u = np.maximum(h / gamma, _FLOOR).ravel()
    (project_simplex_pivot if projection == "pivot" else project_simplex_sort)(u, offsets)
    u = u.reshape(h.shape)
    with np.errstate(invalid="ignore"):
        terms = np.where(u > 0, u * h, 0.0) - 0.5 * gamma * (u * u)
    if segments is None:
        return terms.sum(axis=1), u
    return segments.sum(terms), u


def factor_max(regions, dc):
    """For each global factor: its argmax x_c of θ̂_c and max θ̂_c = θ_c(x_c) - Σ δ_ci(x_ci)."""
    out = []
    for f, m in zip(regions.factors, dc):
        xc = f.maximize(-m)
        out.append((xc, f.potential(xc) - m[np.arange(m.shape[0]), xc].sum()))
    return out


def nonsmooth_dual(regions, hn, he, fmax=()):
    """g(δ) (eq. 2) from the reparameterised node and edge vectors and the factors'
    `factor_max`: a certified upper bound on the MAP score for any δ."""
    return float(regions.nodes.max(hn).sum() + regions.edges.max(he).sum()
                 + sum(v for _, v in fmax))
