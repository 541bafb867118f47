"""Argument checks shared by every entry point (DESIGN.md "Arguments").

Each entry point declares a table ``{argument: constraint}`` (scikit-learn's
``_parameter_constraints`` habit) and binds it to its signature with `validate_params`,
which checks every call once, before the body runs; a constraint is an `Interval`, an
`Options`, a `Kind`, or a list of them of which one must hold (``None`` in the list allows
None). Messages name the argument, the allowed values and what was given.
Also here: the one model check, the seed check, the one finite penalty for impossible
states, and the feasibility checks (the one message for a model with no feasible
assignment: `INFEASIBLE`).
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import weakref
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Callable
from collections.abc import Iterable, Mapping

import numpy as np

from .factor_graph import FactorGraph
from .model import PairwiseMRF, concat_ranges

if TYPE_CHECKING:  # the decorators keep the signature they wrap (typing_extensions: Python 3.9)
    from typing import TypeVar

    from typing_extensions import ParamSpec
    P = ParamSpec("P")
    R = TypeVar("R")

__all__ = ["Interval", "Options", "Kind", "checked_inside", "available_bytes", "validate_params",
           "bind_table", "check_params", "check_model", "check_seed", "finite_penalty",
           "check_feasible", "arc_consistent_states", "check_bound_feasible", "check_lp_size",
           "INFEASIBLE", "MAX_ABS_THETA", "HIGHS_MAX_ABS_THETA", "AC_ROUNDS", "HIGHS_MEMORY_LIMIT",
           "CALLABLE", "EXECUTOR", "TIME", "MEMORY", "SEED"]

#: the one message for a model with no feasible assignment (log Z = -inf), from every entry
#: point (`fwcore.exact` words it the same)
INFEASIBLE = ("the model has no feasible assignment: every joint state scores -inf "
              "(log Z = -inf); check the -inf entries of theta")
#: largest |finite log-potential| a model may hold: sums over up to 10^100 factors cannot
#: overflow, and neither can the penalties, TRW weights and LP costs derived from them
MAX_ABS_THETA = 1e100
#: most propagation rounds of the arc-consistency check (`check_feasible`)
AC_ROUNDS = 1000
#: default cap (bytes) on the memory HiGHS may need for an LP or ILP over the local polytope
HIGHS_MEMORY_LIMIT = 2**31
#: peak bytes per nonzero of the local-polytope constraint matrix, HiGHS and scipy's copies
#: together (measured on chains and single edges of 10 to 500 labels: LP 370-490, ILP
#: 770-1400; rounded up)
_HIGHS_BYTES_PER_NONZERO = {"lp": 600, "ilp": 1500}
#: largest |finite log-potential| of a model given to HiGHS: it takes costs from 1e20 on as
#: infinite, and on local-polytope LPs mixing N(0, 1) entries with ±x it failed (status 4)
#: or missed the optimum on 1-30 of 30 random models for every x from 1e12 to 1e100
#: (none up to 1e9)
HIGHS_MAX_ABS_THETA = 1e10
_HIGHS_INSTEAD = {
    "lp": "use 'trws' (its bound is one on the same LP) or fwcore.infer_lp",
    "ilp": "use 'exact' (tree or elimination when they fit), 'toulbar2', or an approximate "
           "oracle ('trws', 'icm', 'portfolio')",
}


class Interval:
    """A real (or, with ``integer=True``, whole) number in [lo, hi]; ``lo_open`` /
    ``hi_open`` exclude an end. Returns it as float (int)."""

    def __init__(self, lo=-math.inf, hi=math.inf, *, lo_open=False, hi_open=False,
                 integer=False):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        self.integer = integer

    def of_type(self, v):
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    def accepts(self, v):
        if not self.of_type(v) or not math.isfinite(v):
            return False
        if self.integer and int(v) != v:
            return False
        above = self.lo < v if self.lo_open else self.lo <= v
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def convert(self, v):
        return int(v) if self.integer else float(v)

    def describe(self):
        text = "an integer" if self.integer else "a number"
        if self.lo > -math.inf:
            text += f" {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi < math.inf:
            text += (f"{' and' if self.lo > -math.inf else ''} "
                     f"{'<' if self.hi_open else '<='} {self.hi:g}")
        return text


class Options:
    """One of a fixed set of strings."""

    def __init__(self, *values):
        self.values = values

    def of_type(self, v):
        return isinstance(v, str)

    def accepts(self, v):
        return isinstance(v, str) and v in self.values

    def convert(self, v):
        return v

    def describe(self):
        return "one of " + ", ".join(map(repr, self.values))


class Kind:
    """Anything for which ``test(value)`` holds (a type test); with ``of_type``, a value
    of that type that fails ``test`` is out of range (ValueError, not TypeError)."""

    def __init__(self, test, description, of_type=None):
        self.test, self.description, self._of_type = test, description, of_type or test

    def of_type(self, v):
        return bool(self._of_type(v))

    def accepts(self, v):
        return bool(self.test(v))

    def convert(self, v):
        return v

    def describe(self):
        return self.description


CALLABLE = Kind(callable, "a callable")


def checked_inside(description):
    """The constraint of an option that its method checks itself (an oracle spec by the
    registry, edge weights by `fwcore.marginals.rho`): any value passes here."""
    return Kind(lambda v: True, description)
BOOL = Kind(lambda v: isinstance(v, (bool, np.bool_)), "a bool")
#: threads, processes, or a cluster's (dask.distributed ``Client.get_executor()``)
EXECUTOR = Kind(lambda e: isinstance(e, Executor), "a concurrent.futures.Executor")
#: a time budget in seconds
TIME = [Interval(0.0, lo_open=True), None]
#: a memory budget in bytes
MEMORY = Interval(0.0, lo_open=True)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


#: numpy's seeds: non-negative ints
SEED = [Kind(lambda s: _is_int(s) and s >= 0, "an int >= 0", of_type=_is_int), None]
#: threads of a kernel: an int >= 1, or -1 for one per core (scikit-learn's convention);
#: `n_threads` turns it into a count
N_JOBS = Kind(lambda v: _is_int(v) and (v >= 1 or v == -1), "an int >= 1 or -1 (every core)",
              of_type=_is_int)


def available_bytes():
    """Bytes this process can still allocate, as far as the system says (None: unknown):
    the memory available on the machine (Linux ``MemAvailable``, else the free physical
    pages), and under an address-space limit (``RLIMIT_AS``) what is left of it. The
    methods refuse, before allocating, what will not fit, and size their defaults by it."""
    have = None
    try:
        with open("/proc/meminfo") as f:
            have = next(int(line.split()[1]) * 1024 for line in f
                        if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError):
        try:
            have = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/status") as f:
                size = next(int(line.split()[1]) * 1024 for line in f
                            if line.startswith("VmSize:"))
            have = soft - size if have is None else min(have, soft - size)
    except (ImportError, OSError, StopIteration, ValueError):
        pass
    return have


def n_threads(n_jobs):
    """The thread count ``n_jobs`` (`N_JOBS`) asks for."""
    return (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)


def check_params(table, **values):
    """Check ``values`` against ``table`` (argument -> constraint or list of constraints);
    return the converted values in a dict. A value of no allowed type raises TypeError,
    one of an allowed type but out of range ValueError; both name the argument."""
    out = {}
    for name, value in values.items():
        allowed = table[name] if isinstance(table[name], list) else [table[name]]
        if value is None and None in allowed:
            out[name] = None
            continue
        for c in allowed:
            if c is not None and c.accepts(value):
                out[name] = c.convert(value)
                break
        else:
            rules = [c for c in allowed if c is not None]
            text = (" or ".join(c.describe() for c in rules)
                    + (" or None" if None in allowed else ""))
            error = ValueError if any(c.of_type(value) for c in rules) else TypeError
            shown = type(value).__name__ if error is TypeError else repr(value)
            raise error(f"{name} must be {text}; got {shown}")
    return out


def validate_params(table: Mapping[str, object], unchecked: Iterable[str] = ()
                    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator binding the constraint ``table`` to an entry point's signature.

    Every named parameter of the function (all but a method's ``self`` and ``*args`` /
    ``**kwargs``, which pass through as given) is either in ``table`` or named in
    ``unchecked``: an argument with a check of its own (the model, `check_model`; an oracle
    spec, the registry; a domain or an objective) or one used as it is. A table that
    misses a parameter, names one the function does not have, or shares one with
    ``unchecked`` is refused (ValueError) when the function is decorated.

    At each call the arguments are bound to the signature (defaults applied), the tabled
    ones checked by `check_params` and the function called with their converted values,
    so its body reads plain argument names. The wrapper keeps the function's name, doc
    and signature, and exposes the table as ``__fwcore_params__``; it composes with
    `fwcore.factor_graph.solves_factor_graphs` in either order (fwcore puts it outside)."""
    def bind(entry: Callable[P, R]) -> Callable[P, R]:
        signature = bind_table(entry, table, unchecked)
        params = signature.parameters.values()
        # a call that names each parameter once is bound by a dict (inspect's binding costs
        # ~20 us a call, a fifth of a Barrier FW correction on a 5x5 grid)
        by_name = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        call_checked: Callable[..., R] = entry  # called with the checked arguments, rebound
        defaults = {p.name: p.default for p in params if p.default is not p.empty}
        names = frozenset(signature.parameters)
        required = names - defaults.keys()

        @functools.wraps(entry)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            given = positional[:len(args)]
            if (by_name and len(args) <= len(positional) and names.issuperset(kwargs) and
                    kwargs.keys().isdisjoint(given) and required.issubset([*given, *kwargs])):
                arguments = {**defaults, **dict(zip(given, args)), **kwargs}
                arguments.update(check_params(table, **{name: arguments[name]
                                                        for name in table}))
                return call_checked(**arguments)
            try:  # Python's words for a call that does not fit; *args and **kwargs
                call = signature.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{entry.__qualname__}() {err}") from None
            call.apply_defaults()
            call.arguments.update(check_params(table, **{name: call.arguments[name]
                                                         for name in table}))
            return call_checked(*call.args, **call.kwargs)
        checked.__fwcore_params__ = table  # type: ignore[attr-defined]
        return checked
    return bind


