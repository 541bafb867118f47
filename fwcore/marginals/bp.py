"""Tree-reweighted belief propagation (Wainwright, Jaakkola & Willsky 2005) in the log
domain, the baseline of Barrier FW Sec. 5, with its outer rho loop (`trbp`); ρ = 1 gives
loopy (sum-product) BP (`loopy_bp`).

Messages are updated in parallel with damping on log-messages:

    log m_{t→s}(x_s) = logsumexp_{x_t} [ θ_st(x_s, x_t)/ρ_st + θ_t(x_t)
                                         + Σ_{v∈N(t)} ρ_vt log m_{v→t}(x_t) − log m_{s→t}(x_t) ]

and the pseudo-marginals are the beliefs b_s ∝ exp(θ_s) Π_v m_vs^{ρ_vs} and
b_st ∝ exp(θ_st/ρ_st + θ_s + θ_t) Π_{v∈N(s)} m_vs^{ρ_vs} / m_ts · Π_{v∈N(t)} m_vt^{ρ_vt} / m_st.
At a fixed point they maximise the TRW objective over the local polytope L.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial

import numpy as np

from .._kernels import (BP_BLOCK, binary_messages, binary_node_sums, trbp_binary_sweeps,
                        trbp_sweeps)
from ..checks import (BOOL, CALLABLE, N_JOBS, TIME, Interval, check_feasible, check_model,
                      checked_inside, n_threads, validate_params)
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..loop import Deadline, Guard, Stopping, run_loop
from ..model import PairwiseMRF, concat_ranges
from ..results import Record
from .registry import register_method, run_method
from .result import MarginalResult
from .rho import ENTROPY, initial_rho, rho_direction
from .trw import TRWObjective

__all__ = ["trbp_beliefs", "trbp", "loopy_bp"]

_RHO_MIN = 1e-12
_CHUNK = 10          # sweeps per kernel call between deadline checks


def _segment_log_normalise(values, starts):
    """values minus log Σ exp over each segment values[starts[k]:starts[k+1]] (the last to
    the end; none empty), taken as (values − max) − log Σ exp(values − max) so that
    entries near 1e15 keep their differences; an all -inf segment stays -inf (never NaN)."""
    sizes = np.diff(np.append(starts, values.size))
    top = np.maximum.reduceat(values, starts)
    shifted = values - np.repeat(np.where(np.isfinite(top), top, 0.0), sizes)
    with np.errstate(divide="ignore"):
        log_sum = np.log(np.add.reduceat(np.exp(shifted), starts))
    return shifted - np.repeat(np.where(np.isfinite(log_sum), log_sum, 0.0), sizes)


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


def trbp_beliefs(model, rho, damping=0.5, max_iter=1000, tol=1e-8, deadline=None, guard=None,
                 n_jobs=1):
    """Run damped parallel TRBP; return (mu, n_iter, converged, max message change).

    ``mu`` is the flat pseudo-marginal vector in the model's layout. ``rho`` must be
    positive on every edge (θ_st/ρ_st); it is floored at 1e-12. Stops when the largest
    change of a normalised log-message is below ``tol``, after ``max_iter`` sweeps, at
    the `fwcore.loop.Deadline` ``deadline`` (checked every ``_CHUNK`` sweeps), or, given
    a `fwcore.loop.Guard`, at Ctrl-C (``guard.interrupted``: the beliefs are those of the
    messages so far). The sweeps run in `fwcore._kernels.trbp_binary_sweeps` (its parts
    on ``n_jobs`` threads) when every variable is binary and every log-potential finite,
    else in `fwcore._kernels.trbp_sweeps`.
    """
    rho = np.maximum(np.asarray(rho, dtype=np.float64), _RHO_MIN)
    logm, msg_off, it, converged, change = _messages(model, rho, damping, max_iter, tol,
                                                     deadline, guard, n_jobs)
    return _beliefs(model, rho, logm, msg_off), it, converged, change


def _messages(model, rho, damping, max_iter, tol, deadline, guard, n_jobs):
    """The sweeps of `trbp_beliefs`: (flat log-messages, msg_off, n_iter, converged,
    change)."""
    msg_off = _message_offsets(model)
    logm = _initial_messages(model, msg_off)
    scratch = (logm, np.empty_like(logm), np.empty(model.node_off[-1]))
    pool = None
    if (model.card == 2).all() and np.isfinite(model.theta).all():
        tables = _binary_tables(model, rho)
        if n_jobs > 1 and model.n_edges > BP_BLOCK:
            pool = ThreadPoolExecutor(n_jobs - 1)
            kernel = partial(_threaded_binary_sweeps, pool, n_jobs, model.graph, *tables)
        else:
            kernel = partial(trbp_binary_sweeps, model.graph, *tables)
    else:
        kernel = partial(trbp_sweeps, model.theta, model.graph, msg_off, rho)
        scratch += (np.empty(2 * (int(model.card.max()) if model.n_vars else 1)),)
    it, change, converged = 0, np.inf, False
    sweeps = kernel if guard is None else partial(guard, kernel)
    with pool or nullcontext():
        while it < max_iter:
            swept = sweeps(damping, tol, min(_CHUNK, max_iter - it), *scratch)
            if swept is None:  # Ctrl-C (the kernels update logm whole between Python steps)
                break
            done, change = swept
            it += done
            if change < tol:
                converged = True
                break
            if deadline is not None and deadline.passed():
                break
    return logm, msg_off, it, converged, change


def _threaded_binary_sweeps(pool, n_jobs, graph, node_theta, table, sender, rho, damping, tol,
                            n_sweeps, logm, new, node_sum):
    """`trbp_binary_sweeps` on ``n_jobs`` threads (this one and ``pool``'s): each sweep's
    node sums and message blocks in n_jobs contiguous parts, the same numbers as one
    thread computes (the blocks are fixed, the kernels release the GIL)."""
    nodes = np.linspace(0, len(node_theta) // 2, n_jobs + 1).astype(np.int64)
    blocks = np.linspace(0, 2 * -(-(len(sender) // 2) // BP_BLOCK), n_jobs + 1).astype(np.int64)
    sums = [partial(binary_node_sums, graph, node_theta, rho, logm, node_sum, lo, hi)
            for lo, hi in zip(nodes[:-1], nodes[1:])]
    messages = [partial(binary_messages, table, sender, node_sum, logm, new, damping, lo, hi)
                for lo, hi in zip(blocks[:-1], blocks[1:])]
    change = math.inf
    for sweep in range(1, n_sweeps + 1):  # noqa: B007 (the sweeps done are returned)
        _on_threads(pool, sums)
        change = max(_on_threads(pool, messages))
        np.copyto(logm, new)
        if change < tol:
            break
    return sweep, change


def _on_threads(pool, calls):
    """The values of ``calls``: the first on this thread, the others on ``pool``'s."""
    futures = [pool.submit(call) for call in calls[1:]]
    first = calls[0]()
    return [first] + [f.result() for f in futures]


def _binary_tables(model, rho):
    """The arguments of `trbp_binary_sweeps` after the graph: node log-potentials, the
    tables theta_st(x_t, x_s) / rho_st of the 2E messages t -> s at 2 x_s + x_t, the
    senders, rho."""
    pair = model.theta[model.node_off[-1]:].reshape(-1, 2, 2) / rho[:, None, None]
    table = np.concatenate([pair.transpose(0, 2, 1), pair]).reshape(-1)  # i -> j, then j -> i
    sender = np.concatenate([model.edges[:, 0], model.edges[:, 1]]).astype(np.int32)
    return model.theta[:model.node_off[-1]], table, sender, rho


def _beliefs(model, rho, logm, msg_off):
    """Node and edge beliefs (module docstring) from the flat messages, as flat mu: every
    table at its own size (no padding to the largest cardinality). A sum of log terms is
    kept as its finite part and its number of -inf terms, as in the sweeps, so that an
    edge belief without one message is -inf exactly when another term is."""
    n_node, n_edges = int(model.node_off[-1]), model.n_edges
    dead = np.isneginf(logm)
    weighted = np.where(dead, 0.0, logm)
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
    slots = concat_ranges(model.node_off[dst], np.diff(msg_off))    # message entry -> state
    rho2 = np.repeat(np.concatenate([rho, rho]), np.diff(msg_off))
    node = model.theta[:n_node]
    n_inf = np.isneginf(node) + np.bincount(slots, weights=dead, minlength=n_node)
    finite_sum = (np.where(np.isneginf(node), 0.0, node) +
                  np.bincount(slots, weights=rho2 * weighted, minlength=n_node))
    node_sum = np.where(n_inf > 0, -np.inf, finite_sum)
    b_node = _segment_log_normalise(node_sum, model.node_off[:-1]) if n_node else node_sum
    if not n_edges:
        return np.exp(b_node)

    def without(at, own):   # the node sum at entries ``at`` without message entries ``own``
        return np.where(n_inf[at] - dead[own] > 0, -np.inf, finite_sum[at] - weighted[own])

    # entry (e, a, b) of edge e = (i, j): remove m_{j→i}(a) (message n_edges + e) from the
    # sum at x_i = a and m_{i→j}(b) (message e) from the sum at x_j = b
    pos, e, a, b = model.edge_entries()
    b_edge = (model.theta[pos] / rho[e]
              + without(model.node_off[model.edges[e, 0]] + a, msg_off[n_edges + e] + a)
              + without(model.node_off[model.edges[e, 1]] + b, msg_off[e] + b))
    b_edge = _segment_log_normalise(b_edge, model.edge_off[:-1] - n_node)
    return np.exp(np.concatenate([b_node, b_edge]))


_LOOPY_OPTIONS = {
    "damping": Interval(0.0, 1.0, hi_open=True),
    "tol": Interval(0.0, lo_open=True),
    "n_jobs": N_JOBS,
}
_TRBP_OPTIONS = {**_LOOPY_OPTIONS, "entropy": ENTROPY,
                 "rho": checked_inside("edge weights (fwcore.marginals.rho)"),
                 "rho_updates": Interval(0, integer=True)}
_COMMON = {"max_iter": Interval(1, integer=True), "max_time": TIME,
           "callback": [CALLABLE, None], "verbose": BOOL}
_LOOPY_PARAMS = {**_LOOPY_OPTIONS, **_COMMON}
_TRBP_PARAMS = {**_COMMON, **{k: v for k, v in _TRBP_OPTIONS.items() if k != "rho"}}
#: sweeps per BP run unless max_iter is given
_MAX_SWEEPS = 1000


@validate_params(_TRBP_PARAMS, unchecked=("model", "rho"))
def trbp(model: PairwiseMRF | FactorGraph, *, entropy: str = "trw",
         rho: str | Callable | float | np.ndarray | None = None, rho_updates: int = 10,
         damping: float = 0.5, max_iter: int = _MAX_SWEEPS, tol: float = 1e-8,
         max_time: float | None = None, callback=None, verbose: bool = False,
         n_jobs: int = 1) -> MarginalResult:
    """Tree-reweighted BP (log domain, `fwcore.marginals.bp.trbp_beliefs`) with the outer
    rho loop of Barrier FW Alg. 2 (rho_updates FW steps on rho towards the maximum spanning
    forest on the beliefs' mutual information). ``entropy`` and ``rho`` as in
    `fwcore.marginals.rho`: "trw" with ρ from ``rho`` (None: "matrix-tree";
    `fwcore.marginals.rho.initial_rho`), or "bethe", ρ = 1 with no ρ to update: loopy BP
    (method "loopy-bp", `loopy_bp`). ``max_iter``: sweeps per BP run.
    ``log_z_upper`` is TRW(beliefs; rho), an upper bound on log Z (with "trw") only at an
    exact fixed point, so ``certified`` is False; ``gap`` is None; ``info`` holds
    ``rho``, ``primal`` (that TRW value) and ``n_rho_updates``.
    ``callback(record)`` is called once per rho iteration (``iteration`` = BP sweeps).
    Ctrl-C returns the beliefs of the messages so far (status interrupted). ``n_jobs``
    threads (-1: one per core) share each sweep on binary models with finite
    log-potentials of more than `fwcore._kernels.BP_BLOCK` edges; the answer does not
    depend on it. ``fwcore.infer(model, method="trbp", ...)`` is the same call."""
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    return run_method(TRBP, checked, deadline=deadline, max_iter=max_iter, callback=callback,
                      verbose=verbose,
                      options=dict(entropy=entropy, rho=rho, rho_updates=rho_updates,
                                   damping=damping, tol=tol, n_jobs=n_jobs))


@validate_params(_LOOPY_PARAMS, unchecked=("model",))
def loopy_bp(model: PairwiseMRF | FactorGraph, *, damping: float = 0.5,
             max_iter: int = _MAX_SWEEPS, tol: float = 1e-8, max_time: float | None = None,
             callback=None, verbose: bool = False, n_jobs: int = 1) -> MarginalResult:
    """Loopy (sum-product) BP: `trbp` with entropy="bethe" (rho = 1 on every edge).
    ``log_z_upper`` is the Bethe approximation of log Z at the beliefs (not a bound;
    ``certified`` is False). ``fwcore.infer(model, method="loopy-bp", ...)`` is the same
    call."""
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    return run_method(LOOPY_BP, checked, deadline=deadline, max_iter=max_iter,
                      callback=callback, verbose=verbose,
                      options=dict(damping=damping, tol=tol, n_jobs=n_jobs))


@solves_factor_graphs
def _run_trbp(model, budget, callbacks, *, entropy="trw", rho=None, rho_updates=10,
              damping=0.5, tol=1e-8, n_jobs=1):
    """`trbp` on the checked ``model``: the registered run."""
    rho = initial_rho(model, rho, entropy)
    bethe = entropy == "bethe"
    return _bp_loop(model, rho, 0 if bethe else rho_updates, damping,
                    budget.iterations(_MAX_SWEEPS), tol, budget.deadline, callbacks,
                    "loopy-bp" if bethe else "trbp", n_threads(n_jobs))


def _run_loopy_bp(model, budget, callbacks, *, damping=0.5, tol=1e-8, n_jobs=1):
    """`loopy_bp` on the checked ``model``: the registered run."""
    return _run_trbp(model, budget, callbacks, entropy="bethe", damping=damping, tol=tol,
                     n_jobs=n_jobs)


def _bp_loop(model, rho, rho_updates, damping, max_iter, tol, deadline, callbacks, method,
             n_jobs):
    """The rho loop of `trbp` on `fwcore.loop.run_loop`: BP at each rho is measured, the
    steps are the rho updates, the last BP run decides convergence."""
    check_feasible(model)
    run = _RhoLoop(model, rho, rho_updates, damping, max_iter, tol, deadline, n_jobs)
    outcome = run_loop(run.measure, run.step,
                       Stopping(rho_updates, tol, deadline=run.deadline), callbacks,
                       guard=run.guard)
    run.objective.set_rho(run.mu_rho)
    primal = run.objective.trw(run.mu)
    return MarginalResult.from_mu(
        model, run.mu, gap=None, certified_gap=None, log_z_upper=primal, certified=False,
        status=outcome.status, n_iter=run.n_iter, time=deadline.elapsed(), method=method,
        trace=outcome.trace,
        info=dict(rho=run.objective.rho.copy(), primal=primal, n_rho_updates=outcome.n_iter))


class _RhoLoop:
    """TRBP's state over the rho loop: ``mu`` (the uniform point before the first BP run;
    on Ctrl-C in the sweeps the beliefs of the messages so far), the rho it was computed
    at (``mu_rho``) and the sweeps of every run (``n_iter``)."""

    def __init__(self, model, rho, rho_updates, damping, max_iter, tol, deadline, n_jobs):
        self.model, self.rho, self.deadline = model, rho, deadline
        self.rho_updates, self.damping, self.max_iter, self.tol, self.n_jobs = (
            rho_updates, damping, max_iter, tol, n_jobs)
        self.objective = TRWObjective(model, rho)
        self.guard = Guard()
        self.mu, self.mu_rho, self.n_iter = model.uniform_marginals(), rho, 0

    def measure(self, i):
        """BP at the current rho; its record (``iteration`` = sweeps, ``outer`` = i) and, at
        the last rho, the largest change of a log-message (else inf: no stop before)."""
        self.mu, it, _, change = trbp_beliefs(self.model, self.rho, self.damping,
                                              self.max_iter, self.tol, self.deadline,
                                              self.guard, self.n_jobs)
        self.mu_rho = self.rho
        self.n_iter += it
        if self.guard.interrupted:
            return None, math.inf
        self.objective.set_rho(self.rho)
        record = Record(iteration=it, time=self.deadline.elapsed(),
                        primal=-self.objective.value_grad(self.mu)[0], outer=i)
        return record, change if i == self.rho_updates else math.inf

    def step(self, i):
        """Barrier FW Alg. 2 l. 21: a FW step on rho towards the maximum spanning forest."""
        d = rho_direction(self.model, self.mu, self.rho)
        self.rho = self.rho + 2.0 / (i + 2.0) * d


TRBP = register_method(
    "trbp", _run_trbp, _TRBP_OPTIONS, iteration="sweeps per BP run",
    summary="tree-reweighted belief propagation with its rho loop (Wainwright et al. "
            "2005): the TRW value and beliefs, a bound only at an exact fixed point")
LOOPY_BP = register_method(
    "loopy-bp", _run_loopy_bp, _LOOPY_OPTIONS, iteration="sweeps",
    summary="loopy (sum-product) belief propagation: the Bethe approximation and beliefs")
