"""`infer_lp`: MAP by the LP relaxation, with the solvers of Smooth and Strong."""
import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..results import Status
from . import dual, primal
from .regions import Regions

__all__ = ["infer_lp", "LPResult", "LPIterate", "METHODS"]

# method -> (builder(reg, gamma, lam, projection, seed, score_of), uses gamma, uses lam)
METHODS = {
    "subgradient": (lambda r, g, l, p, s, f: dual.subgradient(r, f), False, False),
    "mplp": (lambda r, g, l, p, s, f: dual.coordinate_descent(r, 0.0), False, False),
    "softmax-cd": (lambda r, g, l, p, s, f: dual.coordinate_descent(r, g), True, False),
    "softmax-gd": (lambda r, g, l, p, s, f: dual.gradient(r, "softmax", g, 0.0, p, False), True, False),
    "softmax-agd": (lambda r, g, l, p, s, f: dual.gradient(r, "softmax", g, 0.0, p, True), True, False),
    "l2-gd": (lambda r, g, l, p, s, f: dual.gradient(r, "l2", g, 0.0, p, False), True, False),
    "l2-agd": (lambda r, g, l, p, s, f: dual.gradient(r, "l2", g, 0.0, p, True), True, False),
    "bcfw": (lambda r, g, l, p, s, f: primal.primal_solver(r, "bcfw", l, 0.0, p, s), False, True),
    "smooth-strong-agd": (lambda r, g, l, p, s, f: dual.gradient(r, "l2", g, l, p, True), True, True),
    "sdca": (lambda r, g, l, p, s, f: primal.primal_solver(r, "sdca", l, g, p, s), True, True),
}
_FACTOR_METHODS = ("subgradient", "mplp", "bcfw")


@dataclass(frozen=True)
class LPIterate:
    """What a callback receives after each iteration (one pass over all regions)."""
    iteration: int
    time: float
    objective: float
    bound: float
    score: float


@dataclass(frozen=True)
class LPResult:
    """Result of `infer_lp`.

    ``assignment``/``score``: best decoded assignment so far and its score (pairwise plus
    global factors). ``bound``: the smallest non-smooth dual g(δ) (eq. 2) seen, a certified
    upper bound on the MAP score (every method's iterates give one; BCFW and SDCA through
    δ(μ)). ``trace``: the method's own objective per iteration (the smoothed dual for
    soft-max/L2/AGD, L2 shifted by qγ/2 as in the paper; the primal eq. 8 for BCFW),
    with ``bound_trace``, ``score_trace`` (best so far) and ``time_trace`` beside it.
    ``measure``: the last optimality measure (duality gap for BCFW/SDCA, max |gradient|
    for GD/AGD, relative decrease per pass for CD, ‖subgradient‖² for subgradient).
    """

    assignment: np.ndarray
    score: float
    bound: Optional[float]
    objective: float
    trace: np.ndarray
    bound_trace: np.ndarray
    score_trace: np.ndarray
    time_trace: np.ndarray
    measure: float
    status: Status
    n_iter: int
    time: float
    method: str
    info: dict = field(default_factory=dict)

    @property
    def gap(self):
        """bound - score: certified distance of the decoded score from the MAP."""
        return None if self.bound is None else self.bound - self.score


