"""Ctrl-C (SIGINT) in long runs (DESIGN.md "Status is honest"): a run that is interrupted
returns its best result so far with status ``interrupted``.

Two helpers, one for each side of the problem:

- `Guard` sits at the boundary of an outer loop (the rho loop of `fwcore.infer`, the BP
  loop, `fwcore.infer_map`): ``guard(step, *args)`` runs one step and turns a
  KeyboardInterrupt raised anywhere inside it (engine set-up, corrections, line search,
  oracle calls) into ``guard.interrupted = True`` and a None result; later steps are
  skipped, so the loop ends with what it had before the step.
- `call_interruptibly` runs an external solver that holds no Python lock but never
  returns to Python until it is done (HiGHS through `scipy.optimize.milp` / ``linprog``)
  in a daemon thread, the main thread waiting in short joins, so that Ctrl-C reaches the
  caller at once. Measured on a 100x100 grid ILP: HiGHS releases the GIL (the waiting
  thread wakes every 0.1 s or sooner), whereas in the main thread SIGINT waited for the
  end of the solve (34 s with a 30 s limit). Time slices were not an option: scipy's
  HiGHS calls take no warm start, so each slice would repeat presolve and lose the
  branch-and-bound tree. The thread is abandoned on Ctrl-C or past its ``wait``; it ends
  by itself at the solver's own time limit (none given: when the solve ends) and its
  answer is dropped. toulbar2 needs neither: it returns to Python on SIGINT.
"""
import threading

__all__ = ["Guard", "call_interruptibly", "Abandoned"]

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


def call_interruptibly(func, wait=None):
    """``func()`` in a daemon thread, waiting at most ``wait`` seconds (None: until
    it returns); Ctrl-C while waiting raises KeyboardInterrupt at once, and a call still
    running after ``wait`` raises `Abandoned`. Either way the thread is left to finish on
    its own. Outside the main thread (which alone receives SIGINT) ``func`` runs
    directly."""
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
