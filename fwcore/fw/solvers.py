"""Frank-Wolfe variants over a domain given by a linear minimisation oracle (domains.py).

f is minimised; the FW gap at x is <-grad f(x), s - x> >= 0 (DESIGN.md conventions).
Variants: vanilla FW, away-step FW (MFW, Barrier FW Alg. 3), pairwise FW, fully-corrective
FW with MFW corrections over a contracted correction polytope (Barrier FW Alg. 4, eq. 6),
and block-coordinate FW over a product domain (FW variants review Alg. 3; Lacoste-Julien
et al. 2013 with weighted averaging).
"""
import math
import numbers
import time

import numpy as np

from ..results import Status
from .active_set import ActiveSet
from .domains import U0_ATOM, ProductDomain, Vertices, _check_domain
from .linesearch import make_step_rule
from .result import FWResult, IterationRecord, StepType

__all__ = ["frank_wolfe", "correct", "block_coordinate_frank_wolfe", "adaptive_delta", "VARIANTS"]

VARIANTS = ("fw", "away", "pairwise", "fcfw")


def adaptive_delta(delta, gap, uniform_gap):
    """Barrier FW Alg. 1: shrink delta (by at least half) when the uniform gap
    g_u = <-grad, u0 - x> is negative and large compared with the FW gap g."""
    if uniform_gap < 0.0:
        proposal = gap / (-4.0 * uniform_gap)
        if proposal < delta:
            return min(proposal, 0.5 * delta)
    return delta


# -- parameter checks (one declarative table, checked once at the entry points) -----------

def _number(lo, hi=math.inf, integer=False, optional=False, lo_open=False):
    def ok(v):
        if v is None:
            return optional
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return False
        if integer and int(v) != v:
            return False
        return (lo < v if lo_open else lo <= v) and v < hi
    kind = "an integer" if integer else "a number"
    text = f"{kind} {'>' if lo_open else '>='} {lo}" + (f" and < {hi}" if hi < math.inf else "")
    return ok, text + (" or None" if optional else "")


_PARAMS = {
    "tol": _number(0.0),
    "max_iter": _number(0, integer=True),
    "max_oracle_calls": _number(1, integer=True, optional=True),
    "max_time": _number(0.0, optional=True, lo_open=True),
    "delta": _number(0.0, 1.0),
    "drop_tol": _number(0.0, 1e-3),
    "refresh_every": _number(1, integer=True),
    "inner_max_iter": _number(0, integer=True),
    "inner_tol": _number(0.0, optional=True),
    "max_vertices": _number(2, integer=True, optional=True),
    "correction_work": _number(1.0, optional=True),
    "correct_every": _number(1, integer=True),
    "local_steps": _number(0, integer=True),
}


def _check_params(**params):
    for name, value in params.items():
        ok, text = _PARAMS[name]
        if not ok(value):
            raise ValueError(f"{name} must be {text}; got {value!r}")


def _check_callable(value, name, signature):
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be None or a callable {signature}; got {type(value).__name__}")


def _check_objective(objective):
    has_pair = callable(getattr(objective, "value", None)) and callable(getattr(objective, "grad", None))
    if not (has_pair or callable(getattr(objective, "value_grad", None))):
        raise TypeError("objective must provide value(x) and grad(x), or value_grad(x); "
                        f"got {type(objective).__name__}")


# -- the shared outer loop -----------------------------------------------------------------

