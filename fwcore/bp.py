"""Tree-reweighted belief propagation (Wainwright, Jaakkola & Willsky 2005) in the log
domain, the baseline of Barrier FW Sec. 5; ρ = 1 gives loopy (sum-product) BP.

Messages are updated in parallel with damping on log-messages:

    log m_{t→s}(x_s) = logsumexp_{x_t} [ θ_st(x_s, x_t)/ρ_st + θ_t(x_t)
                                         + Σ_{v∈N(t)} ρ_vt log m_{v→t}(x_t) − log m_{s→t}(x_t) ]

and the pseudo-marginals are the beliefs b_s ∝ exp(θ_s) Π_v m_vs^{ρ_vs} and
b_st ∝ exp(θ_st/ρ_st + θ_s + θ_t) Π_{v∈N(s)} m_vs^{ρ_vs} / m_ts · Π_{v∈N(t)} m_vt^{ρ_vt} / m_st.
At a fixed point they maximise the TRW objective over the local polytope L.
"""
import time
from functools import partial

import numpy as np

from ._kernels import trbp_sweeps
from .model import concat_ranges

__all__ = ["trbp_beliefs"]

_RHO_MIN = 1e-12
_CHUNK = 10          # sweeps per kernel call between deadline checks


def _segment_logsumexp(values, starts):
    """log Σ exp over each segment values[starts[k]:starts[k+1]] (the last to the end; none
    empty), repeated over the segment: -inf for an all -inf segment (never NaN)."""
    sizes = np.diff(np.append(starts, values.size))
    top = np.maximum.reduceat(values, starts)
    top = np.repeat(np.where(np.isfinite(top), top, 0.0), sizes)
    with np.errstate(divide="ignore"):
        return np.repeat(np.log(np.add.reduceat(np.exp(values - top), starts)), sizes) + top


def _message_offsets(model):
    """Offsets of the 2E flat messages: message e (edge e = (i, j)) is i→j over x_j,
    message E + e is j→i over x_i."""
    sizes = np.concatenate([model.card[model.edges[:, 1]], model.card[model.edges[:, 0]]])
    off = np.zeros(2 * model.n_edges + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


def _initial_messages(model, msg_off):
    """Uniform normalised log-messages, −inf on impossible states of the receiver."""
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
    sizes = np.diff(msg_off)
    owner = np.repeat(np.arange(dst.size), sizes)
    ok = np.isfinite(model.theta[model.node_off[dst][owner] + np.arange(msg_off[-1])
                                 - msg_off[owner]])
    count = np.bincount(owner, weights=ok, minlength=dst.size)
    return np.where(ok, -np.log(np.maximum(count, 1))[owner], -np.inf)


def trbp_beliefs(model, rho, damping=0.5, max_iter=1000, tol=1e-8, deadline=None, guard=None):
    """Run damped parallel TRBP; return (mu, n_iter, converged, max message change).

    ``mu`` is the flat pseudo-marginal vector in the model's layout. ``rho`` must be
    positive on every edge (θ_st/ρ_st); it is floored at 1e-12. Stops when the largest
    change of a normalised log-message is below ``tol``, after ``max_iter`` sweeps, at
    ``deadline`` (a time.perf_counter() value, checked every ``_CHUNK`` sweeps), or, given
    a `fwcore.interrupt.Guard`, at Ctrl-C (``guard.interrupted``: the beliefs are those
    of the messages so far). The sweeps run in `fwcore._kernels.trbp_sweeps`.
    """
    rho = np.maximum(np.asarray(rho, dtype=np.float64), _RHO_MIN)
    logm, msg_off, it, converged, change = _messages(model, rho, damping, max_iter, tol,
                                                     deadline, guard)
    return _beliefs(model, rho, logm, msg_off), it, converged, change


def _messages(model, rho, damping, max_iter, tol, deadline, guard=None):
    """The sweeps of `trbp_beliefs`: (flat log-messages, msg_off, n_iter, converged,
    change)."""
    msg_off = _message_offsets(model)
    logm = _initial_messages(model, msg_off)
    scratch = (np.empty_like(logm), np.empty(model.node_off[-1]),
               np.empty(2 * (int(model.card.max()) if model.n_vars else 1)))
    it, change, converged = 0, np.inf, False
    sweeps = trbp_sweeps if guard is None else partial(guard, trbp_sweeps)
    while it < max_iter:
        swept = sweeps(model.theta, model.graph, msg_off, rho, damping, tol,
                       min(_CHUNK, max_iter - it), logm, *scratch)
        if swept is None:  # Ctrl-C (the kernel updates logm whole between Python steps)
            break
        done, change = swept
        it += done
        if change < tol:
            converged = True
            break
        if deadline is not None and time.perf_counter() > deadline:
            break
    return logm, msg_off, it, converged, change


def _beliefs(model, rho, logm, msg_off):
    """Node and edge beliefs (module docstring) from the flat messages, as flat mu: every
    table at its own size (no padding to the largest cardinality)."""
    n_node, n_edges = int(model.node_off[-1]), model.n_edges
    weighted = np.where(np.isfinite(logm), logm, 0.0)
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
    slots = concat_ranges(model.node_off[dst], np.diff(msg_off))    # message entry -> state
    rho2 = np.repeat(np.concatenate([rho, rho]), np.diff(msg_off))
    node = model.theta[:n_node]
    node_sum = node + np.bincount(slots, weights=rho2 * weighted, minlength=n_node)
    b_node = node_sum - _segment_logsumexp(node_sum, model.node_off[:-1]) if n_node else node_sum
    if not n_edges:
        return np.exp(b_node)
    # entry (e, a, b) of edge e = (i, j): remove m_{j→i}(a) (message n_edges + e) from the
    # sum at x_i = a and m_{i→j}(b) (message e) from the sum at x_j = b
    pos, e, a, b = model.edge_entries()
    at_i = model.node_off[model.edges[e, 0]] + a
    at_j = model.node_off[model.edges[e, 1]] + b
    valid = np.isfinite(node)
    b_edge = (model.theta[pos] / rho[e]
              + node_sum[at_i] - np.where(valid[at_i], weighted[msg_off[n_edges + e] + a], 0.0)
              + node_sum[at_j] - np.where(valid[at_j], weighted[msg_off[e] + b], 0.0))
    b_edge -= _segment_logsumexp(b_edge, model.edge_off[:-1] - n_node)
    return np.exp(np.concatenate([b_node, b_edge]))
