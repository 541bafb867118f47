"""The local-polytope constraint matrix and rounding shared by the exact and LP oracles."""
import numpy as np
from scipy import sparse

from ..interrupt import Abandoned, call_interruptibly, grace

#: HiGHS gets this share of a call's time limit (scipy's set-up and HiGHS's coarse time
#: checks take the rest: measured +0.8 s past a 5 s limit on a 100x100 grid ILP)
_HIGHS_SHARE = 0.8



def local_polytope_constraints(model):
    """Sparse ``A_eq, b_eq`` of the local polytope L in the flat layout (μ ≥ 0 implied by
    the bounds): Σ_x μ_i(x) = 1 for each node, and for each edge (i, j)
    Σ_x' μ_ij(x, x') − μ_i(x) = 0 and Σ_x μ_ij(x, x') − μ_j(x') = 0."""
    n, n_edges = model.n_vars, model.n_edges
    card = model.card.astype(np.int64)
    ci, cj = card[model.edges[:, 0]], card[model.edges[:, 1]]
    # rows: n normalisations, then for edge e its ci rows (i side) and cj rows (j side)
    row0 = n + np.concatenate([[0], np.cumsum(ci + cj)[:-1]]).astype(np.int64)
    n_rows = n + int((ci + cj).sum())
    node_cols = np.arange(model.node_off[-1])
    node_rows = np.repeat(np.arange(n), card)
    # edge entries: each μ_ij(a, b) sits in row (e, a) on the i side and (e, b) on the j side
    e = np.repeat(np.arange(n_edges), ci * cj)
    cols = np.arange(model.node_off[-1], model.dim)
    local = cols - model.edge_off[e]
    a, b = local // cj[e], local % cj[e]
    # node entries with coefficient -1 in each marginalisation row
    ei = np.repeat(np.arange(n_edges), ci)
    ai = np.arange(ei.size) - np.repeat(np.cumsum(ci) - ci, ci)
    ej = np.repeat(np.arange(n_edges), cj)
    bj = np.arange(ej.size) - np.repeat(np.cumsum(cj) - cj, cj)
    rows = np.concatenate([node_rows, row0[e] + a, row0[e] + ci[e] + b,
                           row0[ei] + ai, row0[ej] + ci[ej] + bj])
    colv = np.concatenate([node_cols, cols, cols,
                           model.node_off[model.edges[ei, 0]] + ai,
                           model.node_off[model.edges[ej, 1]] + bj])
    vals = np.concatenate([np.ones(node_cols.size + 2 * cols.size), -np.ones(ei.size + ej.size)])
    a_eq = sparse.csr_matrix((vals, (rows, colv)), shape=(n_rows, model.dim))
    b_eq = np.zeros(n_rows)
    b_eq[:n] = 1.0
    return a_eq, b_eq


def lp_objective(scores):
    """HiGHS minimises: cost = −scores, and −inf scores become variables fixed to 0
    (returned as the upper bounds of the variables)."""
    forbidden = np.isneginf(scores)
    cost = np.where(forbidden, 0.0, -scores)
    upper = np.where(forbidden, 0.0, 1.0)
    return cost, upper


def node_argmax(model, mu):
    """Per variable, the state with the largest node marginal (the first on ties, as
    `numpy.argmax`; state 0 when all are -inf), vectorised over the variables."""
    if model.n_vars == 0:
        return np.zeros(0, dtype=np.int64)
    starts = model.node_off[:-1]
    values = np.asarray(mu[:model.node_off[-1]], dtype=np.float64)
    var = np.repeat(np.arange(model.n_vars), model.card)
    top = np.maximum.reduceat(values, starts)
    state = np.arange(values.size) - starts[var]
    return np.minimum.reduceat(np.where(values == top[var], state, values.size),
                               starts).astype(np.int64)


def run_highs(solve, time_limit, options, in_place=False):
    """``solve(options)`` (a `scipy.optimize.milp` or ``linprog`` call) interruptible by
    Ctrl-C (`fwcore.interrupt.call_interruptibly`), with HiGHS's ``time_limit`` set to
    `_HIGHS_SHARE` of ``time_limit``. Returns the scipy result, or None when the call
    was abandoned past ``time_limit`` (`fwcore.interrupt.grace`). ``in_place``: a call
    known to take milliseconds runs here, without the fork (about 10 ms a call)."""
    if time_limit is not None:
        options = {**options, "time_limit": _HIGHS_SHARE * time_limit}
    if in_place:
        return solve(options)
    try:
        return call_interruptibly(lambda: solve(options), grace(time_limit))
    except Abandoned:
        return None
