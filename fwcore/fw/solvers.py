"""Frank-Wolfe variants over a domain given by a linear minimisation oracle (domains.py).

f is minimised; the FW gap at x is <-grad f(x), s - x> >= 0 (DESIGN.md conventions).
Variants: vanilla FW, away-step FW (MFW, Barrier FW Alg. 3), pairwise FW, fully-corrective
FW with MFW corrections over a contracted correction polytope (Barrier FW Alg. 4, eq. 6),
and block-coordinate FW over a product domain (FW variants review Alg. 3; Lacoste-Julien
et al. 2013 with weighted averaging).
"""
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..checks import CALLABLE, TIME, Interval, Options, validate_params
from ..loop import Callbacks, Deadline, Stopping, budget_status, run_loop
from ..results import Record, Status, StepType, Trace
from .active_set import ActiveSet
from .corrective import CorrectiveStep, MFWCorrection
from .domains import U0_ATOM, ProductDomain, Vertices, check_domain
from .linesearch import make_step_rule
from .objectives import Objective
from .result import FWResult

__all__ = ["frank_wolfe", "correct", "block_coordinate_frank_wolfe", "adaptive_delta", "METHODS"]

METHODS = ("fw", "away", "pairwise", "fcfw")


def adaptive_delta(delta, gap, uniform_gap):
    """Barrier FW Alg. 1: shrink delta (by at least half) when the FW gap g is positive and
    the uniform gap g_u = <-grad, u0 - x> is negative and large compared with it."""
    if gap > 0.0 and uniform_gap < 0.0:
        proposal = gap / (-4.0 * uniform_gap)
        if proposal < delta:
            return min(proposal, 0.5 * delta)
    return delta


#: the engine's arguments: `frank_wolfe`'s table; the other entry points check some of them
_PARAMS = {
    "method": Options(*METHODS),
    "tol": Interval(0.0),
    "max_iter": Interval(0, integer=True),
    "max_oracle_calls": [Interval(1, integer=True), None],
    "max_time": TIME,
    "delta": Interval(0.0, 1.0, hi_open=True),
    "drop_tol": Interval(0.0, 1e-3),
    "refresh_every": Interval(1, integer=True),
    "max_vertices": [Interval(2, integer=True), None],
    "callback": [CALLABLE, None],
    "delta_rule": [CALLABLE, None],
}


def _check_objective(objective):
    if not isinstance(objective, Objective):
        raise TypeError("objective must be a fwcore.fw.Objective (implement value_grad(x)); "
                        f"got {type(objective).__name__}")


@dataclass(frozen=True)
class ActiveSetOptions:
    """How `frank_wolfe` keeps its active set: the step ``rule``, the contraction (``delta``
    and ``delta_rule``), the FCFW ``corrections``, drops, renormalisation, the |V| cap."""

    method: str
    rule: Callable
    delta: float = 0.0
    delta_rule: Optional[Callable] = None
    corrections: tuple = ()
    drop_tol: float = 1e-12
    refresh_every: int = 100
    max_vertices: Optional[int] = None
    debug: bool = False


# -- the shared outer loop -----------------------------------------------------------------

