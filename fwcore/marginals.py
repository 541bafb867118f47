"""Marginal inference by Barrier Frank-Wolfe (Krishnan, Lacoste-Julien & Sontag 2015) and
the message-passing baselines, all returning a `MarginalResult`.

`infer` maximises the TRW objective (Barrier FW eq. 1-2) over the marginal polytope M (or
the local polytope L) with MAP calls: FCFW over the contraction M_delta with adaptive or
fixed delta (Alg. 1, 4), MFW corrections over the visited vertices (Alg. 3, 5), optional
ICM local search (Alg. 6), and the outer loop over the spanning-tree polytope (Alg. 2).
The generic engine is `fwcore.fw.frank_wolfe`; this module supplies the TRW objective, the
two polytopes as engine domains, and the rho loop.

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
import math
import numbers
import sys
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _kernels
from .bp import trbp_beliefs
from .fw import IterationRecord, StepType, adaptive_delta, correct, frank_wolfe, safeguarded_newton
from .model import PairwiseMRF
from .oracles.base import LPOracle, resolve_oracle
from .results import Status
from .rho import (check_rho, coupling_weights, entropy_weights, matrix_tree_rho, max_spanning_forest,
                  uniform_rho)

__all__ = ["infer", "trbp", "loopy_bp", "MarginalResult", "MarginalRecord", "TRWObjective"]

_DOMAINS = ("marginal", "local")
_RHO_NAMES = ("matrix-tree", "coupling", "uniform")
#: MFW correction budget and tolerance schedule (paper code: <= 100 steps, 0.05 / 0.5)
_INNER_MAX_ITER = 100
#: correct after every FW step (1) or every k-th
_CORRECT_EVERY = 1
#: at most this many flops (|V| dim per step) per correction, and at least 10 steps: leaves
#: the paper's models untouched, 3-5x faster on 100x100 grids and Segmentation_11
_CORRECTION_WORK = 2e8
#: rho line search: relative tolerance on B' and bracket, and most corrections per update
_RHO_LINE_SEARCH_TOL = 0.01
_RHO_LINE_SEARCH_STEPS = 8
_RHO_STEPS = ("line-search", "fixed")
#: ICM sweeps per local-search vertex and local-search steps when ``local_search=True``
_ICM_SWEEPS = 100
_LOCAL_STEPS = 30


def _inner_tol(gap):
    """pFW tolerance of a correction: 0.5 when the last FW gap is >= 1, else 0.05 (the
    paper code's), tightened to gap / 10 below gap 0.5 so that tight ``tol`` converge."""
    return 0.5 if gap >= 1.0 else min(0.05, 0.1 * gap)


@dataclass(frozen=True)
class MarginalRecord:
    """One inner iteration: outer rho iteration, inner iteration, total seconds, TRW value
    (``primal``), the freshly computed FW gap, delta, |active set| and MAP calls so far."""

    rho_iteration: int
    iteration: int
    time: float
    primal: float
    gap: float
    delta: float
    n_active: int
    n_oracle_calls: int


@dataclass(frozen=True)
class MarginalResult:
    """Approximate marginals and a log Z bound.

    ``node_marginals`` (list of 1-D arrays), ``edge_marginals`` (card_i x card_j tables),
    ``mu`` (the same, flat), ``rho`` (edge appearance probabilities used), ``primal`` =
    TRW(mu; theta, rho), ``gap`` = FW gap over the polytope (M, or L for ``domain="local"``)
    recomputed at the end (None for the BP baselines: no oracle, no gap), ``log_z_upper`` (an upper bound on
    log Z when ``certified``; the TRW / Bethe value otherwise), ``delta`` (contraction at
    the end), ``n_oracle_calls`` (MAP or LP calls), ``n_icm_calls`` (local search),
    ``status``, ``n_iter`` (inner iterations or BP sweeps, all rho iterations),
    ``n_rho_updates`` done, ``time`` (seconds), ``trace`` (`MarginalRecord` per iteration)."""

    node_marginals: list
    edge_marginals: list
    mu: np.ndarray
    rho: np.ndarray
    primal: float
    gap: Optional[float]
    log_z_upper: float
    certified: bool
    delta: float
    n_oracle_calls: int
    n_icm_calls: int
    status: Status
    n_iter: int
    n_rho_updates: int
    time: float
    method: str
    trace: tuple = ()

    @property
    def converged(self):
        return self.status is Status.CONVERGED


# -- the TRW objective and the two polytopes as engine domains ----------------------------

class TRWObjective:
    """f(mu) = -TRW(mu; theta, rho) (Barrier FW eq. 1-2) for the engine: value, gradient and
    exact line search by the `_kernels` TRW kernels."""

    def __init__(self, model, rho):
        self.model = model
        self.set_rho(rho)

    def set_rho(self, rho):
        self.rho = np.ascontiguousarray(rho, dtype=np.float64)
        self.weight = entropy_weights(self.model, self.rho)  # c_i on node blocks, rho_e on edges

    def value_grad(self, x):
        g = np.empty_like(x)
        f = _kernels.trw_value_grad(self.model.theta, x, self.weight, g)
        return f, g

    def trw(self, x):
        """TRW(x) = -f(x)."""
        return -self.value_grad(x)[0]

    def line_search(self, x, d, gamma_max):
        return _kernels.trw_line_search(self.model.theta, x, d, self.weight, gamma_max)[0]


class _MarginalPolytope:
    """M for the engine: atoms are assignments, the lmo is a MAP oracle on -grad, inner
    products by the `score_assignments` kernel; `local_lmo` is ICM warm-started (Alg. 6)."""

    def __init__(self, model, oracle, seed):
        self.model, self.oracle = model, oracle
        self.dim, self.atom_size = model.dim, model.n_vars
        self.u0 = model.uniform_marginals()
        self.n_icm_calls = 0
        self._last = None
        self._rng = np.random.default_rng(0 if seed is None else seed)
        self._warm = not oracle.exact
        self.deadline = None

    def time_left(self):
        """Seconds left before ``deadline`` (None: no deadline), the time limit of the next
        oracle call, so that one call cannot overrun ``max_time``."""
        return None if self.deadline is None else max(self.deadline - time.perf_counter(), 1e-2)

    def lmo(self, g):
        init = self._last if self._warm else None
        self._last = self.oracle.argmax(-g, init=init, time_limit=self.time_left())
        return self._last

    def inner(self, g, atoms):
        m = self.model
        out = np.empty(atoms.shape[0])
        _kernels.score_assignments(np.ascontiguousarray(g), m.card, m.edges, m.node_off, m.edge_off,
                                   np.ascontiguousarray(atoms, dtype=np.int32), out)
        return out

    def add(self, x, atom, w):
        m = self.model
        x[m.node_off[:-1] + atom] += w
        x[m.edge_off[:-1] + atom[m.edges[:, 0]] * m.card[m.edges[:, 1]] + atom[m.edges[:, 1]]] += w

    def local_lmo(self, g, atom):
        m = self.model
        x = np.array(atom, dtype=np.int32)
        self.n_icm_calls += 1
        _kernels.icm(np.ascontiguousarray(-g), m.card, m.edges, m.node_off, m.edge_off,
                     m.adj_start, m.adj_var, m.adj_edge, m.adj_first, x, _ICM_SWEEPS, None,
                     int(self._rng.integers(2**62)))
        return x

    def last_call_exact(self):
        """Did the last oracle call return a true maximiser (exact oracle, not timed out)?"""
        return self.oracle.exact and self.oracle.status is not Status.MAX_TIME

    def max_score(self, scores):
        """(max score or its certified bound, certified?) for the App. J bound."""
        s = self.oracle.argmax(scores, time_limit=self.time_left())
        score = float(self.inner(scores, s[None, :])[0])
        kappa = self.oracle.upper_bound()
        if kappa is not None and math.isfinite(kappa):
            return max(score, float(kappa)), True
        return score, self.last_call_exact()


class _LocalPolytope:
    """L for the engine: atoms index the dense LP vertices returned so far (HiGHS)."""

    atom_size = 1

    def __init__(self, model, lp):
        self.model, self.lp = model, lp
        self.deadline = None
        self.dim = model.dim
        self.u0 = model.uniform_marginals()
        self.n_icm_calls = 0
        self._vertices, self._index = [], {}

    def lmo(self, g):
        v = self.lp.argmax_marginals(-g)
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
        return True

    def max_score(self, scores):
        v = self.lp.argmax_marginals(scores)
        return max(float(v @ scores), float(self.lp.upper_bound())), True


# -- argument checks ----------------------------------------------------------------------

def _check_model(model):
    if not isinstance(model, PairwiseMRF):
        raise TypeError(f"model must be a fwcore.PairwiseMRF; got {type(model).__name__}")
    return model


def _finite_penalty(model):
    """The model with each impossible state (theta = -inf) given a finite log-potential low
    enough that it changes log Z by at most e^-50: the TRW objective must be finite at u0.

    Raising potentials only raises log Z, so an upper bound for this model bounds the
    original's; an assignment that uses a penalised entry scores at least
    50 + log(#assignments) below every feasible one. Marginals then put mass <= delta on
    impossible states (the contraction)."""
    theta = model.theta
    impossible = np.isneginf(theta)
    if not impossible.any():
        return model
    spread = 0.0
    for lo, hi in zip(np.concatenate([model.node_off[:-1], model.edge_off[:-1]]),
                      np.concatenate([model.node_off[1:], model.edge_off[1:]])):
        block = theta[lo:hi][np.isfinite(theta[lo:hi])]
        if block.size:
            spread += float(block.max() - block.min())
    floor = float(theta[~impossible].min()) if (~impossible).any() else 0.0
    log_states = float(np.log(model.card.astype(np.float64)).sum())
    return model.with_theta(np.where(impossible, floor - 2.0 * spread - 50.0 - log_states, theta))


def _real(name, value, lo, hi=math.inf, lo_open=True, optional=False, integer=False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            (integer and int(value) != value) or not math.isfinite(float(value)) or \
            not ((lo < value) if lo_open else (lo <= value)) or not value <= hi:
        kind = "an integer" if integer else "a number"
        rng = f"{'>' if lo_open else '>='} {lo}" + (f" and <= {hi}" if hi < math.inf else "")
        raise ValueError(f"{name} must be {kind} {rng}{' or None' if optional else ''}; got {value!r}")
    return int(value) if integer else float(value)


def _check_delta(delta, delta_init):
    if isinstance(delta, str):
        if delta != "adaptive":
            raise ValueError(f"delta must be 'adaptive' or a number in (0, 1/4]; got {delta!r}")
        return _real("delta_init", delta_init, 0.0, 0.25), True
    return _real("delta", delta, 0.0, 0.25), False


def _initial_rho(model, rho):
    if isinstance(rho, str):
        if rho == "matrix-tree":
            return matrix_tree_rho(model)
        if rho == "coupling":
            return matrix_tree_rho(model, coupling_weights(model))
        if rho == "uniform":
            return uniform_rho(model)
        raise ValueError(f"rho must be one of {', '.join(_RHO_NAMES)} or an array of edge "
                         f"appearance probabilities; got {rho!r}")
    return check_rho(model, rho)


def _make_domain(model, oracle, domain, seed):
    if domain not in _DOMAINS:
        raise ValueError(f"domain must be one of {', '.join(_DOMAINS)}; got {domain!r}")
    if domain == "local":
        lp = resolve_oracle("lp" if oracle == "exact" else oracle, model)
        if not isinstance(lp, LPOracle):
            raise ValueError("domain='local' uses the local-polytope LP: give oracle='exact' or "
                             f"'lp' (or a fwcore.oracles.LPOracle); got {oracle!r}")
        return _LocalPolytope(model, lp)
    resolved = resolve_oracle(oracle, model, seed=seed)
    if isinstance(resolved, LPOracle):
        raise ValueError("oracle='lp' optimises over the local polytope: use domain='local'")
    return _MarginalPolytope(model, resolved, seed)


def _edge_mi(model, x):
    mi = np.empty(model.n_edges)
    _kernels.edge_mutual_information(x, model.card, model.edges, model.edge_off, mi)
    return mi


def _rho_step(model, x, rho, i):
    """Barrier FW Alg. 2 lines 20-21: FW step on rho over the spanning-tree polytope towards
    the maximum-weight spanning forest on edge mutual information, step 2/(i+3)."""
    vertex = max_spanning_forest(model.n_vars, model.edges, _edge_mi(model, x))
    return rho + 2.0 / (i + 3.0) * (vertex - rho)


def _rho_line_search(model, objective, dom, res, rho, i, tol, trust_tol, max_time):
    """The same FW step on rho with the step minimising B(a) = max_mu TRW(mu; rho + a d),
    d = vertex - rho (the paper code's 'linesearch' option). B is convex with
    B'(a) = -<d, I(mu*(rho + a d))> (edge mutual informations at the maximiser, eq. 2), and
    mu* is re-optimised by a correction over the vertices found so far (Alg. 5): no MAP
    call. Root of B' by `safeguarded_newton` until |B'| <= 1% of |B'(0)| or the bracket is
    below 1%, with at most 8 corrections. When a correction stops (capped, on large models)
    with a gap over the hull above ``trust_tol``, its B' is biased towards long steps: the
    fixed step is taken instead."""
    mi = _edge_mi(model, res.x)
    d = max_spanning_forest(model.n_vars, model.edges, mi) - rho
    t0 = time.perf_counter()
    resolved = []

    def dphi(a):
        objective.set_rho(rho + a * d)
        left = None if max_time is None else max(max_time - (time.perf_counter() - t0), 1e-3)
        c = correct(objective, dom, (res.atoms, res.weights), delta=res.delta, tol=tol,
                    max_iter=_INNER_MAX_ITER, max_time=left, correction_work=_CORRECTION_WORK)
        resolved.append(c.gap <= trust_tol)
        return -float(d @ _edge_mi(model, c.x)), None

    a = safeguarded_newton(dphi, -float(d @ mi), 1.0, tol=_RHO_LINE_SEARCH_TOL,
                           max_iter=_RHO_LINE_SEARCH_STEPS)
    return rho + (a if all(resolved) else 2.0 / (i + 3.0)) * d


class _Recorder:
    """Turns engine records into `MarginalRecord`s, keeps the trace, forwards to the user's
    callback and prints progress when verbose."""

    def __init__(self, callback, verbose, t0):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be None or a callable callback(record) -> bool; got "
                            f"{type(callback).__name__}")
        self.callback, self.verbose, self.t0 = callback, verbose, t0
        self.records, self.rho_iteration, self.calls_before = [], 0, 0

    def __call__(self, rec):
        r = MarginalRecord(self.rho_iteration, rec.iteration, time.perf_counter() - self.t0,
                           -rec.primal, rec.gap, rec.delta, rec.n_active,
                           self.calls_before + rec.n_oracle_calls)
        self.records.append(r)
        if self.verbose:
            gap = "-" if r.gap is None else f"{r.gap:.3g}"
            print(f"rho {r.rho_iteration:2d} it {r.iteration:4d}  TRW {r.primal:.6f}  gap "
                  f"{gap}  delta {r.delta:.2g}  |V| {r.n_active}  MAP calls "
                  f"{r.n_oracle_calls}", file=sys.stderr)
        return None if self.callback is None else self.callback(r)


def _result(model, mu, rho, primal, gap, bound, certified, delta, calls, icm_calls, status,
            n_iter, n_rho, t0, method, trace):
    nodes, edges = model.split_marginals(mu)
    gap = None if gap is None else float(gap)
    return MarginalResult(nodes, edges, mu, rho, float(primal), gap, float(bound),
                          bool(certified), float(delta), int(calls), int(icm_calls), status,
                          int(n_iter), int(n_rho), time.perf_counter() - t0, method, tuple(trace))


# -- Barrier FW ---------------------------------------------------------------------------

def infer(model, *, oracle="exact", domain="marginal", delta="adaptive", delta_init=1e-3,
          correction=True, local_search=True, rho="matrix-tree", rho_updates=10,
          rho_step="line-search", tol=0.01, rho_tol=0.5, max_iter=1000, max_time=None,
          callback=None, seed=None, verbose=False):
    """Marginals and an upper bound on log Z by Barrier Frank-Wolfe (Barrier FW Alg. 2).

    oracle : "exact" (tree DP, brute force, variable elimination or ILP, as `infer_map`
        picks them; toulbar2 for ILP when installed), a registered name
        (``fwcore.oracles.available_oracles()``), ``(name, options)``, an oracle object or a
        function ``scores -> assignment``. Approximate oracles use max(correction gap,
        gap) in Alg. 1 (Barrier FW Sec. 4).
    domain : "marginal" (M, MAP oracle) or "local" (L, the LP oracle: TRW over L, the
        fixed point of tree-reweighted BP).
    delta : "adaptive" (Alg. 1 from ``delta_init``, in (0, 1/4]) or a fixed contraction in
        (0, 1/4]. correction : MFW corrections over the visited vertices (Alg. 4-5).
    local_search : True (up to 30 ICM-driven FW steps after each correction, Alg. 6), False
        or a number of steps; its vertices cost no MAP call (on the paper's instances it
        halves the MAP calls). Ignored over L. seed : ICM visiting order (None: 0, so runs
        are reproducible); also passed to oracles that take one.
    rho : "matrix-tree" (uniform spanning trees), "coupling" (trees weighted by edge coupling
        strength, the paper code's choice), "uniform", or an array in the spanning-tree
        polytope. rho_updates : outer FW steps on rho (Alg. 2 lines 20-23).
    rho_step : "line-search" (the step minimising the bound, each trial step re-optimising
        mu over the vertices found so far, no MAP call; the paper code's option) or "fixed"
        (2 / (i + 3), Alg. 2 line 21). Measured on the paper's instances: line search gives
        better marginals and bounds on every family for the same MAP calls.
    tol : FW gap (nats, absolute) ending the last inner run, whose answer is returned.
    rho_tol : FW gap ending the inner runs before it, which only steer rho (the paper's 0.5
        throughout; measured on its instances, a tight last run gives better marginals and
        bounds for fewer MAP calls than one tolerance for all). max_iter : FCFW iterations
        per inner run; max_time (seconds) and ``callback(record)`` returning False stop with
        the best iterate so far (status max_time / interrupted).

    Impossible states (theta = -inf) get a finite penalty that changes log Z by at most
    e^-50 (`_finite_penalty`), so the bound stays valid for the given model.

    The bound: TRW(mu) + kappa - <theta~, mu> with theta~ = -grad f(mu) and kappa the
    oracle's bound on max <theta~, v> (exact oracle: the MAP score, i.e. TRW + gap; Barrier
    FW App. J, eq. 25); ``certified`` is False for an oracle without a bound. With an exact
    oracle (or over L) and adaptive delta every iterate's TRW + gap, at its own rho, is such
    a bound, and ``log_z_upper`` is the least of them (so it may be below primal + gap).
    """
    t0 = time.perf_counter()
    model = _finite_penalty(_check_model(model))
    delta0, adaptive = _check_delta(delta, delta_init)
    tol = _real("tol", tol, 0.0)
    rho_tol = max(_real("rho_tol", rho_tol, 0.0), tol)
    max_iter = _real("max_iter", max_iter, 0, lo_open=False, integer=True)
    rho_updates = _real("rho_updates", rho_updates, 0, lo_open=False, integer=True)
    max_time = _real("max_time", max_time, 0.0, optional=True)
    local_steps = _LOCAL_STEPS if local_search is True else 0 if local_search is False else \
        _real("local_search", local_search, 0, lo_open=False, integer=True)
    if rho_step not in _RHO_STEPS:
        raise ValueError(f"rho_step must be one of {', '.join(_RHO_STEPS)}; got {rho_step!r}")
    rho = _initial_rho(model, rho)
    dom = _make_domain(model, oracle, domain, seed)
    if max_time is not None:
        dom.deadline = t0 + max_time
    if domain == "local":
        local_steps = 0
    recorder = _Recorder(callback, bool(verbose), t0)
    exact = domain == "local" or dom.oracle.exact
    objective = TRWObjective(model, rho)
    res, calls, n_iter, status, i = None, 0, 0, Status.CONVERGED, 0
    for i in range(rho_updates + 1):
        objective.set_rho(rho)
        recorder.rho_iteration, recorder.calls_before = i, calls
        left = None if max_time is None else max_time - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            status = Status.MAX_TIME
            break
        # warm start from the last active set; delta carries over (the paper code also
        # halved it after each inner run: measured, no better marginals and more MAP calls)
        init = None if res is None else (res.atoms, res.weights)
        last = i == rho_updates
        res = frank_wolfe(objective, dom, variant="fcfw",
                          tol=tol if last else rho_tol, max_iter=max_iter,
                          max_time=left, callback=recorder, init=init,
                          delta=delta0 if res is None else res.delta,
                          delta_rule=adaptive_delta if adaptive else None,
                          inner_max_iter=_INNER_MAX_ITER if correction else 0,
                          inner_tol=_inner_tol, correct_every=_CORRECT_EVERY,
                          correction_work=_CORRECTION_WORK,
                          initial_correction=correction and res is not None,
                          local_steps=local_steps, approximate_lmo=not exact, trace=False)
        calls += res.n_oracle_calls
        n_iter += res.n_iter
        status = res.status
        if status in (Status.MAX_TIME, Status.INTERRUPTED) or last:
            break
        if rho_step == "fixed":
            rho = _rho_step(model, res.x, rho, i)
        else:
            left = None if max_time is None else max_time - (time.perf_counter() - t0)
            rho = _rho_line_search(model, objective, dom, res, rho, i, tol, rho_tol, left)
    mu = dom.u0.copy() if res is None else res.x  # res is None: out of time at once
    f, g = objective.value_grad(mu)
    primal = -f
    if exact and adaptive and status is Status.CONVERGED and dom.last_call_exact():
        # the last record is mu with a fresh exact gap over M (or L): no MAP call needed
        gap, certified = recorder.records[-1].gap, True
    else:
        kappa, certified = dom.max_score(-g)
        calls += 1
        gap = kappa - float(-g @ mu)
    bound = primal + gap
    if exact and adaptive:  # every iterate's TRW + gap over M (or L) is a bound: keep the least
        bound = min([bound] + [r.primal + r.gap for r in recorder.records])
    return _result(model, mu, objective.rho.copy(), primal, gap, bound, certified,
                   delta0 if res is None else res.delta, calls,
                   dom.n_icm_calls, status, n_iter, i if res is not None else 0, t0,
                   f"barrier-fw/{domain}", recorder.records)


# -- message-passing baselines ------------------------------------------------------------

def trbp(model, *, rho="matrix-tree", rho_updates=10, damping=0.5, max_iter=1000, tol=1e-8,
         max_time=None, callback=None, verbose=False):
    """Tree-reweighted BP (log domain, `fwcore.bp.trbp_beliefs`) with the outer rho loop of
    Barrier FW Alg. 2 (rho_updates FW steps on rho towards the maximum spanning forest on
    the beliefs' mutual information). ``log_z_upper`` is TRW(beliefs; rho), an upper bound
    on log Z only at an exact fixed point, so ``certified`` is False; ``gap`` is None.
    ``callback(record)`` is called once per rho iteration (``iteration`` = BP sweeps)."""
    t0 = time.perf_counter()
    model = _check_model(model)
    rho = _initial_rho(model, rho)
    return _bp_loop(model, rho, _real("rho_updates", rho_updates, 0, lo_open=False, integer=True),
                    damping, max_iter, tol, max_time, callback, verbose, t0, "trbp")


def loopy_bp(model, *, damping=0.5, max_iter=1000, tol=1e-8, max_time=None, callback=None,
             verbose=False):
    """Loopy (sum-product) BP: TRBP with rho = 1 on every edge. ``log_z_upper`` is the Bethe
    approximation of log Z at the beliefs (not a bound; ``certified`` is False)."""
    t0 = time.perf_counter()
    model = _check_model(model)
    return _bp_loop(model, np.ones(model.n_edges), 0, damping, max_iter, tol, max_time,
                    callback, verbose, t0, "loopy-bp")


def _bp_loop(model, rho, rho_updates, damping, max_iter, tol, max_time, callback, verbose, t0,
             method):
    damping = _real("damping", damping, 0.0, 1.0, lo_open=False)
    if damping >= 1.0:
        raise ValueError(f"damping must be in [0, 1); got {damping}")
    max_iter = _real("max_iter", max_iter, 1, lo_open=False, integer=True)
    tol = _real("tol", tol, 0.0)
    max_time = _real("max_time", max_time, 0.0, optional=True)
    deadline = None if max_time is None else t0 + max_time
    recorder = _Recorder(callback, bool(verbose), t0)
    objective = TRWObjective(model, rho)
    n_iter, status = 0, Status.CONVERGED
    for i in range(rho_updates + 1):
        objective.set_rho(rho)
        mu, it, converged, change = trbp_beliefs(model, rho, damping, max_iter, tol, deadline)
        n_iter += it
        status = Status.CONVERGED if converged else Status.MAX_ITER
        f = objective.value_grad(mu)[0]
        recorder.rho_iteration = i
        proceed = recorder(IterationRecord(it, 0.0, f, None, 0.0, StepType.INIT, 0, 0))
        if deadline is not None and time.perf_counter() >= deadline:
            status = Status.MAX_TIME
        elif proceed is False:
            status = Status.INTERRUPTED
        if status in (Status.MAX_TIME, Status.INTERRUPTED) or i == rho_updates:
            break
        rho = _rho_step(model, mu, rho, i)
    primal = objective.trw(mu)
    return _result(model, mu, objective.rho.copy(), primal, None, primal, False, 0.0, 0, 0,
                   status, n_iter, i, t0, method, recorder.records)