def bind_table(entry, table, unchecked=()):
    """Refuse (ValueError) a ``table`` whose keys and ``unchecked`` are not the named
    parameters of ``entry`` (all but a method's ``self`` and ``*args`` / ``**kwargs``), one
    each; return ``entry``'s signature. `validate_params` binds with it, and so do the
    learners, whose constructors only store their arguments and whose ``fit`` checks them
    (scikit-learn's habit)."""
    signature = inspect.signature(entry)
    named = {name for name, p in signature.parameters.items() if name != "self"
             and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    problems = [f"{sorted(names)} {why}" for names, why in (
        (named - set(table) - set(unchecked), "in neither the table nor unchecked"),
        ((set(table) | set(unchecked)) - named, "not parameters of the function"),
        (set(table) & set(unchecked), "both in the table and unchecked")) if names]
    if problems:
        raise ValueError(f"the table of {entry.__qualname__}: " + "; ".join(problems))
    return signature


def check_model(model: object, name: str = "model") -> PairwiseMRF:
    """The one model check: a `fwcore.PairwiseMRF` (TypeError naming the argument
    otherwise) whose finite log-potentials are at most `MAX_ABS_THETA` in absolute value
    (ValueError naming the first block that is not: larger ones overflow when summed)."""
    if not isinstance(model, PairwiseMRF):
        if isinstance(model, FactorGraph):
            raise TypeError(f"{name} must be a fwcore.PairwiseMRF here; this FactorGraph's "
                            f"exact pairwise reduction is {name}.reduced (the inference "
                            "functions take a FactorGraph directly)")
        raise TypeError(f"{name} must be a fwcore.PairwiseMRF (build one with "
                        f"fwcore.PairwiseMRF(...) or fwcore.read_uai); got {type(model).__name__}")
    big = _once_per_model(model, "oversized", _oversized)
    if big is not None:
        raise ValueError(f"{name} has the log-potential {model.theta[big]:g} in "
                         f"{_block_name(model, big)}; finite log-potentials must be at "
                         f"most {MAX_ABS_THETA:g} in absolute value (they overflow when "
                         "summed): rescale them, or use -inf for impossible states")
    return model


#: `_once_per_model`'s results, dropped with their model
_PER_MODEL: weakref.WeakKeyDictionary[PairwiseMRF, dict[str, object]] = (
    weakref.WeakKeyDictionary())


def _once_per_model(model, key, compute):
    """``compute(model)``, computed once per model: its arrays are read-only."""
    memo = _PER_MODEL.setdefault(model, {})
    if key not in memo:
        memo[key] = compute(model)
    return memo[key]


def _oversized(model):
    """Position of the first finite log-potential above `MAX_ABS_THETA`, or None."""
    theta = model.theta
    if not theta.size or (theta.max() <= MAX_ABS_THETA and theta.min() >= -MAX_ABS_THETA):
        return None
    big = np.flatnonzero((np.abs(theta) > MAX_ABS_THETA) & (theta != -np.inf))
    return int(big[0]) if big.size else None


def _block_name(model, k):
    """'variable i' or 'edge e (i, j)' for position k of the flat layout."""
    if k < model.node_off[-1]:
        return f"variable {int(np.searchsorted(model.node_off, k, side='right')) - 1}"
    e = int(np.searchsorted(model.edge_off, k, side="right")) - 1
    return f"edge {e} ({model.edges[e, 0]}, {model.edges[e, 1]})"


def check_seed(seed):
    """A `numpy.random.Generator` from an int seed or None (TypeError otherwise)."""
    return np.random.default_rng(check_params({"seed": SEED}, seed=seed)["seed"])


def finite_penalty(model, scores, margin):
    """``scores`` (flat layout) with each −inf entry replaced by the least finite entry of
    its block minus R + ``margin``, R = Σ_blocks (max − min of the finite entries): any
    assignment that uses a replaced entry then scores at least ``margin`` below every
    assignment that does not. So the maximisers are unchanged (margin > 0), and with
    margin = 50 + log(#assignments) log Z rises by at most e^-50: bounds computed on the
    penalised scores stay bounds for the given ones. Blocks with no finite entry get 0
    minus R + margin."""
    bad = np.isneginf(scores)
    if not bad.any():
        return scores
    starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]])
    sizes = np.diff(np.concatenate([starts, [model.dim]]))
    finite = np.where(bad, np.nan, scores)
    block = np.repeat(np.arange(starts.size), sizes)
    empty = np.add.reduceat(~bad, starts) == 0
    with np.errstate(all="ignore"):
        lo = np.where(empty, 0.0, np.fmin.reduceat(np.where(bad, np.inf, finite), starts))
        hi = np.where(empty, 0.0, np.fmax.reduceat(np.where(bad, -np.inf, finite), starts))
    spread = float((hi - lo).sum())
    return np.where(bad, (lo - spread - margin)[block], scores)


