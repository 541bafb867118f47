"""The result vocabulary shared by every task (DESIGN.md "Contracts every task shares").

Each task returns one frozen dataclass (scipy.optimize's ``OptimizeResult`` habit), a
`Result`, whose common fields carry the same names everywhere: ``status``, ``time``
(seconds), ``n_iter``, ``n_oracle_calls``, ``method``, ``gap`` (the optimality certificate,
None without one), ``certified`` (the bound is a proof), the bound (``log_z_upper`` for
log Z, ``upper_bound`` for a maximum score) and ``trace``: a `Trace` of `Record`s, one per
iteration, whose ``columns()`` gives a dict of arrays for plotting; ``success`` and
``message`` say in a word and in a sentence how the run ended, and the repr is a short
summary (arrays by shape, the trace by its length). Learners carry the same as fitted
attributes (``status_``, ``n_iter_``, ``n_oracle_calls_``, ``trace_``).
"""
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Optional, Protocol, runtime_checkable

import numpy as np

__all__ = ["Status", "StepType", "Record", "Trace", "Result", "MapResult", "proves_optimal",
           "finite_certificate", "gap_text"]


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
    ``n_active`` (the size of the active set), ``step`` (`StepType`), ``outer`` (outer
    iteration, e.g. the rho update of Barrier FW Alg. 2), ``bound`` (a certified upper
    bound: on the maximum score for MAP, on log Z for marginal inference) and ``score``
    (the best decoded score so far)."""

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
        """A certificate proves the answer within the tolerance (status ``converged``)."""
        return self.status is Status.CONVERGED

    @property
    def success(self):
        """The run returned an answer it stands by: it ended by its own criterion
        (``converged``, or ``stalled``: nothing better found, not proven), or it stopped
        on its budget (``max_iter``, ``max_time``) with a certified answer (``certified``:
        its bound is a proof); not after an interruption, nor on a budget with nothing
        certified. `message` says which."""
        if self.status in (Status.CONVERGED, Status.STALLED):
            return True
        return self.status in (Status.MAX_ITER, Status.MAX_TIME) and bool(self.certified)

    def proven_gap(self):
        """The gap a certificate proves at the answer (None: none proven)."""
        return self.gap if self.certified else None

    @property
    def message(self):
        """How the run ended, in a sentence (what the command line prints)."""
        proven = self.proven_gap()
        gaps = gap_text(proven, None if proven is not None else self.gap)
        if self.status is Status.CONVERGED:
            why = "exact" if proven == 0.0 else f"{gaps} within the tolerance"
            return f"converged: {why}"
        return self.stop_text() + (f"; {gaps}" if gaps else "")

    def stop_text(self):
        """Why a run that did not converge stopped: 'max_time: stopped at ...'."""
        why = {Status.STALLED: "the solver stopped improving, but nothing proves its answer "
                               "optimal",
               Status.MAX_ITER: f"stopped after {self.n_iter} iterations before converging: "
                                "the best answer so far",
               Status.MAX_TIME: f"stopped at the time limit after {self.time:.3g} s: the best "
                                "answer so far",
               Status.INTERRUPTED: "Ctrl-C, or the callback returned False: the best answer "
                                   "so far"}[self.status]
        return f"{self.status.value}: {why}"

    def summary_rows(self):
        """(name, text) of each row of the repr."""
        rows = [("status", self.status.value), ("success", self.success),
                ("message", self.message)]
        return rows + [(f.name, f"{self.time:.3g} s" if f.name == "time" else
                        _summary(getattr(self, f.name)))
                       for f in dataclasses.fields(self) if f.name != "status"]

    def __repr__(self):
        """A short summary, as scipy's ``OptimizeResult`` prints: one line per field,
        arrays by dtype and shape, lists by length, the trace by its number of records."""
        rows = self.summary_rows()
        width = max(len(name) for name, _ in rows)
        return "\n".join([type(self).__name__] +
                         [f"{name.rjust(width + 1)}: {value}" for name, value in rows])


def gap_text(proven, estimate=None):
    """'proven gap G' and/or 'est. gap G' ('' when both are None): an estimate (from an
    approximate oracle, whose vertex may score below the iterate) is shown as 0 when it
    is negative, so no gap ever reads negative."""
    parts = []
    if proven is not None:
        parts.append(f"proven gap {proven:.3g}")
    if estimate is not None:
        parts.append(f"est. gap {max(estimate, 0.0):.3g}")
    return ", ".join(parts)


#: arrays of at most this many entries are shown in a result's repr
_SHOWN_ENTRIES = 6


def _summary(value):
    """A result field in a few characters (`Result.__repr__`)."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, Trace):
        return f"{len(value)} record{'' if len(value) == 1 else 's'} (.trace.columns() for arrays)"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.10g}"
    if isinstance(value, np.ndarray):
        if value.size <= _SHOWN_ENTRIES and value.ndim <= 1:
            return np.array2string(value, precision=6, separator=", ")
        return f"{value.dtype} array of shape {value.shape}"
    if isinstance(value, (list, tuple)):
        if len(value) <= _SHOWN_ENTRIES and all(isinstance(v, (int, float, str)) for v in value):
            return repr(value)
        kinds = {"array" if isinstance(v, np.ndarray) else type(v).__name__ for v in value}
        what = f" {kinds.pop()}s" if len(kinds) == 1 else ""
        return f"{type(value).__name__} of {len(value)}{what}"
    if isinstance(value, dict):
        keys = ", ".join(map(str, value))
        return f"dict of {len(value)}" + (f" ({keys[:60]}{'...' if len(keys) > 60 else ''})"
                                           if value else "")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def proves_optimal(score, bound):
    """Does ``bound`` prove ``score`` optimal (to 1e-9 relative)? False when either is not
    finite: an infinite score is never certified optimal."""
    if bound is None or not np.isfinite(score) or not np.isfinite(bound):
        return False
    return bound - score <= 1e-9 * max(1.0, abs(score))


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
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
