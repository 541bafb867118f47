"""The one run loop of every iterative task (DESIGN.md "Contracts every task shares").

`run_loop` measures the iterate (a `Record` and a stopping criterion, computed fresh),
hands the record to the run's `Callbacks` (the trace, the verbose line, the user's
callback), decides whether to stop and, if not, steps. Every task stops on the same
ladder, first match wins:

- ``converged``: the criterion is at or below ``tol`` (``stalled`` when the task's
  criterion is no proof, e.g. an inexact oracle's gap, or when the record has a
  non-finite certificate, `fwcore.results.finite_certificate`: the one place where that
  rule is kept);
- ``max_time``: the `Deadline` has passed, or a step raised `TimeUp`;
- ``max_iter``: ``max_iter`` steps are done, or ``max_oracle_calls`` oracle calls;
- ``interrupted``: the user's callback returned False, or Ctrl-C (SIGINT) came anywhere
  in the run; the task returns its best iterate so far.

A task keeps its own state (its best iterate) and builds its result from the loop's
`Outcome`.

Progress: every run that has a progress line logs it (`ProgressLog`) on the ``fwcore``
logger (`LOGGER`) at INFO, for its first record, then at most one a second, and its last:
shown wherever the user's logging configuration shows INFO from ``fwcore``. With
``verbose=True`` the lines also go to stderr when logging would show them nowhere (so a
configured logger never shows them twice); by default nothing is printed. `Guard` turns
Ctrl-C into a flag at the boundary of a step a task runs outside the loop (the rho loop of
`fwcore.infer`, one oracle call of `fwcore.infer_map`) or inside a phase whose partial
work it keeps (BP sweeps).
"""
import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional

from .results import Record, Status, Trace, finite_certificate

#: the logger of every fwcore run's progress (children: none; configure this one)
LOGGER = logging.getLogger("fwcore")
#: seconds between two progress lines of a run
PROGRESS_EVERY = 1.0

__all__ = ["run_loop", "Stopping", "Deadline", "Budget", "TimeUp", "Callbacks", "TraceRecorder",
           "ProgressLog", "LOGGER", "PROGRESS_EVERY", "Outcome", "Guard", "Interrupted",
           "keeping_best", "best_on_interrupt", "budget_status", "stopped_on_budget"]


