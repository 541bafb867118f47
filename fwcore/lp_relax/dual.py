"""Dual solvers of the MAP LP relaxation (Smooth and Strong, eq. 2-4, 10-11, Sec. 4.3).

Each solver is a generator over iterations (one pass over all regions) yielding a
`Step`: the method's own objective, the non-smooth dual g(δ) at the iterate (eq. 2; a
certified upper bound on the MAP score for any δ), the assignment decoded from the
reparameterised node potentials, and the optimality measure compared with ``tol``.
"""
from dataclasses import dataclass

import numpy as np

from .._kernels import project_simplex_pivot, project_simplex_sort

_FLOOR = -1e300   # stands for -inf in the projection kernels (projected to exactly 0)


@dataclass(frozen=True)
class Step:
    objective: float
    bound: float
    x: np.ndarray
    measure: float          # compared with tol (gap, gradient norm, relative decrease)


# -- per-region local problems ---------------------------------------------------------------

def _softmax(h, gamma, axis):
    """γ log Σ exp(h/γ) along axis and the soft-max beliefs b (eq. 3, 6)."""
    top = h.max(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):   # all -inf rows (padding) give NaN; callers mask them
        e = np.exp((h - top) / gamma)
        s = e.sum(axis=axis, keepdims=True)
        return np.squeeze(top + gamma * np.log(s), axis=axis), e / s


def _l2max(h, gamma, projection):
    """max_{u ∈ Δ} uᵀh - γ/2 ‖u‖² per row of h (R, W) and its maximiser u = Π_Δ(h/γ)
    (eq. 11) by the sort or pivot simplex projection kernel."""
    rows, width = h.shape
    u = np.maximum(h / gamma, _FLOOR).ravel()
    offsets = np.arange(rows + 1, dtype=np.int64) * width
    (project_simplex_pivot if projection == "pivot" else project_simplex_sort)(u, offsets)
    u = u.reshape(rows, width)
    with np.errstate(invalid="ignore"):
        return np.where(u > 0, u * h, 0.0).sum(axis=1) - 0.5 * gamma * (u * u).sum(axis=1), u


class _Smooth:
    """Value and gradient of a smoothed pairwise dual: "softmax" (eq. 3) or "l2"
    (eq. 11), plus λ/2 ‖δ‖² when lam > 0 (smooth and strong, Sec. 4.3)."""

    def __init__(self, reg, kind, gamma, lam=0.0, projection="sort"):
        self.reg, self.kind, self.gamma, self.lam, self.projection = reg, kind, gamma, lam, projection
        # the paper plots the L2 objective shifted by qγ/2 (Sec. 4.2, footnote 2)
        self.shift = 0.5 * gamma * reg.n_regions if kind == "l2" else 0.0

    def local(self, h):
        if self.kind == "softmax":
            return _softmax(h, self.gamma, axis=1)
        return _l2max(h, self.gamma, self.projection)

    def __call__(self, d):
        reg = self.reg
        hn, he = reg.node_hat(d), reg.edge_hat(d)
        vn, bn = self.local(hn)
        ve, be = self.local(he.reshape(reg.n_edges, reg.k ** 2))
        grad = bn[reg.ends] - reg.edge_to_node(be.reshape(he.shape))
        value = vn.sum() + ve.sum() + self.shift
        if self.lam:
            value += 0.5 * self.lam * float((d * d).sum())
            grad += self.lam * d
        bound = hn.max(axis=1).sum() + he.reshape(reg.n_edges, reg.k ** 2).max(axis=1).sum()
        return float(value), grad, float(bound), hn.argmax(axis=1)


def gradient(reg, kind, gamma, lam, projection, accelerated):
    """GD with step 1/L or Nesterov's accelerated GD (FISTA momentum; constant momentum
    (√κ-1)/(√κ+1) when lam > 0 makes the dual strongly convex, Sec. 4.3)."""
    f = _Smooth(reg, kind, gamma, lam, projection)
    big_l = reg.lipschitz() / gamma + lam
    d = np.zeros((2, reg.n_edges, reg.k))
    value, grad, bound, x = f(d)
    prev, t = d, 1.0
    while True:
        if accelerated:
            if lam:
                beta = (np.sqrt(big_l) - np.sqrt(lam)) / (np.sqrt(big_l) + np.sqrt(lam))
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta, t = (t - 1.0) / t_next, t_next
            y = d + beta * (d - prev)
            grad_y = f(y)[1]
            prev, d = d, y - grad_y / big_l
        else:
            d = d - grad / big_l
        value, grad, bound, x = f(d)
        yield Step(value, bound, x, float(np.abs(grad).max(initial=0.0)))


# -- non-smooth dual (eq. 2) ----------------------------------------------------------------

def _factor_max(reg, dc):
    """For each global factor: its argmax x_c of θ̂_c and max θ̂_c = θ_c(x_c) - Σ δ_ci(x_ci)."""
    out = []
    for f, m in zip(reg.factors, dc):
        xc = f.maximize(-m)
        out.append((xc, f.potential(xc) - m[np.arange(m.shape[0]), xc].sum()))
    return out


def _dual_value(reg, d, dc):
    hn, he = reg.node_hat(d, dc), reg.edge_hat(d)
    fmax = _factor_max(reg, dc)
    g = hn.max(axis=1).sum() + he.reshape(reg.n_edges, reg.k ** 2).max(axis=1).sum() + sum(v for _, v in fmax)
    return float(g), hn, he, fmax