def check_feasible(model: PairwiseMRF) -> PairwiseMRF:
    """Raise ValueError(`INFEASIBLE`) when arc consistency proves that ``model`` has no
    feasible assignment (one whose score is finite); return the model otherwise
    (`arc_consistent_states` says how)."""
    if model.theta.size and model.theta.min() == -np.inf:  # no temporary of theta's size
        arc_consistent_states(model, model.theta)
    return model


def arc_consistent_states(model, theta):
    """The states (bool, ``model``'s node layout) that arc consistency keeps under the
    scores ``theta`` (``model``'s flat layout): no feasible assignment uses another one;
    ValueError(`INFEASIBLE`) when a variable keeps none.

    A state is deleted when its unary entry is -inf, or when some edge at its variable
    gives it -inf with every remaining state of the neighbour (AC-3 over the -inf pattern
    of the unary and pairwise tables, repeated until nothing changes or `AC_ROUNDS`
    times); a variable left with no state proves the model infeasible. Detected: a factor
    that is -inf in every state, and any chain of such deletions that empties a variable
    within `AC_ROUNDS` rounds. Not detected (NP-hard
    in general): infeasibility that needs search over cycles, e.g. two labels that must
    differ around a triangle, where every variable keeps states; nor deletions that
    propagate for more than `AC_ROUNDS` rounds (a chain of thousands of forced variables;
    a round costs about a millisecond). There the exact methods find log Z = -inf and raise
    the same message (`check_bound_feasible`). Cost: the tables that hold a -inf, once,
    then only those at variables that lost a state."""
    n_node = int(model.node_off[-1])
    card, node_off = model.card.astype(np.int64), model.node_off
    alive = np.isfinite(theta[:n_node])
    n_alive = np.add.reduceat(alive, node_off[:-1]) if model.n_vars else np.zeros(0)
    if (n_alive == 0).any():
        raise ValueError(INFEASIBLE)
    var_of = np.repeat(np.arange(model.n_vars), card)
    hard = np.zeros(model.n_edges, dtype=bool)
    if model.n_edges:
        hard = np.logical_or.reduceat(np.isneginf(theta[n_node:]), model.edge_off[:-1] - n_node)
    active = np.flatnonzero(hard)
    for _ in range(AC_ROUNDS):
        if not active.size:
            break
        ends = model.edges[active].astype(np.int64)
        ci, cj = card[ends[:, 0]], card[ends[:, 1]]
        entry, k, a, b = model.edge_entries(active)
        ok = ((theta[entry] != -np.inf) & alive[node_off[ends[k, 0]] + a] &
              alive[node_off[ends[k, 1]] + b])
        rows = np.bincount((np.cumsum(ci) - ci)[k] + a, weights=ok, minlength=int(ci.sum()))
        cols = np.bincount((np.cumsum(cj) - cj)[k] + b, weights=ok, minlength=int(cj.sum()))
        dead = np.concatenate([concat_ranges(node_off[ends[:, 0]], ci)[rows == 0],
                               concat_ranges(node_off[ends[:, 1]], cj)[cols == 0]])
        dead = np.unique(dead[alive[dead]])
        if not dead.size:
            break
        alive[dead] = False
        np.subtract.at(n_alive, var_of[dead], 1)
        changed = np.unique(var_of[dead])
        if (n_alive[changed] == 0).any():
            raise ValueError(INFEASIBLE)
        slots = concat_ranges(model.adj_start[changed], np.diff(model.adj_start)[changed])
        touched = model.adj_edge[slots]
        active = np.unique(touched[hard[touched]])
    return alive


