"""Ctrl-C (SIGINT) in long runs (DESIGN.md "Status is honest"): a run that is interrupted
returns its best result so far with status ``interrupted``.

Two helpers, one for each side of the problem:

- `Guard` sits at the boundary of an outer loop (the rho loop of `fwcore.infer`, the BP
  loop, `fwcore.infer_map`): ``guard(step, *args)`` runs one step and turns a
  KeyboardInterrupt raised anywhere inside it (engine set-up, corrections, line search,
  oracle calls) into ``guard.interrupted = True`` and a None result; later steps are
  skipped, so the loop ends with what it had before the step.
- `call_interruptibly` runs an external solver that never returns to Python until it is
  done, so that Ctrl-C reaches the caller at once and a time limit holds: HiGHS
  (`scipy.optimize.milp` / ``linprog``) in a daemon thread, toulbar2 in a forked
  process. Measured on a 100x100 grid: HiGHS releases the GIL (a waiting thread wakes
  every 0.1 s or sooner), whereas in the main thread SIGINT waited for the end of the
  solve (34 s with a 30 s limit); toulbar2 ignores SIGINT until its search ends (none in
  10 minutes without a time limit), overruns its own limit by half, and fails in any
  thread but the main one (its options are per thread), so it gets a process that can
  be killed. Time slices were not an option: neither solver takes a warm start through
  these APIs, so each slice would start the search over. On Ctrl-C, or past ``wait``, a
  thread is abandoned (it ends at the solver's own time limit, or none given, when the
  solve ends; its answer is dropped) and a process killed.
"""
import multiprocessing
import threading

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


def call_interruptibly(func, wait=None, process=False):
    """``func()`` in a daemon thread (a forked process with ``process``), waiting at most
    ``wait`` seconds (None: until it returns); Ctrl-C while waiting raises
    KeyboardInterrupt at once, and a call still running after ``wait`` raises
    `Abandoned`. A thread is left to finish on its own, a process is killed. Outside the
    main thread (which alone receives SIGINT) a thread call runs ``func`` directly."""
    if process:
        return _in_process(func, wait)
    if threading.current_thread() is not threading.main_thread():
        return func()
    box = {}

    def work():
        try:
            box["value"] = func()
        except BaseException as err:  # handed to the caller below
            box["error"] = err

    worker = threading.Thread(target=work, name="fwcore-solver", daemon=True)
    worker.start()
    worker.join(wait)  # interruptible: lock waits on POSIX are
    if worker.is_alive():
        raise Abandoned(f"the solver was still running after {wait:.3g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _in_process(func, wait):
    context = multiprocessing.get_context("fork")  # func and its data need no pickling
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
