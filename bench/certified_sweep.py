"""A certified answer is never wrong (issues 28, 41): small random models with brute-force
answers × every entry point the registries list, under tiny budgets.

    python bench/certified_sweep.py --quick                 # 60 models, a few minutes
    flock /work/heavy.lock python bench/certified_sweep.py --models 2000 --workers 2
    python bench/certified_sweep.py [--models N] [--first I] [--seed S] [--workers W]
                                    [--entries NAME,...] [--examples K] [--list]

The entry points are read from the registries when the sweep starts, so a method or
oracle registered later is swept without editing this file: every marginal method of
``fwcore.available_methods()`` through ``fwcore.infer(method=name)`` and through its own
function (``fwcore.<name with _ for ->`` or `OWN_ENTRY`); ``infer`` with its automatic
choices; `fwcore.barrier_fw` and `fwcore.perturb_and_map` over each available MAP oracle
in turn; every available MAP oracle of ``fwcore.available_oracles()`` (and "auto",
"exact") through `fwcore.infer_map`, and `fwcore.exact_map`; every method of
`fwcore.infer_lp`; `fwcore.exact_inference` (each of its methods);
`fwcore.conditioned` and `fwcore.conditioned_anytime` over each method that certifies an
upper bound in turn; `fwcore.mean_field_lower_bound` from extreme starts. ``--list``
prints them.

Models (model i depends only on (seed, i)), five kinds in turn: pairwise forests, cycles
and random graphs (2-8 variables of 2-4 states), factor graphs (3-7 variables, factors
of arity 3-4 beside unaries and edges), and hypergraphs (1-7 variables of 1-8 states,
1-5 factors of arity 1-5, couplings up to x50, variables in no factor, factors repeated
on the same scope, permuted or not); at most 2^13 joint states. Tables get −inf rows,
columns and scattered entries; 4 in 5 keep a planted joint state feasible, the rest are
as drawn (some infeasible); 1 in 5 get evidence on 1-2 variables
(`fwcore.apply_evidence`). References by enumeration: log Z, the maximum score, the node
marginals; the local-polytope LP value (HiGHS) for `fwcore.infer_lp`.

Budgets: each (model, entry point) draws its own: ``max_time`` (or ``time_limit``) None
in 1 of 8, else log-uniform in [0.001, 0.1] s; ``memory_limit``, where the entry point
takes one, None in 1 of 2, else log-uniform between the least its table accepts and
2^20 bytes.

A call's answer is wrong (one count per kind) when it has
- ``below``: a certified upper bound below log Z (a MAP bound: below the maximum; an LP
  dual bound: also below the LP value), or an exact answer that is not the reference;
- ``above``: a lower bound above log Z, a score above the maximum, or a score that is
  not its assignment's;
- ``converged``: status ``converged`` but not optimal within its tolerance (exact
  answers: log Z and the marginals; a certified `fwcore.MarginalResult`: a certified gap
  at most its ``tol``; a closed interval: exact marginals too; mean field: log Z; BP on a
  forest: log Z and the marginals; MAP: the maximum to 1e-6 relative; the LP solvers: a
  proven MAP, or a bound within 0.1% (plus the smoothing width) of the LP value);
- ``nan``: a NaN in any field of the result, its marginals or its trace;
- ``marginals``: node marginals that are not distributions (negative, not summing to 1
  within 1e-6, or not one per variable of its size);
- ``negative gap``: a gap below −1e-9 (relative);
- ``infeasible``: on a model without a feasible assignment, a finite score or lower bound
  or ``converged`` instead of the ValueError every entry point gives
  (`fwcore.checks.INFEASIBLE`); on a feasible model, that ValueError;
- ``-inf score``: on a feasible model, a labelling scoring −inf;
- ``overrun``: a run past ``max_time`` + 5% + 0.5 s, twice in a row (a run past it is run
  again, so that a busy machine's stall is not counted);
- ``crash``: any exception other than a ValueError or TypeError raised by fwcore's own
  checks (one raised inside numpy or scipy is a crash too).
A call still running after `WATCHDOG` (60) seconds is stopped and counted ``slow`` (not
wrong; an ``overrun`` when it had a max_time), so that 2,000 models take about an hour
(2 workers).
A ValueError or TypeError from fwcore's checks (a documented refusal: a tiny
``memory_limit``, QPBO on a non-binary model) is counted as ``refused``, not wrong; the
distinct messages are listed so that a reader can judge them. Prints one row per entry
point, examples of each kind, the refusals; exits 1 when anything was wrong.
"""
import argparse
import functools
import inspect
import math
import re
import signal
import sys
import time
import traceback
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