class _Run:
    """Stopping, records, callbacks, best-iterate snapshots and Ctrl-C for every variant.

    Subclasses provide ``x``, ``delta``, ``probe(g) -> (gap, criterion, info)`` (no state
    change), ``step(g, info) -> StepType``, ``snapshot()``, ``restore(snap)``, ``n_active``
    and ``active_arrays()``."""

    variant = None

    def __init__(self, objective, rule, tol, max_iter, max_oracle_calls, max_time, callback, trace):
        self.objective = objective
        self.rule = rule
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.max_oracle_calls, self.max_time = max_oracle_calls, max_time
        self.callback, self.keep_trace = callback, trace
        self.n_oracle_calls = 0
        self._version = 0
        self._cache = None
        self.t0 = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.t0

    def out_of_time(self):
        return self.max_time is not None and self.elapsed() >= self.max_time

    def moved(self):
        """Call after every change of x: invalidates the cached value and gradient."""
        self._version += 1

    def evaluate(self):
        """(f(x), grad f(x)), computed once per iterate."""
        if self._cache is None or self._cache[0] != self._version:
            obj = self.objective
            if callable(getattr(obj, "value_grad", None)):
                f, g = obj.value_grad(self.x)
            else:
                f, g = obj.value(self.x), obj.grad(self.x)
            f = float(f)
            if math.isnan(f) or f == math.inf:
                raise ValueError(f"objective value is {f} at the current iterate; the objective "
                                 "must be finite on the domain (contract it with delta > 0)")
            self._cache = (self._version, f, np.asarray(g, dtype=np.float64))
        return self._cache[1], self._cache[2]

    def lmo(self, domain, g):
        """One counted oracle call, its atom validated."""
        self.n_oracle_calls += 1
        atom = np.ascontiguousarray(domain.lmo(g), dtype=np.int32)
        if atom.shape != (domain.atom_size,):
            raise ValueError(f"{type(domain).__name__}.lmo returned an atom of shape {atom.shape}; "
                             f"expected ({domain.atom_size},)")
        return atom

    def run(self):
        records, status, k, step = [], None, 0, StepType.INIT
        best = [math.inf, self.snapshot(), 0, None]  # f, state, iteration, gap (if known)
        try:
            while status is None:
                f, g = self.evaluate()
                if f <= best[0]:
                    best = [f, self.snapshot(), k, None]
                gap, criterion, info = self.probe(g)
                if not math.isfinite(gap):
                    raise ValueError(f"the FW gap is {gap}; the gradient must be finite on the domain")
                if best[2] == k:
                    best[3] = gap
                rec = IterationRecord(k, self.elapsed(), f, gap, self.delta, step, self.n_active,
                                      self.n_oracle_calls)
                if self.keep_trace:
                    records.append(rec)
                proceed = self.callback is None or self.callback(rec) is not False
                if criterion <= self.tol:
                    status = Status.CONVERGED
                elif k >= self.max_iter or (self.max_oracle_calls is not None
                                            and self.n_oracle_calls >= self.max_oracle_calls):
                    status = Status.MAX_ITER
                elif self.out_of_time():
                    status = Status.MAX_TIME
                elif not proceed:
                    status = Status.INTERRUPTED
                else:
                    step = self.step(g, info)
                    k += 1
        except KeyboardInterrupt:
            status = Status.INTERRUPTED
        if status is not Status.CONVERGED:
            self.restore(best[1])
            self.moved()
            f, gap = best[0], best[3]
            if gap is None:  # the final gap (and f) are always fresh
                f, g = self.evaluate()
                gap = self.probe(g)[0]
        atoms, weights = self.active_arrays()
        return FWResult(x=self.x.copy(), atoms=atoms, weights=weights, primal=f, gap=gap,
                        status=status, n_iter=k, n_oracle_calls=self.n_oracle_calls,
                        time=self.elapsed(), delta=self.delta, variant=self.variant,
                        trace=tuple(records), x_avg=getattr(self, "x_avg", None))


# -- FW, away-step, pairwise and fully-corrective FW --------------------------------------

