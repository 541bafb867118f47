"""`infer_lp`: MAP by the LP relaxation, with the solvers of Smooth and Strong."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..checks import (BOOL, CALLABLE, SEED, TIME, Interval, Options, check_bound_feasible,
                      validate_params)
from ..loop import Callbacks, Deadline, Stopping, best_on_interrupt, run_loop
from ..labelling import feasible_labelling, node_argmax
from ..results import Record, Result, Status, Trace, gap_text
from . import dual, primal
from .factors import Factor
from .regions import Regions
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..model import PairwiseMRF

__all__ = ["infer_lp", "LPResult", "METHODS"]

# method -> (builder(regions, gamma, reg, projection, seed), uses gamma, uses reg)
METHODS = {
    "subgradient": (lambda r, g, c, p, s: dual.subgradient(r), False, False),
    "mplp": (lambda r, g, c, p, s: dual.coordinate_descent(r, 0.0), False, False),
    "softmax-cd": (lambda r, g, c, p, s: dual.coordinate_descent(r, g), True, False),
    "softmax-gd": (lambda r, g, c, p, s: dual.gradient(r, "softmax", g, 0.0, p, False),
                   True, False),
    "softmax-agd": (lambda r, g, c, p, s: dual.gradient(r, "softmax", g, 0.0, p, True),
                    True, False),
    "l2-gd": (lambda r, g, c, p, s: dual.gradient(r, "l2", g, 0.0, p, False), True, False),
    "l2-agd": (lambda r, g, c, p, s: dual.gradient(r, "l2", g, 0.0, p, True), True, False),
    "bcfw": (lambda r, g, c, p, s: primal.primal_solver(r, "bcfw", c, 0.0, p, s), False, True),
    "smooth-strong-agd": (lambda r, g, c, p, s: dual.gradient(r, "l2", g, c, p, True), True, True),
    "sdca": (lambda r, g, c, p, s: primal.primal_solver(r, "sdca", c, g, p, s), True, True),
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
    "verbose": BOOL,
}


def _progress_line(record):
    """A pass's progress line: the method's objective, the best score, the bound."""
    bound = ("" if record.bound is None else
             f"  bound {record.bound:.6f}  ({gap_text(record.bound - record.score)})")
    return (f"pass {record.iteration}  {record.time:.1f} s  objective {record.primal:.6f}  "
            f"score {record.score:.6f}{bound}")


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class LPResult(Result):
    """Result of `infer_lp`.

    ``assignment``/``score``: best decoded assignment so far and its score (pairwise plus
    global factors). ``upper_bound``: the smallest non-smooth dual g(δ) (eq. 2) seen, a
    certified upper bound on the MAP score (every method's iterates give one; BCFW and
    SDCA through δ(μ)); None only when no pass finished. ``gap`` = upper_bound − score and
    ``certified`` (the bound is a proof: True whenever there is a bound). ``objective``:
    the method's own objective at the end (the smoothed dual for soft-max/L2/AGD, L2
    shifted by qγ/2 as in the paper; the primal eq. 8 for BCFW). ``measure``: the last
    optimality measure (duality gap for BCFW/SDCA, the largest absolute gradient entry for
    GD/AGD, relative decrease per pass for CD, ‖subgradient‖² for subgradient). ``n_iter``:
    passes over all regions. ``n_oracle_calls`` is 0: these solvers make no call to a MAP oracle of
    the model (each pass maximises every region, and global factors, locally).
    ``trace``: one `Record` per pass (``primal`` = the objective, ``bound`` and ``score``
    the best so far, ``gap`` their difference); ``trace.columns()`` gives the arrays.
    """

    assignment: np.ndarray
    score: float
    upper_bound: float | None
    gap: float | None
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


@validate_params(_PARAMS, unchecked=("model", "factors"))
@solves_factor_graphs
def infer_lp(model: PairwiseMRF | FactorGraph, method: str = "mplp", gamma: float = 0.01,
             reg: float = 0.01, max_iter: int = 1000, tol: float = 1e-6,
             max_time: float | None = None, callback=None, factors=(),
             projection: str = "sort", seed: int = 0, verbose: bool = False) -> LPResult:
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
    verbose : bool
        Progress lines on stderr (`fwcore.loop`: the ``fwcore`` logger has them anyway).

    Notes
    -----
    Returns an `LPResult`. ``status`` is converged (tolerance met), max_iter, max_time,
    interrupted (callback or Ctrl-C), or stalled: "mplp" whose pass no longer lowers the
    bound while the bound does not certify the decoded score (a non-optimal fixed point of
    coordinate descent, or an LP with an integrality gap), or any method that met its
    tolerance with a non-finite score (`fwcore.loop`). Decoded labellings are repaired off
    -inf entries (`Regions.decode`). A model with no feasible assignment raises
    ValueError: at the start when arc consistency finds it (`fwcore.checks.check_feasible`),
    at the end when the bound proves it. ``max_time`` counts from the call (building the
    regions included); Ctrl-C before the first pass returns the best node scores'
    labelling (repaired), no bound, status interrupted.
    """
    deadline = Deadline(max_time)  # building the regions counts too
    build, uses_gamma, uses_reg = METHODS[method]
    used_gamma = gamma if uses_gamma else None  # (None: the method has no such parameter)
    used_reg = reg if uses_reg else None
    regions, interrupted = best_on_interrupt(lambda: Regions(model, factors), lambda: None)
    if interrupted:
        return _interrupted_before_a_pass(model, factors, method, used_gamma, used_reg,
                                          deadline)
    if regions.factors and method not in _FACTOR_METHODS:
        raise ValueError(f"method {method!r} would enumerate the states of a global factor; "
                         f"with factors use one of {', '.join(_FACTOR_METHODS)}")

    best = _BestAssignment(regions)
    passes = _Passes(build(regions, used_gamma, used_reg, projection, seed), best, deadline)
    outcome = run_loop(passes.measure, passes.step,
                       Stopping(max_iter, tol, deadline=deadline),
                       Callbacks(callback, line=_progress_line, verbose=verbose),
                       measure_start=False)
    bound, status = passes.bound, outcome.status
    if best.x is None:   # interrupted before the first pass finished
        best(regions.decode(regions.node_theta))
    if (status is Status.CONVERGED and method == "mplp"
            and bound - best.score > tol * max(1.0, abs(best.score))):
        status = Status.STALLED   # coordinate descent on eq. 2 stopped at a non-optimal point
    certified = math.isfinite(bound)
    check_bound_feasible(model, bound if certified else None)
    return LPResult(
        assignment=best.x.astype(np.int64), score=float(best.score),
        upper_bound=float(bound) if certified else None,
        gap=float(bound - best.score) if certified else None, certified=certified,
        objective=float(passes.objective), measure=float(passes.measure_value), status=status,
        time=deadline.elapsed(), n_iter=outcome.n_iter, method=method,
        trace=outcome.trace,
        info={"gamma": used_gamma, "reg": used_reg, "n_regions": regions.n_regions,
              "smoothing_width": _smoothing_width(method, regions, used_gamma)})


