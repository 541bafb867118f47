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
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from functools import partial

import numpy as np

from .._bp import BELIEF_CHUNK, edge_beliefs, initial_messages, node_beliefs
from ..auto import TIME_SHARES
from .._kernels import (BP_BLOCK, BP_TIME, binary_messages, binary_node_sums,
                        trbp_binary_sweeps, trbp_sweeps)
from ..checks import (BOOL, CALLABLE, N_JOBS, TIME, Interval, check_feasible, check_model,
                      available_bytes, checked_inside, n_threads, validate_params)
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..loop import Deadline, Guard, Stopping, TimeUp, run_loop
from ..model import PairwiseMRF
from ..results import Record, Status
from .registry import register_method, run_method
from .result import MarginalResult
from .rho import ENTROPY, RHO_RULES, balanced_tree_rho, initial_rho, rho_direction

__all__ = ["trbp_beliefs", "trbp", "loopy_bp"]

_RHO_MIN = 1e-12
#: the end of a BP run (its beliefs and TRW value) takes at most about this many sweeps'
#: time, on the binary path (vectorised sweeps) and the general one (measured on grids of
#: 10^5 variables: 2.5 and 0.5); the sweeps stop that long before the deadline, or as long
#: as the last end took, once one has been timed
_FINISH_SWEEPS = {True: 3.5, False: 1.0}
#: before a sweep has been timed: seconds of a sweep per flat entry (of theta and the
#: messages), an over-estimate on a loaded 2-core machine (measured 1.4e-8 to 2.8e-8)
_SECONDS_PER_ENTRY = 4e-8
#: the matrix-tree rho costs about this many seconds times E^1.5 (sparse LU and selected
#: inversion of the grid Laplacian: 1.4 s at E = 1.8e5, 6.3 s at 5e5, 52 s and 2.8 GB at
#: 2e6 on a 2-core machine), in SciPy calls that Ctrl-C cannot stop; `trbp`'s default
#: uses it when that is at most `_MATRIX_TREE_MOST` seconds and `_MATRIX_TREE_SHARE` of
#: max_time, else "balanced-trees" within that share
_MATRIX_TREE_COST = 2e-8
_MATRIX_TREE_MOST = 0.5
_MATRIX_TREE_SHARE = TIME_SHARES["trbp/matrix-tree rho, most"]


def trbp_beliefs(model, rho, damping=0.5, max_iter=1000, tol=1e-8, deadline=None, guard=None,
                 n_jobs=1):
    """Run damped parallel TRBP; return (mu, n_iter, converged, max message change).

    ``mu`` is the flat pseudo-marginal vector in the model's layout. ``rho`` must be
    positive on every edge (θ_st/ρ_st); it is floored at 1e-12. Stops when the largest
    change of a normalised log-message is below ``tol``, after ``max_iter`` sweeps, at
    the `fwcore.loop.Deadline` ``deadline`` (the kernels read the clock every few
    milliseconds, and leave time for the beliefs), or, given a `fwcore.loop.Guard`, at
    Ctrl-C (``guard.interrupted``). Then the beliefs are those of the messages of the
    last whole sweep. The sweeps run in `fwcore._kernels.trbp_binary_sweeps` (its parts
    on ``n_jobs`` threads) when every variable is binary and every log-potential finite,
    else in `fwcore._kernels.trbp_sweeps`.
    """
    flat = _Flat(model, n_jobs)
    rho = np.maximum(np.asarray(rho, dtype=np.float64), _RHO_MIN)
    it, converged, change = flat.run(rho, damping, max_iter, tol, deadline, guard)
    return flat.beliefs(rho), it, converged, change