def _factor_messages(reg):
    return [np.zeros((f.scope.size, int(reg.card[f.scope].max()))) for f in reg.factors]


def subgradient(reg, score_of):
    """Subgradient descent on eq. 2 with the Polyak step (g(δ) - best decoded score) / ‖s‖²,
    scaled by a factor halved after 20 iterations without a better bound (Held, Wolfe
    and Crowder 1974). ``score_of(x)`` gives the decoded score that sets the target."""
    d, dc = np.zeros((2, reg.n_edges, reg.k)), _factor_messages(reg)
    scale, best_bound, since, target = 2.0, np.inf, 0, -np.inf
    cols = np.arange(reg.k)
    while True:
        g, hn, he, fmax = _dual_value(reg, d, dc)
        x = hn.argmax(axis=1)
        target = max(target, score_of(x))
        if g < best_bound - 1e-12 * max(1.0, abs(g)):
            best_bound, since = g, 0
        else:
            since += 1
            if since >= 20:
                scale, since = 0.5 * scale, 0
        flat = he.reshape(reg.n_edges, reg.k ** 2).argmax(axis=1)
        edge_arg = np.stack([flat // reg.k, flat % reg.k])
        sg = (cols == x[reg.ends][..., None]).astype(float) - (cols == edge_arg[..., None])
        sgc = [(np.arange(m.shape[1]) == x[f.scope][:, None]).astype(float) -
               (np.arange(m.shape[1]) == xc[:, None]) for f, m, (xc, _) in zip(reg.factors, dc, fmax)]
        norm2 = float((sg * sg).sum() + sum((s * s).sum() for s in sgc))
        yield Step(g, g, x, norm2)
        if norm2 == 0.0:
            continue   # every region agrees: δ is optimal (the measure already said so)
        alpha = scale * max(g - target, 1e-12 * max(1.0, abs(g))) / norm2
        d -= alpha * sg
        for m, s in zip(dc, sgc):
            m -= alpha * s


def _star_update(reg, d, dc, nodes, gamma):
    """Exact block minimisation of eq. 2 (gamma=0) or eq. 3 over {δ_ei : e ∋ i} for the
    nodes of one colour class (the "star" update, Sontag, Globerson and Jaakkola 2011):
    δ_ei = λ_ei - T_i / (P_i + 1), T_i = θ_i + Σ_c δ_ci + Σ_e λ_ei, with λ_ei the
    (soft-)max-marginal of θ_e - δ_{e,other} on x_i."""
    in_class = np.zeros(reg.n, dtype=bool)
    in_class[nodes] = True
    lam = [None, None]
    total = reg.node_hat(np.zeros_like(d), dc)
    edges = [np.flatnonzero(in_class[reg.ends[end]]) for end in (0, 1)]
    for end in (0, 1):
        sel = edges[end]
        t = reg.edge_theta[sel] - (d[1][sel][:, None, :] if end == 0 else d[0][sel][:, :, None])
        axis = 2 if end == 0 else 1
        lam[end] = t.max(axis=axis) if gamma == 0 else _softmax(t, gamma, axis)[0]
        idx = (reg.ends[end][sel][:, None] * reg.k + np.arange(reg.k)).ravel()
        with np.errstate(invalid="ignore"):
            total += np.bincount(idx, weights=lam[end].ravel(), minlength=total.size).reshape(total.shape)
    n_edge_parents = np.bincount(reg.ends.ravel(), minlength=reg.n)
    share = total / (n_edge_parents + 1)[:, None]
    for end in (0, 1):
        sel = edges[end]
        with np.errstate(invalid="ignore"):
            new = lam[end] - share[reg.ends[end][sel]]
        d[end][sel] = np.where(np.isfinite(new) & reg.msg_valid[end][sel], new, 0.0)


def _mplp_factor_update(reg, d, dc, c):
    """MPLP block update of a global factor's messages (Globerson and Jaakkola 2008):
    δ_ci = -b_i + MM_i / |c|, b_i = θ̂_i without δ_ci, MM the factor's max-marginals."""
    f, m = reg.factors[c], dc[c]
    b = reg.node_hat(d, dc)[f.scope, :m.shape[1]] - m
    with np.errstate(invalid="ignore"):
        new = f.max_marginals(b) / f.scope.size - b
    m[...] = np.where(np.isfinite(new), new, 0.0)


def coordinate_descent(reg, gamma):
    """Block coordinate descent on eq. 2 (``gamma=0``: MPLP, may stall at a non-optimal
    point) or on the soft-max dual eq. 3 (converges to its optimum): star updates over
    node colour classes, then MPLP updates of global factors."""
    d, dc = np.zeros((2, reg.n_edges, reg.k)), _factor_messages(reg)
    classes = reg.colouring()
    smooth = _Smooth(reg, "softmax", gamma) if gamma else None
    prev = np.inf
    while True:
        for nodes in classes:
            _star_update(reg, d, dc, nodes, gamma)
        for c in range(len(reg.factors)):
            _mplp_factor_update(reg, d, dc, c)
        g, hn, _, _ = _dual_value(reg, d, dc)
        value = g if smooth is None else smooth(d)[0]
        decrease = (prev - value) / max(1.0, abs(value)) if np.isfinite(prev) else np.inf
        prev = value
        yield Step(value, g, hn.argmax(axis=1), max(decrease, 0.0))
