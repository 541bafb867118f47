"""NumPy twin of the variable elimination kernels (`fwcore._elim`): the pure NumPy
sum-product and max-product passes fwcore used before them, on the same
`fwcore.elimination.EliminationPlan`. Clique tables are materialised one at a time; only the
separator messages are stored. The tests compare the kernels with it, and
bench/benchmarks/elimination.py times it beside them."""
import math

import numpy as np

__all__ = ["numpy_marginals", "numpy_map"]


def _expand(table, scope, target):
    """View of ``table`` (axes = variables ``scope``) transposed to the order of
    ``target`` with singleton axes for the variables it lacks, so it broadcasts against
    a ``target`` table."""
    where = {u: k for k, u in enumerate(target)}
    perm = sorted(range(len(scope)), key=lambda a: where[scope[a]])
    present = {where[u] for u in scope}
    missing = tuple(k for k in range(len(target)) if k not in present)
    return np.expand_dims(table.transpose(perm), missing)


def _local_table(model, plan, v):
    """θ_v plus the edges owned by v, over ``plan.local[v]`` = (v, u_1, ..., u_k)."""
    t = model.unary(v)
    for e in reversed(plan.own_edges[v]):
        tab = model.pairwise(e) if plan.edges[e][0] == v else model.pairwise(e).T
        t = t[:, None] + tab.reshape(tab.shape + (1,) * (t.ndim - 1))
    return t


def _clique_table(model, plan, v, messages):
    """log ψ over C_v: owned factors plus the children's upward messages."""
    clique = plan.clique[v]
    t = np.empty([model.card[u] for u in clique])
    t[...] = _expand(_local_table(model, plan, v), plan.local[v], clique)
    for c in plan.children[v]:
        t += _expand(messages[c], plan.sep[c], clique)
    return t


def _logsumexp_consume(t):
    """log Σ exp over axis 0, overwriting ``t``; an all -inf slice gives -inf."""
    mx = t.max(axis=0, keepdims=True)
    mx[mx == -np.inf] = 0.0
    np.subtract(t, mx, out=t)
    np.exp(t, out=t)
    with np.errstate(divide="ignore"):
        return np.log(t.sum(axis=0)) + mx[0]


def _marginal(prob, clique, keep):
    """Sum a clique table over the variables not in ``keep``; axes in ``keep`` order."""
    kept = [u in keep for u in clique]
    shape, flags = [], []
    for size, flag in zip(prob.shape, kept):
        if flags and flags[-1] == flag:
            shape[-1] *= size
        else:
            shape.append(size)
            flags.append(flag)
    out = prob.reshape(shape).sum(axis=tuple(k for k, f in enumerate(flags) if not f))
    order = [u for u in clique if u in keep]
    out = out.reshape([prob.shape[k] for k, f in enumerate(kept) if f])
    return out.transpose([order.index(u) for u in keep])


def _pair_marginals(t):
    """The (axis 0, axis k) marginals of a table for k = 1, 2, ..."""
    if t.ndim <= 2:
        return [t] if t.ndim == 2 else []
    h = 1 + (t.ndim - 1) // 2
    size = math.prod(t.shape[1:h])
    left = t.reshape(t.shape[0] * size, -1).sum(axis=1).reshape(t.shape[:h])
    right = t.reshape(t.shape[0], size, -1).sum(axis=1).reshape(t.shape[:1] + t.shape[h:])
    return _pair_marginals(left) + _pair_marginals(right)


def numpy_marginals(model, plan):
    """(log Z, flat marginals mu); log Z = -inf (and mu None) when nothing is feasible.
    Upward variable elimination, then downward messages δ_c(S_c) = log Σ_{C_v \\ S_c}
    p_v + log Z - m_c, with p_v the normalised belief of the parent clique."""
    messages = [None] * model.n_vars
    for v in plan.order:
        messages[v] = _logsumexp_consume(_clique_table(model, plan, v, messages))
    roots = [v for v in plan.order if plan.parent[v] < 0]
    log_z = sum(float(messages[r]) for r in roots)
    if log_z == -np.inf:
        return log_z, None
    comp_log_z = [0.0] * model.n_vars
    down = [None] * model.n_vars
    mu = np.zeros(model.dim)
    for v in reversed(plan.order):
        clique = plan.clique[v]
        t = _clique_table(model, plan, v, messages)
        p = plan.parent[v]
        if p >= 0:
            comp_log_z[v] = comp_log_z[p]
            t += _expand(down[v], plan.sep[v], clique)
            down[v] = None
        else:
            comp_log_z[v] = float(messages[v])
        t -= comp_log_z[v]
        prob = np.exp(t, out=t)
        local = _marginal(prob, clique, plan.local[v])
        pairs = _pair_marginals(local)
        mu[model.node_off[v]:model.node_off[v + 1]] = pairs[0].sum(axis=1) if pairs else local
        for e, pair in zip(plan.own_edges[v], pairs):
            mu[model.edge_off[e]:model.edge_off[e + 1]] = (
                (pair if plan.edges[e][0] == v else pair.T).ravel())
        for c in plan.children[v]:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.log(_marginal(prob, clique, plan.sep[c])) + comp_log_z[v] - messages[c]
            d[np.isnan(d)] = -np.inf
            down[c] = d
            messages[c] = None
    return log_z, mu


def numpy_map(model, plan):
    """(maximum score, a maximiser); the maximiser is None when the maximum is -inf."""
    messages = [None] * model.n_vars
    for v in plan.order:
        messages[v] = _clique_table(model, plan, v, messages).max(axis=0)
    best = sum(float(messages[v]) for v in plan.order if plan.parent[v] < 0)
    if best == -np.inf:
        return best, None
    x = np.zeros(model.n_vars, dtype=np.int64)
    for v in reversed(plan.order):
        r = _local_table(model, plan, v)[_slice(plan.local[v], v, x)].copy()
        for c in plan.children[v]:
            r += messages[c][_slice(plan.sep[c], v, x)]
        x[v] = int(np.argmax(r))
    return best, x


def _slice(scope, v, x):
    """Index a table over ``scope`` at the fixed states ``x`` of every variable but v."""
    return tuple(slice(None) if u == v else int(x[u]) for u in scope)