class _Flat:
    """The flat arrays of BP on one model, all allocated here, before any sweep (a
    model they do not fit is refused at once: no work is lost to an allocation at the
    end): the 2E log-messages and their next sweep (message e of edge e = (i, j) is
    i -> j over x_j, message E + e is j -> i over x_i, at ``msg_off``), the node sums, the
    binary path's tables, and ``mu``, which receives the beliefs (and ``value``, their
    TRW value)."""

    def __init__(self, model, n_jobs=1):
        self.model, self.n_jobs = model, n_jobs
        card = model.card
        dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
        self.msg_off = np.zeros(2 * model.n_edges + 1, dtype=np.int64)
        np.cumsum(card[dst], out=self.msg_off[1:])
        self.binary = bool((card == 2).all()) and bool(np.isfinite(model.theta).all())
        n_msg, n_node = int(self.msg_off[-1]), int(model.node_off[-1])
        kmax = int(card.max()) if model.n_vars else 1
        chunks = [-(-count // BELIEF_CHUNK) for count in (model.n_vars, model.n_edges)]
        _refuse_unless_fits(model, 8 * (model.dim + 2 * n_msg + n_node + 2 * kmax * n_jobs
                                        + sum(chunks)) + 4 * n_node
                            + (36 * model.n_edges if self.binary else 0))
        self.logm, self.new = np.empty(n_msg), np.empty(n_msg)
        self.node_sum, self.n_inf = np.empty(n_node), np.empty(n_node, dtype=np.int32)
        self.work = np.empty((n_jobs, 2 * kmax))
        self.mu = np.empty(model.dim)
        self.node_value, self.edge_value = np.empty(chunks[0]), np.empty(chunks[1])
        self.value = None  # the TRW value of mu
        if self.binary:
            self.table = np.empty(8 * model.n_edges)
            self.sender = np.concatenate([model.edges[:, 0], model.edges[:, 1]]).astype(np.int32)
        self.neg_log = -np.log(np.arange(1, kmax + 1, dtype=np.float64))
        self.believed = False  # mu holds the beliefs of logm at some rho
        self.sweep_time = None  # seconds of one sweep, once one has been timed
        self.out_of_time = False  # the last run's sweeps stopped on the clock
        self.finish_time = None  # seconds of the end of a run, once one has been timed

    def touch(self):
        """Map the pages of ``mu`` and the messages (writing them): done inside the run's
        Ctrl-C handling, before the sweeps, so that the beliefs after Ctrl-C write to
        memory already mapped (a fresh GB took 1-10 s on a loaded 2-core VM)."""
        self.mu.fill(0.0)
        self.new.fill(0.0)
        self.uniform_messages()

    def uniform_messages(self):
        """The messages of no sweep into ``logm`` (`fwcore._bp.initial_messages`)."""
        initial_messages(self.model.theta, self.model.graph, self.msg_off, self.neg_log,
                         self.logm)

    def run(self, rho, damping, max_iter, tol, deadline, guard):
        """BP at ``rho`` from uniform messages: (sweeps, converged, last change). The
        sweeps stop at the deadline less the time the beliefs will take (then
        ``out_of_time`` is True)."""
        model = self.model
        self.uniform_messages()
        if self.binary:
            pair = model.theta[model.node_off[-1]:].reshape(-1, 2, 2) / rho[:, None, None]
            table = self.table.reshape(2, -1, 2, 2)
            table[0], table[1] = pair.transpose(0, 2, 1), pair  # i -> j, then j -> i
            del pair
            pool = (ThreadPoolExecutor(self.n_jobs - 1)
                    if self.n_jobs > 1 and model.n_edges > BP_BLOCK else None)
            kernel = (partial(_threaded_binary_sweeps, pool, self.n_jobs) if pool
                      else trbp_binary_sweeps)
            kernel = partial(kernel, model.graph, model.theta[:model.node_off[-1]], self.table,
                             self.sender, rho)
            scratch = (self.logm, self.new, self.node_sum)
        else:
            pool = None
            kernel = partial(trbp_sweeps, model.theta, model.graph, self.msg_off, rho)
            scratch = (self.logm, self.new, self.node_sum, self.work[0], self.n_inf)
        it, change, converged = 0, math.inf, False
        self.out_of_time = False
        sweeps = kernel if guard is None else partial(guard, kernel)
        with pool or nullcontext():
            while it < max_iter and not converged:
                timed = self.sweep_time is None
                left = self._time_left(deadline)
                if left is not None and left <= 0.0:
                    self.out_of_time = True
                    break
                start = time.monotonic()
                swept = sweeps(damping, tol, 1 if timed else max_iter - it, *scratch,
                               left or 0.0, True)
                if swept is None:  # Ctrl-C: the messages of the last whole sweep
                    break
                done, last, stop = swept
                if done:
                    change = last
                if timed and done:
                    self.sweep_time = time.monotonic() - start
                it += done
                converged = done > 0 and change < tol
                if stop == BP_TIME:
                    self.out_of_time = True
                    break
        return it, converged, change

    def _time_left(self, deadline):
        """Seconds the sweeps may run (None: no limit): the deadline's, less the time the
        end of the run takes (`_FINISH_SWEEPS` sweeps; an estimate from the model's size
        before a sweep has been timed)."""
        left = None if deadline is None else deadline.seconds_left()
        if left is None:
            return None
        if self.finish_time is not None:
            return left - self.finish_time
        sweep = (self.sweep_time if self.sweep_time is not None else
                 _SECONDS_PER_ENTRY * (self.model.dim + self.msg_off[-1]))
        return left - _FINISH_SWEEPS[self.binary] * sweep

    def beliefs(self, rho, weight=None):
        """The beliefs of the messages at ``rho`` into ``mu`` and their TRW value at
        ``weight`` (None: ``rho``; the unfloored rho of a run) into ``value``
        (`fwcore._bp.node_beliefs`, then `fwcore._bp.edge_beliefs`, each on ``n_jobs``
        threads: the same numbers as one thread); returns ``mu``."""
        model = self.model
        weight = rho if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        self.node_value.fill(0.0)
        self.edge_value.fill(0.0)
        common = (model.theta, model.graph, self.msg_off, rho, weight, self.logm, self.mu)
        nodes = [partial(node_beliefs, *common, self.node_sum, self.n_inf, self.node_value,
                         lo, hi) for lo, hi in _chunked(model.n_vars, self.n_jobs)]
        edges = [partial(edge_beliefs, *common, self.node_sum, self.n_inf, work,
                         self.edge_value, lo, hi)
                 for work, (lo, hi) in zip(self.work, _chunked(model.n_edges, self.n_jobs))]
        with (ThreadPoolExecutor(self.n_jobs - 1) if self.n_jobs > 1 else nullcontext()) as pool:
            _on_threads(pool, nodes)
            _on_threads(pool, edges)
        self.value = float(self.node_value.sum() + self.edge_value.sum())
        self.believed = True
        return self.mu


def _chunked(count, parts):
    """(lo, hi) ranges splitting range(count) into at most ``parts`` (at least one) at
    multiples of `fwcore._bp.BELIEF_CHUNK`."""
    chunks = -(-count // BELIEF_CHUNK)
    cuts = np.minimum(np.linspace(0, chunks, max(1, min(parts, chunks)) + 1).astype(np.int64)
                      * BELIEF_CHUNK, count).tolist()
    return list(zip(cuts[:-1], cuts[1:]))


def _threaded_binary_sweeps(pool, n_jobs, graph, node_theta, table, sender, rho, damping, tol,
                            n_sweeps, logm, new, node_sum, time_limit, signals):
    """`trbp_binary_sweeps` on ``n_jobs`` threads (this one and ``pool``'s): each sweep's
    node sums and message blocks in n_jobs contiguous parts, the same numbers as one
    thread computes (the blocks are fixed, the kernels release the GIL); this thread's
    part reads the signal handlers, every part the clock."""
    nodes = np.linspace(0, len(node_theta) // 2, n_jobs + 1).astype(np.int64)
    blocks = np.linspace(0, 2 * -(-(len(sender) // 2) // BP_BLOCK), n_jobs + 1).astype(np.int64)
    until = None if time_limit <= 0.0 else time.monotonic() + time_limit
    sums = [partial(binary_node_sums, graph, node_theta, rho, logm, node_sum, lo, hi)
            for lo, hi in zip(nodes[:-1], nodes[1:])]
    change, sweep = math.inf, 0
    while sweep < n_sweeps:
        left = 0.0 if until is None else until - time.monotonic()
        if until is not None and left <= 0.0:
            return sweep, change, BP_TIME
        _on_threads(pool, sums)
        parts = _on_threads(pool, [
            partial(binary_messages, table, sender, node_sum, logm, new, damping, lo, hi, left,
                    k == 0) for k, (lo, hi) in enumerate(zip(blocks[:-1], blocks[1:]))])
        if any(stop for _, stop in parts):
            return sweep, change, BP_TIME
        sweep += 1
        change = max(c for c, _ in parts)
        np.copyto(logm, new)
        if change < tol:
            break
    return sweep, change, 0


def _on_threads(pool, calls):
    """The values of ``calls``: the first on this thread, the others on ``pool``'s (all
    of them finished, also when the first raises; no pool: one call)."""
    futures = [pool.submit(call) for call in calls[1:]] if pool else []
    try:
        first = calls[0]()
    finally:
        rest = [f.result() for f in futures]
    return [first] + rest


def _refuse_unless_fits(model, need):
    """ValueError, before anything is allocated, when ``need`` bytes are more than this
    process can allocate (`fwcore.checks.available_bytes`)."""
    have = available_bytes()
    if have is not None and need > have:
        raise ValueError(
            f"BP on this model ({model.n_vars} variables, {model.n_edges} edges, {model.dim} "
            f"flat entries) needs {need / 2**30:.3g} GiB for its messages and beliefs beside "
            f"the model; {have / 2**30:.3g} GiB can be allocated now. Free memory, or run "
            "it on a machine with more")


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
    `fwcore.marginals.rho.initial_rho`; when its cost, about `_MATRIX_TREE_COST` E^1.5
    seconds that Ctrl-C cannot stop, is over half a second or a tenth of ``max_time``,
    "balanced-trees" within that tenth: `fwcore.marginals.rho.balanced_tree_rho`), or
    "bethe", ρ = 1 with no ρ to update: loopy BP (method "loopy-bp", `loopy_bp`).
    ``max_iter``: sweeps per BP run.
    ``log_z_upper`` is TRW(beliefs; rho), an upper bound on log Z (with "trw") only at an
    exact fixed point, so ``certified`` is False; ``gap`` is None; ``info`` holds
    ``rho``, ``primal`` (that TRW value) and ``n_rho_updates``.
    ``callback(record)`` is called once per rho iteration (``iteration`` = BP sweeps).
    ``max_time`` counts from the call: the sweeps stop in time for the beliefs, and a rho
    update whose BP run would not fit is not made. Ctrl-C returns the beliefs of the
    messages so far (status interrupted). ``n_jobs`` threads (-1: one per core) share
    each sweep on binary models with finite log-potentials of more than
    `fwcore._kernels.BP_BLOCK` edges; the answer does not depend on it.
    Memory: the model, its messages twice, and one flat vector of beliefs, all allocated
    before the first sweep (a model they do not fit is a ValueError at once).
    ``fwcore.infer(model, method="trbp", ...)`` is the same call."""
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
    bethe = entropy == "bethe"
    rho = _default_rho(model, rho, entropy, budget.deadline.seconds_left())
    return _bp_loop(model, rho, entropy, 0 if bethe else rho_updates, damping,
                    budget.iterations(_MAX_SWEEPS), tol, budget.deadline, callbacks,
                    "loopy-bp" if bethe else "trbp", n_threads(n_jobs))


def _run_loopy_bp(model, budget, callbacks, *, damping=0.5, tol=1e-8, n_jobs=1):
    """`loopy_bp` on the checked ``model``: the registered run."""
    return _run_trbp(model, budget, callbacks, entropy="bethe", damping=damping, tol=tol,
                     n_jobs=n_jobs)


def _default_rho(model, rho, entropy, max_time):
    """``rho``, or for the default of "trw" (None: "matrix-tree") when the matrix-tree
    rule would take more than `_MATRIX_TREE_MOST` seconds or `_MATRIX_TREE_SHARE` of
    ``max_time`` (`_MATRIX_TREE_COST`), balanced trees drawn within that share."""
    if rho is not None or entropy != "trw":
        return rho
    cost = _MATRIX_TREE_COST * model.n_edges**1.5
    share = None if max_time is None else _MATRIX_TREE_SHARE * max_time
    if cost <= _MATRIX_TREE_MOST and (share is None or cost <= share):
        return rho
    return partial(balanced_tree_rho, time_limit=share)


def _bp_loop(model, rho, entropy, rho_updates, damping, max_iter, tol, deadline, callbacks,
             method, n_jobs):
    """The rho loop of `trbp` on `fwcore.loop.run_loop`: BP at each rho is measured, the
    steps are the rho updates, the last BP run decides convergence. The arrays come
    first (a model they do not fit is refused at once), then, inside the run's Ctrl-C
    handling, their pages (`_Flat.touch`), the feasibility check and ρ
    (`fwcore.marginals.rho.initial_rho` of ``rho`` and ``entropy``; if Ctrl-C comes
    first, the beliefs of the uniform messages at the "uniform" ρ)."""
    run = _RhoLoop(model, rho_updates, damping, max_iter, tol, deadline, n_jobs)

    def start():
        run.flat.touch()
        check_feasible(model)
        run.rho = run.mu_rho = initial_rho(model, rho, entropy)

    outcome = run_loop(run.measure, run.step, Stopping(rho_updates, tol, deadline=deadline),
                       callbacks, start=start, guard=run.guard)
    if run.rho is None:
        run.rho = run.mu_rho = initial_rho(model, RHO_RULES[2] if entropy == "trw" else None,
                                           entropy)
    if not run.flat.believed:  # Ctrl-C before the first run's sweeps: its messages
        run.flat.uniform_messages()
        run.mu = run.flat.beliefs(np.maximum(run.mu_rho, _RHO_MIN), run.mu_rho)
    primal = run.flat.value  # TRW(mu; mu_rho)
    mu = run.mu
    mu.flags.writeable = False  # the result's: its blocks are views of it
    # sweeps stopped to leave time for the beliefs: the deadline, though not yet passed
    status = (Status.MAX_TIME if run.flat.out_of_time and outcome.status is Status.MAX_ITER
              else outcome.status)
    return MarginalResult.from_mu(
        model, mu, gap=None, certified_gap=None, log_z_upper=primal, certified=False,
        status=status, n_iter=run.n_iter, time=deadline.elapsed(), method=method,
        trace=outcome.trace,
        info=dict(rho=run.mu_rho.copy(), primal=primal, n_rho_updates=outcome.n_iter))


class _RhoLoop:
    """TRBP's state over the rho loop: ``mu`` (the beliefs of the messages so far, in the
    flat arrays' vector: made by each BP run, or at the end if Ctrl-C came before the
    first one had any), the rho it was computed at (``mu_rho``) and the sweeps of every
    run (``n_iter``)."""

    def __init__(self, model, rho_updates, damping, max_iter, tol, deadline, n_jobs):
        self.model, self.deadline = model, deadline
        self.rho_updates, self.damping, self.max_iter, self.tol = (
            rho_updates, damping, max_iter, tol)
        self.flat = _Flat(model, n_jobs)
        self.guard = Guard()
        self.rho = self.mu_rho = None  # set by the run's start
        self.mu, self.n_iter = self.flat.mu, 0
        self.run_time = 0.0     # seconds of the last BP run and its beliefs

    def measure(self, i):
        """BP at the current rho; its record (``iteration`` = sweeps, ``outer`` = i) and, at
        the last rho, the largest change of a log-message (else inf: no stop before)."""
        start = time.monotonic()
        rho = np.maximum(self.rho, _RHO_MIN)
        it, _, change = self.flat.run(rho, self.damping, self.max_iter, self.tol,
                                      self.deadline, self.guard)
        self.mu_rho = self.rho
        end = time.monotonic()
        self.mu = self.flat.beliefs(rho, self.rho)
        self.n_iter += it
        if self.guard.interrupted:
            return None, math.inf
        primal = self.flat.value
        self.run_time = time.monotonic() - start
        self.flat.finish_time = time.monotonic() - end
        record = Record(iteration=it, time=self.deadline.elapsed(), primal=primal, outer=i)
        return record, change if i == self.rho_updates else math.inf

    def step(self, i):
        """Barrier FW Alg. 2 l. 21: a FW step on rho towards the maximum spanning forest;
        `fwcore.loop.TimeUp` instead when the BP run at the new rho would not fit in the
        time left (it starts from uniform messages: cut short, its beliefs would be worse
        than the ones kept)."""
        left = self.deadline.seconds_left()
        if left is not None and left < self.run_time:
            raise TimeUp
        d = rho_direction(self.model, self.mu, self.rho)
        self.rho = self.rho + 2.0 / (i + 2.0) * d


TRBP = register_method(
    "trbp", _run_trbp, _TRBP_OPTIONS, iteration="sweeps per BP run",
    summary="tree-reweighted belief propagation with its rho loop (Wainwright et al. "
            "2005): the TRW value and beliefs, a bound only at an exact fixed point")
LOOPY_BP = register_method(
    "loopy-bp", _run_loopy_bp, _LOOPY_OPTIONS, iteration="sweeps",
    summary="loopy (sum-product) belief propagation: the Bethe approximation and beliefs")