class _ActiveSetFW(_Run):

    def __init__(self, objective, domain, variant, rule, init, delta, delta_rule, drop_tol,
                 refresh_every, inner_max_iter, inner_tol, max_vertices, debug, correct_every=1,
                 initial_correction=False, local_steps=0, approximate_lmo=False,
                 correction_work=None, **run_options):
        super().__init__(objective, rule, **run_options)
        self.domain, self.variant = domain, variant
        self.vertices = Vertices(domain, delta)
        self.delta_rule = delta_rule
        self.drop_tol, self.refresh_every = drop_tol, refresh_every
        self.inner_max_iter, self.correction_work = inner_max_iter, correction_work
        self.inner_tol = self.tol if inner_tol is None else inner_tol
        self.max_vertices, self.debug = max_vertices, debug
        self.correct_every, self.local_steps = correct_every, local_steps
        self.approximate_lmo = approximate_lmo
        self.correction_gap = 0.0
        self.n_steps = 0
        self.active = self._initial_active_set(init)
        self.x = self.vertices.dense(self.active.atoms, self.active.weights)
        if initial_correction:  # Barrier FW Alg. 2 line 23: re-correct a warm start first
            self._correct()

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
            raise ValueError("init uses the interior point u0 (a row of -1) but the domain has no u0")
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
        gap = gap_full if self.delta_rule is not None else gap_delta
        criterion = gap
        if self.variant in ("away", "pairwise"):
            w = self.active.weights
            scores = self.vertices.scores(g, self.active.atoms)
            criterion = gap + float(scores[w > 0.0].max()) - gx
        return gap, criterion, (s, gap_full, uniform_gap)

    # steps -------------------------------------------------------------------------------

    def step(self, g, info):
        s, gap_full, uniform_gap = info
        rule_gap = gap_full
        if self.approximate_lmo:  # Barrier FW Sec. 4: max(last correction gap, gap)
            rule_gap = max(gap_full, self.correction_gap)
        if self.delta_rule is not None and rule_gap > 0.0:
            new = float(self.delta_rule(self.vertices.delta, rule_gap, uniform_gap))
            if not 0.0 <= new <= self.vertices.delta:
                raise ValueError(f"delta_rule returned {new}; it must lie in [0, {self.vertices.delta}]")
            if new < self.vertices.delta:  # Barrier FW eq. 6: x stays, weights move to u0
                self.active.contract(self.vertices.delta, new)
                self.vertices.delta = new
        if self.variant == "fcfw":
            kind = self._fcfw_step(g, s, gap_full)
        elif self.variant == "fw":
            kind = self._fw_step(g, self.active.add(s))
            self._purge(keep_atoms=False)
        else:
            i_s = self.active.add(s)
            scores = self.vertices.scores(g, self.active.atoms)
            kind = (self._away_step if self.variant == "away" else self._pairwise_step)(g, i_s, scores)
            self._purge(keep_atoms=False)
        self.n_steps += 1
        if self.n_steps % self.refresh_every == 0:
            self.active.renormalize()
            self.x = self.vertices.dense(self.active.atoms, self.active.weights)
            self.moved()
        if self.debug:
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

    def _purge(self, keep_atoms):
        if self.active.purge(self.x, self.vertices, self.drop_tol, keep_atoms):
            self.moved()

    def _fw_step(self, g, i_s, iteration=None):
        d = self._vertex(i_s) - self.x
        gamma = self._move(g, d, 1.0, self.n_steps if iteration is None else iteration)
        self.active.fw_update(i_s, gamma)
        return StepType.FW

    def _away_step(self, g, i_s, scores, iteration=None):
        """Barrier FW Alg. 3 lines 10-17: FW or away direction, whichever has the larger gap."""
        w = self.active.weights
        gx = float(g @ self.x)
        i_v = int(np.argmax(np.where(w > 0.0, scores, -np.inf)))
        if gx - scores[i_s] >= scores[i_v] - gx or w[i_v] >= 1.0 - 1e-15:
            return self._fw_step(g, i_s, iteration)
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
        s joins the correction polytope V, then (every ``correct_every`` steps) MFW over
        conv(V_delta), then ``local_steps`` FW steps with ``domain.local_lmo`` (Alg. 6)."""
        if self.max_vertices is not None and self.active.find(s) < 0:
            self._forget_vertices(g, self.max_vertices - 1)
        self._fw_step(g, self.active.add(s))
        self._purge(keep_atoms=True)
        if (self.n_steps + 1) % self.correct_every == 0:
            self._correct(gap)
        self._local_search(s)
        return StepType.CORRECTION

    def _correct(self, gap=math.inf):
        """Barrier FW Alg. 5: MFW (Alg. 3) over conv(V_delta) until its pFW gap is <= the
        inner tolerance (a number, or ``inner_tol(gap)`` of the last FW gap) or
        inner_max_iter steps (fewer when ``correction_work`` caps them); the last pFW gap is
        kept in ``correction_gap``. Returns the number of steps taken."""
        max_steps = self.inner_max_iter
        if self.correction_work is not None:  # each step scores all |V| atoms: O(|V| dim)
            per_step = len(self.active) * self.domain.dim
            max_steps = min(max_steps, max(10, math.ceil(self.correction_work / per_step)))
        if max_steps == 0:
            return 0
        tol = self.inner_tol(gap) if callable(self.inner_tol) else self.inner_tol
        for t in range(max_steps + 1):
            _, g = self.evaluate()
            scores = self.vertices.scores(g, self.active.atoms)
            w = self.active.weights
            self.correction_gap = float(scores[w > 0.0].max() - scores.min())
            if self.correction_gap <= tol or t == max_steps or self.out_of_time():
                return t
            self._away_step(g, int(np.argmin(scores)), scores, iteration=t)
            self._purge(keep_atoms=True)

    def _local_search(self, s):
        """Barrier FW Alg. 6: FW steps over D_delta whose vertices come from the approximate
        ``domain.local_lmo(g, previous vertex)``; each joins V. Stops early when a step
        makes no progress (the next search would start from the same point)."""
        for t in range(self.local_steps):
            if self.out_of_time():
                break
            _, g = self.evaluate()
            s = np.ascontiguousarray(self.domain.local_lmo(g, s), dtype=np.int32)
            if self.max_vertices is not None and self.active.find(s) < 0:
                self._forget_vertices(g, self.max_vertices - 1)
            i_s = self.active.add(s)
            before = self.active.weights[i_s]
            self._fw_step(g, i_s, iteration=t)
            self._purge(keep_atoms=True)
            if self.active.weights[i_s] == before:
                break

    def _forget_vertices(self, g, keep):
        """Cap |V|: forget zero-weight vertices, worst score first (weighted ones stay)."""
        w = self.active.weights
        idle = np.flatnonzero(w == 0.0)
        excess = self.active.size - keep
        if excess > 0 and idle.size:
            scores = self.vertices.scores(g, self.active.atoms[idle])
            for i in sorted(idle[np.argsort(-scores)[:excess]], reverse=True):
                self.active.remove(int(i))


def frank_wolfe(objective, domain, *, variant="fw", step="exact", tol=1e-6, max_iter=1000,
                max_oracle_calls=None, max_time=None, callback=None, init=None, delta=0.0,
                delta_rule=None, drop_tol=1e-12, refresh_every=100, inner_max_iter=100,
                inner_tol=None, max_vertices=None, correct_every=1, initial_correction=False,
                local_steps=0, approximate_lmo=False, correction_work=None, trace=True,
                debug=False):
    """Minimise a convex ``objective`` over ``domain`` (or its contraction D_delta).

    variant : 'fw' (vanilla), 'away' (MFW, Barrier FW Alg. 3), 'pairwise', 'fcfw' (FW step
        then MFW correction over the visited vertices, Barrier FW Alg. 4).
    step : 'exact' (default), 'agnostic' (2/(k+2)), 'quadratic', or a rule
        ``rule(objective, x, d, grad, gamma_max, iteration)`` (linesearch.py).
    tol : stop when the freshly computed gap is <= tol (pFW gap for away/pairwise). The gap
        is over D_delta for a fixed delta > 0 and over D when delta is 0 or adapted.
    max_iter, max_oracle_calls, max_time (seconds) : budgets, checked between iterations;
        ``callback(record)`` returning False or Ctrl-C stops with status INTERRUPTED. Unless
        converged, the iterate with the lowest f seen is returned, its gap recomputed.
    init : None (u0 when the domain has one, else the vertex lmo(0)), an atom, an
        ``(atoms, weights)`` pair or an `ActiveSet` (warm start).
    delta, delta_rule : contraction towards ``domain.u0``; ``delta_rule(delta, gap,
        uniform_gap) -> new delta`` (e.g. `adaptive_delta`) may shrink it each iteration,
        re-weighting by Barrier FW eq. 6.
    drop_tol : weights <= drop_tol are dropped (x moved to the remaining atoms' hull).
    refresh_every : renormalise the weights and recompute x from the atoms this often.
    inner_max_iter, inner_tol, max_vertices : FCFW correction budget, pFW tolerance (default
        tol; or a callable ``inner_tol(gap)`` of the last FW gap) and cap on |V| (zero-weight
        vertices are forgotten first).
    correct_every : FCFW runs the correction after every ``correct_every``-th FW step.
    correction_work : cap a correction at correction_work / (|V| dim) steps (at least 10,
        at most inner_max_iter): each step scores every atom of V, so on large models this
        bounds its cost by about that many flops. None: no cap.
    initial_correction : FCFW corrects the initial active set before the first oracle call
        (warm starts, Barrier FW Alg. 2 line 23).
    local_steps : FCFW local search (Barrier FW Alg. 6): up to this many FW steps after each
        correction with vertices from ``domain.local_lmo(g, s)`` (an approximate, warm-started
        oracle), which join V.
    approximate_lmo : the domain's lmo is approximate; ``delta_rule`` then gets
        max(gap, last correction pFW gap) (Barrier FW Sec. 4), and delta is kept while that
        is <= 0.
    debug : check the active-set invariants after every step (AssertionError if broken).
    """
    _check_objective(objective)
    _check_domain(domain)
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    _check_params(tol=tol, max_iter=max_iter, max_oracle_calls=max_oracle_calls,
                  max_time=max_time, delta=delta, drop_tol=drop_tol, refresh_every=refresh_every,
                  inner_max_iter=inner_max_iter, max_vertices=max_vertices,
                  correct_every=correct_every, local_steps=local_steps,
                  correction_work=correction_work)
    if not callable(inner_tol):
        _check_params(inner_tol=inner_tol)
    if local_steps and not callable(getattr(domain, "local_lmo", None)):
        raise ValueError("local_steps > 0 needs a domain with local_lmo(g, atom)")
    _check_callable(callback, "callback", "callback(record) -> bool")
    _check_callable(delta_rule, "delta_rule", "delta_rule(delta, gap, uniform_gap) -> delta")
    if (delta > 0 or delta_rule is not None) and getattr(domain, "u0", None) is None:
        raise ValueError("delta > 0 and delta_rule need an interior point: give the domain a u0")
    run = _ActiveSetFW(objective, domain, variant, make_step_rule(step), init, delta, delta_rule,
                       drop_tol, int(refresh_every), int(inner_max_iter), inner_tol, max_vertices,
                       bool(debug), int(correct_every), bool(initial_correction), int(local_steps),
                       bool(approximate_lmo), correction_work, tol=tol, max_iter=max_iter,
                       max_oracle_calls=max_oracle_calls,
                       max_time=max_time, callback=callback, trace=trace)
    return run.run()


def correct(objective, domain, init, *, delta=0.0, tol=1e-6, max_iter=100, max_time=None,
            correction_work=None, step="exact"):
    """Barrier FW Alg. 5 on its own: MFW (away steps, Alg. 3) over the contracted hull
    conv(V_delta) of the atoms of ``init`` (an ``(atoms, weights)`` pair or an `ActiveSet`),
    without oracle calls, until the pFW gap over that hull is <= ``tol``, ``max_iter`` steps
    or ``max_time`` seconds (``correction_work`` as in `frank_wolfe`). Returns an `FWResult`
    whose ``gap`` is that pFW gap (not a gap over the domain) and ``n_oracle_calls`` is 0."""
    _check_objective(objective)
    _check_domain(domain)
    _check_params(tol=tol, max_iter=max_iter, max_time=max_time, delta=delta,
                  correction_work=correction_work)
    if delta > 0 and getattr(domain, "u0", None) is None:
        raise ValueError("delta > 0 needs an interior point: give the domain a u0")
    run = _ActiveSetFW(objective, domain, "fcfw", make_step_rule(step), init, delta, None, 1e-12,
                       100, int(max_iter), tol, None, False, correction_work=correction_work,
                       tol=tol, max_iter=0, max_oracle_calls=None, max_time=max_time,
                       callback=None, trace=False)
    n_steps = run._correct()
    f, _ = run.evaluate()
    atoms, weights = run.active_arrays()
    status = Status.CONVERGED if run.correction_gap <= tol else \
        Status.MAX_TIME if run.out_of_time() else Status.MAX_ITER
    return FWResult(x=run.x.copy(), atoms=atoms, weights=weights, primal=f,
                    gap=run.correction_gap, status=status, n_iter=n_steps, n_oracle_calls=0,
                    time=run.elapsed(), delta=run.delta, variant="correction", trace=())


# -- block-coordinate FW ----------------------------------------------------------------

class _BlockFW(_Run):
    """FW variants review Alg. 3 (BCFW): one FW step on a random block at a time; one
    iteration is a pass over all blocks in a random order."""

    variant = "bcfw"
    delta = 0.0
    n_active = 0

    def __init__(self, objective, domain, rule, seed, averaging, **run_options):
        super().__init__(objective, rule, **run_options)
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


def block_coordinate_frank_wolfe(objective, domain, *, step="exact", tol=1e-6, max_iter=1000,
                                 max_oracle_calls=None, max_time=None, callback=None, seed=0,
                                 averaging=True, trace=True):
    """Block-coordinate FW over a `ProductDomain` (FW variants review Alg. 3).

    One iteration is a pass over the blocks in a random order drawn from ``seed``; after each
    pass the full gap is computed fresh (one oracle call per block) and checked against
    ``tol``. With the 'agnostic' step the step size is 2n/(k+2n) after k block steps.
    ``averaging`` keeps x_avg = weighted average of the iterates (weights 2/(k+2)). Other
    arguments as in `frank_wolfe`."""
    _check_objective(objective)
    if not isinstance(domain, ProductDomain):
        raise TypeError(f"block_coordinate_frank_wolfe needs a ProductDomain; got {type(domain).__name__}")
    _check_params(tol=tol, max_iter=max_iter, max_oracle_calls=max_oracle_calls, max_time=max_time)
    _check_callable(callback, "callback", "callback(record) -> bool")
    run = _BlockFW(objective, domain, make_step_rule(step), seed, bool(averaging), tol=tol,
                   max_iter=max_iter, max_oracle_calls=max_oracle_calls, max_time=max_time,
                   callback=callback, trace=trace)
    return run.run()