def _interrupted_before_a_pass(model, factors, method, gamma, reg, deadline):
    """The answer to Ctrl-C while the regions are built: the best node scores' labelling,
    repaired off -inf entries (as `fwcore.infer_map`'s), no bound."""
    x = feasible_labelling(model, model.theta, node_argmax(model, model.theta))
    factors = (factors,) if isinstance(factors, Factor) else factors
    score = float(model.score(x)) + sum(f.potential(x[f.scope]) for f in factors)
    return LPResult(
        assignment=x.astype(np.int64), score=score, upper_bound=None, gap=None,
        certified=False, objective=math.inf, measure=math.inf, status=Status.INTERRUPTED,
        time=deadline.elapsed(), n_iter=0, method=method,
        info={"gamma": gamma, "reg": reg, "n_regions": None, "smoothing_width": None})


class _BestAssignment:
    """``best(x)``: the best score of the decoded assignments so far, ``x`` included; the
    best one is ``best.x``, its score ``best.score``."""

    def __init__(self, regions):
        self.regions, self.x, self.score = regions, None, -math.inf

    def __call__(self, x):
        s = self.regions.score(x)
        if s > self.score or self.x is None:
            self.x, self.score = x.copy(), s
        return self.score


class _Passes:
    """A solver's passes (``steps``, a generator, see `dual`) on `fwcore.loop.run_loop`:
    each step is one pass; each record carries the best bound and decoded score so far
    (their difference is ``gap``), and the criterion is the method's measure or, when
    smaller, that gap relative to max(1, |score|)."""

    def __init__(self, steps, best, deadline):
        self.steps, self.best, self.deadline = steps, best, deadline
        self.objective, self.bound, self.measure_value, self.x = math.inf, math.inf, math.inf, None

    def step(self, k):
        self.objective, step_bound, self.x, self.measure_value = next(self.steps)
        self.bound = min(self.bound, step_bound)

    def measure(self, k):
        score = self.best(self.x)
        record = Record(iteration=k, time=self.deadline.elapsed(),
                        primal=float(self.objective), gap=float(self.bound - score),
                        bound=float(self.bound), score=float(score))
        relative = ((self.bound - score) / max(1.0, abs(score)) if math.isfinite(score)
                    else math.inf)
        return record, min(relative, self.measure_value)


def _smoothing_width(method, regions, gamma):
    """How far above the LP optimum the smoothed optimum may lie: γ Σ_r log W_r for the
    soft-max dual (eq. 5), qγ/2 for the L2 dual after its shift (Sec. 4.2)."""
    if method.startswith("softmax"):
        return gamma * regions.log_states
    if method.startswith("l2"):
        return 0.5 * gamma * regions.n_regions
    return None
