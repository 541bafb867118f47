"""Marginal inference by Barrier Frank-Wolfe (Krishnan, Lacoste-Julien & Sontag 2015):
`barrier_fw` (the method "barrier-fw" of `fwcore.infer`), returning a
`fwcore.marginals.MarginalResult`.

It maximises the TRW objective (Barrier FW eq. 1-2, `fwcore.marginals.trw`) over the marginal
polytope M (or the local polytope L) with MAP calls: FCFW over the contraction M_delta
with adaptive or fixed delta (Alg. 1, 4), MFW corrections over the visited vertices
(Alg. 3, 5: `fwcore.fw.MFWCorrection`), ICM local search (Alg. 6: `fwcore.fw.LocalSearch`),
and the outer loop over the spanning-tree polytope (Alg. 2, here). The generic engine is
`fwcore.fw.frank_wolfe`; this module supplies the two polytopes as engine domains
(`MarginalPolytope`, `LocalPolytope`) and the rho loop.

Choices the paper's code left implicit, fixed here by measurement (bench/benchmarks/infer.py):
delta is carried across rho updates (not reset to delta_init); the MFW correction runs after
every FW step with at most 100 away steps and pFW tolerance 0.05 when the last FW gap is
< 1, else 0.5; after a rho update the iterate is re-corrected before the first MAP call;
each rho update takes the step that minimises the bound along it (trial steps re-optimise mu
by corrections only), not the fixed 2/(i+3) of Alg. 2 line 21, which stays as an option;
the runs that only steer rho stop at the paper's gap 0.5 and the last one at 0.01; ICM
local search is on by default (the paper used it on real-world models only): with it the
MAP calls on the paper's instances are below its code's, without it about 1.5x above.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _kernels
from ..auto import TIME_SHARES, barrier_fw_oracle
from ..checks import (BOOL, CALLABLE, SEED, TIME, Interval, Options, check_bound_feasible,
                      check_feasible, check_model, checked_inside, finite_penalty,
                      validate_params)
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..fw import (U0_ATOM, Domain, FWResult, LocalSearch, MFWCorrection, adaptive_delta,
                  correct, frank_wolfe, safeguarded_newton)
from ..loop import Callbacks, Deadline, Guard, Stopping, TimeUp, run_loop
from ..model import PairwiseMRF
from ..oracles.base import LPOracle, build_oracle
from ..results import Status
from .mean_field import mean_field
from .registry import register_method, run_method
from .result import MarginalResult, Recorder
from .rho import edge_mutual_information, initial_rho, rho_direction
from .trw import TRWObjective
from .trw_dual import pass_budget, trw_dual_bound

__all__ = ["barrier_fw", "MarginalPolytope", "LocalPolytope", "BARRIER_FW"]

#: MFW correction budget (paper code: <= 100 steps)
_CORRECTION_STEPS = 100
#: at most this many flops (|V| dim per step) per correction, and at least 10 steps: leaves
#: the paper's models untouched, 3-5x faster on 100x100 grids and Segmentation_11
_CORRECTION_WORK = 2e8
#: cap on the correction polytope |V| (engine ``max_vertices``): each correction step scores
#: every vertex, so without it a FW iteration costs |V| x the model and |V| grows by up to
#: the local-search steps per iteration. The paper's instances stay below it (at most 217
#: vertices on the 5x5 grids), so their runs are unchanged.
_MAX_VERTICES = 256
#: rho line search: relative tolerance on B' and bracket, and most corrections per update
_RHO_LINE_SEARCH_TOL = 0.01
_RHO_LINE_SEARCH_STEPS = 8
#: ICM sweeps per local-search vertex and local-search steps when ``local_search=True``
_ICM_SWEEPS = 100
_LOCAL_STEPS = 30

def _correction_tol(gap):
    """pFW tolerance of a correction: 0.5 when the last FW gap is >= 1, else 0.05 (the
    paper code's), tightened to gap / 10 below gap 0.5 so that tight ``tol`` converge."""
    return 0.5 if gap >= 1.0 else min(0.05, 0.1 * gap)


# -- the two polytopes as engine domains ----------------------------------------------------

class _OraclePolytope(Domain):
    """A polytope whose lmo is an oracle call given the time left before ``deadline``;
    ``slack`` is what the last call proves: a certified bound on its max score minus its
    vertex's score (0 from a complete exact call; None: nothing proven)."""

    deadline = Deadline()
    slack = None

    def time_left(self):
        """Seconds before ``deadline`` (None: none): the next oracle call's time limit."""
        left = self.deadline.seconds_left()
        return None if left is None else max(left, 1e-2)

    def max_score(self, scores):
        """(the score of an lmo vertex, a certified bound on the max score or None) for
        the App. J bound."""
        score = float(self.inner(scores, self.lmo(-scores)[None, :])[0])
        return score, (None if self.slack is None else score + self.slack)


class MarginalPolytope(_OraclePolytope):
    """M for the engine: atoms are assignments, the lmo is a MAP oracle on -grad (warm
    started at the last vertex when approximate, each call given the time left before
    ``deadline``), inner products and vertices by the `score_assignments`,
    `add_assignment` and `add_vertices` kernels; `local_lmo` is ICM warm-started at a
    vertex (Alg. 6)."""

    def __init__(self, model, oracle, seed):
        self.model, self.oracle = model, oracle
        self.dim, self.atom_size = model.dim, model.n_vars
        self.u0 = model.uniform_marginals()
        self.exact = oracle.exact
        self.n_icm_calls = 0
        self._last = None
        self._rng = np.random.default_rng(0 if seed is None else seed)

    def lmo(self, g):
        init = None if self.oracle.exact else self._last
        self._last = self.oracle.argmax(-g, init=init, time_limit=self.time_left())
        self.slack = self._slack(float(self.inner(-g, self._last[None, :])[0]))
        return self._last

    def inner(self, g, atoms):
        out = np.empty(atoms.shape[0])
        _kernels.score_assignments(np.ascontiguousarray(g), self.model.graph,
                                   np.ascontiguousarray(atoms, dtype=np.int32), out)
        return out

    def add(self, x, atom, w):
        _kernels.add_assignment(x, self.model.graph, atom, w)

    def add_vertices(self, x, atoms, weights, delta):
        _kernels.add_vertices(x, self.model.graph, atoms, weights, self.u0, delta)

    def local_lmo(self, g, atom):
        x = np.array(atom, dtype=np.int32)
        self.n_icm_calls += 1
        _kernels.icm(np.ascontiguousarray(-g), self.model.graph, x, _ICM_SWEEPS, None,
                     int(self._rng.integers(2**62)))
        return x

    def last_call_exact(self):
        """Did the last oracle call return a true maximiser (exact oracle, not timed out)?"""
        return self.oracle.exact and self.oracle.status is not Status.MAX_TIME

    def _slack(self, score):
        """Certified bound on the last call's max score minus ``score`` (its vertex's): the
        oracle's bound, or 0 from a complete exact call; None when nothing is proven."""
        kappa = self.oracle.upper_bound()
        if kappa is not None and math.isfinite(kappa):
            return max(float(kappa) - score, 0.0)
        return 0.0 if self.last_call_exact() else None


class LocalPolytope(_OraclePolytope):
    """L for the engine: atoms index the dense LP vertices returned so far (an `LPOracle`,
    HiGHS); the LP is solved exactly, so the FW gap over L is a certificate. A call that
    HiGHS stopped at its time limit has no vertex: `lmo` raises `fwcore.loop.TimeUp` (the
    point it returns, u0, would give a gap that is no gap: −2.8e7 on a 40x40 plaquette
    factor graph)."""

    atom_size = 1

    def __init__(self, model, oracle):
        self.model, self.oracle = model, oracle
        self.dim = model.dim
        self.u0 = model.uniform_marginals()
        self.n_icm_calls = 0
        self._vertices, self._index = [], {}

    def lmo(self, g):
        v = self.oracle.argmax_marginals(-g, time_limit=self.time_left())
        if not self.last_call_exact():
            raise TimeUp
        self.slack = 0.0
        key = np.round(v, 12).tobytes()
        if key not in self._index:
            self._index[key] = len(self._vertices)
            self._vertices.append(v)
        return np.array([self._index[key]], dtype=np.int32)

    def inner(self, g, atoms):
        return np.array([self._vertices[a] @ g for a in atoms[:, 0]])

    def add(self, x, atom, w):
        x += w * self._vertices[atom[0]]

    def last_call_exact(self):
        return self.oracle.status is not Status.MAX_TIME



def _make_domain(model, oracle, domain, seed):
    """The polytope over which Barrier FW runs, with the oracle `barrier_fw_oracle` names."""
    spec = barrier_fw_oracle(oracle, domain)
    if domain == "local":
        lp = build_oracle(spec, model)
        if not isinstance(lp, LPOracle):
            raise ValueError("domain='local' uses the local-polytope LP: give oracle='auto', "
                             f"'exact' or 'lp' (or a fwcore.oracles.LPOracle); got {oracle!r}")
        return LocalPolytope(model, lp)
    resolved = build_oracle(spec, model, seed=seed)
    if isinstance(resolved, LPOracle):
        raise ValueError("oracle='lp' optimises over the local polytope: use domain='local'")
    return MarginalPolytope(model, resolved, seed)


# -- the run of Barrier FW (Alg. 2): set-up, rho loop, certification ----------------------

@dataclass
class _BarrierFWRun:
    """What the steps of one Barrier FW run (Alg. 2) share. Settings: ``tol`` ends the
    last inner run, ``rho_tol`` the ones before it; ``deadline`` is the call's (its
    ``elapsed()`` the run's time) and ``fw_deadline`` the FW steps' (a share of it with an
    approximate oracle: the rest goes to the tree-decomposition bound). `_set_up` adds
    the model with finite penalties, the TRW ``objective``, the polytope ``dom`` with its
    oracle and the trace ``recorder``. State of the rho loop: the current ``rho``, the
    last inner run that measured a gap (``res``, at ``res_rho``; None before one), the
    oracle calls and FCFW iterations so far, the rho iteration ``outer`` and the
    ``status``."""

    model: PairwiseMRF
    given: object  # `check_feasible`'s answer on the model as given
    domain: str
    tol: float
    rho_tol: float
    max_iter: int
    rho_updates: int
    rho_step: str
    correction: bool
    local_steps: int
    adaptive: bool
    delta0: float
    deadline: Deadline
    fw_deadline: Deadline | None = None
    objective: TRWObjective | None = None
    dom: _OraclePolytope | None = None
    recorder: Recorder | None = None
    guard: Guard = field(default_factory=Guard)
    rho: np.ndarray | None = None
    res: FWResult | None = None
    res_rho: np.ndarray | None = None
    calls: int = 0
    n_iter: int = 0
    outer: int = 0
    status: Status = Status.CONVERGED


def _set_up(run, oracle, entropy, rho, seed, callbacks):
    """Alg. 2 lines 1-3: a finite penalty for impossible states, the initial rho, the
    polytope with its oracle (whose ``u0`` starts the first inner run) and deadline, the
    trace recorder and the TRW objective."""
    model = run.model
    run.given = check_feasible(model)
    if np.isneginf(model.theta).any():
        log_states = float(np.log(model.card.astype(np.float64)).sum())
        model = run.model = model.with_theta(finite_penalty(model, model.theta,
                                                            50.0 + log_states))
    run.rho = run.res_rho = initial_rho(model, rho, entropy)
    # the oracle is built for the model as given: it penalises -inf scores itself, and
    # checks the user's values, not the penalty (which may exceed what a model may hold)
    dom = run.dom = _make_domain(run.given, oracle, run.domain, seed)
    # an approximate oracle leaves a share of the time to the tree-decomposition bound
    run.fw_deadline = dom.deadline = (
        run.deadline if dom.exact else
        run.deadline.share(1 - TIME_SHARES["barrier-fw/tree-decomposition bound"]))
    # with adaptive delta a record's gap is over M (or L): TRW + gap + slack bounds log Z
    run.recorder = Recorder(callbacks, run.deadline,
                            slack=(lambda: dom.slack) if run.adaptive else None)
    run.objective = TRWObjective(model, run.rho)


def _rho_loop(run):
    """Alg. 2 lines 4-24 on `fwcore.loop.run_loop`: each step is an inner FCFW run at the
    current rho (`_inner_run`), then, but after the last, a FW step on rho (`_rho_step`,
    lines 20-23). The loop stops when the FW time is up (no rho update then: its
    spanning forest alone takes ~1 s on a 200x200 grid), at Ctrl-C, or when an inner run
    ends the run (its last, or one stopped early); ``run.res`` is the last run that
    measured a gap and ``run.status`` how the run ended."""
    finished = []

    def step(k):
        i = k - 1
        run.objective.set_rho(run.rho)
        run.outer = run.recorder.outer = i
        run.recorder.calls_before = run.calls
        last = i == run.rho_updates
        res = _inner_run(run, last)
        run.calls += 0 if res is None else res.n_oracle_calls
        if res is None or math.isinf(res.gap):
            # stopped before this run measured a gap: Ctrl-C, or max_time in its first call
            run.status = Status.INTERRUPTED if res is None else res.status
            finished.append(True)
            return
        run.res, run.res_rho = res, run.rho
        run.n_iter += res.n_iter
        run.status = res.status
        if run.status in (Status.MAX_TIME, Status.INTERRUPTED) or last:
            finished.append(True)
            return
        if run.fw_deadline.passed():
            run.status = Status.MAX_TIME
            finished.append(True)
            return
        rho = _rho_step(run)
        if rho is None:
            run.status = Status.INTERRUPTED
            finished.append(True)
            return
        run.rho = rho

    outcome = run_loop(lambda k: (None, 0.0 if finished else math.inf), step,
                       Stopping(run.rho_updates + 1, deadline=run.fw_deadline),
                       Callbacks(trace=False), measure_start=False, guard=run.guard)
    if outcome.status in (Status.MAX_TIME, Status.INTERRUPTED) and not finished:
        run.status = outcome.status


def _inner_run(run, last):
    """One inner run (Alg. 2 lines 5-19): FCFW over M_delta (Alg. 4, with the corrections
    of Alg. 5-6) to ``tol`` when ``last``, else ``rho_tol``, within the FW time; warm
    started from the last active set (line 22), delta carried over (the paper code also
    halved it after each inner run: measured, no better marginals and more MAP calls).
    None on Ctrl-C."""
    res = run.res
    steps = _corrections(run, warm=res is not None)
    return run.guard(frank_wolfe, run.objective, run.dom, method="fcfw",
                     tol=run.tol if last else run.rho_tol, max_iter=run.max_iter,
                     max_time=_positive(run.fw_deadline.seconds_left()),
                     callback=run.recorder,
                     init=None if res is None else (res.atoms, res.weights),
                     delta=run.delta0 if res is None else res.delta,
                     delta_rule=_delta_rule(not run.dom.exact, steps) if run.adaptive else None,
                     corrections=steps, max_vertices=_MAX_VERTICES, trace=False)


def _positive(seconds):
    """A duration for a call that takes max_time (at least 1 ms; None: no limit)."""
    return None if seconds is None else max(seconds, 1e-3)


def _rho_step(run):
    """The FW step on rho after inner run ``run.outer`` (Alg. 2 lines 20-21): the fixed
    step 2/(i+3) or `_rho_line_search`; None on Ctrl-C."""
    if run.rho_step == "fixed":
        return run.rho + 2.0 / (run.outer + 3.0) * rho_direction(run.model, run.res.x, run.rho)
    return run.guard(_rho_line_search, run)


def _rho_line_search(run):
    """The FW step on rho (Alg. 2 lines 20-21) with the step minimising B(a) =
    max_mu TRW(mu; rho + a d), d = vertex - rho (the paper code's 'linesearch' option). B
    is convex with B'(a) = -<d, I(mu*(rho + a d))> (edge mutual informations at the
    maximiser, eq. 2), and mu* is re-optimised by a correction over the vertices found so
    far (Alg. 5): no MAP call. Root of B' by `safeguarded_newton` until |B'| <= 1% of
    |B'(0)| or the bracket is below 1%, with at most 8 corrections. When a correction stops
    (capped, on large models) with a gap over the hull above ``rho_tol``, its B' is
    biased towards long steps: the fixed step 2/(i+3) is taken instead."""
    model, res, rho = run.model, run.res, run.rho
    d = rho_direction(model, res.x, rho)
    resolved = []
    correction = MFWCorrection(_CORRECTION_STEPS, tol=run.tol, work=_CORRECTION_WORK,
                               kernel=_correction_kernel(run))

    def dphi(a):
        run.objective.set_rho(rho + a * d)
        c = correct(run.objective, run.dom, (res.atoms, res.weights), correction,
                    delta=res.delta, max_time=_positive(run.fw_deadline.seconds_left()))
        resolved.append(c.gap <= run.rho_tol)
        return -float(d @ edge_mutual_information(model, c.x)), None

    a = safeguarded_newton(dphi, -float(d @ edge_mutual_information(model, res.x)), 1.0,
                           tol=_RHO_LINE_SEARCH_TOL, max_iter=_RHO_LINE_SEARCH_STEPS)
    return rho + (a if all(resolved) else 2.0 / (run.outer + 3.0)) * d


def _corrections(run, warm):
    """The FCFW corrective steps of one inner run: the MFW correction (Alg. 5; also on the
    warm start, Alg. 2 line 23) and the ICM local search (Alg. 6)."""
    steps = []
    if run.correction:
        steps.append(MFWCorrection(_CORRECTION_STEPS, tol=_correction_tol,
                                   work=_CORRECTION_WORK, initial=warm,
                                   kernel=_correction_kernel(run)))
    if run.local_steps:
        steps.append(LocalSearch(run.dom.local_lmo, run.local_steps))
    return steps


def _correction_kernel(run):
    """The MFW correction in one kernel call over M (atoms are assignments); None over L."""
    return run.objective.correction if isinstance(run.dom, MarginalPolytope) else None


def _delta_rule(approximate, steps):
    """Alg. 1; with an approximate oracle the gap it sees is max(last correction gap, gap)
    (Barrier FW Sec. 4), as the paper does."""
    if not approximate:
        return adaptive_delta
    corr = [s for s in steps if isinstance(s, MFWCorrection)]

    def rule(delta, gap, uniform_gap):
        return adaptive_delta(delta, max(gap, corr[0].last_gap if corr else 0.0), uniform_gap)
    return rule


_OPTIONS = {
    "oracle": checked_inside("a MAP oracle (fwcore.resolve_oracle)"),
    "domain": Options("marginal", "local"),
    "delta": [Options("adaptive"), Interval(0.0, 0.25, lo_open=True)],
    "delta_init": Interval(0.0, 0.25, lo_open=True),
    "correction": BOOL,
    "local_search": [BOOL, Interval(0, integer=True)],
    "entropy": Options("trw"),
    "rho": checked_inside("edge weights (fwcore.marginals.rho)"),
    "rho_updates": Interval(0, integer=True),
    "rho_step": Options("line-search", "fixed"),
    "tol": Interval(0.0, lo_open=True),
    "rho_tol": Interval(0.0, lo_open=True),
    "seed": SEED,
}
_PARAMS = {**_OPTIONS, "max_iter": Interval(0, integer=True), "max_time": TIME,
           "callback": [CALLABLE, None], "verbose": BOOL}
del _PARAMS["oracle"], _PARAMS["rho"]
#: FCFW iterations per inner run unless max_iter is given
_MAX_ITER = 1000


@validate_params(_PARAMS, unchecked=("model", "oracle", "rho"))
def barrier_fw(model: PairwiseMRF | FactorGraph, *, oracle="auto", domain: str = "marginal",
               delta: str | float = "adaptive", delta_init: float = 1e-3,
               correction: bool = True, local_search: bool | int = True,
               entropy: str = "trw", rho: str | float | np.ndarray | None = None,
               rho_updates: int = 10, rho_step: str = "line-search", tol: float = 0.01,
               rho_tol: float = 0.5, max_iter: int = _MAX_ITER,
               max_time: float | None = None, callback=None, seed: int | None = None,
               verbose: bool = False) -> MarginalResult:
    """Marginals and an upper bound on log Z by Barrier Frank-Wolfe (Krishnan,
    Lacoste-Julien & Sontag 2015, Alg. 2): TRW over the marginal polytope M (or the local
    polytope L) with MAP calls. ``fwcore.infer(model, method="barrier-fw", ...)`` is the
    same call.

    oracle : the MAP oracle. "auto" (default): the approximate "portfolio" oracle over M,
        the LP over L; "exact" (the cheapest exact MAP oracle,
        `fwcore.oracles.exact_choice`), a registered name (``fwcore.available_oracles()``),
        ``(name, options)``, a `MapOracle` or a function ``scores -> assignment`` (see
        `fwcore.oracles.resolve_oracle`). Approximate oracles use max(correction gap, gap)
        in Alg. 1 (Barrier FW Sec. 4).
    domain : "marginal" (M, MAP oracle) or "local" (L, the LP oracle: TRW over L, the
        fixed point of tree-reweighted BP).
    delta : "adaptive" (Alg. 1 from ``delta_init``, in (0, 1/4]) or a fixed contraction in
        (0, 1/4]. correction : MFW corrections over the visited vertices (Alg. 4-5).
    local_search : True (up to 30 ICM-driven FW steps after each correction, Alg. 6), False
        or a number of steps; its vertices cost no MAP call (on the paper's instances it
        halves the MAP calls). Ignored over L. seed : ICM visiting order (None: 0, so runs
        are reproducible); also passed to oracles that take one.
    entropy : "trw", the tree-reweighted entropy of eq. 1 (the one whose maximum bounds
        log Z). rho : its edge weights (`fwcore.marginals.rho`): None or "matrix-tree"
        (uniform spanning trees), "coupling" (trees weighted by edge coupling strength, the
        paper code's choice), "uniform", a function model -> rho, or an array in the
        spanning-tree polytope. rho_updates : outer FW steps on rho (Alg. 2 lines 20-23).
    rho_step : "line-search" (the step minimising the bound, each trial step re-optimising
        mu over the vertices found so far, no MAP call; the paper code's option) or "fixed"
        (2 / (i + 3), Alg. 2 line 21). Measured on the paper's instances: line search gives
        better marginals and bounds on every family for the same MAP calls.
    tol : float
        FW gap (nats, absolute) ending the last inner run, whose answer is returned.
    rho_tol : FW gap ending the inner runs before it, which only steer rho (the paper's 0.5
        throughout; measured on its instances, a tight last run gives better marginals and
        bounds for fewer MAP calls than one tolerance for all). max_iter : FCFW iterations
        per inner run; max_time (seconds; each oracle call gets the time left) and
        ``callback(record)`` returning False stop with the best iterate so far (status
        max_time / interrupted). Ctrl-C (SIGINT) anywhere in the loop returns the best
        iterate so far with status interrupted, without another oracle call: ``gap`` is
        the last one measured there (inf if none) and ``certified`` False; so does
        max_time.

    Impossible states (theta = -inf) get a finite penalty that changes log Z by at most
    e^-50 (`fwcore.checks.finite_penalty`), so the bound stays valid for the given model.
    A model with no feasible assignment raises ValueError: at the start when arc
    consistency finds it (`fwcore.checks.check_feasible`), at the end when the certified
    bound proves it (`fwcore.checks.check_bound_feasible`; with an exact oracle always).

    The bound: TRW(mu) + kappa - <theta~, mu> with theta~ = -grad f(mu) and kappa the
    oracle's bound on max <theta~, v> (exact oracle: the MAP score, i.e. TRW + gap; Barrier
    FW App. J, eq. 25); ``certified`` is False for an oracle without a bound. With adaptive
    delta every iterate's such bound, at its own rho, is recorded (``trace[k].bound``) and
    ``log_z_upper`` is the least of them, so a run stopped by max_time or Ctrl-C returns the
    best bound it proved. An approximate oracle's bound is an LP bound, loose at iterates in
    M where L is loose; unless the run was interrupted or already proved ``tol``, the TRW
    bound in its tree-decomposition form is also minimised (`fwcore.marginals.trw_dual`, no
    oracle needed) with max_time for as long again as the run (at least 1 s), within
    max_time, else for a fixed number of forest passes (no clock read): certified at every
    step, it converges where TRBP does not. Without max_time no decision reads a clock: a
    fixed ``seed`` gives the same answer, serial or in `fwcore.infer_many`. ``log_z_lower``
    is the best score of the vertices kept and the naive mean-field bound from mu's node
    marginals (`fwcore.marginals.mean_field`).

    ``info``: ``rho`` (the edge weights of the answer), ``primal`` (TRW(mu; theta, rho)),
    ``delta`` (the contraction at the end), ``n_icm_calls`` (local-search ICM calls) and
    ``n_rho_updates``. Status: ``converged`` only when the certified gap at the returned mu
    is at most ``tol``; an approximate oracle that finds no better vertex without proving
    it ends ``stalled`` (``gap`` is then the oracle's estimate, ``certified_gap`` the
    proof).
    """
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    return run_method(BARRIER_FW, checked, deadline=deadline, max_iter=max_iter,
                      callback=callback, verbose=verbose,
                      options=dict(oracle=oracle, domain=domain, delta=delta,
                                   delta_init=delta_init, correction=correction,
                                   local_search=local_search, entropy=entropy, rho=rho,
                                   rho_updates=rho_updates, rho_step=rho_step, tol=tol,
                                   rho_tol=rho_tol, seed=seed))


@solves_factor_graphs
def _run(model, budget, callbacks, *, oracle="auto", domain="marginal", delta="adaptive",
         delta_init=1e-3, correction=True, local_search=True, entropy="trw", rho=None,
         rho_updates=10, rho_step="line-search", tol=0.01, rho_tol=0.5, seed=None):
    """Barrier FW (Alg. 2) on the checked ``model``: the registered run (`barrier_fw`)."""
    local_steps = _LOCAL_STEPS if local_search is True else int(local_search)
    adaptive = delta == "adaptive"
    delta0 = delta_init if adaptive else delta
    run = _BarrierFWRun(model, None, domain, tol=tol, rho_tol=max(rho_tol, tol),
               max_iter=budget.iterations(_MAX_ITER), rho_updates=rho_updates,
               rho_step=rho_step, correction=correction,
               local_steps=0 if domain == "local" else local_steps, adaptive=adaptive,
               delta0=delta0, deadline=budget.deadline)
    # Ctrl-C in the set-up returns u0: nothing measured yet
    run.guard(_set_up, run, oracle, entropy, rho, seed, callbacks)
    if run.guard.interrupted:
        return _interrupted_in_set_up(model, domain, delta0, run.deadline)
    # Ctrl-C anywhere in a step (engine set-up, corrections, line search, oracle calls)
    # ends the run with the last inner run that measured a gap
    _rho_loop(run)
    run.recorder.close()
    return _certify(run)


def _certify(run):
    """The answer (Alg. 2 line 25): mu of the last inner run (u0 if none) at its rho, the
    FW gap over M measured there (`_final_gap`), the least certified bound on log Z
    (`_bounds`), and status ``stalled`` for a converged run whose gap nothing proves
    within ``tol``."""
    run.objective.set_rho(run.res_rho)
    mu = run.dom.u0.copy() if run.res is None else run.res.x  # None: out of time or Ctrl-C
    f, g = run.objective.value_grad(mu)
    primal = -f
    gap, certified_gap = _final_gap(run, mu, g)
    if run.status is Status.CONVERGED and not (certified_gap is not None and
                                               certified_gap <= run.tol):
        run.status = Status.STALLED  # the oracle found no better vertex, but nothing proves it
    bounds = _bounds(run, primal, certified_gap)
    certified = bool(bounds)
    bound = min(bounds) if certified else primal + gap
    if certified:  # a bound below every feasible assignment's score: log Z = -inf
        check_bound_feasible(run.given, bound)
    lower = _lower_bound(run, mu)
    return MarginalResult.from_mu(
        run.model, mu, gap=float(gap),
        certified_gap=None if certified_gap is None else float(certified_gap),
        log_z_upper=float(bound), certified=bool(certified), n_oracle_calls=run.calls,
        status=run.status, n_iter=run.n_iter, time=run.deadline.elapsed(),
        method=f"barrier-fw/{run.domain}", trace=run.recorder.trace(), log_z_lower=lower,
        info=dict(rho=run.objective.rho.copy(), primal=float(primal),
                  delta=float(run.delta0 if run.res is None else run.res.delta),
                  n_icm_calls=run.dom.n_icm_calls,
                  n_rho_updates=run.outer if run.res is not None else 0))


#: mean-field sweeps of Barrier FW's lower bound (ObjectDetection_13 and clique10 θ=2
#: reach theirs in a few; `fwcore.marginals.mean_field`)
_MEAN_FIELD_SWEEPS = 20


def _lower_bound(run, mu):
    """A certified lower bound on log Z for Barrier FW's answer: the best score of the
    vertices kept (log Z ≥ max_x score(x)) and the naive mean-field bound started from
    mu's node marginals (`_MEAN_FIELD_SWEEPS` sweeps, within max_time), on the model as
    given (−inf where it forbids a state); −inf after Ctrl-C."""
    if run.status is Status.INTERRUPTED:
        return -math.inf
    lower = -math.inf
    if run.res is not None and isinstance(run.dom, MarginalPolytope):
        labellings = run.res.atoms[run.res.atoms[:, 0] != U0_ATOM]   # not u0's row
        if len(labellings):
            lower = float(np.max(run.dom.inner(run.given.theta, labellings)))
    nodes, _ = run.model.split_marginals(mu)
    field = run.guard(mean_field, run.given, nodes, _MEAN_FIELD_SWEEPS, 1e-6, run.deadline)
    if run.guard.interrupted:
        run.status = Status.INTERRUPTED
    return lower if field is None else max(lower, field.log_z_lower)


def _final_gap(run, mu, g):
    """(the FW gap over M at ``mu`` (Alg. 2 line 8), the gap a proof certifies or None);
    ``g`` is the gradient at mu. An exact oracle's last record already holds it; after
    Ctrl-C or past max_time no oracle is called; else one call measures it, with the
    oracle's bound on the max score (App. J)."""
    ctrl_c = run.status is Status.INTERRUPTED and not run.recorder.stopped
    if run.dom.exact and run.adaptive and run.status is Status.CONVERGED and \
            run.dom.last_call_exact():
        # the last record is mu with a fresh exact gap over M (or L): no MAP call needed
        gap = run.recorder.records[-1].gap
        return gap, gap
    # the gap last measured at mu (inf if none), not certified (an exact oracle may have
    # stopped early on it); at least 0, as any gap over M at a point of M: an approximate
    # oracle's vertex may score below mu
    last = math.inf if run.res is None else max(run.res.gap, 0.0)
    if ctrl_c or run.status is Status.MAX_TIME:
        return last, None
    try:
        measured = run.guard(run.dom.max_score, -g)
    except TimeUp:  # max_time passed in this last call
        run.status = Status.MAX_TIME
        return last, None
    if measured is None:  # Ctrl-C in this last call
        run.status = Status.INTERRUPTED
        return last, None
    score, kappa = measured
    run.calls += 1
    # >= 0 (mu is in the hull of the vertices found): a cold approximate call may return
    # a worse vertex than those
    gap = max(score - float(-g @ mu), 0.0)
    return gap, (None if kappa is None else kappa - float(-g @ mu))


#: With max_time, the final tree-decomposition bound runs as long again as the run before
#: it (_DUAL_BOUND_RUN_SHARE of its time), at least _DUAL_BOUND_SECONDS, and stops by
#: max_time: not for the rest of a generous max_time. Its least bound against its time on
#: random_grid(side, coupling=1.0, seed=0) after infer(oracle="trws") (2 busy shared cores;
#: excess over its value at the longest time measured, 64 and 128 s):
#:   side 32, run 13.6 s: 1 s +13.4, 2 s +11.3, 4 s +5.9, 8 s +2.5, 16 s +1.1, 32 s +0.3
#:   side 100, run 100 s: 1 s +223, 8 s +121, 16 s +93, 32 s +45, 64 s +21.5
#: (bound − primal: 16 and 173 nats). Half the run's time leaves about twice the excess
#: (side 32: 3.3 against 1.4 nats); twice the run's time gains about 1 nat more.
_DUAL_BOUND_RUN_SHARE = 1.0
_DUAL_BOUND_SECONDS = 1.0


def _dual_bound_deadline(run):
    """The deadline of the final tree-decomposition bound (None without max_time): as
    long again as the run so far, at least _DUAL_BOUND_SECONDS, and at the latest the
    run's own."""
    left = run.deadline.seconds_left()
    if left is None:
        return None
    return Deadline(min(left, max(_DUAL_BOUND_SECONDS,
                                  _DUAL_BOUND_RUN_SHARE * run.deadline.elapsed())))


def _bounds(run, primal, certified_gap):
    """Every certified bound on log Z of the run, each at its own rho (Barrier FW App. J,
    eq. 25): the records', the final one and, with an approximate oracle that proved
    nothing within ``tol``, the tree-decomposition bound (`trw_dual_bound`) with max_time
    for as long again as the run, within max_time (`_dual_bound_deadline`), else for a
    fixed number of forest passes (`pass_budget`: no clock read). So a run stopped by
    max_time or Ctrl-C returns the best bound it proved."""
    bounds = [r.bound for r in run.recorder.records if r.bound is not None]
    if certified_gap is not None:
        bounds.append(primal + certified_gap)
    proven = min(bounds, default=math.inf) - primal <= run.tol
    if not run.dom.exact and run.status is not Status.INTERRUPTED and not proven:
        timed = run.deadline.at is not None
        dual, _, _, status = trw_dual_bound(
            run.model, deadline=_dual_bound_deadline(run),
            max_passes=None if timed else pass_budget(run.model))
        if math.isfinite(dual):  # every point it evaluated is a bound, Ctrl-C or not
            bounds.append(dual)
        if status is Status.INTERRUPTED:
            run.status = Status.INTERRUPTED
    return bounds


def _interrupted_in_set_up(model, domain, delta, deadline):
    """The answer to Ctrl-C before the first iterate: u0, no gap, no bound (uniform rho)."""
    rho = initial_rho(model, "uniform")
    u0 = model.uniform_marginals()
    return MarginalResult.from_mu(
        model, u0, gap=math.inf, certified_gap=None, log_z_upper=math.inf, certified=False,
        n_oracle_calls=0, status=Status.INTERRUPTED, n_iter=0, time=deadline.elapsed(),
        method=f"barrier-fw/{domain}",
        info=dict(rho=rho, primal=float(TRWObjective(model, rho).trw(u0)),
                  delta=float(delta), n_icm_calls=0, n_rho_updates=0))


BARRIER_FW = register_method(
    "barrier-fw", _run, _OPTIONS, certifies=("upper", "lower"),
    iteration="FCFW iterations per inner run",
    summary="Barrier Frank-Wolfe over M_delta (or L_delta) with MAP calls: TRW marginals "
            "and its bound (Krishnan et al. 2015, Alg. 2)")
