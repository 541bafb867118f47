"""Dual solvers of the MAP LP relaxation (Smooth and Strong, eq. 2-4, 10-11, Sec. 4.3).

Each solver is a generator over iterations (one pass over all regions) yielding a plain
tuple ``(objective, bound, x, measure)``: the method's own objective, the non-smooth dual
g(δ) at the iterate (eq. 2; a certified upper bound on the MAP score for any δ), the
assignment decoded from the reparameterised node potentials, and the optimality measure
compared with ``tol``. `fwcore.lp_relax.infer_lp` turns them into `Record`s.
"""
import numpy as np

from .local import factor_max, l2max, nonsmooth_dual
from .regions import MessageGroups


class _Smooth:
    """Value and gradient of a smoothed pairwise dual: "softmax" (eq. 3) or "l2"
    (eq. 11), plus λ/2 ‖δ‖² when reg > 0 (smooth and strong, Sec. 4.3)."""

    def __init__(self, regions, kind, gamma, reg=0.0, projection="sort"):
        self.regions, self.kind, self.gamma, self.reg, self.projection = (
            regions, kind, gamma, reg, projection)
        # the paper plots the L2 objective shifted by qγ/2 (Sec. 4.2, footnote 2)
        self.shift = 0.5 * gamma * regions.n_regions if kind == "l2" else 0.0

    def local(self, h, segments):
        if self.kind == "softmax":
            return segments.softmax(h, self.gamma)
        return l2max(h, self.gamma, self.projection, segments)

    def __call__(self, d):
        regions = self.regions
        hn, he = regions.node_hat(d), regions.edge_hat(d)
        vn, bn = self.local(hn, regions.nodes)
        ve, be = self.local(he, regions.edges)
        grad = bn[regions.msg_node] - regions.edge_to_node(be)
        value = vn.sum() + ve.sum() + self.shift
        if self.reg:
            value += 0.5 * self.reg * float((d * d).sum())
            grad += self.reg * d
        return float(value), grad, nonsmooth_dual(regions, hn, he), regions.decode(hn)


def gradient(regions, kind, gamma, reg, projection, accelerated):
    """GD with step 1/L or Nesterov's accelerated GD (FISTA momentum; constant momentum
    (√κ-1)/(√κ+1) when reg > 0 makes the dual strongly convex, Sec. 4.3)."""
    f = _Smooth(regions, kind, gamma, reg, projection)
    big_l = regions.lipschitz() / gamma + reg
    d = regions.zero_messages()
    value, grad, bound, x = f(d)
    prev, t = d, 1.0
    while True:
        if accelerated:
            if reg:
                beta = (np.sqrt(big_l) - np.sqrt(reg)) / (np.sqrt(big_l) + np.sqrt(reg))
            else:
                t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
                beta, t = (t - 1.0) / t_next, t_next
            y = d + beta * (d - prev)
            grad_y = f(y)[1]
            prev, d = d, y - grad_y / big_l
        else:
            d = d - grad / big_l
        value, grad, bound, x = f(d)
        yield value, bound, x, float(np.abs(grad).max(initial=0.0))


# -- non-smooth dual (eq. 2) ----------------------------------------------------------------

def _dual_value(regions, d, dc):
    hn, he = regions.node_hat(d, dc), regions.edge_hat(d)
    fmax = factor_max(regions, dc)
    return nonsmooth_dual(regions, hn, he, fmax), hn, he, fmax


def _factor_messages(regions):
    return [np.zeros((f.scope.size, int(regions.card[f.scope].max()))) for f in regions.factors]


