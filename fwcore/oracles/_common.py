"""What the oracles share: the local-polytope constraint matrix, rounding, and external
solvers run where Ctrl-C and a time limit can stop them.

`call_interruptibly` runs an external solver that never returns to Python until it is
done (HiGHS through `scipy.optimize.milp` / ``linprog``, toulbar2) in a forked process
that Ctrl-C and the time limit kill, so that Ctrl-C reaches the caller at once and a time
limit holds. Measured on a 100x100 grid: in the main thread SIGINT waited for the end of
a HiGHS solve (34 s with a 30 s limit), and toulbar2 ignores SIGINT until its search ends
(none in 10 minutes without a time limit) and overruns its own limit by half. A worker
thread answered Ctrl-C for HiGHS (it releases the GIL) but cannot be stopped: a thread
still in HiGHS when the interpreter exits aborts it ("terminate called without an active
exception"); toulbar2 fails in any thread but the main one (its options are per thread).
Time slices were not an option: neither solver takes a warm start through these APIs, so
each slice would start the search over. A fork costs about 0.01 s plus the set-up the
solver repeats in the child; HiGHS forked after it ran in the parent (its thread pool
copied) was measured to work.
"""
import multiprocessing
import os
import sys
import time

import numpy as np

from ..auto import TIME_SHARES




def local_polytope_constraints(model):
    """Sparse ``A_eq, b_eq`` of the local polytope L in the flat layout (μ ≥ 0 implied by
    the bounds): Σ_x μ_i(x) = 1 for each node, and for each edge (i, j)
    Σ_x' μ_ij(x, x') − μ_i(x) = 0 and Σ_x μ_ij(x, x') − μ_j(x') = 0."""
    from scipy import sparse
    n, n_edges = model.n_vars, model.n_edges
    card = model.card.astype(np.int64)
    ci, cj = card[model.edges[:, 0]], card[model.edges[:, 1]]
    # rows: n normalisations, then for edge e its ci rows (i side) and cj rows (j side)
    row0 = n + np.concatenate([[0], np.cumsum(ci + cj)[:-1]]).astype(np.int64)
    n_rows = n + int((ci + cj).sum())
    node_cols = np.arange(model.node_off[-1])
    node_rows = np.repeat(np.arange(n), card)
    # edge entries: each μ_ij(a, b) sits in row (e, a) on the i side and (e, b) on the j side
    e = np.repeat(np.arange(n_edges), ci * cj)
    cols = np.arange(model.node_off[-1], model.dim)
    local = cols - model.edge_off[e]
    a, b = local // cj[e], local % cj[e]
    # node entries with coefficient -1 in each marginalisation row
    ei = np.repeat(np.arange(n_edges), ci)
    ai = np.arange(ei.size) - np.repeat(np.cumsum(ci) - ci, ci)
    ej = np.repeat(np.arange(n_edges), cj)
    bj = np.arange(ej.size) - np.repeat(np.cumsum(cj) - cj, cj)
    rows = np.concatenate([node_rows, row0[e] + a, row0[e] + ci[e] + b,
                           row0[ei] + ai, row0[ej] + ci[ej] + bj])
    colv = np.concatenate([node_cols, cols, cols,
                           model.node_off[model.edges[ei, 0]] + ai,
                           model.node_off[model.edges[ej, 1]] + bj])
    vals = np.concatenate([np.ones(node_cols.size + 2 * cols.size), -np.ones(ei.size + ej.size)])
    a_eq = sparse.csr_matrix((vals, (rows, colv)), shape=(n_rows, model.dim))
    b_eq = np.zeros(n_rows)
    b_eq[:n] = 1.0
    return a_eq, b_eq


def lp_objective(scores):
    """HiGHS minimises: cost = −scores, and −inf scores become variables fixed to 0
    (returned as the upper bounds of the variables)."""
    forbidden = np.isneginf(scores)
    cost = np.where(forbidden, 0.0, -scores)
    upper = np.where(forbidden, 0.0, 1.0)
    return cost, upper


