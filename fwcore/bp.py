"""Tree-reweighted belief propagation (Wainwright, Jaakkola & Willsky 2005) in the log
domain, the baseline of Barrier FW Sec. 5; ρ = 1 gives loopy (sum-product) BP.

Messages are updated in parallel with damping on log-messages:

    log m_{t→s}(x_s) = logsumexp_{x_t} [ θ_st(x_s, x_t)/ρ_st + θ_t(x_t)
                                         + Σ_{v∈N(t)} ρ_vt log m_{v→t}(x_t) − log m_{s→t}(x_t) ]

and the pseudo-marginals are the beliefs b_s ∝ exp(θ_s) Π_v m_vs^{ρ_vs} and
b_st ∝ exp(θ_st/ρ_st + θ_s + θ_t) Π_{v∈N(s)} m_vs^{ρ_vs} / m_ts · Π_{v∈N(t)} m_vt^{ρ_vt} / m_st.
At a fixed point they maximise the TRW objective over the local polytope L.
"""
import numpy as np
from scipy.sparse import csr_matrix

__all__ = ["trbp_beliefs"]

_RHO_MIN = 1e-12


def _logsumexp(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis=axis)


def _padded(model):
    """Node potentials (n, K) and edge tables (E, K, K), −inf outside each variable's
    states, with K the largest cardinality."""
    n, n_edges, k = model.n_vars, model.n_edges, int(model.card.max())
    node = np.full((n, k), -np.inf)
    pair = np.full((n_edges, k, k), -np.inf)
    for i in range(n):
        node[i, :model.card[i]] = model.unary(i)
    for e in range(n_edges):
        t = model.pairwise(e)
        pair[e, :t.shape[0], :t.shape[1]] = t
    return node, pair


def trbp_beliefs(model, rho, damping=0.5, max_iter=1000, tol=1e-8, deadline=None):
    """Run damped parallel TRBP; return (mu, n_iter, converged, max message change).

    ``mu`` is the flat pseudo-marginal vector in the model's layout. ``rho`` must be
    positive on every edge (θ_st/ρ_st); it is floored at 1e-12. Stops when the largest
    change of a normalised log-message is below ``tol``, after ``max_iter`` sweeps, or at
    ``deadline`` (a time.perf_counter() value).
    """
    import time

    n, n_edges = model.n_vars, model.n_edges
    node, pair = _padded(model)
    k = node.shape[1]
    rho = np.maximum(np.asarray(rho, dtype=np.float64), _RHO_MIN)
    src = np.concatenate([model.edges[:, 0], model.edges[:, 1]]).astype(np.int64)  # t
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]]).astype(np.int64)  # s
    rho2 = np.concatenate([rho, rho])
    # table indexed [message, x_t, x_s]
    with np.errstate(invalid="ignore"):
        scaled = pair / rho[:, None, None]
    table = np.concatenate([scaled, np.transpose(scaled, (0, 2, 1))])
    reverse = np.concatenate([np.arange(n_edges, 2 * n_edges), np.arange(n_edges)])
    incoming = csr_matrix((rho2, (dst, np.arange(2 * n_edges))), shape=(n, 2 * n_edges))
    valid = np.isfinite(node)            # padding and impossible states stay at −inf
    logm = np.where(valid[dst], 0.0, -np.inf)
    logm -= _logsumexp(logm, 1)[:, None]
    change, it, converged = np.inf, 0, False
    for it in range(1, max_iter + 1):
        weighted = np.where(np.isfinite(logm), logm, 0.0)
        node_sum = node + incoming @ weighted                     # θ_t + Σ_v ρ_vt log m_vt
        pre = node_sum[src] - np.where(valid[src], weighted[reverse], 0.0)
        new = _logsumexp(table + pre[:, :, None], axis=1)
        new -= _logsumexp(new, 1)[:, None]
        fin = np.isfinite(new)
        new = np.where(fin, (1 - damping) * new + damping * np.where(fin, logm, 0.0), -np.inf)
        new -= _logsumexp(new, 1)[:, None]
        with np.errstate(invalid="ignore"):
            diff = np.abs(np.where(fin, new - logm, 0.0))
        change = float(diff.max()) if diff.size else 0.0
        logm = new
        if change < tol:
            converged = True
            break
        if deadline is not None and time.perf_counter() > deadline:
            break
    return _beliefs(model, node, table, logm, incoming, src, dst, reverse), it, converged, change


def _beliefs(model, node, table, logm, incoming, src, dst, reverse):
    n_edges = model.n_edges
    weighted = np.where(np.isfinite(logm), logm, 0.0)
    node_sum = node + incoming @ weighted
    b_node = node_sum - _logsumexp(node_sum, 1)[:, None]
    # edge e = (i, j): message j→i is row n_edges + e (t = j, s = i), message i→j is row e
    i, j = model.edges[:, 0], model.edges[:, 1]
    valid = np.isfinite(node)
    pre_i = node_sum[i] - np.where(valid[i], weighted[n_edges:], 0.0)   # remove m_{j→i}
    pre_j = node_sum[j] - np.where(valid[j], weighted[:n_edges], 0.0)   # remove m_{i→j}
    b_edge = table[:n_edges] + pre_i[:, :, None] + pre_j[:, None, :]
    flat = b_edge.reshape(n_edges, -1)
    b_edge = b_edge - _logsumexp(flat, 1)[:, None, None]
    mu = np.empty(model.dim)
    for v in range(model.n_vars):
        mu[model.node_off[v]:model.node_off[v + 1]] = np.exp(b_node[v, :model.card[v]])
    for e in range(n_edges):
        ci, cj = model.card[i[e]], model.card[j[e]]
        mu[model.edge_off[e]:model.edge_off[e + 1]] = np.exp(b_edge[e, :ci, :cj]).ravel()
    return mu