KINDS = ("below", "above", "converged", "nan", "marginals", "negative gap", "infeasible",
         "-inf score", "overrun", "crash")
#: seconds after which a call is stopped (SIGALRM) and counted as ``slow``: a run without
#: max_time can take minutes on a model of 5,000 joint states (Barrier FW with a HiGHS
#: oracle call per iteration, Perturb-and-MAP's clamped estimates)
WATCHDOG = 60
INF = np.inf
#: slack of every comparison with a reference: 1e-7 relative to max(1, |reference|)
SLACK = 1e-7
#: a run may end this late past its max_time: 5% plus half a second
OVERRUN = (0.05, 0.5)
#: the least and most of a tiny max_time (log-uniform), and the share of runs without one
TIME_RANGE, NO_TIME = (0.001, 0.1), 0.125
#: the most of a tiny memory_limit (bytes), and the share of runs without one
MEMORY_TOP, NO_MEMORY = 2**20, 0.5
#: most joint states of a model (brute force is the reference)
MAX_STATES = 2**13
#: a marginal method's own function when it is not fwcore.<name with _ for ->
OWN_ENTRY = {"exact": "exact_inference", "wmb": "weighted_mini_bucket",
             "mean-field": "mean_field_lower_bound"}
MODEL_KINDS = ("forest", "cycle", "random", "factor", "hyper")


# -- models ---------------------------------------------------------------------------------

def _hit(rng, table, keep):
    """−inf on a row, a column or scattered entries of ``table``; ``keep`` (a planted
    joint state, or None) stays finite."""
    table, r = table.copy(), rng.random()
    if r < 0.3 and table.ndim == 2:
        table[int(rng.integers(table.shape[0])), :] = -INF
    elif r < 0.6 and table.ndim == 2:
        table[:, int(rng.integers(table.shape[1]))] = -INF
    else:
        table[rng.random(table.shape) < rng.choice([0.15, 0.3, 0.5])] = -INF
    if keep is not None:
        table[keep] = rng.normal()
    return table


def _cards(rng, n, lo, hi):
    card = rng.integers(lo, hi + 1, n)
    while np.prod(card.astype(float)) > MAX_STATES:
        card[int(np.argmax(card))] -= 1
    return card


def _pairwise(rng, kind):
    """A forest, cycle or random graph, or a factor graph of arity 3-4 beside them."""
    import fwcore
    n = int(rng.integers(3 if kind == "factor" else 2, 8 if kind == "factor" else 9))
    card = _cards(rng, n, 2, 4) if rng.random() < 0.75 else np.full(n, 2)
    planted = rng.integers(card) if rng.random() < 0.8 else None

    def keep(scope):
        return None if planted is None else tuple(int(planted[v]) for v in scope)

    if kind == "forest":
        edges = [(int(rng.integers(0, j)), j) for j in range(1, n) if rng.random() < 0.85]
    elif kind == "cycle":
        edges = [(k, (k + 1) % n) for k in range(n)] if n > 2 else [(0, 1)]
    else:
        edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5]
    unary = [_hit(rng, rng.normal(size=c), keep((v,))) if rng.random() < 0.25
             else rng.normal(size=c) for v, c in enumerate(card)]
    pair = [_hit(rng, rng.normal(0, 1.5, (card[a], card[b])), keep((a, b)))
            if rng.random() < 0.7 else rng.normal(0, 1.5, (card[a], card[b]))
            for a, b in edges]
    if kind != "factor":
        return fwcore.PairwiseMRF(card, unary, edges, pair), planted
    factors = [((v,), u) for v, u in enumerate(unary)] + list(zip(edges, pair))
    for _ in range(int(rng.integers(1, 3))):
        arity = int(rng.integers(3, min(4, n) + 1))
        scope = tuple(int(v) for v in rng.choice(n, arity, replace=False))
        table = rng.normal(size=tuple(int(card[v]) for v in scope))
        factors.append((scope, _hit(rng, table, keep(scope))))
    return fwcore.FactorGraph(card, factors), planted


