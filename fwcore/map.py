"""`infer_map`: MAP inference by any registered oracle, with a result record."""
import inspect
import time as _time

import numpy as np

from .exact import EliminationPlan
from .model import PairwiseMRF
from .oracles.base import _REGISTRY, available_oracles, make_oracle
from .oracles._common import check_positive
from .results import MapResult, Status

__all__ = ["infer_map"]

#: "auto" enumerates models with at most this many assignments
AUTO_BRUTEFORCE_STATES = 2**12
AUTO_ELIMINATION_VARS = 1000
AUTO_ELIMINATION_BYTES = 2**26


def _auto_method(model):
    """tree on a forest; bruteforce when prod(card) <= AUTO_BRUTEFORCE_STATES; elimination
    when at most AUTO_ELIMINATION_VARS variables and its tables fit AUTO_ELIMINATION_BYTES
    (ordering a larger graph costs seconds); else ilp."""
    if model.n_edges == model.n_vars - model.n_components():
        return "tree"
    if np.log2(model.card.astype(np.float64)).sum() <= np.log2(AUTO_BRUTEFORCE_STATES):
        return "bruteforce"
    if model.n_vars <= AUTO_ELIMINATION_VARS:
        try:
            EliminationPlan(model, AUTO_ELIMINATION_BYTES)
            return "elimination"
        except ValueError:
            pass
    return "ilp"


def infer_map(model, method="auto", time_limit=None, seed=None, **options):
    """MAP assignment of ``model`` (argmax of <θ, μ(x)>) by the oracle named ``method``.

    ``method="auto"`` picks an exact method: ``"tree"`` when the graph is a forest,
    ``"bruteforce"`` when there are at most 2**12 assignments, otherwise ``"ilp"`` (HiGHS;
    give ``time_limit`` to bound its run — it then returns the best incumbent with status
    ``max_time``). ``time_limit`` (seconds) and ``seed`` go to the oracles that take them;
    other keyword ``options`` go to the oracle as given.

    Returns a `MapResult`: ``assignment``, ``score``, ``upper_bound`` (None when the method
    has none), ``status`` (the oracle's own status when it reports one; otherwise
    ``converged`` when the bound certifies the score and ``stalled`` when it does not),
    ``time`` (seconds, oracle construction included) and ``method`` (the oracle used).
    """
    if not isinstance(model, PairwiseMRF):
        raise TypeError(f"model must be a fwcore.PairwiseMRF; got {type(model).__name__}")
    time_limit = check_positive("time_limit", time_limit)
    valid = ["auto", *available_oracles()]
    if not isinstance(method, str) or method not in valid:
        raise ValueError(f"unknown method {method!r}; valid methods: {', '.join(valid)}")
    start = _time.perf_counter()
    name = _auto_method(model) if method == "auto" else method
    accepted = inspect.signature(_REGISTRY[name].__init__).parameters
    for key, value in (("time_limit", time_limit), ("seed", seed)):
        if value is not None and key in accepted:
            options.setdefault(key, value)
    oracle = make_oracle(name, model, **options)
    x = oracle.argmax(model.theta)
    elapsed = _time.perf_counter() - start
    score = float(model.score(x))
    bound = oracle.upper_bound()
    status = getattr(oracle, "status", None)
    if not isinstance(status, Status):
        certified = bound is not None and bound - score <= 1e-9 * max(1.0, abs(score))
        status = Status.CONVERGED if certified else Status.STALLED
    return MapResult(assignment=x, score=score,
                     upper_bound=None if bound is None else float(bound),
                     status=status, time=elapsed, method=name,
                     info={"requested": method, "n_oracle_calls": oracle.n_calls})
