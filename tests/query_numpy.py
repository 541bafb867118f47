"""NumPy twins of the `fwcore._query` kernels: what each computes, on the same inputs
(the same uniforms, so the same samples). Clique tables are materialised one at a time
from the `fwcore.queries.MessageTree`'s CSR arrays."""
import numpy as np

__all__ = ["topological_order", "forward_sample", "up_pass", "backward_sample", "backtrack"]


def topological_order(start, parents):
    """Kahn's algorithm, the ready variables in a FIFO seeded in index order."""
    n = len(start) - 1
    deg = np.diff(start).copy()
    children = [[] for _ in range(n)]
    for v in range(n):
        for p in parents[start[v]:start[v + 1]]:
            children[p].append(v)
    queue = [v for v in range(n) if deg[v] == 0]
    k = 0
    while k < len(queue):
        for c in children[queue[k]]:
            deg[c] -= 1
            if deg[c] == 0:
                queue.append(c)
        k += 1
    return np.array(queue, dtype=np.int64)


def _draw(w, u):
    """Per column of the weights ``w``: the first j whose running sum exceeds u times
    their total (at most len - 1)."""
    cum = np.cumsum(w, axis=0)
    return np.minimum((cum <= u * cum[-1]).sum(axis=0), w.shape[0] - 1)


def forward_sample(order, card, par_start, par_var, par_stride, cpt_off, cpt, u):
    x = np.zeros(u.shape, dtype=np.int32)
    for v in order:
        row = np.zeros(u.shape[1], dtype=np.int64)
        for k in range(par_start[v], par_start[v + 1]):
            row += x[par_var[k]].astype(np.int64) * par_stride[k]
        idx = cpt_off[v] + row[None, :] * card[v] + np.arange(card[v])[:, None]
        x[v] = _draw(cpt[idx], u[v])
    return x


def _clique(tree, v):
    return [int(u) for u in tree.clq_var[tree.clq_start[v]:tree.clq_start[v + 1]]]


def _table(tree, model, v, msgs):
    """log ψ over clique v (axes: v, then S_v): θ_v, owned edges, children's messages."""
    clique = _clique(tree, v)
    axis = {u: k for k, u in enumerate(clique)}
    t = np.zeros([int(model.card[u]) for u in clique])

    def add(table, scope):
        order = np.argsort([axis[u] for u in scope])
        sizes = [1] * len(clique)
        for u in scope:
            sizes[axis[u]] = int(model.card[u])
        t[...] += np.transpose(table, order).reshape(sizes)

    add(model.unary(v), [v])
    for e in tree.own_edge[tree.own_start[v]:tree.own_start[v + 1]]:
        add(model.pairwise(e), [int(u) for u in model.edges[e]])
    for c in tree.ch_var[tree.ch_start[v]:tree.ch_start[v + 1]]:
        add(msgs[c], _clique(tree, c)[1:])
    return t


def up_pass(tree, model, n_sum):
    """(messages by variable, maximisers by max variable, the roots' sum)."""
    msgs, args = {}, {}
    for step, v in enumerate(tree.order):
        t = _table(tree, model, v, msgs)
        if step >= n_sum:
            msgs[v], args[v] = t.max(axis=0), t.argmax(axis=0)
        else:
            hi = t.max(axis=0)
            safe = np.where(np.isneginf(hi), 0.0, hi)
            with np.errstate(divide="ignore"):
                msgs[v] = np.log(np.exp(t - safe).sum(axis=0)) + safe
    roots = [v for v in range(model.n_vars) if tree.clq_start[v + 1] - tree.clq_start[v] == 1]
    return msgs, args, float(sum(msgs[v] for v in roots))


def backward_sample(tree, model, msgs, u):
    x = np.zeros(u.shape, dtype=np.int32)
    for v in tree.order[::-1]:
        t = _table(tree, model, v, msgs)
        sep = _clique(tree, v)[1:]
        index = tuple(x[s] for s in sep)
        slab = t[(slice(None),) + index] if sep else t[:, None].repeat(u.shape[1], axis=1)
        m = msgs[v][index] if sep else np.full(u.shape[1], msgs[v])
        x[v] = _draw(np.exp(slab - m), u[v])
    return x


def backtrack(tree, model, n_sum, args):
    x = np.zeros(model.n_vars, dtype=np.int64)
    for v in tree.order[n_sum:][::-1]:
        x[v] = args[v][tuple(x[s] for s in _clique(tree, v)[1:])]
    return x