def check_bound_feasible(model, bound):
    """Raise ValueError(`INFEASIBLE`) when ``bound`` proves ``model`` infeasible.

    ``bound`` is a certified upper bound on the maximum score, or on log Z, of ``model``
    or of it with its -inf entries replaced by `finite_penalty` (any margin), or None (no
    bound: nothing to check). A feasible assignment uses only finite entries, so it scores at
    least the sum over factors of their least finite entry: a bound below that sum (less
    0.5 + 1e-9 relative, for round-off) proves that there is none. With margin m, an
    infeasible model's penalised maximum is at most that sum minus m, so an exact method
    (a tight bound) always finds it when m > 0.5 (m > 0.5 + log of the number of joint
    states for log Z)."""
    if bound is not None and bound < _once_per_model(model, "feasible_floor", _feasible_floor):
        raise ValueError(INFEASIBLE)


def _feasible_floor(model):
    """Σ over factors of the least finite entry, less 0.5 + 1e-9 relative (see
    `check_bound_feasible`); -inf for a model without factors."""
    theta = model.theta
    starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]])
    if starts.size == 0:
        return -np.inf
    if np.isfinite(theta).all():   # no temporaries of theta's size (3 s a 10^6 Potts-8 grid)
        least = np.minimum.reduceat(theta, starts)
        scale = np.maximum(np.maximum.reduceat(theta, starts), -least).sum()
    else:
        finite = np.isfinite(theta)
        least = np.minimum.reduceat(np.where(finite, theta, np.inf), starts)
        scale = np.maximum.reduceat(np.where(finite, np.abs(theta), 0.0), starts).sum()
    return float(least.sum() - 0.5 - 1e-9 * scale)


