"""The marginal-inference result, its trace recorder, and the message-passing baselines
(tree-reweighted BP with the outer rho loop of Barrier FW Alg. 2, and loopy BP). Barrier
FW itself (`fwcore.infer`) is in `fwcore.barrier_fw`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .bp import trbp_beliefs
from .checks import CALLABLE, TIME, Interval, check_feasible, check_model, check_params
from .interrupt import Guard
from .results import Record, Status, Trace
from .rho import initial_rho, rho_direction
from .trw import TRWObjective
from .factor_graph import FactorGraph, solves_factor_graphs
from .model import PairwiseMRF

__all__ = ["MarginalResult", "Recorder", "trbp", "loopy_bp"]


@dataclass(frozen=True)
class MarginalResult:
    """Approximate marginals and a log Z bound.

    ``node_marginals`` (list of 1-D arrays), ``edge_marginals`` (card_i x card_j tables),
    ``mu`` (the same, flat), ``rho`` (edge appearance probabilities used; None for exact
    marginals), ``primal`` = TRW(mu; theta, rho) (log Z for exact marginals), ``gap`` =
    FW gap over the polytope (M, or L for ``domain="local"``) recomputed at the end with
    the oracle's vertex (with an approximate oracle an estimate: no better vertex was
    found; None for the BP baselines: no oracle, no gap), ``certified_gap`` = the gap
    proven by an exact oracle or by the oracle's bound on the max score (None when there
    is no proof; the status is ``converged`` only when it is at most ``tol``),
    ``log_z_upper`` (primal + certified_gap, an upper bound on log Z, when ``certified``;
    the TRW / Bethe value or primal + gap otherwise), ``delta`` (contraction at the end), ``n_oracle_calls`` (MAP or LP
    calls), ``n_icm_calls`` (local search), ``status``, ``n_iter`` (inner iterations or BP
    sweeps, all rho iterations), ``n_rho_updates`` done, ``time`` (seconds), ``method``,
    ``trace`` (a `Record` per iteration; ``outer`` is the rho iteration)."""

    node_marginals: list
    edge_marginals: list
    mu: np.ndarray
    rho: Optional[np.ndarray]
    primal: float
    gap: Optional[float]
    certified_gap: Optional[float]
    log_z_upper: float
    certified: bool
    delta: float
    n_oracle_calls: int
    n_icm_calls: int
    status: Status
    n_iter: int
    n_rho_updates: int
    time: float
    method: str
    trace: Trace = Trace()

    @classmethod
    def from_mu(cls, model, mu, **fields):
        """The result for the flat marginals ``mu``, split into node and edge marginals."""
        nodes, edges = model.split_marginals(mu)
        return cls(node_marginals=nodes, edge_marginals=edges, mu=mu, **fields)

    @property
    def converged(self):
        return self.status is Status.CONVERGED


class Recorder:
    """Keeps the trace of a marginal-inference run: turns the engine's records (f = −TRW)
    into `Record`s with the TRW value, the rho iteration (``outer``) and the oracle calls
    of the whole run, forwards them to the user's ``callback`` (``stopped``: it returned
    False) and prints progress when ``verbose``. With ``slack`` (a function returning
    what the oracle call behind the record's gap proves, see
    `fwcore.barrier_fw.MarginalPolytope.slack`, or None) a record's ``bound`` is TRW + gap
    + slack, a certified upper bound on log Z (Barrier FW App. J)."""

    def __init__(self, callback, verbose, t0, slack=None):
        self.callback, self.verbose, self.t0, self.slack = callback, verbose, t0, slack
        self.records, self.outer, self.calls_before = [], 0, 0
        self.stopped = False  # the callback asked to stop

    def __call__(self, rec):
        slack = None if self.slack is None else self.slack()
        r = Record(iteration=rec.iteration, time=time.perf_counter() - self.t0,
                   primal=-rec.primal, gap=rec.gap,
                   n_oracle_calls=self.calls_before + rec.n_oracle_calls, delta=rec.delta,
                   n_active=rec.n_active, step=rec.step, outer=self.outer,
                   bound=None if slack is None else -rec.primal + rec.gap + slack)
        self.records.append(r)
        if self.verbose:
            gap = "-" if r.gap is None else f"{r.gap:.3g}"
            delta = "-" if r.delta is None else f"{r.delta:.2g}"
            print(f"rho {r.outer:2d} it {r.iteration:4d}  TRW {r.primal:.6f}  gap {gap}  "
                  f"delta {delta}  |V| {r.n_active}  MAP calls {r.n_oracle_calls}",
                  file=sys.stderr)
        proceed = None if self.callback is None else self.callback(r)
        self.stopped = proceed is False
        return proceed

    def trace(self):
        return Trace(self.records)


_BP_PARAMS = {
    "rho_updates": Interval(0, integer=True),
    "damping": Interval(0.0, 1.0, hi_open=True),
    "max_iter": Interval(1, integer=True),
    "tol": Interval(0.0, lo_open=True),
    "max_time": TIME,
    "callback": [CALLABLE, None],
}


@solves_factor_graphs
def trbp(model: PairwiseMRF | FactorGraph, *, rho: str | np.ndarray = "matrix-tree", rho_updates: int = 10,
         damping: float = 0.5, max_iter: int = 1000, tol: float = 1e-8,
         max_time: float | None = None, callback=None, verbose: bool = False) -> MarginalResult:
    """Tree-reweighted BP (log domain, `fwcore.bp.trbp_beliefs`) with the outer rho loop of
    Barrier FW Alg. 2 (rho_updates FW steps on rho towards the maximum spanning forest on
    the beliefs' mutual information). ``log_z_upper`` is TRW(beliefs; rho), an upper bound
    on log Z only at an exact fixed point, so ``certified`` is False; ``gap`` is None.
    ``callback(record)`` is called once per rho iteration (``iteration`` = BP sweeps).
    Ctrl-C returns the beliefs of the messages so far (status interrupted)."""
    t0 = time.perf_counter()
    model = check_model(model)
    return _bp_loop(model, initial_rho(model, rho), rho_updates, damping, max_iter, tol,
                    max_time, callback, verbose, t0, "trbp")


@solves_factor_graphs
def loopy_bp(model: PairwiseMRF | FactorGraph, *, damping: float = 0.5, max_iter: int = 1000, tol: float = 1e-8,
             max_time: float | None = None, callback=None,
             verbose: bool = False) -> MarginalResult:
    """Loopy (sum-product) BP: TRBP with rho = 1 on every edge. ``log_z_upper`` is the Bethe
    approximation of log Z at the beliefs (not a bound; ``certified`` is False)."""
    t0 = time.perf_counter()
    model = check_model(model)
    return _bp_loop(model, np.ones(model.n_edges), 0, damping, max_iter, tol, max_time,
                    callback, verbose, t0, "loopy-bp")


def _bp_loop(model, rho, rho_updates, damping, max_iter, tol, max_time, callback, verbose, t0,
             method):
    p = check_params(_BP_PARAMS, rho_updates=rho_updates, damping=damping, max_iter=max_iter,
                     tol=tol, max_time=max_time, callback=callback)
    check_feasible(model)
    deadline = None if p["max_time"] is None else t0 + p["max_time"]
    recorder = Recorder(callback, bool(verbose), t0)
    objective = TRWObjective(model, rho)
    # Ctrl-C in the sweeps keeps the beliefs so far; anywhere else in an iteration, the
    # beliefs of the last one (the uniform point before the first)
    guard = Guard()
    mu, mu_rho, n_iter, status, i = model.uniform_marginals(), rho, 0, Status.CONVERGED, 0
    for i in range(p["rho_updates"] + 1):
        step = guard(trbp_beliefs, model, rho, p["damping"], p["max_iter"], p["tol"],
                     deadline, guard)
        if step is None:
            break
        (mu, it, converged, _), mu_rho = step, rho
        n_iter += it
        if guard.interrupted:
            break
        status = Status.CONVERGED if converged else Status.MAX_ITER
        objective.set_rho(rho)
        recorder.outer = i
        proceed = guard(lambda: recorder(Record(iteration=it, time=0.0,
                                                primal=objective.value_grad(mu)[0])))
        if deadline is not None and time.perf_counter() >= deadline:
            status = Status.MAX_TIME
        elif proceed is False:
            status = Status.INTERRUPTED
        if status in (Status.MAX_TIME, Status.INTERRUPTED) or i == p["rho_updates"]:
            break
        d = guard(rho_direction, model, mu, rho)
        if d is None:
            break
        rho = rho + 2.0 / (i + 3.0) * d  # Barrier FW Alg. 2 l. 21
    if guard.interrupted:
        status = Status.INTERRUPTED
    objective.set_rho(mu_rho)
    primal = objective.trw(mu)
    return MarginalResult.from_mu(
        model, mu, rho=objective.rho.copy(), primal=primal, gap=None, certified_gap=None,
        log_z_upper=primal, certified=False, delta=0.0, n_oracle_calls=0, n_icm_calls=0,
        status=status, n_iter=n_iter, n_rho_updates=i, time=time.perf_counter() - t0, method=method,
        trace=recorder.trace())
