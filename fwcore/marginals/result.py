"""The marginal-inference result and its trace recorder, shared by Barrier FW
(`fwcore.marginals.barrier_fw`) and the message-passing baselines (`fwcore.marginals.bp`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..loop import Callbacks
from ..results import Record, Result, Status, Trace, gap_text

__all__ = ["MarginalResult", "Recorder"]


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class MarginalResult(Result):
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
    the TRW / Bethe value or primal + gap otherwise), ``delta`` (contraction at the end),
    ``n_oracle_calls`` (MAP or LP calls), ``n_icm_calls`` (local search), ``status``,
    ``n_iter`` (inner iterations or BP sweeps, all rho iterations), ``n_rho_updates`` done,
    ``time`` (seconds), ``method``, ``trace`` (a `Record` per iteration; ``outer`` is the
    rho iteration), ``log_z_lower`` (a certified lower bound on log Z where the method
    gives one, else None)."""

    node_marginals: list
    edge_marginals: list
    mu: np.ndarray
    rho: np.ndarray | None
    primal: float
    gap: float | None
    certified_gap: float | None
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
    log_z_lower: float | None = None

    def proven_gap(self):
        return self.certified_gap

    @classmethod
    def from_mu(cls, model, mu, **fields):
        """The result for the flat marginals ``mu``, split into node and edge marginals."""
        nodes, edges = model.split_marginals(mu)
        return cls(node_marginals=nodes, edge_marginals=edges, mu=mu, **fields)


def progress_line(record):
    """The progress line of a marginal-inference record (`fwcore.loop.ProgressLog`): a
    weighted mini-bucket pass (``outer`` None) gives its certified interval; a Barrier
    FW or BP record the gap proven by its bound on log Z, else the FW gap as an estimate
    (never negative, `fwcore.results.gap_text`)."""
    if record.outer is None:
        return (f"pass {record.iteration}  {record.time:.1f} s  {record.score:.6f} <= log Z "
                f"<= {record.bound:.6f}  ({gap_text(record.bound - record.score)})")
    proven = None if record.bound is None else record.bound - record.primal
    parts = [f"rho {record.outer} it {record.iteration}", f"{record.time:.1f} s",
             f"TRW {record.primal:.6f}", gap_text(proven, record.gap if proven is None else None)]
    if record.delta is not None:
        parts.append(f"delta {record.delta:.2g}")
    if record.n_active is not None:
        parts.append(f"|V| {record.n_active}, MAP calls {record.n_oracle_calls}")
    return "  ".join(p for p in parts if p)


class Recorder:
    """The engine's callback in a Barrier FW run: turns the engine's records (f = −TRW)
    into `Record`s with the TRW value, the rho iteration (``outer``) and the oracle calls
    of the whole run, and hands them to the run's `fwcore.loop.Callbacks` (kept in
    ``records``, its progress logged (on stderr with ``verbose``), then the user's
    ``callback``; ``stopped``: it returned False; `close` logs the last progress line).
    With ``slack`` (a function returning what the oracle call behind the record's gap
    proves, see `fwcore.marginals.barrier_fw.MarginalPolytope.slack`, or None) a record's
    ``bound`` is TRW + gap + slack, a certified upper bound on log Z (Barrier FW App. J)."""

    def __init__(self, callback, verbose, t0, slack=None):
        self.t0, self.slack = t0, slack
        self.outer, self.calls_before = 0, 0
        self.callbacks = Callbacks(callback, line=progress_line, verbose=verbose)

    @property
    def records(self):
        return self.callbacks.recorder.records

    @property
    def stopped(self):
        """The callback asked to stop."""
        return self.callbacks.stopped

    def __call__(self, rec):
        slack = None if self.slack is None else self.slack()
        return self.callbacks(Record(
            iteration=rec.iteration, time=time.perf_counter() - self.t0, primal=-rec.primal,
            gap=rec.gap, n_oracle_calls=self.calls_before + rec.n_oracle_calls,
            delta=rec.delta, n_active=rec.n_active, step=rec.step, outer=self.outer,
            bound=None if slack is None else -rec.primal + rec.gap + slack))

    def close(self):
        self.callbacks.close()

    def trace(self):
        return self.callbacks.trace()