def check_lp_size(model, kind, memory_limit):
    """Refuse, before anything is built, a HiGHS problem over the local polytope of
    ``model`` (``kind`` "lp" or "ilp") whose memory estimate, bytes per nonzero of its
    constraint matrix (`_HIGHS_BYTES_PER_NONZERO`) times the nonzeros, exceeds
    ``memory_limit`` bytes: ValueError naming the size and the alternatives (HiGHS aborts
    the interpreter when an allocation fails); also one whose finite log-potentials exceed
    `HIGHS_MAX_ABS_THETA` in absolute value (HiGHS's tolerances are absolute: it fails or
    misses the optimum). Returns ``memory_limit`` checked."""
    memory_limit = check_params({"memory_limit": Interval(1)},
                                memory_limit=memory_limit)["memory_limit"]
    finite = model.theta[np.isfinite(model.theta)]
    largest = float(np.abs(finite).max(initial=0.0))
    if largest > HIGHS_MAX_ABS_THETA:
        raise ValueError(
            f"model has a log-potential of absolute value {largest:g}: the {kind.upper()} "
            f"solver HiGHS is reliable up to {HIGHS_MAX_ABS_THETA:g} only; "
            f"{_HIGHS_INSTEAD[kind]}, or rescale the log-potentials")
    card = model.card.astype(np.int64)
    n_node = int(model.node_off[-1])
    marginal_rows = int((card[model.edges[:, 0]] + card[model.edges[:, 1]]).sum())
    rows = model.n_vars + marginal_rows
    nonzeros = n_node + 2 * (model.dim - n_node) + marginal_rows
    need = _HIGHS_BYTES_PER_NONZERO[kind] * nonzeros
    if need > memory_limit:
        raise ValueError(
            f"the local-polytope {kind.upper()} has {model.dim} columns, {rows} rows and "
            f"{nonzeros} nonzeros: HiGHS would need about {need / 2**30:.3g} GiB, more than "
            f"memory_limit = {memory_limit / 2**30:.3g} GiB; {_HIGHS_INSTEAD[kind]}, or "
            "raise memory_limit if the machine has the memory")
    return memory_limit
