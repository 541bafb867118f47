"""The result every marginal-inference method returns (`fwcore.marginals.registry`),
its progress line, the product bound on log Z, and Barrier FW's trace recorder."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..factor_graph import FactorGraph, solves_factor_graphs
from ..results import Record, Result, Status, Trace, gap_text

__all__ = ["MarginalResult", "Recorder", "factor_maxima", "product_bound", "interrupted_answer"]


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class MarginalResult(Result):
    """Marginals and bounds on log Z, from any marginal-inference method
    (`fwcore.marginals.registry`).

    ``node_marginals`` (list of 1-D arrays), ``edge_marginals`` (card_i x card_j tables of
    the model's edges), ``mu`` (the same, flat); ``log_z_upper`` (an upper bound on log Z
    when ``certified``; else the method's estimate, e.g. a TRW or Bethe value away from a
    fixed point), ``log_z_lower`` (a certified lower bound, None when the method gives
    none); ``gap`` (the method's certificate: the FW gap over the polytope for Barrier FW,
    upper − lower for an interval, None for BP) and ``certified_gap`` (the gap a proof
    certifies, None when nothing is proven; ``converged`` only when it is at most the
    tolerance); ``status``, ``n_iter`` (the method's iterations: `fwcore.available_methods`
    says what they are), ``n_oracle_calls`` (MAP or LP calls), ``time`` (seconds, the
    whole call), ``method`` (which method answered), ``trace`` (a `Record` per
    iteration) and ``info``: what only that method has (Barrier FW's and TRBP's edge
    weights ``rho``, TRW value ``primal``, ...; its docstring lists them).

    A method that samples (certificate "estimate") also gives ``log_z_estimate`` (log of
    an unbiased estimate of Z) and the interval ``log_z_estimate_lower <= log Z <=
    log_z_estimate_upper``, which holds with probability at least ``confidence`` (over
    the samples; `fwcore.marginals.estimate` names the inequality): a probabilistic
    interval, never mixed with the certified ``log_z_lower`` / ``log_z_upper`` (None
    when the method draws no samples)."""

    node_marginals: list
    edge_marginals: list
    mu: np.ndarray
    log_z_upper: float
    certified: bool
    gap: float | None
    certified_gap: float | None
    status: Status
    n_iter: int
    time: float
    method: str
    n_oracle_calls: int = 0
    log_z_lower: float | None = None
    trace: Trace = Trace()
    info: dict = field(default_factory=dict)
    log_z_estimate: float | None = None
    log_z_estimate_lower: float | None = None
    log_z_estimate_upper: float | None = None
    confidence: float | None = None

    def proven_gap(self):
        return self.certified_gap

    @property
    def message(self):
        """How the run ended and what it proves about log Z, in a sentence: the certified
        interval (its width is what a user reads as "how far off"), else the estimate; then
        the sampled estimate and its probabilistic interval, when there is one."""
        estimate = self.estimate_text()
        return (f"{Result.message.fget(self)}; {self.interval_text()}" +
                (f"; {estimate}" if estimate else ""))

    def estimate_text(self):
        """'log Z ~ E, in [L, U] with probability P (sampled)', or '' without samples."""
        if self.log_z_estimate is None:
            return ""
        return (f"log Z ~ {self.log_z_estimate:.10g}, in [{self.log_z_estimate_lower:.10g}, "
                f"{self.log_z_estimate_upper:.10g}] with probability {self.confidence:g} "
                "(sampled)")

    def interval_text(self):
        """'L <= log Z <= U (certified, width W)', or the side that is certified, or 'log Z
        ~ U (an estimate, not a bound)'."""
        lower = self.log_z_lower if self.log_z_lower is not None else -math.inf
        if self.certified and math.isfinite(lower):
            return (f"{lower:.10g} <= log Z <= {self.log_z_upper:.10g} (certified, width "
                    f"{self.log_z_upper - lower:.3g})")
        if self.certified:
            return f"log Z <= {self.log_z_upper:.10g} (certified)"
        estimate = f"log Z ~ {self.log_z_upper:.10g} (an estimate, not a bound)"
        return estimate + (f"; log Z >= {lower:.10g} (certified)" if math.isfinite(lower) else "")

    @classmethod
    def from_mu(cls, model, mu, **fields):
        """The result for the flat marginals ``mu``, split into node and edge marginals."""
        nodes, edges = model.split_marginals(mu)
        return cls(node_marginals=nodes, edge_marginals=edges, mu=mu, **fields)


