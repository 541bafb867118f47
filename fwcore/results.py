"""The result vocabulary shared by every task (DESIGN.md "Contracts every task shares").

Each task returns one frozen dataclass (scipy.optimize's ``OptimizeResult`` habit), a
`Result`, whose common fields carry the same names everywhere: ``status``, ``time`` (seconds), ``n_iter``,
``n_oracle_calls``, ``method``, ``gap`` (the optimality certificate, None without one),
``certified`` (the bound is a proof), the bound (``log_z_upper`` for log Z,
``upper_bound`` for a maximum score) and ``trace``: a `Trace` of `Record`s, one per
iteration, whose ``columns()`` gives a dict of arrays for plotting. Learners carry the
same as fitted attributes (``status_``, ``n_iter_``, ``n_oracle_calls_``, ``trace_``).
"""
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Optional, Protocol, runtime_checkable

import numpy as np

__all__ = ["Status", "StepType", "Record", "Trace", "Result", "MapResult", "proves_optimal",
           "finite_certificate"]


class Status(str, enum.Enum):
    """Why a solver stopped (DESIGN.md "Status is honest")."""

    CONVERGED = "converged"      # a certified gap is at or below the tolerance, or exact
    MAX_ITER = "max_iter"        # iteration (or oracle-call) budget spent
    MAX_TIME = "max_time"        # wall-clock budget spent; best result so far
    INTERRUPTED = "interrupted"  # callback returned False or Ctrl-C; best result so far
    STALLED = "stalled"          # no certified progress possible (e.g. a local optimum)


class StepType(str, enum.Enum):
    """How the iterate of a Frank-Wolfe record was reached."""

    INIT = "init"              # the starting point
    FW = "fw"                  # towards the Frank-Wolfe vertex
    AWAY = "away"              # away from the worst active atom
    DROP = "drop"              # an away or pairwise step that removed an atom
    PAIRWISE = "pairwise"      # weight moved from the away atom to the FW vertex
    CORRECTION = "correction"  # a FW step followed by a correction over the active set
    BLOCK = "block"            # one pass of block-coordinate FW steps


@dataclass(frozen=True)
class Record:
    """One iteration of any solver: what a callback receives and a trace stores.

    ``primal`` is the value the solver optimises in the direction it reports it (TRW for
    `fwcore.infer`, f for the engine, the dual objective for `fwcore.infer_lp`); ``gap``
    the freshly computed certificate at this iterate (None when there is none). The
    optional fields are filled by the solvers that have them: ``delta`` (contraction),
    ``n_active`` (the size of the active set), ``step`` (`StepType`), ``outer`` (outer iteration, e.g.
    the rho update of Barrier FW Alg. 2), ``bound`` (a certified upper bound: on the
    maximum score for MAP, on log Z for marginal inference) and ``score`` (the best
    decoded score so far)."""

    iteration: int
    time: float
    primal: float
    gap: Optional[float] = None
    n_oracle_calls: int = 0
    delta: Optional[float] = None
    n_active: Optional[int] = None
    step: Optional[StepType] = None
    outer: Optional[int] = None
    bound: Optional[float] = None
    score: Optional[float] = None


_NUMERIC = {f.name for f in dataclasses.fields(Record)} - {"step"}
_CERTIFICATE = ("primal", "gap", "bound", "score")


def finite_certificate(record):
    """Whether every certificate ``record`` carries (``primal``, ``gap``, ``bound``,
    ``score``; None: not carried) is finite, not ±inf nor NaN: a run is never
    ``converged`` on a record that is not (DESIGN.md "Status is honest")."""
    return all(np.isfinite(v) for v in (getattr(record, name) for name in _CERTIFICATE)
               if v is not None)


class Trace(tuple):
    """A tuple of `Record`s with ``columns()``: ``{field: array}`` (None becomes NaN), so
    ``plt.plot(t["time"], t["gap"])`` needs no loop."""

    __slots__ = ()

    def columns(self):
        out = {}
        for f in dataclasses.fields(Record):
            values = [vars(r)[f.name] for r in self]
            if f.name in _NUMERIC:
                out[f.name] = np.array([np.nan if v is None else v for v in values], dtype=float)
            else:
                out[f.name] = np.array([None if v is None else str(v.value) for v in values],
                                       dtype=object)
        return out


@runtime_checkable
class Result(Protocol):
    """The fields every task's result shares (module docstring); each result class
    subclasses it, so ``converged`` is written once."""

    status: Status
    time: float
    n_iter: int
    n_oracle_calls: int
    method: str
    gap: Optional[float]
    certified: bool
    trace: Trace

    @property
    def converged(self):
        return self.status is Status.CONVERGED


def proves_optimal(score, bound):
    """Does ``bound`` prove ``score`` optimal (to 1e-9 relative)? False when either is not
    finite: an infinite score is never certified optimal."""
    if bound is None or not np.isfinite(score) or not np.isfinite(bound):
        return False
    return bound - score <= 1e-9 * max(1.0, abs(score))


@dataclass(frozen=True)
class MapResult(Result):
    """A MAP answer: ``assignment`` maximising the log-score, its ``score``, a certified
    ``upper_bound`` on the maximum score (None when the method has none), ``gap`` =
    upper_bound − score, ``certified`` (there is such a bound: it is a proof), ``optimal``
    (the bound proves the score optimal), ``status``, wall ``time`` (seconds), the oracle
    used (``method``) and its calls."""

    assignment: np.ndarray
    score: float
    upper_bound: Optional[float]
    status: Status
    time: float
    method: str
    n_iter: int = 1
    n_oracle_calls: int = 1
    trace: Trace = Trace()
    info: dict = field(default_factory=dict)

    @property
    def gap(self):
        return None if self.upper_bound is None else self.upper_bound - self.score

    @property
    def certified(self):
        return self.upper_bound is not None

    @property
    def optimal(self):
        return proves_optimal(self.score, self.upper_bound)