class _EngineRun:
    """A Frank-Wolfe run on `fwcore.loop.run_loop`, with the best-iterate snapshots.

    Subclasses provide ``x``, ``delta``, ``probe(g) -> (gap, criterion, info)`` (no state
    change), ``step(g, info) -> StepType``, ``snapshot()``, ``restore(snap)``, ``n_active``
    and ``active_arrays()``, and may override ``start()``."""

    method: str  # each subclass names itself
    x_avg = None

    def __init__(self, objective, rule, stop, callback, keep_trace):
        self.objective, self.rule, self.stop = objective, rule, stop
        self.callback, self.keep_trace = callback, keep_trace
        self.n_oracle_calls = 0
        self._version = 0
        self._cache = None
        self.best = None  # f, state, gap at the best iterate (no gap before the first one)
        self.last_step = StepType.INIT
        self._direction = None  # (gradient, probe info) of the iterate just measured

    def elapsed(self):
        return self.stop.deadline.elapsed()

    def out_of_time(self):
        return self.stop.deadline.passed()

    def moved(self):
        """Call after every change of x: invalidates the cached value and gradient."""
        self._version += 1

    def evaluate(self):
        """(f(x), grad f(x)), computed once per iterate."""
        if self._cache is None or self._cache[0] != self._version:
            self.evaluated(*self.objective.value_grad(self.x))
        return self._cache[1], self._cache[2]

    def evaluated(self, f, g):
        """Keep (f, grad f) of the current iterate, computed elsewhere (a fused corrective
        step); ValueError unless f is finite or -inf."""
        f = float(f)
        if math.isnan(f) or f == math.inf:
            raise ValueError(f"objective value is {f} at the current iterate; the objective "
                             "must be finite on the domain (contract it with delta > 0)")
        self._cache = (self._version, f, np.asarray(g, dtype=np.float64))

    def lmo(self, domain, g):
        """One counted oracle call, its atom validated."""
        self.n_oracle_calls += 1
        atom = np.ascontiguousarray(domain.lmo(g), dtype=np.int32)
        if atom.shape != (domain.atom_size,):
            raise ValueError(f"{type(domain).__name__}.lmo returned an atom of shape {atom.shape}; "
                             f"expected ({domain.atom_size},)")
        return atom

    def start(self):
        """Work before the first iteration (inside the run's Ctrl-C handling)."""

    def _begin(self):
        self.best = [math.inf, self.snapshot(), None]
        self.start()

    def _measure(self, k):
        """The record of iterate k and its stopping criterion, with a fresh gap."""
        f, g = self.evaluate()
        gap, criterion, info = self.probe(g)
        if not math.isfinite(gap):
            raise ValueError(f"the FW gap is {gap}; the gradient must be finite on the domain")
        if f <= self.best[0]:
            self.best = [f, self.snapshot(), gap]
        self._direction = g, info
        return Record(iteration=k, time=self.elapsed(), primal=f, gap=gap,
                      n_oracle_calls=self.n_oracle_calls, delta=self.delta,
                      n_active=self.n_active, step=self.last_step), criterion

    def _advance(self, k):
        self.last_step = self.step(*self._direction)

    def run(self):
        outcome = run_loop(self._measure, self._advance, self.stop,
                           Callbacks(self.callback, trace=self.keep_trace), start=self._begin)
        status = outcome.status
        if status is Status.CONVERGED:
            f, gap = outcome.last.primal, outcome.last.gap
        else:  # the best iterate, with its fresh gap
            if self.best is not None:
                self.restore(self.best[1])
                self.moved()
            f = self.evaluate()[0]
            # Ctrl-C before the first gap: no gap measured (no oracle call after Ctrl-C)
            gap = math.inf if self.best is None or self.best[2] is None else self.best[2]
        atoms, weights = self.active_arrays()
        return FWResult(x=self.x.copy(), atoms=atoms, weights=weights, primal=f, gap=gap,
                        status=status, n_iter=outcome.n_iter,
                        n_oracle_calls=self.n_oracle_calls, time=self.elapsed(),
                        delta=self.delta, method=self.method, certified=self.domain.exact,
                        trace=outcome.trace, x_avg=self.x_avg)


# -- FW, away-step, pairwise and fully-corrective FW --------------------------------------