def _hyper(rng):
    """A factor graph of arity 1-5 (module docstring): free variables, repeated factors."""
    import fwcore
    n = int(rng.integers(1, 8))
    card = _cards(rng, n, 1, 8)
    planted = rng.integers(card) if rng.random() < 0.8 else None
    used = np.flatnonzero(rng.random(n) >= 0.2)  # the others are in no factor
    scale = float(rng.choice([0.5, 1.0, 3.0, 50.0]))
    factors = []
    for _ in range(int(rng.integers(1, 6)) if used.size else 0):
        arity = int(rng.integers(1, min(5, used.size) + 1))
        scope = tuple(int(v) for v in rng.choice(used, arity, replace=False))
        table = rng.normal(0, scale, tuple(int(card[v]) for v in scope))
        if rng.random() < 0.6:
            table = _hit(rng, table, None if planted is None else tuple(planted[list(scope)]))
        factors.append((scope, table))
    if factors and rng.random() < 0.4:  # a factor repeated: the same scope, maybe permuted
        scope, table = factors[int(rng.integers(len(factors)))]
        order = rng.permutation(len(scope))
        again = table if rng.random() < 0.5 else rng.normal(0, scale, table.shape)
        factors.append((tuple(scope[k] for k in order), np.transpose(again, order)))
    return fwcore.FactorGraph(card, factors), planted


def random_model(seed, i):
    """Model ``i`` of the sweep (module docstring): (kind, model)."""
    import fwcore
    rng = np.random.default_rng([seed, i])
    kind = MODEL_KINDS[i % len(MODEL_KINDS)]
    model, planted = _hyper(rng) if kind == "hyper" else _pairwise(rng, kind)
    if rng.random() < 0.2:  # evidence on 1-2 variables, at the planted state if any
        n = model.card.shape[0]
        observed = rng.choice(n, min(n, int(rng.integers(1, 3))), replace=False)
        states = planted if planted is not None else rng.integers(model.card)
        model = fwcore.apply_evidence(model, {int(v): int(states[v]) for v in observed})
        kind += "+evidence"
    return kind, model


def _scores(model, states):
    """The score of every row of ``states`` (vectorised over the rows)."""
    import fwcore
    if not isinstance(model, fwcore.FactorGraph):
        return model.score(states)
    scores = np.zeros(states.shape[0])
    for scope, table in model.factors:
        scores += table[tuple(states[:, list(scope)].T)]
    return scores


def references(model, lp=True):
    """Enumeration: {log_z, best, node (marginals), feasible, forest, binary, lp (the LP
    value of the pairwise model or reduction, with ``lp``)}."""
    import fwcore
    from scipy.special import logsumexp
    card = [int(c) for c in model.card]
    states = np.indices(card).reshape(len(card), -1).T
    scores = _scores(model, states)
    pairwise = model.reduced if isinstance(model, fwcore.FactorGraph) else model
    feasible = bool(np.isfinite(scores).any())
    ref = dict(feasible=feasible, log_z=-INF, best=-INF, node=None, lp=None,
               forest=pairwise.n_edges == pairwise.n_vars - pairwise.n_components(),
               binary=bool((pairwise.card == 2).all()))
    if feasible:
        log_z = float(logsumexp(scores))
        p = np.exp(scores - log_z)
        ref.update(log_z=log_z, best=float(scores.max()),
                   node=[np.bincount(states[:, v], p, c) for v, c in enumerate(card)])
        if lp:
            solver = fwcore.oracles.lp.LocalPolytopeLP(pairwise)
            solver.argmax_marginals(pairwise.theta)
            ref["lp"] = solver.upper_bound()
    return ref


