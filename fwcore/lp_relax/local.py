"""Local problems of one region, shared by the dual and primal solvers (Smooth and
Strong eq. 2, 3, 6, 11): the soft-max and L2-smoothed maxima over a region's simplex, the
maxima of global factors and the non-smooth dual g(δ) they add up to."""
import numpy as np

from .._kernels import project_simplex_pivot, project_simplex_sort

__all__ = ["softmax", "l2max", "factor_max", "nonsmooth_dual"]

_FLOOR = -1e300   # stands for -inf in the projection kernels (projected to exactly 0)


def softmax(h, gamma, axis):
    """γ log Σ exp(h/γ) along axis and the soft-max beliefs b (eq. 3, 6)."""
    top = h.max(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):   # all -inf rows (padding) give NaN; callers mask them
        e = np.exp((h - top) / gamma)
        s = e.sum(axis=axis, keepdims=True)
        return np.squeeze(top + gamma * np.log(s), axis=axis), e / s


def l2max(h, gamma, projection):
    """max_{u ∈ Δ} uᵀh - γ/2 ‖u‖² per row of h (R, W) and its maximiser u = Π_Δ(h/γ)
    (eq. 11) by the sort or pivot simplex projection kernel."""
    rows, width = h.shape
    u = np.maximum(h / gamma, _FLOOR).ravel()
    offsets = np.arange(rows + 1, dtype=np.int64) * width
    (project_simplex_pivot if projection == "pivot" else project_simplex_sort)(u, offsets)
    u = u.reshape(rows, width)
    with np.errstate(invalid="ignore"):
        return np.where(u > 0, u * h, 0.0).sum(axis=1) - 0.5 * gamma * (u * u).sum(axis=1), u


def factor_max(regions, dc):
    """For each global factor: its argmax x_c of θ̂_c and max θ̂_c = θ_c(x_c) - Σ δ_ci(x_ci)."""
    out = []
    for f, m in zip(regions.factors, dc):
        xc = f.maximize(-m)
        out.append((xc, f.potential(xc) - m[np.arange(m.shape[0]), xc].sum()))
    return out


def nonsmooth_dual(regions, hn, he, fmax=()):
    """g(δ) (eq. 2) from the reparameterised node and edge tables and the factors'
    `factor_max`: a certified upper bound on the MAP score for any δ."""
    return float(hn.max(axis=1).sum() + he.reshape(regions.n_edges, regions.k ** 2).max(axis=1).sum()
                 + sum(v for _, v in fmax))