def factor_maxima(model):
    """max θ_f of each factor f: a `PairwiseMRF`'s unary then edge blocks (flat order), a
    `FactorGraph`'s factors."""
    if isinstance(model, FactorGraph):
        return np.array([np.max(table) for _, table in model.factors], dtype=np.float64)
    starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]]).astype(np.intp)
    return np.maximum.reduceat(model.theta, starts) if starts.size else np.zeros(0)


def product_bound(model):
    """log Z <= Σ_f max θ_f + Σ_v log ``|X_v|`` (`factor_maxima`): a certified bound
    that needs no inference; −inf when some factor has no finite entry."""
    log_states = float(np.log(np.asarray(model.card, dtype=np.float64)).sum())
    return float(factor_maxima(model).sum()) + log_states


@solves_factor_graphs
def interrupted_answer(model, elapsed, method):
    """What a run stopped by Ctrl-C before it had an answer returns: uniform marginals, the
    certified `product_bound`, no lower bound, status ``interrupted``."""
    uniform = model.uniform_marginals()
    uniform.flags.writeable = False                  # the result's views, no copy
    return MarginalResult.from_mu(
        model, uniform, log_z_upper=product_bound(model), certified=True,
        gap=math.inf, certified_gap=None, status=Status.INTERRUPTED, n_iter=0, time=elapsed,
        method=method, log_z_lower=-math.inf)


def progress_line(record):
    """The progress line of a marginal-inference record (`fwcore.loop.ProgressLog`): a
    record with both bounds (weighted mini-bucket, exact) gives its certified interval;
    a Barrier FW or BP record (``outer`` set) the gap proven by its bound on log Z, else
    the FW gap as an estimate (never negative, `fwcore.results.gap_text`); any other the
    value it reports (mean field's L(q), Perturb-and-MAP's running mean)."""
    if record.bound is not None and record.score is not None:
        return (f"pass {record.iteration}  {record.time:.1f} s  {record.score:.6f} <= log Z "
                f"<= {record.bound:.6f}  ({gap_text(record.bound - record.score)})")
    if record.outer is None:
        return f"iteration {record.iteration}  {record.time:.1f} s  {record.primal:.6f}"
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
    into `Record`s with the TRW value, the time since the call began (``deadline``'s
    ``elapsed()``), the rho iteration (``outer``) and the oracle calls of the whole run,
    and hands them to the run's `fwcore.loop.Callbacks` (kept in ``records``, its
    progress logged, then the user's callback; ``stopped``: it returned False; `close`
    logs the last progress line). With ``slack`` (a function returning what the oracle
    call behind the record's gap proves, see
    `fwcore.marginals.barrier_fw.MarginalPolytope.slack`, or None) a record's ``bound`` is
    TRW + gap + slack, a certified upper bound on log Z (Barrier FW App. J)."""

    def __init__(self, callbacks, deadline, slack=None):
        self.callbacks, self.deadline, self.slack = callbacks, deadline, slack
        self.outer, self.calls_before = 0, 0

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
            iteration=rec.iteration, time=self.deadline.elapsed(), primal=-rec.primal,
            gap=rec.gap, n_oracle_calls=self.calls_before + rec.n_oracle_calls,
            delta=rec.delta, n_active=rec.n_active, step=rec.step, outer=self.outer,
            bound=None if slack is None else -rec.primal + rec.gap + slack))

    def close(self):
        self.callbacks.close()

    def trace(self):
        return self.callbacks.trace()
