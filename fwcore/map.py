"""`infer_map`: MAP inference by any registered oracle, with a result record."""
from __future__ import annotations


import numpy as np

from .checks import (BOOL, CALLABLE, SEED, TIME, check_bound_feasible, check_feasible,
                     check_model, validate_params)
from .loop import Callbacks, Deadline, best_on_interrupt
from .oracles._common import feasible_labelling, node_argmax
from .oracles.base import MapOracle, build_oracle
from .results import MapResult, Record, Status, Trace, gap_text
from .factor_graph import FactorGraph, solves_factor_graphs
from .model import PairwiseMRF

__all__ = ["infer_map"]

_PARAMS = {"time_limit": TIME, "seed": SEED, "callback": [CALLABLE, None], "verbose": BOOL}


@validate_params(_PARAMS, unchecked=("model", "method"))
@solves_factor_graphs
def infer_map(model: PairwiseMRF | FactorGraph, method: str | object = "auto",
              time_limit: float | None = None, seed: int | None = None, callback=None,
              verbose: bool = False, **options) -> MapResult:
    """MAP assignment of ``model`` (argmax of <θ, μ(x)>) by the oracle named ``method``.

    method : "exact" (the cheapest exact oracle: tree, bruteforce, elimination, cover,
        toulbar2 or ilp, see `fwcore.oracles.exact_choice`), "auto" (that exact oracle when
        it is tree, brute force, elimination or cover or when edge tables forbid pairs of
        states, as a `FactorGraph`'s do, else the approximate "portfolio"), or any name in
        ``fwcore.available_oracles()`` (bruteforce, elimination, tree, cover, ilp, toulbar2,
        icm, qpbo, trws, maxproduct, anneal, expansion, swap, portfolio, lp).
    time_limit : seconds for the call (oracles that stop early return their best
        labelling with status ``max_time``); the anytime oracles (portfolio, anneal) use
        all of it unless their bound proves optimality first (``anytime=False`` among the
        options keeps them to their fixed effort; like ``seed``, it goes only to the
        oracles that take it). seed : for the oracles that take one.
    callback : ``callback(record)`` with each progress record of an anytime oracle (time,
        score, bound) as it is made; False stops the call as Ctrl-C does (status
        ``interrupted``, the best labelling so far). verbose : those records' progress
        lines on stderr (the ``fwcore`` logger has them anyway, `fwcore.loop`).
        Other keyword ``options`` go to the oracle's constructor (one it does not take:
        TypeError naming the options it takes).

    Returns a `MapResult`: ``assignment``, ``score``, ``upper_bound`` (None when the method
    has none), ``status`` (the oracle's: ``converged`` only when exact or proven by the
    bound; ``interrupted`` on Ctrl-C, with no bound and the best labelling the oracle had
    found (portfolio, anneal, expansion, swap, icm, trws, maxproduct keep theirs; others
    give the best node scores' assignment), repaired off -inf entries,
    ``time`` (seconds, oracle construction included), ``method`` (the oracle used) and
    ``trace``: the anytime oracles' (time, score, bound) records (times from the start of
    the oracle's call), else one record at the end. A
    model with no feasible assignment raises ValueError: before the oracle runs when arc
    consistency finds it (`fwcore.checks.check_feasible`), after it when an exact oracle's
    maximum or any certified bound proves it.
    """
    deadline = Deadline(time_limit)  # the checks and the oracle's construction count too
    model = check_feasible(check_model(model))
    anytime = options.pop("anytime", time_limit is not None)  # as seed: for those taking it
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
    # oracle that keeps none: the best node scores), repaired off -inf entries; no bound
    x, interrupted = best_on_interrupt(solve, lambda: node_argmax(model, model.theta))
    if interrupted:
        x = feasible_labelling(model, model.theta, x)
    oracle = built[0] if built else None
    if oracle is not None and not ours:  # its progress records, after the call
        for record in oracle.progress:
            progress(record)
    progress.close()
    bound, status = ((None, Status.INTERRUPTED) if interrupted else
                     (oracle.upper_bound(), oracle.status))
    elapsed = deadline.elapsed()
    score = float(model.score(x))
    if score == -np.inf:  # a feasible assignment proves feasibility; else try the bounds
        check_bound_feasible(model, bound)
        if oracle is not None and oracle.exact and status is Status.CONVERGED:
            check_bound_feasible(model, score)  # the maximum itself
    trace = Trace((oracle.progress if oracle is not None else ()) or [
        Record(iteration=1, time=elapsed, primal=score, n_oracle_calls=1, bound=bound,
               score=score)])
    name = oracle.name if oracle is not None else (method if isinstance(method, str) else
                                                   "function")
    return MapResult(assignment=x, score=score, upper_bound=bound, status=status,
                     time=elapsed, method=name, n_iter=1, n_oracle_calls=1, trace=trace,
                     info={"requested": method})


def progress_line(record):
    """A progress record's line: the best score and bound so far."""
    bound = ("" if record.bound is None else
             f"  bound {record.bound:.6f}  ({gap_text(record.bound - record.score)})")
    return f"{record.time:.1f} s  score {record.score:.6f}{bound}"