def subgradient(regions):
    """Subgradient descent on eq. 2 with the Polyak step (g(δ) - best decoded score) / ‖s‖²,
    scaled by a factor halved after 20 iterations without a better bound (Held, Wolfe
    and Crowder 1974). The target is the best decoded score on the penalised scores the
    dual is taken over (`Regions.score`), always finite, so the step is too."""
    d, dc = regions.zero_messages(), _factor_messages(regions)
    scale, best_bound, since, target = 2.0, np.inf, 0, -np.inf
    n_edges, msg_off = regions.n_edges, regions.msg_off
    while True:
        g, hn, he, fmax = _dual_value(regions, d, dc)
        top_n = regions.node_argmax(hn)
        x = regions.repaired(top_n)
        target = max(target, regions.score(x, penalised=True))
        if g < best_bound - 1e-12 * max(1.0, abs(g)):
            best_bound, since = g, 0
        else:
            since += 1
            if since >= 20:
                scale, since = 0.5 * scale, 0
        # s = [the node's maximising state at each message] - [the edge's maximising state]
        top = regions.edges.argmax(he)
        sg = regions.zero_messages()
        for end in (0, 1):
            block = msg_off[end * n_edges:(end + 1) * n_edges]
            sg[block + top_n[regions.ends[end]]] += 1.0
            sg[regions.entry_msg[end][top]] -= 1.0
        sgc = [(np.arange(m.shape[1]) == top_n[f.scope][:, None]).astype(float) -
               (np.arange(m.shape[1]) == xc[:, None])
               for f, m, (xc, _) in zip(regions.factors, dc, fmax)]
        norm2 = float((sg * sg).sum() + sum((s * s).sum() for s in sgc))
        yield g, g, x, norm2
        if norm2 == 0.0:
            continue   # every region agrees: δ is optimal (the measure already said so)
        alpha = scale * max(g - target, 1e-12 * max(1.0, abs(g))) / norm2
        d -= alpha * sg
        for m, s in zip(dc, sgc):
            m -= alpha * s


def _star_update(regions, d, dc, blocks, gamma):
    """Exact block minimisation of eq. 2 (gamma=0) or eq. 3 over {δ_ei : e ∋ i} for the
    nodes of one colour class (the "star" update, Sontag, Globerson and Jaakkola 2011):
    δ_ei = λ_ei - T_i / (P_i + 1), T_i = θ_i + Σ_c δ_ci + Σ_e λ_ei, with mm = λ_ei the
    (soft-)max-marginal of θ_e - δ_{e,other} on x_i. ``blocks``: the class's edges as a
    `MessageGroups` per end."""
    mm = [None, None]
    total = regions.node_hat(np.zeros_like(d), dc)
    for end, block in enumerate(blocks):
        t = regions.edge_theta[block.entries] - d[block.other]
        mm[end] = block.seg.max(t) if gamma == 0 else block.seg.softmax(t, gamma)[0]
        with np.errstate(invalid="ignore"):
            total += np.bincount(regions.msg_node[block.msg], weights=mm[end], minlength=total.size)
    share = total / np.repeat(regions.n_edge_parents + 1, regions.card)
    for end, block in enumerate(blocks):
        with np.errstate(invalid="ignore"):
            new = mm[end] - share[regions.msg_node[block.msg]]
        d[block.msg] = np.where(np.isfinite(new), new, 0.0)


def _mplp_factor_update(regions, d, dc, c):
    """MPLP block update of a global factor's messages (Globerson and Jaakkola 2008):
    δ_ci = -b_i + MM_i / |c|, b_i = θ̂_i without δ_ci, MM the factor's max-marginals."""
    f, m = regions.factors[c], dc[c]
    b = regions.factor_rows(regions.node_hat(d, dc), c, -np.inf) - m
    with np.errstate(invalid="ignore"):
        new = f.max_marginals(b) / f.scope.size - b
    m[...] = np.where(np.isfinite(new), new, 0.0)


def coordinate_descent(regions, gamma):
    """Block coordinate descent on eq. 2 (``gamma=0``: MPLP, may stall at a non-optimal
    point) or on the soft-max dual eq. 3 (converges to its optimum): star updates over
    node colour classes, then MPLP updates of global factors."""
    d, dc = regions.zero_messages(), _factor_messages(regions)
    classes = []
    for nodes in regions.colouring():
        in_class = np.zeros(regions.n, dtype=bool)
        in_class[nodes] = True
        classes.append([MessageGroups(regions, np.flatnonzero(in_class[regions.ends[end]]), end)
                        for end in (0, 1)])
    smooth = _Smooth(regions, "softmax", gamma) if gamma else None
    prev = np.inf
    while True:
        for blocks in classes:
            _star_update(regions, d, dc, blocks, gamma)
        for c in range(len(regions.factors)):
            _mplp_factor_update(regions, d, dc, c)
        g, hn, _, _ = _dual_value(regions, d, dc)
        value = g if smooth is None else smooth(d)[0]
        decrease = (prev - value) / max(1.0, abs(value)) if np.isfinite(prev) else np.inf
        prev = value
        yield value, g, regions.decode(hn), max(decrease, 0.0)
