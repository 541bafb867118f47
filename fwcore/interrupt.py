"""Ctrl-C (SIGINT) in long runs (DESIGN.md "Status is honest"): a run that is interrupted
returns its best result so far with status ``interrupted``.

Two helpers, one for each side of the problem:

- `Guard` sits at the boundary of an outer loop (the rho loop of `fwcore.infer`, the BP
  loop, `fwcore.infer_map`): ``guard(step, *args)`` runs one step and turns a
  KeyboardInterrupt raised anywhere inside it (engine set-up, corrections, line search,
  oracle calls) into ``guard.interrupted = True`` and a None result; later steps are
  skipped, so the loop ends with what it had before the step.
- `call_interruptibly` runs an external solver that never returns to Python until it is
  done (HiGHS through `scipy.optimize.milp` / ``linprog``, toulbar2) in a forked process
  that Ctrl-C and the time limit kill, so that Ctrl-C reaches the caller at once and a
  time limit holds. Measured on a 100x100 grid: in the main thread SIGINT waited for the
  end of a HiGHS solve (34 s with a 30 s limit), and toulbar2 ignores SIGINT until its
  search ends (none in 10 minutes without a time limit) and overruns its own limit by
  half. A worker thread answered Ctrl-C for HiGHS (it releases the GIL) but cannot be
  stopped: a thread still in HiGHS when the interpreter exits aborts it ("terminate
  called without an active exception"); toulbar2 fails in any thread but the main one
  (its options are per thread). Time slices were not an option: neither solver takes a
  warm start through these APIs, so each slice would start the search over. A fork
  costs about 0.01 s plus the set-up the solver repeats in the child; HiGHS forked after
  it ran in the parent (its thread pool copied) was measured to work.
"""
import multiprocessing
import sys

__all__ = ["Guard", "call_interruptibly", "grace", "Abandoned"]


class Guard:
    """Runs the steps of a run until one is interrupted by Ctrl-C (see the module
    docstring); ``interrupted`` says whether one was."""

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


class Abandoned(Exception):
    """`call_interruptibly` gave up waiting for the worker (its ``wait`` passed)."""


def grace(time_limit):
    """How long `call_interruptibly` waits for a solver given ``time_limit`` seconds:
    1.1 time_limit + 0.5 s (None: no limit)."""
    return None if time_limit is None else 1.1 * time_limit + 0.5


def call_interruptibly(func, wait=None):
    """``func()`` in a forked process (``func`` and its data need no pickling; its result
    is pickled back), waiting at most ``wait`` seconds (None: until it returns). Ctrl-C
    while waiting kills the process and raises KeyboardInterrupt at once; a call still
    running after ``wait`` is killed and raises `Abandoned`. Where processes cannot be
    forked (Windows) or this one may have none (a daemonic worker, as a dask worker's
    executor process is), ``func()`` runs here: Ctrl-C then waits for the solver, and
    ``wait`` is not enforced."""
    if ("fork" not in multiprocessing.get_all_start_methods()
            or multiprocessing.current_process().daemon):
        return func()
    for stream in (sys.stdout, sys.stderr):  # else the child prints their buffers again
        if stream is not None:
            stream.flush()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_child, args=(func, send), daemon=True)
    worker.start()
    send.close()
    try:
        if not receive.poll(wait):
            raise Abandoned(f"the solver was still running after {wait:.3g} s")
        ok, value = receive.recv()
    except EOFError:
        raise RuntimeError(f"the solver's process died (exit code {worker.exitcode})") from None
    finally:
        if worker.is_alive():
            worker.kill()
        worker.join()
        receive.close()
    if not ok:
        raise value
    return value


def _child(func, send):
    try:
        send.send((True, func()))
    except BaseException as err:  # handed to the parent
        send.send((False, err))
    finally:
        send.close()