class _ActiveSetFW(_EngineRun):

    def __init__(self, objective, domain, options, stop, callback=None, keep_trace=False,
                 init=None):
        super().__init__(objective, options.rule, stop, callback, keep_trace)
        self.domain, self.options, self.method = domain, options, options.method
        self.vertices = Vertices(domain, options.delta)
        self.n_steps = 0
        self.active = self._initial_active_set(init)
        self.x = self.vertices.dense(self.active.atoms, self.active.weights)

    def start(self):
        # e.g. Barrier FW Alg. 2 line 23: re-correct a warm start
        for c in self.options.corrections:
            c.start(self)

    def _initial_active_set(self, init):
        k = self.domain.atom_size
        if isinstance(init, ActiveSet):
            active = init.copy()
        elif isinstance(init, tuple) and len(init) == 2:
            active = ActiveSet.from_arrays(*init)
        elif init is None:
            active = ActiveSet(k)
            if self.vertices.u0 is not None:
                active.add(np.full(k, U0_ATOM, dtype=np.int32), 1.0)
            else:
                active.add(self.lmo(self.domain, np.zeros(self.domain.dim)), 1.0)
        else:
            active = ActiveSet.from_arrays(np.asarray(init).reshape(1, -1), [1.0])
        if active.atoms.shape[1] != k:
            raise ValueError(f"init atoms have length {active.atoms.shape[1]}; the domain's "
                             f"atom_size is {k}")
        if self.vertices.u0 is None and (active.atoms[:, 0] == U0_ATOM).any():
            raise ValueError("init uses the interior point u0 (a row of -1) but the domain "
                             "has no u0")
        return active

    @property
    def delta(self):
        return self.vertices.delta

    @property
    def n_active(self):
        return self.active.n_active

    def snapshot(self):
        return self.x.copy(), self.active.copy(), self.vertices.delta

    def restore(self, snap):
        self.x, self.active, self.vertices.delta = snap[0].copy(), snap[1].copy(), snap[2]

    def active_arrays(self):
        return self.active.atoms.copy(), self.active.weights.copy()

    # gaps ------------------------------------------------------------------------------

    def probe(self, g):
        """FW vertex s and gaps at x. The stopping gap is over D_delta for a fixed delta and
        over D when delta is 0 or adapted (Barrier FW Alg. 4 line 7); away and pairwise FW
        stop on the stringent pFW gap = FW gap + away gap (Alg. 3 line 6)."""
        s = self.lmo(self.domain, g)
        gx = float(g @ self.x)
        gap_full = gx - float(self.domain.inner(g, s[None, :])[0])
        u0 = self.vertices.u0
        uniform_gap = gx - float(g @ u0) if u0 is not None else math.nan
        delta = self.vertices.delta
        gap_delta = (1.0 - delta) * gap_full + delta * uniform_gap if delta else gap_full
        gap = gap_full if self.options.delta_rule is not None else gap_delta
        criterion = gap
        if self.method in ("away", "pairwise"):
            w = self.active.weights
            scores = self.vertices.scores(g, self.active.atoms)
            criterion = gap + float(scores[w > 0.0].max()) - gx
        return gap, criterion, (s, gap_full, uniform_gap)

    # steps -------------------------------------------------------------------------------

    def step(self, g, info):
        s, gap_full, uniform_gap = info
        rule = self.options.delta_rule
        if rule is not None:
            new = float(rule(self.vertices.delta, gap_full, uniform_gap))
            if not 0.0 <= new <= self.vertices.delta:
                raise ValueError(f"delta_rule returned {new}; it must lie in "
                                 f"[0, {self.vertices.delta}]")
            if new < self.vertices.delta:  # Barrier FW eq. 6: x stays, weights move to u0
                self.active.contract(self.vertices.delta, new)
                self.vertices.delta = new
        if self.method == "fcfw":
            kind = self._fcfw_step(g, s, gap_full)
        elif self.method == "fw":
            kind = self.fw_step(g, self.active.add(s))
            self.purge(keep_atoms=False)
        else:
            i_s = self.active.add(s)
            scores = self.vertices.scores(g, self.active.atoms)
            kind = (self.away_step if self.method == "away" else self._pairwise_step)(
                g, i_s, scores)
            self.purge(keep_atoms=False)
        self.n_steps += 1
        if self.n_steps % self.options.refresh_every == 0:
            self.active.renormalize()
            self.x = self.vertices.dense(self.active.atoms, self.active.weights)
            self.moved()
        if self.options.debug:
            self.active.check(self.x, self.vertices)
        return kind

    def _vertex(self, i):
        v = np.zeros(self.domain.dim)
        self.vertices.add(v, self.active.atoms[i], 1.0)
        return v

    def _move(self, g, d, gamma_max, iteration):
        gamma = float(self.rule(self.objective, self.x, d, g, gamma_max, iteration))
        gamma = min(max(gamma, 0.0), gamma_max)
        if gamma > 0.0:
            self.x += gamma * d
            self.moved()
        return gamma

    def purge(self, keep_atoms):
        """Drop the weights <= drop_tol; FCFW keeps the zero-weight atoms (its V)."""
        if self.active.purge(self.x, self.vertices, self.options.drop_tol, keep_atoms):
            self.moved()

    def fw_step(self, g, i_s, iteration=None):
        """A FW step towards atom ``i_s`` of the active set."""
        d = self._vertex(i_s) - self.x
        gamma = self._move(g, d, 1.0, self.n_steps if iteration is None else iteration)
        self.active.fw_update(i_s, gamma)
        return StepType.FW

    def away_step(self, g, i_s, scores, iteration=None):
        """Barrier FW Alg. 3 lines 10-17: FW or away direction, whichever has the larger gap."""
        w = self.active.weights
        gx = float(g @ self.x)
        i_v = int(np.argmax(np.where(w > 0.0, scores, -np.inf)))
        if gx - scores[i_s] >= scores[i_v] - gx or w[i_v] >= 1.0 - 1e-15:
            return self.fw_step(g, i_s, iteration)
        gamma_max = w[i_v] / (1.0 - w[i_v])
        d = self.x - self._vertex(i_v)
        gamma = self._move(g, d, gamma_max, self.n_steps if iteration is None else iteration)
        drop = gamma >= gamma_max
        self.active.away_update(i_v, gamma, drop)
        return StepType.DROP if drop else StepType.AWAY

    def _pairwise_step(self, g, i_s, scores):
        """Pairwise FW (Lacoste-Julien & Jaggi 2015): move weight from the away atom to s."""
        w = self.active.weights
        i_v = int(np.argmax(np.where(w > 0.0, scores, -np.inf)))
        if i_v == i_s:
            return StepType.PAIRWISE
        gamma_max = w[i_v]
        d = self._vertex(i_s) - self._vertex(i_v)
        gamma = self._move(g, d, gamma_max, self.n_steps)
        drop = gamma >= gamma_max
        self.active.pairwise_update(i_s, i_v, gamma, drop)
        return StepType.DROP if drop else StepType.PAIRWISE

    def _fcfw_step(self, g, s, gap):
        """Barrier FW Alg. 4 lines 12-20 (Alg. 2 lines 13-18): FW step towards s over D_delta,
        s joins the correction polytope V, then each corrective step in turn (the MFW
        correction over conv(V_delta), Alg. 5; the local search, Alg. 6)."""
        self.add_vertex(g, s)
        self.fw_step(g, self.active.find(s))
        self.purge(keep_atoms=True)
        for c in self.options.corrections:
            c.after_fw_step(self, s, gap)
        return StepType.CORRECTION

    def add_vertex(self, g, s):
        """Index of atom ``s`` in V. A new one, when V holds ``max_vertices`` atoms, first
        shrinks V to 3/4 of the cap (so V is scored once per cap/4 new vertices, not for
        every one): zero-weight vertices are forgotten, worst score first; if that is not
        enough, the lightest weighted vertices hand their weight to the best-scoring vertex
        of V (a pairwise step at its largest step size: <g, d> <= 0, as that vertex
        minimises <g, .> over V) and are forgotten too."""
        cap = self.options.max_vertices
        if cap is not None and self.active.size >= cap and self.active.find(s) < 0:
            self._shrink(g, max(1, (3 * cap) // 4 - 1))
        return self.active.add(s)

    def _shrink(self, g, keep):
        """Forget atoms of V until ``keep`` remain (see `add_vertex`)."""
        active = self.active
        scores = self.vertices.scores(g, active.atoms)
        w = active.weights
        best = int(np.argmin(scores))
        excess = active.size - keep
        idle = np.flatnonzero(w == 0.0)
        idle = idle[idle != best]
        forget = idle[np.argsort(-scores[idle], kind="stable")[:excess]]
        if forget.size < excess:
            busy = np.flatnonzero(w > 0.0)
            busy = busy[busy != best]
            light = busy[np.argsort(w[busy], kind="stable")[:excess - forget.size]]
            for i in light:
                self.vertices.add(self.x, active.atoms[best], w[i])
                self.vertices.add(self.x, active.atoms[i], -w[i])
                w[best] += w[i]
                w[i] = 0.0
            self.moved()
            forget = np.concatenate([forget, light])
        for i in np.sort(forget)[::-1]:
            active.remove(int(i))


@validate_params(_PARAMS, unchecked=("objective", "domain", "step", "init", "corrections",
                                     "trace", "debug"))
def frank_wolfe(objective, domain, *, method="fw", step="exact", tol=1e-6, max_iter=1000,
                max_oracle_calls=None, max_time=None, callback=None, init=None, delta=0.0,
                delta_rule=None, corrections=None, max_vertices=None, drop_tol=1e-12,
                refresh_every=100, trace=True, debug=False) -> FWResult:
    """Minimise a convex ``objective`` (an `Objective`) over ``domain`` (a `Domain`) or its
    contraction D_delta.

    method : 'fw' (vanilla), 'away' (MFW, Barrier FW Alg. 3), 'pairwise', 'fcfw' (FW step,
        then the ``corrections`` over the visited vertices V, Barrier FW Alg. 4).
    step : 'exact' (``objective.line_search``, default), 'agnostic' (2/(k+2)), or a rule
        ``rule(objective, x, d, grad, gamma_max, iteration)`` (linesearch.py).
    tol : stop when the freshly computed gap is <= tol (pFW gap for away/pairwise). The gap
        is over D_delta for a fixed delta > 0 and over D when delta is 0 or adapted.
    max_iter, max_oracle_calls, max_time (seconds) : budgets, checked between iterations;
        ``callback(record)`` returning False or Ctrl-C stops with status INTERRUPTED. Unless
        converged, the iterate with the lowest f seen is returned with its gap (inf when
        Ctrl-C came before the first gap was computed: no oracle call follows Ctrl-C).
    init : None (u0 when the domain has one, else the vertex lmo(0)), an atom, an
        ``(atoms, weights)`` pair or an `ActiveSet` (warm start).
    delta, delta_rule : contraction towards ``domain.u0``;
        ``delta_rule(delta, gap, uniform_gap) -> new delta`` (e.g. `adaptive_delta`) may
        shrink it each iteration, re-weighting by Barrier FW eq. 6.
    corrections : FCFW corrective steps (`fwcore.fw.corrective`: `MFWCorrection`,
        `LocalSearch`), run in order after each FW step; None: ``[MFWCorrection()]`` for
        'fcfw' (at most 100 away steps to the run's tol), none for the other methods.
    max_vertices : cap on ``|V|``, so that a correction step (which scores every atom of V)
        costs at most max_vertices x the model: when V is full it shrinks to 3/4 of the
        cap, zero-weight vertices forgotten first, then the lightest weighted ones with
        their weight moved to the best vertex of V (see ``_ActiveSetFW.add_vertex``).
    drop_tol : float
        weights <= drop_tol are dropped (x moved to the remaining atoms' hull).
    refresh_every : int
        renormalise the weights and recompute x from the atoms this often.
    debug : bool
        check the active-set invariants after every step (AssertionError if broken).
    """
    _check_objective(objective)
    check_domain(domain)
    if corrections is None:
        corrections = [MFWCorrection()] if method == "fcfw" else []
    corrections = tuple(corrections)
    if corrections and method != "fcfw":
        raise ValueError(f"corrections apply to method='fcfw' only; got method={method!r}")
    for c in corrections:
        if not isinstance(c, CorrectiveStep):
            raise TypeError("corrections must be fwcore.fw.CorrectiveStep objects; got "
                            f"{type(c).__name__}")
    if (delta > 0 or delta_rule is not None) and domain.u0 is None:
        raise ValueError("delta > 0 and delta_rule need an interior point: give the domain a u0")
    options = ActiveSetOptions(method=method, rule=make_step_rule(step), delta=delta,
                               delta_rule=delta_rule, corrections=corrections,
                               drop_tol=drop_tol, refresh_every=refresh_every,
                               max_vertices=max_vertices, debug=bool(debug))
    stop = Stopping(max_iter, tol, max_oracle_calls, Deadline(max_time))
    return _ActiveSetFW(objective, domain, options, stop, callback, bool(trace), init).run()


@validate_params({name: _PARAMS[name] for name in ("delta", "max_time")},
                 unchecked=("objective", "domain", "init", "correction", "step"))
def correct(objective, domain, init, correction, *, delta=0.0, max_time=None, step="exact"):
    """Barrier FW Alg. 5 on its own: the `MFWCorrection` ``correction`` (away steps, Alg. 3)
    over the contracted hull conv(V_delta) of the atoms of ``init`` (an ``(atoms,
    weights)`` pair or an `ActiveSet`), without oracle calls, until its pFW gap over that
    hull is <= its tolerance, its step budget or ``max_time`` seconds. Returns an
    `FWResult` whose ``gap`` is that pFW gap (not a gap over the domain) and
    ``n_oracle_calls`` is 0."""
    _check_objective(objective)
    check_domain(domain)
    if not isinstance(correction, MFWCorrection):
        raise TypeError(f"correction must be a fwcore.fw.MFWCorrection; "
                        f"got {type(correction).__name__}")
    if delta > 0 and domain.u0 is None:
        raise ValueError("delta > 0 needs an interior point: give the domain a u0")
    options = ActiveSetOptions(method="fcfw", rule=make_step_rule(step), delta=delta)
    run = _ActiveSetFW(objective, domain, options, Stopping(0, deadline=Deadline(max_time)),
                       init=init)
    correction.last_gap = 0.0
    n_steps = correction.correct(run)
    f, _ = run.evaluate()
    atoms, weights = run.active_arrays()
    status = (Status.CONVERGED if correction.last_gap <= correction.tolerance(run, math.inf)
              else budget_status(run.out_of_time()))
    return FWResult(x=run.x.copy(), atoms=atoms, weights=weights, primal=f,
                    gap=correction.last_gap, status=status, n_iter=n_steps, n_oracle_calls=0,
                    time=run.elapsed(), delta=run.delta, method="correction",
                    certified=False, trace=Trace())


# -- block-coordinate FW ----------------------------------------------------------------

class _BlockFW(_EngineRun):
    """FW variants review Alg. 3 (BCFW): one FW step on a random block at a time; one
    iteration is a pass over all blocks in a random order."""

    method = "bcfw"
    delta = 0.0
    n_active = 0

    def __init__(self, objective, domain, rule, stop, callback, keep_trace, seed, averaging):
        super().__init__(objective, rule, stop, callback, keep_trace)
        self.domain = domain
        self.rng = np.random.default_rng(seed)
        if domain.u0 is not None:
            self.x = np.array(domain.u0, dtype=np.float64)
        else:
            self.x = np.zeros(domain.dim)
            for b, sl in zip(domain.blocks, domain.slices):
                b.add(self.x[sl], self.lmo(b, np.zeros(b.dim)), 1.0)
        self.averaging = averaging
        self.x_avg = self.x.copy() if averaging else None
        self.k_blocks = 0

    def snapshot(self):
        return self.x.copy(), None if self.x_avg is None else self.x_avg.copy(), self.k_blocks

    def restore(self, snap):
        self.x, avg, self.k_blocks = snap[0].copy(), snap[1], snap[2]
        self.x_avg = None if avg is None else avg.copy()

    def active_arrays(self):
        return None, None

    def _block_gap(self, i, g):
        b, sl = self.domain.blocks[i], self.domain.slices[i]
        s = self.lmo(b, g[sl])
        return float(g[sl] @ self.x[sl]) - float(b.inner(g[sl], s[None, :])[0]), s

    def probe(self, g):
        """The full FW gap is the sum of the block gaps (one oracle call per block)."""
        gap = sum(self._block_gap(i, g)[0] for i in range(len(self.domain.blocks)))
        return gap, gap, None

    def step(self, g, info):
        n = len(self.domain.blocks)
        for i in self.rng.permutation(n):
            _, g = self.evaluate()
            b, sl = self.domain.blocks[i], self.domain.slices[i]
            _, s = self._block_gap(i, g)
            d = np.zeros(self.domain.dim)
            b.add(d[sl], s, 1.0)
            d[sl] -= self.x[sl]
            gamma = float(self.rule(self.objective, self.x, d, g, 1.0, self.k_blocks / n))
            gamma = min(max(gamma, 0.0), 1.0)
            if gamma > 0.0:
                self.x += gamma * d
                self.moved()
            if self.averaging:  # Lacoste-Julien et al. 2013: weights 2/(k+2)
                rho = 2.0 / (self.k_blocks + 2.0)
                self.x_avg *= 1.0 - rho
                self.x_avg += rho * self.x
            self.k_blocks += 1
        return StepType.BLOCK


@validate_params({name: _PARAMS[name] for name in ("tol", "max_iter", "max_oracle_calls",
                                                  "max_time", "callback")},
                 unchecked=("objective", "domain", "step", "seed", "averaging", "trace"))
def block_coordinate_frank_wolfe(objective, domain, *, step="exact", tol=1e-6, max_iter=1000,
                                 max_oracle_calls=None, max_time=None, callback=None, seed=0,
                                 averaging=True, trace=True) -> FWResult:
    """Block-coordinate FW over a `ProductDomain` (FW variants review Alg. 3).

    One iteration is a pass over the blocks in a random order drawn from ``seed``; after each
    pass the full gap is computed fresh (one oracle call per block) and checked against
    ``tol``. With the 'agnostic' step the step size is 2n/(k+2n) after k block steps.
    ``averaging`` keeps x_avg = weighted average of the iterates (weights 2/(k+2)). Other
    arguments as in `frank_wolfe`."""
    _check_objective(objective)
    if not isinstance(domain, ProductDomain):
        raise TypeError(f"block_coordinate_frank_wolfe needs a ProductDomain; "
                        f"got {type(domain).__name__}")
    stop = Stopping(max_iter, tol, max_oracle_calls, Deadline(max_time))
    return _BlockFW(objective, domain, make_step_rule(step), stop, callback, bool(trace), seed,
                    bool(averaging)).run()