class Guard:
    """Runs the steps of a run until one is interrupted by Ctrl-C: ``guard(step, *args)``
    returns ``step(*args)``, or None when Ctrl-C came inside it (``interrupted`` is then
    True, and later steps are skipped, so the run ends with what it had before the
    step)."""

    def __init__(self):
        self.interrupted = False

    def __call__(self, step, *args, **kwargs):
        if self.interrupted:
            return None
        try:
            return step(*args, **kwargs)
        except KeyboardInterrupt:
            self.interrupted = True
            return None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C that carries the best answer found so far (``best``, see `keeping_best`): to
    a caller that keeps nothing it is a KeyboardInterrupt."""

    def __init__(self, best):
        super().__init__()
        self.best = best


@contextmanager
def keeping_best(best):
    """Within it, Ctrl-C raises `Interrupted` carrying ``best(inner)``, ``inner`` being
    what an `Interrupted` from inside carried (None after a plain Ctrl-C); a plain
    KeyboardInterrupt when ``best`` returns None (nothing kept)."""
    try:
        yield
    except KeyboardInterrupt as stop:
        kept = best(stop.best if isinstance(stop, Interrupted) else None)
        raise (KeyboardInterrupt() if kept is None else Interrupted(kept)) from None


def best_on_interrupt(call, fallback):
    """``(call(), False)``; on Ctrl-C ``(best, True)``, ``best`` being what an
    `Interrupted` carried, else ``fallback()``."""
    try:
        return call(), False
    except KeyboardInterrupt as stop:
        best = stop.best if isinstance(stop, Interrupted) else None
        return (fallback() if best is None else best), True


class TimeUp(Exception):
    """The run's deadline passed before a step finished (its answer, if any, is not to be
    used); the run stops with status max_time."""


class Deadline:
    """The time a run must end by, ``seconds`` (None: never) from now, on the one clock of
    every run (`time.monotonic`); ``elapsed()`` counts from its creation, so a result's
    ``time`` is the whole call when the deadline is made first. Pickled as the seconds
    left and the seconds elapsed, so that a deadline sent to another process or machine
    means the same time budget on that worker's own clock (a task queued behind others
    gets only what is left when it is unpickled)."""

    def __init__(self, seconds=None):
        self.started = time.monotonic()
        self.at = None if seconds is None else self.started + seconds

    def __getstate__(self):
        now = time.monotonic()
        return {"left": None if self.at is None else self.at - now,
                "elapsed": now - self.started}

    def __dask_tokenize__(self):
        """A token fixed for the deadline's life (dask hashes task arguments: the pickled
        state, seconds left, changes with time)."""
        return ("fwcore.loop.Deadline", self.started, self.at)

    def __setstate__(self, state):
        now = time.monotonic()
        self.started = now - state["elapsed"]
        self.at = None if state["left"] is None else now + state["left"]

    def passed(self):
        return self.at is not None and time.monotonic() >= self.at

    def elapsed(self):
        """Seconds since the deadline was made."""
        return time.monotonic() - self.started

    def seconds_left(self):
        """Seconds left, never negative (None: no limit); unlike `left`, never raises."""
        return None if self.at is None else max(self.at - time.monotonic(), 0.0)

    def left(self):
        """Seconds left (None: no limit), the ``time_limit`` of the next call; raises
        `TimeUp` when none is left."""
        if self.at is None:
            return None
        left = self.at - time.monotonic()
        if left <= 0.0:
            raise TimeUp
        return left

    def share(self, fraction):
        """A deadline ``fraction`` of the time left from now (never: when this one is
        never); its ``elapsed`` still counts from this one's start. The shares of a run's
        time are `fwcore.auto.TIME_SHARES`."""
        part = Deadline.__new__(Deadline)
        part.started = self.started
        left = self.seconds_left()
        part.at = None if left is None else time.monotonic() + fraction * left
        return part


@dataclass(frozen=True)
class Budget:
    """What one run may spend: its ``deadline`` (made when the call began: its
    ``elapsed()`` is the result's ``time``) and ``max_iter`` of its iterations (None: the
    method's own default)."""

    deadline: Deadline
    max_iter: Optional[int] = None

    def iterations(self, default):
        """``max_iter``, or ``default`` when the caller gave none."""
        return default if self.max_iter is None else self.max_iter


@dataclass(frozen=True)
class Stopping:
    """When a run stops (the module docstring's ladder): ``max_iter`` steps, its criterion
    at or below ``tol``, ``max_oracle_calls`` (None: no cap) or the ``deadline``."""

    max_iter: int
    tol: float = 0.0
    max_oracle_calls: Optional[int] = None
    deadline: Deadline = field(default_factory=Deadline)


class TraceRecorder:
    """A callback keeping every record; ``trace()`` returns them as a `Trace`."""

    def __init__(self):
        self.records = []

    def __call__(self, record):
        self.records.append(record)

    def trace(self):
        return Trace(self.records)


class ProgressLog:
    """A callback logging ``line(record)`` on `LOGGER` at INFO: the first record, then at
    most one every `PROGRESS_EVERY` seconds, and the last one (`close`). With ``verbose``
    the line also goes to stderr when no handler would show it (module docstring). The
    line is made only when someone will read it."""

    def __init__(self, line, verbose=False):
        self.line, self.verbose = line, verbose
        self.last, self.pending = None, None

    def __call__(self, record):
        now = time.monotonic()
        if self.last is not None and now - self.last < PROGRESS_EVERY:
            self.pending = record
            return
        self.last, self.pending = now, None
        self._emit(record)

    def close(self):
        """Log the last record, if the rate held it back."""
        if self.pending is not None:
            self._emit(self.pending)
            self.pending = None

    def _emit(self, record):
        shown = _shown_at_info()
        if not (shown or self.verbose):
            return
        text = self.line(record)
        if shown:
            LOGGER.info(text)
        else:
            print(f"fwcore: {text}", file=sys.stderr, flush=True)


def _shown_at_info():
    """Whether some handler shows `LOGGER`'s INFO records (Python's last-resort handler,
    which shows warnings only, does not count)."""
    if not LOGGER.isEnabledFor(logging.INFO):
        return False
    logger = LOGGER
    while logger is not None:
        if any(h.level <= logging.INFO for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


class Callbacks:
    """The callbacks of one run, called in order with each record: a `TraceRecorder`
    (unless ``trace`` is False), a `ProgressLog` of ``line`` (a function giving a
    record's progress line; None: none) with ``verbose``, then the user's ``callback``.
    Returns whether the run may go on: False when the callback returned False
    (``stopped``). `close` at the end of the run logs its last line."""

    def __init__(self, callback=None, *, trace=True, line=None, verbose=False):
        self.recorder = TraceRecorder() if trace else None
        self.progress = None if line is None else ProgressLog(line, verbose)
        self.observers = [c for c in (self.recorder, self.progress) if c is not None]
        self.callback = callback
        self.stopped = False

    def __call__(self, record):
        for observe in self.observers:
            observe(record)
        self.stopped = self.callback is not None and self.callback(record) is False
        return not self.stopped

    def close(self):
        if self.progress is not None:
            self.progress.close()

    def trace(self):
        return Trace() if self.recorder is None else self.recorder.trace()


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its ``status``, ``n_iter`` (steps done), the ``last`` record
    measured (None if none) and the ``trace`` its `Callbacks` kept."""

    status: Status
    n_iter: int
    last: Optional[Record]
    trace: Trace


def run_loop(measure, step, stopping, callbacks, *, start=None, measure_start=True,
             proof=True, guard=None):
    """Run a task to the end of the ladder (module docstring); returns an `Outcome`.

    measure(k) -> (record, criterion): the fresh `Record` of the iterate after k steps
        (None: the task keeps no records) and the number compared with ``stopping.tol``
        (inf: none); the record goes to ``callbacks`` (a `Callbacks`).
    step(k) : the k-th step (k = 1, 2, ...), from the iterate just measured.
    start() : work before the first measure, inside the run's Ctrl-C handling.
    measure_start : False when the start point has no measure: the first step comes first.
    proof : whether a criterion at or below tol proves convergence (else ``stalled``).
    guard : a `Guard` the task also hands to calls whose partial work it keeps on Ctrl-C;
        once it has fired, the run ends (interrupted) without using that measure.
    """
    guard = Guard() if guard is None else guard
    status, k, last = None, 0, None
    try:
        if start is not None:
            start()
        if not measure_start:
            step(1)
            k = 1
        while status is None:
            record, criterion = measure(k)
            if guard.interrupted:
                break
            last = record
            proceed = record is None or callbacks(record)
            status = _verdict(stopping, k, record, criterion, proceed, proof)
            if status is None:
                step(k + 1)
                k += 1
    except TimeUp:
        status = Status.MAX_TIME
    except KeyboardInterrupt:
        status = Status.INTERRUPTED
    if guard.interrupted:
        status = Status.INTERRUPTED
    callbacks.close()
    return Outcome(status, k, last, callbacks.trace())


def _verdict(stopping, k, record, criterion, proceed, proof):
    """The ladder of the module docstring after k steps; None: go on."""
    if criterion <= stopping.tol:
        honest = proof and (record is None or finite_certificate(record))
        return Status.CONVERGED if honest else Status.STALLED
    if stopping.deadline.passed():
        return Status.MAX_TIME
    if k >= stopping.max_iter or (stopping.max_oracle_calls is not None
                                  and record.n_oracle_calls >= stopping.max_oracle_calls):
        return budget_status()
    if not proceed:
        return Status.INTERRUPTED
    return None


def budget_status(out_of_time=False):
    """The status of a run that spent a budget without converging: max_time when
    ``out_of_time``, else max_iter (its iterations, sweeps, cycles or samples)."""
    return Status.MAX_TIME if out_of_time else Status.MAX_ITER


def stopped_on_budget(status):
    """Whether ``status`` says a run stopped on a budget (time or iterations), so that
    more of it could still improve its answer."""
    return status in (Status.MAX_TIME, Status.MAX_ITER)