def run_highs(solve, time_limit, options, in_place=False, on_line=None):
    """``solve(options)`` (a `scipy.optimize.milp` or ``linprog`` call) interruptible by
    Ctrl-C (`call_interruptibly`), with HiGHS's ``time_limit`` set to its share of
    ``time_limit`` (`fwcore.auto.TIME_SHARES`). Returns the scipy result, or None when
    the call was abandoned past ``time_limit`` (`grace`). ``in_place``: a call
    known to take milliseconds runs here, without the fork (about 10 ms a call).
    ``on_line``: HiGHS's log is on, and each of its lines goes to ``on_line(line)`` as it
    is printed (and ``on_line(None)`` every `_TICK` seconds in between)."""
    if time_limit is not None:
        options = {**options, "time_limit": TIME_SHARES["ilp and lp/HiGHS"] * time_limit}
    if on_line is not None:
        options = {**options, "disp": True}
    if in_place:
        return solve(options)
    try:
        return call_interruptibly(lambda: solve(options), grace(time_limit), on_line)
    except Abandoned:
        return None


#: seconds between two looks at a worker's log (`call_interruptibly`)
_TICK = 0.25


class Abandoned(Exception):
    """`call_interruptibly` gave up waiting for the worker (its ``wait`` passed)."""


def grace(time_limit):
    """How long `call_interruptibly` waits for a solver given ``time_limit`` seconds:
    1.1 time_limit + 0.5 s (None: no limit)."""
    return None if time_limit is None else 1.1 * time_limit + 0.5


def call_interruptibly(func, wait=None, on_line=None):
    """``func()`` in a forked process (``func`` and its data need no pickling; its result
    is pickled back), waiting at most ``wait`` seconds (None: until it returns). Ctrl-C
    while waiting kills the process and raises KeyboardInterrupt at once; a call still
    running after ``wait`` is killed and raises `Abandoned`. Where processes cannot be
    forked (Windows) or this one may have none (a daemonic worker, as a dask worker's
    executor process is), ``func()`` runs here: Ctrl-C then waits for the solver, and
    ``wait`` is not enforced. ``on_line``: the worker's standard output (a pseudo-terminal,
    so that C libraries print line by line) goes to ``on_line(line)`` line by line, and
    ``on_line(None)`` every `_TICK` seconds; what it raises stops the call as Ctrl-C
    does."""
    if ("fork" not in multiprocessing.get_all_start_methods()
            or multiprocessing.current_process().daemon):
        return func()
    for stream in (sys.stdout, sys.stderr):  # else the child prints their buffers again
        if stream is not None:
            stream.flush()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    log = _Log() if on_line is not None else None
    worker = context.Process(target=_child, args=(func, send, log), daemon=True)
    worker.start()
    send.close()
    end = None if wait is None else time.monotonic() + wait
    try:
        if log is None:
            ready = receive.poll(wait)
        else:
            log.opened()
            ready = False
            while not ready and (end is None or time.monotonic() < end):
                ready = receive.poll(_TICK if end is None else
                                     max(0.0, min(_TICK, end - time.monotonic())))
                for line in log.lines():
                    on_line(line)
                on_line(None)
        if not ready:
            raise Abandoned(f"the solver was still running after {wait:.3g} s")
        ok, value = receive.recv()
    except EOFError:
        raise RuntimeError(f"the solver's process died (exit code {worker.exitcode})") from None
    finally:
        if worker.is_alive():
            worker.kill()
        worker.join()
        receive.close()
        if log is not None:
            log.close()
    if not ok:
        raise value
    return value


class _Log:
    """A pseudo-terminal for a worker's standard output: the worker writes to it
    (`into`), the caller reads whole lines (`lines`)."""

    def __init__(self):
        self.reader, self.writer = os.openpty()
        self.rest = b""

    def into(self):
        """In the worker: file descriptor 1 becomes the terminal."""
        os.dup2(self.writer, 1)

    def opened(self):
        """In the caller, after the fork: only the worker writes."""
        os.close(self.writer)
        os.set_blocking(self.reader, False)

    def lines(self):
        data = b""
        while True:
            try:
                chunk = os.read(self.reader, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            data += chunk
        *whole, self.rest = (self.rest + data).split(b"\n")
        return [w.decode(errors="replace").rstrip("\r") for w in whole]

    def close(self):
        os.close(self.reader)


def _child(func, send, log=None):
    if log is not None:
        log.into()
    try:
        send.send((True, func()))
    except BaseException as err:  # handed to the parent
        send.send((False, err))
    finally:
        send.close()