def infer_lp(model, method="mplp", gamma=0.01, lam=0.01, max_iter=1000, tol=1e-6,
             max_time=None, callback=None, factors=(), projection="sort", seed=0):
    """MAP by the local-polytope LP relaxation (Smooth and Strong).

    Parameters
    ----------
    model : PairwiseMRF
    method : str
        "subgradient", "mplp" (non-smooth dual, eq. 2); "softmax-cd", "softmax-gd",
        "softmax-agd" (soft-max dual, eq. 3); "l2-gd", "l2-agd" (L2-smoothed dual, eq. 11);
        "bcfw" (soft-constrained primal eq. 8, Alg. 1); "smooth-strong-agd", "sdca" (Sec. 4.3).
    gamma : float > 0
        Smoothing (soft-max temperature, or the primal L2 weight of eq. 10).
    lam : float > 0
        Strong convexity of the dual (eq. 7); the primal penalty is ‖Aμ‖²/(2λ).
    max_iter : int
        Passes over all regions.
    tol : float
        Stop when the certified gap bound - score <= tol·max(1, |score|), or when the
        method's measure (see `LPResult`) <= tol.
    max_time : float or None
        Seconds; stops with the best assignment so far (status max_time).
    callback : callable(LPIterate) -> bool or None
        Returning False stops (status interrupted).
    factors : sequence of Factor
        Global factors (e.g. `CardinalityFactor`); supported by subgradient, mplp and
        bcfw, which only maximise them (the smooth methods would enumerate their states).
    projection : "sort" or "pivot"
        Simplex projection kernel of the L2 methods (same result; pivot is expected O(W)).
    seed : int
        Order of the region groups in bcfw/sdca.

    Returns an `LPResult`. ``status`` is converged (tolerance met), max_iter, max_time,
    interrupted (callback or Ctrl-C), or stalled: "mplp" whose pass no longer lowers the
    bound while the bound does not certify the decoded score (a non-optimal fixed point of
    coordinate descent, or an LP with an integrality gap).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    build, uses_gamma, uses_lam = METHODS[method]
    gamma = _positive("gamma", gamma) if uses_gamma else gamma
    lam = _positive("lam", lam) if uses_lam else lam
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1; got {max_iter!r}")
    tol = _positive("tol", tol, allow_zero=True)
    if max_time is not None:
        max_time = _positive("max_time", max_time)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable(LPIterate) -> bool, or None")
    if projection not in ("sort", "pivot"):
        raise ValueError(f"projection must be 'sort' or 'pivot'; got {projection!r}")
    reg = Regions(model, factors)
    if reg.factors and method not in _FACTOR_METHODS:
        raise ValueError(f"method {method!r} would enumerate the states of a global factor; "
                         f"with factors use one of {', '.join(_FACTOR_METHODS)}")

    start = time.perf_counter()
    best = {"x": None, "score": -math.inf}

    def score_of(x):
        s = reg.score(x)
        if s > best["score"] or best["x"] is None:
            best["x"], best["score"] = x.copy(), s
        return best["score"]

    steps = build(reg, gamma, lam, projection, seed, score_of)
    objective, bound, measure = math.inf, math.inf, math.inf
    traces = ([], [], [], [])
    status, n_iter = Status.MAX_ITER, 0
    try:
        for n_iter in range(1, max_iter + 1):
            step = next(steps)
            score = score_of(step.x)
            objective, measure = step.objective, step.measure
            bound = min(bound, step.bound)
            elapsed = time.perf_counter() - start
            for t, v in zip(traces, (objective, bound, score, elapsed)):
                t.append(v)
            certified = math.isfinite(score) and bound - score <= tol * max(1.0, abs(score))
            if certified or measure <= tol:
                status = Status.CONVERGED
            elif callback is not None and callback(LPIterate(n_iter, elapsed, objective, bound, score)) is False:
                status = Status.INTERRUPTED
            elif max_time is not None and elapsed >= max_time:
                status = Status.MAX_TIME
            if status is not Status.MAX_ITER:
                break
    except KeyboardInterrupt:
        status = Status.INTERRUPTED
    if best["x"] is None:   # interrupted before the first pass finished
        score_of(reg.node_theta.argmax(axis=1))
    if status is Status.CONVERGED and method == "mplp" and bound - best["score"] > tol * max(1.0, abs(best["score"])):
        status = Status.STALLED   # coordinate descent on eq. 2 stopped at a non-optimal point
    return LPResult(
        assignment=best["x"].astype(np.int64), score=float(best["score"]),
        bound=float(bound) if math.isfinite(bound) else None, objective=float(objective),
        trace=np.array(traces[0]), bound_trace=np.array(traces[1]),
        score_trace=np.array(traces[2]), time_trace=np.array(traces[3]),
        measure=float(measure), status=status, n_iter=n_iter,
        time=time.perf_counter() - start, method=method,
        info={"gamma": gamma if uses_gamma else None, "lam": lam if uses_lam else None,
              "n_regions": reg.n_regions,
              "smoothing_width": _smoothing_width(method, reg, gamma)})


def _smoothing_width(method, reg, gamma):
    """How far above the LP optimum the smoothed optimum may lie: γ Σ_r log W_r for the
    soft-max dual (eq. 5), qγ/2 for the L2 dual after its shift (Sec. 4.2)."""
    if method.startswith("softmax"):
        return gamma * reg.log_states
    if method.startswith("l2"):
        return 0.5 * gamma * reg.n_regions
    return None


def _positive(name, v, allow_zero=False):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number; got {type(v).__name__}")
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0; got {v!r}")
    return float(v)
