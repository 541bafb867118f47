"""`infer_lp`: MAP by the LP relaxation, with the solvers of Smooth and Strong."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..checks import CALLABLE, SEED, TIME, Interval, Options, check_bound_feasible, check_params
from ..results import Record, Result, Status, Trace
from . import dual, primal
from .regions import Regions
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..model import PairwiseMRF

__all__ = ["infer_lp", "LPResult", "METHODS"]

# method -> (builder(regions, gamma, reg, projection, seed, score_of), uses gamma, uses reg)
METHODS = {
    "subgradient": (lambda r, g, c, p, s, f: dual.subgradient(r, f), False, False),
    "mplp": (lambda r, g, c, p, s, f: dual.coordinate_descent(r, 0.0), False, False),
    "softmax-cd": (lambda r, g, c, p, s, f: dual.coordinate_descent(r, g), True, False),
    "softmax-gd": (lambda r, g, c, p, s, f: dual.gradient(r, "softmax", g, 0.0, p, False), True, False),
    "softmax-agd": (lambda r, g, c, p, s, f: dual.gradient(r, "softmax", g, 0.0, p, True), True, False),
    "l2-gd": (lambda r, g, c, p, s, f: dual.gradient(r, "l2", g, 0.0, p, False), True, False),
    "l2-agd": (lambda r, g, c, p, s, f: dual.gradient(r, "l2", g, 0.0, p, True), True, False),
    "bcfw": (lambda r, g, c, p, s, f: primal.primal_solver(r, "bcfw", c, 0.0, p, s), False, True),
    "smooth-strong-agd": (lambda r, g, c, p, s, f: dual.gradient(r, "l2", g, c, p, True), True, True),
    "sdca": (lambda r, g, c, p, s, f: primal.primal_solver(r, "sdca", c, g, p, s), True, True),
}
_FACTOR_METHODS = ("subgradient", "mplp", "bcfw")

_POSITIVE = Interval(0.0, lo_open=True)
_PARAMS = {
    "method": Options(*METHODS),
    "gamma": _POSITIVE,
    "reg": _POSITIVE,
    "max_iter": Interval(1, integer=True),
    "tol": Interval(0.0),
    "max_time": TIME,
    "callback": [CALLABLE, None],
    "projection": Options("sort", "pivot"),
    "seed": SEED,
}


@dataclass(frozen=True)
class LPResult(Result):
    """Result of `infer_lp`.

    ``assignment``/``score``: best decoded assignment so far and its score (pairwise plus
    global factors). ``upper_bound``: the smallest non-smooth dual g(δ) (eq. 2) seen, a
    certified upper bound on the MAP score (every method's iterates give one; BCFW and
    SDCA through δ(μ)); None only when no pass finished. ``gap`` = upper_bound − score and
    ``certified`` (the bound is a proof: True whenever there is a bound). ``objective``:
    the method's own objective at the end (the smoothed dual for soft-max/L2/AGD, L2
    shifted by qγ/2 as in the paper; the primal eq. 8 for BCFW). ``measure``: the last
    optimality measure (duality gap for BCFW/SDCA, the largest absolute gradient entry for GD/AGD, relative
    decrease per pass for CD, ‖subgradient‖² for subgradient). ``n_iter``: passes over
    all regions. ``n_oracle_calls`` is 0: these solvers make no call to a MAP oracle of
    the model (each pass maximises every region, and global factors, locally).
    ``trace``: one `Record` per pass (``primal`` = the objective, ``bound`` and ``score``
    the best so far, ``gap`` their difference); ``trace.columns()`` gives the arrays.
    """

    assignment: np.ndarray
    score: float
    upper_bound: Optional[float]
    gap: Optional[float]
    certified: bool
    objective: float
    measure: float
    status: Status
    time: float
    n_iter: int
    method: str
    trace: Trace = Trace()
    n_oracle_calls: int = 0
    info: dict = field(default_factory=dict)


@solves_factor_graphs
def infer_lp(model: PairwiseMRF | FactorGraph, method: str = "mplp", gamma: float = 0.01, reg: float = 0.01,
             max_iter: int = 1000, tol: float = 1e-6, max_time: float | None = None,
             callback=None, factors=(), projection: str = "sort", seed: int = 0) -> LPResult:
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
    reg : float > 0
        Strong convexity λ of the dual (eq. 7); the primal penalty is ‖Aμ‖²/(2λ).
    max_iter : int
        Passes over all regions.
    tol : float
        Stop when the certified gap upper_bound - score <= tol·max(1, abs(score)), or when
        the method's measure (see `LPResult`) <= tol.
    max_time : float or None
        Seconds; stops with the best assignment so far (status max_time).
    callback : callable(Record) -> bool or None
        Called after each pass with the `Record` the trace stores; returning False stops
        (status interrupted).
    factors : sequence of Factor
        Global factors (e.g. `CardinalityFactor`); supported by subgradient, mplp and
        bcfw, which only maximise them (the smooth methods would enumerate their states).
    projection : "sort" or "pivot"
        Simplex projection kernel of the L2 methods (same result; pivot is expected O(W)).
    seed : int
        Order of the region groups in bcfw/sdca.

    Notes
    -----
    Returns an `LPResult`. ``status`` is converged (tolerance met), max_iter, max_time,
    interrupted (callback or Ctrl-C), or stalled: "mplp" whose pass no longer lowers the
    bound while the bound does not certify the decoded score (a non-optimal fixed point of
    coordinate descent, or an LP with an integrality gap). A model with no feasible
    assignment raises ValueError: at the start when arc consistency finds it
    (`fwcore.checks.check_feasible`), at the end when the bound proves it.
    """
    args = check_params(_PARAMS, method=method, max_iter=max_iter, tol=tol, max_time=max_time,
                        callback=callback, projection=projection, seed=seed)
    build, uses_gamma, uses_reg = METHODS[method]
    gamma = check_params(_PARAMS, gamma=gamma)["gamma"] if uses_gamma else None
    reg = check_params(_PARAMS, reg=reg)["reg"] if uses_reg else None
    max_iter, tol, max_time = args["max_iter"], args["tol"], args["max_time"]
    regions = Regions(model, factors)
    if regions.factors and method not in _FACTOR_METHODS:
        raise ValueError(f"method {method!r} would enumerate the states of a global factor; "
                         f"with factors use one of {', '.join(_FACTOR_METHODS)}")

    start = time.perf_counter()
    best = {"x": None, "score": -math.inf}

    def score_of(x):
        s = regions.score(x)
        if s > best["score"] or best["x"] is None:
            best["x"], best["score"] = x.copy(), s
        return best["score"]

    objective, bound, measure = math.inf, math.inf, math.inf
    records = []
    status, n_iter = Status.MAX_ITER, 0
    try:
        steps = build(regions, gamma, reg, projection, seed, score_of)
        for n_iter in range(1, max_iter + 1):
            objective, step_bound, x, measure = next(steps)
            score = score_of(x)
            bound = min(bound, step_bound)
            record = Record(iteration=n_iter, time=time.perf_counter() - start,
                            primal=float(objective), gap=float(bound - score),
                            bound=float(bound), score=float(score))
            records.append(record)
            within_tol = math.isfinite(score) and bound - score <= tol * max(1.0, abs(score))
            if within_tol or measure <= tol:
                status = Status.CONVERGED
            elif callback is not None and callback(record) is False:
                status = Status.INTERRUPTED
            elif max_time is not None and record.time >= max_time:
                status = Status.MAX_TIME
            if status is not Status.MAX_ITER:
                break
    except KeyboardInterrupt:
        status = Status.INTERRUPTED
    if best["x"] is None:   # interrupted before the first pass finished
        score_of(regions.decode(regions.node_theta))
    if status is Status.CONVERGED and method == "mplp" and bound - best["score"] > tol * max(1.0, abs(best["score"])):
        status = Status.STALLED   # coordinate descent on eq. 2 stopped at a non-optimal point
    certified = math.isfinite(bound)
    check_bound_feasible(model, bound if certified else None)
    return LPResult(
        assignment=best["x"].astype(np.int64), score=float(best["score"]),
        upper_bound=float(bound) if certified else None,
        gap=float(bound - best["score"]) if certified else None, certified=certified,
        objective=float(objective), measure=float(measure), status=status,
        time=time.perf_counter() - start, n_iter=len(records), method=method,
        trace=Trace(records),
        info={"gamma": gamma, "reg": reg, "n_regions": regions.n_regions,
              "smoothing_width": _smoothing_width(method, regions, gamma)})


def _smoothing_width(method, regions, gamma):
    """How far above the LP optimum the smoothed optimum may lie: γ Σ_r log W_r for the
    soft-max dual (eq. 5), qγ/2 for the L2 dual after its shift (Sec. 4.2)."""
    if method.startswith("softmax"):
        return gamma * regions.log_states
    if method.startswith("l2"):
        return 0.5 * gamma * regions.n_regions
    return None
