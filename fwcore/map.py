"""`infer_map`: MAP inference by any registered oracle, with a result record."""
from __future__ import annotations

import warnings

import numpy as np

from .checks import (BOOL, CALLABLE, SEED, TIME, check_bound_feasible, check_feasible,
                     check_model, validate_params)
from .loop import Callbacks, Deadline, best_on_interrupt
from .labelling import feasible_labelling, node_argmax
from .oracles.base import MapOracle, build_oracle
from .results import MapResult, Record, Status, Trace, gap_text
from .factor_graph import FactorGraph, solves_factor_graphs
from .model import PairwiseMRF

__all__ = ["infer_map"]

_PARAMS = {"max_time": TIME, "seed": SEED, "callback": [CALLABLE, None], "verbose": BOOL,
           "time_limit": TIME}


@validate_params(_PARAMS, unchecked=("model", "method"))
@solves_factor_graphs
def infer_map(model: PairwiseMRF | FactorGraph, method: str | object = "auto",
              max_time: float | None = None, seed: int | None = None, callback=None,
              verbose: bool = False, *, time_limit: float | None = None,
              **options) -> MapResult:
    """MAP assignment of ``model`` (argmax of <θ, μ(x)>) by the oracle named ``method``.

    method : "exact" (the cheapest exact oracle: tree, bruteforce, elimination, cover,
        aobb, toulbar2 or ilp, see `fwcore.oracles.exact_choice`), "auto" (the rule of
        `fwcore.auto.auto_oracle`: that exact oracle when it is cheap, AND/OR search
        ("aobb") on models with factors over three or more variables or -inf tables, else
        the approximate "portfolio"), or any name in ``fwcore.available_oracles()``
        (bruteforce, elimination, tree, cover, aobb, ilp, toulbar2, icm, qpbo, trws,
        maxproduct, anneal, expansion, swap, portfolio, lp).
    max_time : seconds for the call (oracles that stop early return their best
        labelling with status ``max_time``); the anytime oracles (portfolio, anneal) use
        all of it unless their bound proves optimality first (``anytime=False`` among the
        options keeps them to their fixed effort; like ``seed``, it goes only to the
        oracles that take it). ``time_limit``: the same, its former name (deprecated).
        seed : for the oracles that take one.
    callback : ``callback(record)`` with each progress record of an anytime oracle (time,
        score, bound) as it is made; False stops the call as Ctrl-C does (status
        ``interrupted``, the best labelling so far). verbose : those records' progress
        lines on stderr (the ``fwcore`` logger has them anyway, `fwcore.loop`).
        Other keyword ``options`` go to the oracle's constructor (one it does not take:
        TypeError naming the options it takes).

    Returns a `MapResult`: ``assignment``, ``score``, ``upper_bound`` (None when the method
    has none), ``status`` (the oracle's: ``converged`` only when exact or proven by the
    bound; ``interrupted`` on Ctrl-C, with the best labelling the oracle had found
    (portfolio, anneal, aobb, expansion, swap, icm, trws, maxproduct keep theirs; others
    give the best node scores' assignment), repaired off -inf entries, and the best bound
    its progress records had (None without), ``time`` (seconds, oracle construction
    included), ``method`` (the oracle used) and ``trace``: the anytime oracles' (time,
    score, bound) records (times from the start of the oracle's call), else one record at
    the end. A
    model with no feasible assignment raises ValueError: before the oracle runs when arc
    consistency finds it (`fwcore.checks.check_feasible`), after it when an exact oracle's
    maximum or any certified bound proves it.
    """
    if time_limit is not None:
        if max_time is not None:
            raise TypeError("infer_map takes max_time (seconds); time_limit is its former "
                            "name: give one of them")
        warnings.warn("infer_map's time_limit is now max_time", DeprecationWarning,
                      stacklevel=4)
        max_time = time_limit
    deadline = Deadline(max_time)  # the checks and the oracle's construction count too
    model = check_feasible(check_model(model))
    anytime = options.pop("anytime", max_time is not None)  # as seed: for those taking it
    progress = Callbacks(callback, trace=False, line=progress_line, verbose=verbose)
    ours = not isinstance(method, MapOracle)  # a user's oracle object is never changed
    built = []

    def solve():
        oracle = build_oracle(method, model, seed=seed, anytime=anytime, **options)
        built.append(oracle)
        if ours:
            oracle.observer = progress
        left = deadline.seconds_left()
        return oracle.argmax(model.theta, time_limit=None if left is None else max(left, 1e-2))

    # Ctrl-C (also while the oracle is built): the oracle's best labelling so far (an
    # oracle that keeps none: the best node scores), repaired off -inf entries, with the
    # best bound its progress records had
    x, interrupted = best_on_interrupt(solve, lambda: node_argmax(model, model.theta))
    if interrupted:
        x = feasible_labelling(model, model.theta, x)
    oracle = built[0] if built else None
    if oracle is not None and not ours:  # its progress records, after the call
        for record in oracle.progress:
            progress(record)
    recorded = None if oracle is None else _recorded_bound(oracle)
    if oracle is None or interrupted:  # (no oracle: Ctrl-C came while it was built)
        bound, status = recorded, Status.INTERRUPTED
    else:
        bound, status = oracle.upper_bound(), oracle.status
    elapsed = deadline.elapsed()
    score = float(model.score(x))
    if score == -np.inf:  # a feasible assignment proves feasibility; else try the bounds
        check_bound_feasible(model, bound)
        if oracle is not None and oracle.exact and status is Status.CONVERGED:
            check_bound_feasible(model, score)  # the maximum itself
    trace = () if oracle is None else oracle.progress
    if not trace:  # an oracle that records no progress: its answer is the one line
        trace = (Record(iteration=1, time=elapsed, primal=score, n_oracle_calls=1,
                        bound=bound, score=score),)
        if not interrupted:
            progress(trace[0])
    progress.close()
    trace = Trace(trace)
    name = oracle.name if oracle is not None else (method if isinstance(method, str) else
                                                   "function")
    return MapResult(assignment=x, score=score, upper_bound=bound, status=status,
                     time=elapsed, method=name, n_iter=1, n_oracle_calls=1, trace=trace,
                     info={"requested": method})


def _recorded_bound(oracle):
    """The smallest bound among the progress records of an interrupted call (None: none
    recorded): certified for its scores, as every record's bound is."""
    bounds = [r.bound for r in oracle.progress if r.bound is not None]
    return min(bounds) if bounds else None


def progress_line(record):
    """A progress record's line: the best score and bound so far."""
    bound = ("" if record.bound is None else
             f"  bound {record.bound:.6f}  ({gap_text(record.bound - record.score)})")
    return f"{record.time:.1f} s  score {record.score:.6f}{bound}"