# -- the entry points ------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """An entry point of the sweep: ``call(model, i, budget)`` (``budget``: the keywords
    drawn for it), what its answer claims (``claim``: "logz", "map" or "lp"), the keyword
    of its time budget (``time_kw``: None when it takes none), the range of a tiny
    ``memory_limit`` (None: it takes none) and the ``tol`` its ``converged`` claims (None:
    the result's own rule)."""

    name: str
    claim: str
    call: Callable
    time_kw: Optional[str] = None
    memory: Optional[tuple] = None
    tol: Optional[float] = None
    cycled: tuple = field(default=())


def _takes(func):
    return inspect.signature(func).parameters


def _default(func, name):
    param = _takes(func).get(name)
    return None if param is None or param.default is inspect.Parameter.empty else param.default


def _memory_range(table):
    """(least, most) of a tiny memory_limit for an option table's ``memory_limit`` entry
    (None: the entry point takes none)."""
    if table is None:
        return None
    lo = getattr(table, "lo", 1.0)
    return (max(float(lo), 1.0), max(float(MEMORY_TOP), 2.0 * lo))


def _own_entry(name):
    """A registered method's own function in ``fwcore`` (None when it has none)."""
    import fwcore
    func = getattr(fwcore, OWN_ENTRY.get(name, name.replace("-", "_")), None)
    return func if callable(func) and "model" in _takes(func) else None


def _with(func, model, budget, **fixed):
    """``func(model, **fixed, **budget)``, ``seed=0`` when it takes one."""
    if "seed" in _takes(func) and "seed" not in fixed:
        fixed["seed"] = 0
    return func(model, **fixed, **budget)


def _bound_by(method):
    """A branch bound for `fwcore.conditioned`: `fwcore.infer` by ``method``."""
    import fwcore

    def bound(branch, max_time=None):
        return fwcore.infer(branch, method=method, max_time=max_time, seed=0)
    return bound


def entries():
    """The entry points, read from the registries now (module docstring): name -> Entry."""
    import fwcore
    from fwcore.marginals.condition import choose_conditioning
    from fwcore.oracles.base import _registry as oracle_classes  # their constructors' options
    out = {}

    def add(name, claim, call, **kw):
        out[name] = Entry(name, claim, call, **kw)

    methods = fwcore.available_methods()
    for choice in ("auto", "approximate"):
        add(f"infer {choice}", "logz",
            functools.partial(lambda c, m, i, b: fwcore.infer(m, c, seed=0, **b), choice),
            time_kw="max_time")
    for name, method in methods.items():
        tol = _default(method.run, "tol")
        memory = _memory_range(method.options.get("memory_limit"))
        add(f"infer {name}", "logz",
            functools.partial(lambda n, m, i, b: fwcore.infer(m, n, seed=0, **b), name),
            time_kw="max_time", memory=memory, tol=tol)
        own = _own_entry(name)
        if own is not None:
            takes = _takes(own)
            add(own.__name__, "logz",
                functools.partial(lambda f, m, i, b: _with(f, m, b), own),
                time_kw="max_time" if "max_time" in takes else None,
                memory=memory if "memory_limit" in takes else None, tol=tol)
    for method in ("bruteforce", "elimination"):
        add(f"exact_inference {method}", "logz",
            functools.partial(lambda k, m, i, b: fwcore.exact_inference(m, k, **b), method),
            memory=(1.0, float(MEMORY_TOP)))
    oracles = tuple(sorted(n for n, ok in fwcore.available_oracles().items() if ok))
    for func, fixed in ((fwcore.barrier_fw, {}),
                        (fwcore.perturb_and_map, {"n_samples": 3, "inflation": 1})):
        add(f"{func.__name__} oracle=*", "logz",
            functools.partial(lambda f, kw, m, i, b: _with(
                f, m, b, oracle=oracles[i % len(oracles)], **kw), func, fixed),
            time_kw="max_time", tol=_default(func, "tol"), cycled=oracles)
    add("barrier_fw domain=local", "logz",
        lambda m, i, b: fwcore.barrier_fw(m, domain="local", seed=0, **b),
        time_kw="max_time", tol=_default(fwcore.barrier_fw, "tol"))
    add("mean_field_lower_bound start=extreme", "logz",
        lambda m, i, b: fwcore.mean_field_lower_bound(m, start=_extreme_start(m, i), **b),
        time_kw="max_time", tol=_default(fwcore.mean_field_lower_bound, "tol"))
    bounds = ("auto",) + tuple(n for n, m in methods.items() if "upper" in m.certifies)
    add("conditioned bound=*", "logz",
        lambda m, i, b: fwcore.conditioned(
            m, _bound_by(bounds[i % len(bounds)]),
            choose_conditioning(m, min(1 + i // len(bounds) % 2, m.card.shape[0])), **b),
        time_kw="max_time", cycled=bounds)
    add("conditioned_anytime bound=*", "logz",
        lambda m, i, b: fwcore.conditioned_anytime(
            m, _bound_by(bounds[i % len(bounds)]), b.get("max_time") or 0.3),
        time_kw="max_time", cycled=bounds)
    map_time = "max_time" if "max_time" in _takes(fwcore.infer_map) else "time_limit"
    for name in ("auto", "exact") + oracles:
        cls = oracle_classes.get(name)
        memory = (1.0, float(MEMORY_TOP)) if cls and "memory_limit" in _takes(cls) else None
        add(f"infer_map {name}", "map",
            functools.partial(lambda n, m, i, b: fwcore.infer_map(m, n, seed=0, **b), name),
            time_kw=map_time, memory=memory)
    add("exact_map", "map", lambda m, i, b: fwcore.exact_map(m, **b),
        memory=(1.0, float(MEMORY_TOP)))
    for method in fwcore.lp_relax.api.METHODS:
        add(f"infer_lp {method}", "lp",
            functools.partial(lambda k, m, i, b: fwcore.infer_lp(
                m, k, **b, **({} if b.get("max_time") else {"max_iter": 300})), method),
            time_kw="max_time")
    return out


def _extreme_start(model, i):
    """A mean-field start of extreme scale: positive rows from 1e-300 to 1e308 (one in
    three with zeros), what `fwcore.mean_field_lower_bound` must read as distributions."""
    rng = np.random.default_rng(i)
    scale = float(rng.choice([1e-300, 1e-20, 1.0, 1e200, 1e308]))
    rows = [rng.random(int(c)) * scale for c in model.card]
    if i % 3 == 0:
        for row in rows:
            row[rng.random(row.size) < 0.5] = 0.0
            row[int(rng.integers(row.size))] = scale
    return rows


def draw_budget(seed, i, entry):
    """The budget of model i at ``entry`` (module docstring): fixed by (seed, i, name)."""
    rng = np.random.default_rng([seed, i, zlib.crc32(entry.name.encode())])
    budget = {}
    lo, hi = TIME_RANGE
    if entry.time_kw is not None and rng.random() >= NO_TIME:
        budget[entry.time_kw] = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    if entry.memory is not None and rng.random() >= NO_MEMORY:
        lo, hi = entry.memory
        budget["memory_limit"] = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    return budget


# -- checks ----------------------------------------------------------------------------------

def _floats(value):
    """Every float inside ``value`` (numbers, arrays, lists and tuples of them)."""
    if isinstance(value, (float, np.floating)):
        yield float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
        yield from value.ravel().tolist()
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _floats(v)


def _has_nan(res):
    for name in res.__dataclass_fields__:
        value = getattr(res, name)
        if name == "trace":
            for record in value:
                if any(math.isnan(v) for f in record.__dataclass_fields__
                       for v in _floats(getattr(record, f))):
                    return True
        elif name != "info" and any(math.isnan(v) for v in _floats(value)):
            return True
    return False


def _tol(x):
    return SLACK * max(1.0, abs(x)) if np.isfinite(x) else 0.0


def _marginals_match(res, ref, atol=1e-6):
    return all(np.allclose(a, b, atol=atol) for a, b in zip(res.node_marginals, ref["node"]))


def _bad_marginals(nodes, model):
    if len(nodes) != model.card.shape[0]:
        return f"{len(nodes)} node marginals for {model.card.shape[0]} variables"
    for v, (p, c) in enumerate(zip(map(np.asarray, nodes), model.card)):
        if p.shape != (c,) or not ((p >= 0.0).all() and abs(p.sum() - 1.0) <= 1e-6):
            return f"node marginal {v} is {np.array2string(p, precision=4)}"
    return None


def check(entry, res, model, ref):
    """The kinds of wrong (module docstring) of one answer, with a line each."""
    import fwcore
    wrong = {}
    if _has_nan(res):
        wrong["nan"] = "a NaN"
    gap = getattr(res, "gap", None)
    if gap is not None and np.isfinite(gap) and gap < -1e-9 * max(1.0, abs(gap)):
        wrong["negative gap"] = f"gap {gap:.6g}"
    nodes = getattr(res, "node_marginals", None)
    if nodes is not None and _bad_marginals(nodes, model):
        wrong["marginals"] = _bad_marginals(nodes, model)
    converged = res.status is fwcore.Status.CONVERGED
    if not ref["feasible"]:
        finite = [v for v in (getattr(res, "score", None), getattr(res, "log_z_lower", None),
                              getattr(res, "log_z", None)) if v is not None and np.isfinite(v)]
        if finite or converged:
            wrong["infeasible"] = f"status {res.status.value}, finite claims {finite}"
        return wrong
    if entry.claim == "logz":
        wrong.update(_check_log_z(entry, res, ref, converged))
    else:
        wrong.update(_check_map(entry, res, model, ref, converged))
    return wrong


def _check_log_z(entry, res, ref, converged):
    wrong = {}
    log_z = ref["log_z"]
    upper = getattr(res, "log_z_upper", None)
    if res.certified and upper is not None and upper < log_z - _tol(log_z):
        wrong["below"] = f"certified log_z_upper {upper:.9g} < log Z {log_z:.9g}"
    lower = getattr(res, "log_z_lower", None)
    if lower is not None and lower > log_z + _tol(log_z):
        wrong["above"] = f"log_z_lower {lower:.9g} > log Z {log_z:.9g}"
    exact = res.method.startswith("exact") and res.status is not _status("interrupted")
    if exact and not (abs(upper - log_z) <= _tol(log_z) and _marginals_match(res, ref)):
        wrong["below"] = f"exact answer {upper:.9g}, log Z {log_z:.9g}"
    if converged:
        problem = _not_optimal(entry, res, ref)
        if problem:
            wrong["converged"] = problem
    return wrong


def _status(name):
    import fwcore
    return fwcore.Status(name)


def _not_optimal(entry, res, ref):
    """Why a ``converged`` log Z answer is not optimal within its tolerance (None: it is)."""
    log_z = ref["log_z"]
    method = res.method
    upper, lower = getattr(res, "log_z_upper", None), getattr(res, "log_z_lower", None)
    if upper is not None and lower is not None and np.isfinite(upper) and np.isfinite(lower):
        closed = upper - lower <= 1e-6 * max(1.0, abs(log_z))
        if closed and not _marginals_match(res, ref, 1e-4):
            return (f"converged on a closed interval [{lower:.9g}, {upper:.9g}] with marginals "
                    f"off by {_marginal_error(res, ref):.3g}")
    if method.startswith("mean-field") and upper is None:
        if abs(lower - log_z) > max(entry.tol or 0.0, _tol(log_z)):
            return f"converged at {lower:.9g}, log Z {log_z:.9g}"
    elif method.startswith(("loopy-bp", "trbp")) and not res.certified:
        if ref["forest"] and (abs(upper - log_z) > 1e-6 or not _marginals_match(res, ref, 1e-5)):
            return f"converged on a forest at {upper:.9g}, log Z {log_z:.9g}"
    elif hasattr(res, "certified_gap") and res.certified:
        cg, tol = res.certified_gap, entry.tol
        if tol is None:
            return None
        if cg is None or not np.isfinite(cg) or cg > tol * max(1.0, abs(log_z)) + 1e-9:
            return f"converged with certified gap {cg} (tol {tol})"
    return None


def _marginal_error(res, ref):
    return max(float(np.abs(np.asarray(a) - b).max()) for a, b in
               zip(res.node_marginals, ref["node"]))


def _check_map(entry, res, model, ref, converged):
    wrong = {}
    best = ref["best"]
    score, bound = res.score, res.upper_bound
    user = model.score(res.assignment)
    if score == -INF:
        wrong["-inf score"] = "a labelling of score -inf"
    if not (score == user or abs(score - user) <= _tol(user)) or score > best + _tol(best):
        wrong["above"] = f"score {score:.9g} (assignment's {user:.9g}), max {best:.9g}"
    if bound is not None and bound < best - _tol(best):
        wrong["below"] = f"bound {bound:.9g} < max {best:.9g}"
    if (entry.claim == "lp" and bound is not None
            and bound < ref["lp"] - 1e-6 * max(1.0, abs(ref["lp"]))):
        wrong["below"] = f"dual bound {bound:.9g} < LP value {ref['lp']:.9g}"
    if converged:
        proven = score >= best - 1e-6 * max(1.0, abs(best))
        if entry.claim == "lp" and not proven:
            width = res.info.get("smoothing_width") or 0.0
            proven = (bound is not None and
                      bound <= ref["lp"] + width + 1e-3 * max(1.0, abs(ref["lp"])))
        if not proven:
            wrong["converged"] = (f"converged at score {score:.9g}, bound {bound}, "
                                  f"max {best:.9g}, LP {ref['lp']}")
    return wrong


_FWCORE = None


def _refusal(err):
    """Whether ``err`` (a ValueError or TypeError) was raised by fwcore's own code, not
    inside numpy, scipy or Python (a crash)."""
    global _FWCORE
    if _FWCORE is None:
        import fwcore
        _FWCORE = str(Path(fwcore.__file__).resolve().parent)
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and str(Path(frames[-1].filename).resolve()).startswith(_FWCORE)


class Slow(Exception):
    """A call ran past `WATCHDOG` seconds."""


def _alarm(signum, frame):
    raise Slow


def run_case(entry, model, ref, i, budget):
    """(wrong kinds: lines, refusal message or None, seconds) of one call; a call the
    watchdog stops (`WATCHDOG`) is ``slow``, not wrong (an ``overrun`` when it had a
    max_time)."""
    start = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WATCHDOG)
    try:
        return _outcome(entry, model, ref, i, budget) + (time.monotonic() - start,)
    except Slow:
        return {"slow": f"stopped after {WATCHDOG} s"}, None, time.monotonic() - start
    finally:
        signal.alarm(0)


def _outcome(entry, model, ref, i, budget):
    """(wrong kinds: lines, refusal message or None) of one call."""
    from fwcore.checks import INFEASIBLE
    try:
        res = entry.call(model, i, budget)
    except Slow:
        raise
    except (ValueError, TypeError) as err:
        message = str(err)
        if message == INFEASIBLE:
            return ({} if not ref["feasible"] else
                    {"infeasible": "ValueError: no feasible assignment, on a feasible model"},
                    None)
        if _refusal(err):
            return {}, f"{type(err).__name__}: {message}"
        return {"crash": _exception_line(err)}, None
    except Exception as err:  # noqa: BLE001 - every other exception is a crash
        return {"crash": _exception_line(err)}, None
    return check(entry, res, model, ref), None


def _exception_line(err):
    frames = traceback.extract_tb(err.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return traceback.format_exception_only(type(err), err)[-1].strip() + where


def _late(entry, budget, seconds):
    limit = budget.get(entry.time_kw) if entry.time_kw else None
    return limit is not None and seconds > (1 + OVERRUN[0]) * limit + OVERRUN[1]


def run_model(seed, i, names):
    """(model kind, feasible, {entry: (wrong kinds: lines, refusal or None, seconds)}) of
    model i."""
    kind, model = random_model(seed, i)
    table = entries()
    ref = references(model, lp=any(table[n].claim == "lp" for n in names))
    out = {}
    for name in names:
        entry = table[name]
        budget = draw_budget(seed, i, entry)
        wrong, refused, seconds = run_case(entry, model, ref, i, budget)
        if "slow" in wrong and _late(entry, budget, seconds):  # no second minute
            wrong["overrun"] = wrong.pop("slow")
        elif _late(entry, budget, seconds):
            again = run_case(entry, model, ref, i, budget)[2]
            if _late(entry, budget, again):
                wrong["overrun"] = (f"{seconds:.3f} s and {again:.3f} s for {entry.time_kw}="
                                    f"{budget[entry.time_kw]:.4g}")
        for kind_ in wrong:
            wrong[kind_] = f"{wrong[kind_]}  [budget {budget}{_cycled(entry, i)}]"
        out[name] = (wrong, refused, seconds)
    return kind, ref["feasible"], out


def _cycled(entry, i):
    return f", {entry.cycled[i % len(entry.cycled)]}" if entry.cycled else ""


def _job(args):
    seed, i, names = args
    return run_model(seed, i, names)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=2000)
    p.add_argument("--first", type=int, default=0,
                   help="the first model's index (chunks of one sweep: --first 500 --models 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--entries", default=None, help="comma-separated entry points (default all)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--examples", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="60 models")
    p.add_argument("--list", action="store_true", help="list the entry points and exit")
    args = p.parse_args(argv)
    table = entries()
    if args.list:
        for name, entry in table.items():
            print(f"{name:40s} {entry.claim:5s} time={entry.time_kw} memory={entry.memory}")
        return 0
    names = list(table) if args.entries is None else args.entries.split(",")
    unknown = set(names) - set(table)
    if unknown:
        p.error(f"unknown entry points {sorted(unknown)}; --list lists them")
    n_models = 60 if args.quick else args.models
    t0 = time.monotonic()
    results = []
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = ((args.seed, i, names) for i in range(args.first, args.first + n_models))
        for result in pool.map(_job, jobs, chunksize=2):
            results.append(result)
            if len(results) % 10 == 0:
                print(f"{len(results)} models, {time.monotonic() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    return report(results, names, args.seed, time.monotonic() - t0, args.examples, args.first)


def report(results, names, seed, seconds, n_examples, first=0):
    """Print the table, the examples and the refusals; 1 when anything was wrong."""
    kinds = Counter((kind, feasible) for kind, feasible, _ in results)
    print(f"{len(results)} models ({first}-{first + len(results) - 1}, seed {seed}) in "
          f"{seconds:.0f} s: "
          + ", ".join(f"{k} {'feasible' if f else 'infeasible'} {c}"
                      for (k, f), c in sorted(kinds.items())))
    cases, refused, counts = Counter(), Counter(), defaultdict(Counter)
    examples, messages, spent = defaultdict(list), defaultdict(Counter), Counter()
    slowest = []
    for i, (_, _, out) in enumerate(results, first):
        for name, (wrong, refusal, seconds) in out.items():
            cases[name] += 1
            spent[name] += seconds
            slowest.append((seconds, i, name))
            if refusal is not None:
                refused[name] += 1
                messages[re.sub(r"\d[\d.e+-]*", "#", refusal)[:110]][name] += 1
            for kind, line in wrong.items():
                counts[name][kind] += kind != "slow"
                if len(examples[name, kind]) < n_examples:
                    examples[name, kind].append(f"model {i}: {line}")
    width = max(map(len, names))
    short = {"negative gap": "neg gap", "infeasible": "infeas", "-inf score": "-inf sc"}
    slow = Counter(name for _, _, out in results for name, (wrong, _, _) in out.items()
                   if "slow" in wrong)
    print(f"{'entry point':{width}}  {'cases':>5} {'seconds':>7} {'refused':>7} {'slow':>4}  "
          + " ".join(f"{short.get(k, k):>9}" for k in KINDS))
    for name in names:
        print(f"{name:{width}}  {cases[name]:5d} {spent[name]:7.1f} {refused[name]:7d} "
              f"{slow[name]:4d}  " + " ".join(f"{counts[name][k]:9d}" for k in KINDS))
    total = sum(sum(c.values()) for c in counts.values())
    by_kind = Counter()
    for c in counts.values():
        by_kind.update(c)
    print(f"total: {sum(cases.values())} cases, {sum(refused.values())} refused, {total} wrong"
          + (": " + ", ".join(f"{k} {by_kind[k]}" for k in KINDS if by_kind[k]) if total else ""))
    for (name, kind), lines in sorted(examples.items()):
        print(f"\n{name} / {kind}:")
        for line in lines:
            print(f"  {line}")
    print("\nslowest calls: " + ", ".join(f"{name} on model {i} {seconds:.1f} s"
                                         for seconds, i, name in sorted(slowest)[-5:][::-1]))
    if messages:
        print("\nrefusals (ValueError / TypeError from fwcore's checks), by message:")
        for message, where in sorted(messages.items(), key=lambda kv: -sum(kv[1].values())):
            print(f"  {sum(where.values()):6d}  {message}  [{', '.join(sorted(where))[:80]}]")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
