"""Corrective steps of fully-corrective FW as objects the engine takes (FrankWolfe.jl's
corrective-step interface): after each FW step of ``frank_wolfe(method="fcfw")`` the
engine calls ``after_fw_step(run, s, gap)`` of each, in order, and ``start(run)`` once
before the first oracle call. A step works on the run's active set V through the run's
``evaluate``, ``vertices``, ``active``, ``add_vertex``, ``fw_step``, ``away_step`` and
``purge``; it makes no oracle call of the run's domain.
"""
import abc
import math

import numpy as np

from ..checks import CALLABLE, Interval, validate_params

__all__ = ["CorrectiveStep", "MFWCorrection", "LocalSearch"]


class CorrectiveStep(abc.ABC):
    """Base class of the FCFW corrective steps."""

    def start(self, run):  # noqa: B027 (an optional hook: does nothing by default)
        """Called once when the run starts (before its first oracle call)."""

    @abc.abstractmethod
    def after_fw_step(self, run, s, gap):
        """Called after each FW step towards the atom ``s`` whose FW gap was ``gap``."""


class MFWCorrection(CorrectiveStep):
    """Barrier FW Alg. 5: away-step FW (MFW, Alg. 3) over conv(V_delta), the contracted
    hull of the visited vertices, until its pFW gap is <= ``tol`` (a number, a function of
    the last FW gap, or None: the run's own tol), ``max_steps`` steps (fewer when ``work``
    caps them: each step scores every vertex of V, so at most max(10, work / (|V| dim))
    steps), or the run's time. Runs after every ``every``-th FW step, and on the warm
    start when ``initial`` (Barrier FW Alg. 2 line 23). ``last_gap`` is the last pFW gap of
    the current run (0 before its first correction).

    ``kernel`` (None: the steps of `correct`, for any domain and objective) runs the same
    steps in one call with the objective's exact line search, whatever the run's step
    rule: ``kernel(x, atoms, weights, u0, delta, tol, max_steps, drop_tol, time_limit)``
    updates x and the weights in place and returns (steps, last pFW gap, f and grad f at
    the last x), as `fwcore.marginals.trw.TRWObjective.correction` does over assignments."""

    @validate_params({"max_steps": Interval(0, integer=True),
                      "tol": [Interval(0.0), CALLABLE, None], "every": Interval(1, integer=True),
                      "work": [Interval(1.0), None], "kernel": [CALLABLE, None]},
                     unchecked=("initial",))
    def __init__(self, max_steps=100, tol=None, every=1, work=None, initial=False,
                 kernel=None):
        self.max_steps, self.tol, self.every, self.work = max_steps, tol, every, work
        self.initial, self.kernel = bool(initial), kernel
        self.last_gap = 0.0

    def tolerance(self, run, gap):
        if self.tol is None:
            return run.stop.tol
        return self.tol(gap) if callable(self.tol) else self.tol

    def start(self, run):
        self.last_gap = 0.0
        if self.initial:
            self.correct(run)

    def after_fw_step(self, run, s, gap):
        if (run.n_steps + 1) % self.every == 0:
            self.correct(run, gap)

    def correct(self, run, gap=math.inf):
        """Run the correction; return the number of away steps taken."""
        max_steps = self.max_steps
        if self.work is not None:
            per_step = len(run.active) * run.domain.dim
            max_steps = min(max_steps, max(10, math.ceil(self.work / per_step)))
        if max_steps == 0:
            return 0
        tol = self.tolerance(run, gap)
        if self.kernel is not None:
            return self._fused(run, tol, max_steps)
        for t in range(max_steps + 1):
            _, g = run.evaluate()
            scores = run.vertices.scores(g, run.active.atoms)
            w = run.active.weights
            self.last_gap = float(scores[w > 0.0].max() - scores.min())
            if self.last_gap <= tol or t == max_steps or run.out_of_time():
                return t
            run.away_step(g, int(np.argmin(scores)), scores, iteration=t)
            run.purge(keep_atoms=True)

    def _fused(self, run, tol, max_steps):
        """`correct` by ``kernel``: one call, then the run's bookkeeping."""
        left = run.stop.deadline.seconds_left()
        steps, self.last_gap, f, g = self.kernel(
            run.x, run.active.atoms, run.active.weights, run.vertices.u0, run.vertices.delta,
            tol, max_steps, run.options.drop_tol, 0.0 if left is None else max(left, 1e-9))
        run.moved()
        run.evaluated(f, g)
        return steps


class LocalSearch(CorrectiveStep):
    """Barrier FW Alg. 6: up to ``steps`` FW steps over D_delta whose vertices come from
    ``local_lmo(g, previous vertex)`` (an approximate, warm-started oracle such as ICM);
    each joins V. Stops early when a step makes no progress (the next search would start
    from the same point)."""

    @validate_params({"local_lmo": CALLABLE, "steps": Interval(0, integer=True)})
    def __init__(self, local_lmo, steps=30):
        self.local_lmo, self.steps = local_lmo, steps

    def after_fw_step(self, run, s, gap):
        for t in range(self.steps):
            if run.out_of_time():
                break
            _, g = run.evaluate()
            s = np.ascontiguousarray(self.local_lmo(g, s), dtype=np.int32)
            i_s = run.add_vertex(g, s)
            before = run.active.weights[i_s]
            run.fw_step(g, i_s, iteration=t)
            run.purge(keep_atoms=True)
            if run.active.weights[i_s] == before:
                break
