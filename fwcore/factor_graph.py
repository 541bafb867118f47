"""Models with factors over any number of variables, solved through an exact pairwise
reduction (DESIGN.md, "Factor graphs").

    p(x) ∝ exp( Σ_f θ_f(x_f) )

A factor over three or more variables keeps its pivot p (the variable of most states)
and becomes one auxiliary variable y whose states are the joint states of the rest of its
scope that some state of p makes feasible (θ_f > −inf); θ_f is the edge table (p, y), and
y is tied to each other variable of the scope by a 0 / −inf consistency table. So a
factor costs O(arity × its table) whatever its cardinalities (a (N, 2, 2) factor: N x 4
entries and a 4-state y, not a 4N-state y tied to p by N x 4N). Every assignment of the
user's variables with a finite score extends to exactly one assignment of the reduction
with the same score, and no other assignment of the reduction is finite, so log Z, the
MAP and the marginals of the user's variables are those of the reduction. Lower-order
factors whose scope lies inside a larger factor's are folded into it first (exactly:
tables add), which removes the cycles they would close through the auxiliary variable.

Why a reduction and not a factor-graph layout beside the pairwise one: every solver of the
library (exact elimination, TRW and Barrier FW, BP, MAP oracles, the LP relaxation) then
runs unchanged, at its pairwise speed. Its TRW bound is the bound of the reduced pairwise
model, certified like any other: an upper bound on log Z of the factor graph, equal on
factor trees.
"""
from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Callable, cast

import numpy as np
from numpy.typing import ArrayLike

from ._uai import add_tables
from .model import (Named, PairwiseMRF, check_card, check_values, int_array, block_offsets,
                    check_names)

if TYPE_CHECKING:  # the decorator keeps the signature it wraps (typing_extensions: Python 3.9)
    from typing import TypeVar

    from typing_extensions import ParamSpec
    P = ParamSpec("P")
    R = TypeVar("R")

__all__ = ["FactorGraph", "model_from_factors", "model_from_flat_factors"]


class FactorGraph(Named):
    """A Markov random field with factors of any arity, scores maximised.

    Parameters
    ----------
    card : sequence of int, shape (n,)
        Number of states of each variable (>= 1).
    factors : sequence of (scope, table)
        ``scope`` a tuple of distinct variable indices (any length, 0 for a constant),
        ``table`` the log-potentials θ_f, an array of shape ``[card[v] for v in scope]``
        indexed in scope order. ``-inf`` marks impossible joint states; NaN and ``+inf``
        are rejected.
    names, states : optional variable names and per-variable state names
        (`fwcore.model.Named`).

    Notes
    -----
    Every inference entry point (`fwcore.exact_inference`, `exact_map`, `infer`, `trbp`,
    `loopy_bp`, `infer_map`, `infer_lp`, `perturb_and_map`) takes a FactorGraph: it
    solves the pairwise reduction ``reduced`` (a `PairwiseMRF` whose first ``n_vars``
    variables are the user's) and returns its result on the user's variables: node
    marginals and assignments of length ``n_vars``; edge marginals, ``mu`` and ``rho``
    for the pairwise factors kept as edges (``skeleton``); a score is that of the
    assignment on the user's variables (`score`). ``aux_factors[a]`` = (scope, states)
    of auxiliary variable ``n_vars + a``: the factor's scope, pivot first, and the flat
    indices (over ``scope[1:]``) of its states. The marginal of a higher-order factor is
    the edge marginal of (``scope[0]``, ``n_vars + a``): run on ``reduced`` to read it.
    """

    __slots__ = ("card", "factors", "reduced", "skeleton", "aux_factors", "names", "states")

    def __init__(self, card: ArrayLike, factors: Sequence[tuple], *,
                 names: Sequence[Hashable] | None = None,
                 states: Sequence[Sequence[Hashable]] | None = None):
        self.card = check_card(card)
        self.names, self.states = check_names(names, states, self.card)
        n = self.card.shape[0]
        cards = self.card.tolist()
        self.factors = tuple(_check_factor(k, f, cards) for k, f in enumerate(factors))
        self.reduced, self.aux_factors = _reduce(self.card, self.factors)
        red = self.reduced
        n_edges = int((red.edges[:, 1] < n).sum())  # the pairwise factors, first
        theta = np.concatenate([red.theta[:red.node_off[n]],
                                red.theta[red.edge_off[0]:red.edge_off[n_edges]]])
        self.skeleton = PairwiseMRF.from_flat(self.card, red.edges[:n_edges], theta)

    @property
    def n_vars(self):
        return int(self.card.shape[0])

    @property
    def n_factors(self):
        return len(self.factors)

    @property
    def max_arity(self):
        return max((len(s) for s, _ in self.factors), default=0)

    def __repr__(self):
        return (f"FactorGraph(n_vars={self.n_vars}, n_factors={self.n_factors}, "
                f"max_arity={self.max_arity}, reduced={self.reduced!r})")

    def score(self, x):
        """Σ_f θ_f(x_f): the log-score of an assignment of the user's variables."""
        x = self.skeleton.check_assignment(x)
        return float(sum(t[tuple(x[list(s)])] for s, t in self.factors))

    def extend(self, x):
        """The reduction's assignment that extends ``x`` (each auxiliary variable at the
        joint state of its scope); ValueError when ``x`` has score −inf (no extension)."""
        x = self.skeleton.check_assignment(x)
        if self.score(x) == -np.inf:
            raise ValueError("the assignment has score -inf (it takes an impossible state "
                             "of some factor): the reduction has no assignment extending it")
        full = np.zeros(self.reduced.n_vars, dtype=np.int64)
        full[:self.n_vars] = x
        for a, (scope, states) in enumerate(self.aux_factors):
            joint = np.ravel_multi_index(x[list(scope[1:])], self.card[list(scope[1:])])
            full[self.n_vars + a] = np.searchsorted(states, joint)
        return full

    def restrict(self, result):
        """``result`` (of an entry point run on ``reduced``) on the user's variables: node
        marginals and assignments cut to ``n_vars``, edge marginals, ``mu`` and ``rho`` to
        the ``skeleton``'s edges, and an assignment's ``score`` (and ``gap``) that of the
        cut assignment (`score`: the auxiliary variables' states need not agree with it).
        Other fields stay."""
        n, red, sk = self.n_vars, self.reduced, self.skeleton
        given = {f.name: getattr(result, f.name) for f in fields(result)}
        cut = {}
        if given.get("node_marginals") is not None:
            cut["node_marginals"] = given["node_marginals"][:n]
        if given.get("edge_marginals") is not None:
            cut["edge_marginals"] = given["edge_marginals"][:sk.n_edges]
        if given.get("mu") is not None:
            mu = given["mu"]
            cut["mu"] = np.concatenate([mu[:red.node_off[n]],
                                        mu[red.edge_off[0]:red.edge_off[sk.n_edges]]])
        if given.get("info", {}).get("rho") is not None:  # a marginal method's edge weights
            cut["info"] = {**given["info"], "rho": np.asarray(given["info"]["rho"])[:sk.n_edges]}
        if given.get("assignment") is not None:
            cut["assignment"] = np.asarray(given["assignment"])[:n]
            if "score" in given:
                cut["score"] = self.score(cut["assignment"])
            if given.get("gap") is not None:
                cut["gap"] = given["upper_bound"] - cut["score"]
        return replace(result, **cut)


def model_from_factors(card: ArrayLike, factors: Sequence[tuple],
                       names: Sequence[Hashable] | None = None,
                       states: Sequence[Sequence[Hashable]] | None = None
                       ) -> PairwiseMRF | FactorGraph:
    """The model of log-potential ``factors`` (scope, table) over variables of ``card``
    states: a `PairwiseMRF` when every factor has arity 1 or 2 (`model_from_flat_factors`),
    else a `FactorGraph`; with the variables' ``names`` and ``states`` when given."""
    if any(len(scope) not in (1, 2) for scope, _ in factors):
        return FactorGraph(card, factors, names=names, states=states)
    checked_card = check_card(card)
    cards = checked_card.tolist()
    checked = [_check_factor(k, f, cards) for k, f in enumerate(factors)]
    arity = np.array([len(s) for s, _ in checked], dtype=np.int64)
    variables = np.array([v for s, _ in checked for v in s], dtype=np.int64)
    tables = np.concatenate([t.ravel() for _, t in checked]) if checked else np.zeros(0)
    table_off = np.zeros(len(checked) + 1, dtype=np.int64)
    np.cumsum([t.size for _, t in checked], out=table_off[1:])
    return model_from_flat_factors(checked_card, arity, variables, tables, table_off, names,
                                   states)


def model_from_flat_factors(card, arity, variables, tables, table_off, names=None,
                            states=None):
    """`model_from_factors` for factors given flat (as `fwcore.read_uai` reads them, and
    checked): factor f's scope is the next ``arity[f]`` entries of ``variables``, its log
    table ``tables[table_off[f]:table_off[f + 1]]`` (last variable fastest). Pairwise
    models are assembled without Python per factor: factors on one scope summed in their
    order, a scope (j, i) with j > i transposed, arity-1 factors added to the unary,
    edges in the order of their first factor (`fwcore._uai.add_tables`)."""
    card = np.asarray(card, dtype=np.int64)
    scope_start = np.cumsum(arity) - arity
    if not ((arity == 1) | (arity == 2)).all():
        shapes = [card[variables[s:s + a]] for s, a in zip(scope_start, arity)]
        factors = [(tuple(variables[s:s + a].tolist()), tables[o:p].reshape(shape))
                   for s, a, o, p, shape in zip(scope_start, arity, table_off[:-1],
                                                table_off[1:], shapes)]
        return FactorGraph(card, factors, names=names, states=states)
    n = card.shape[0]
    first = variables[scope_start]
    pair = np.flatnonzero(arity == 2)
    a, b = first[pair], variables[scope_start[pair] + 1]
    keys = np.minimum(a, b) * n + np.maximum(a, b)
    edge_of = np.arange(keys.size)
    if keys.size and not (keys[1:] > keys[:-1]).all():  # else distinct, in order (grids)
        keys, at, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(at, kind="stable")               # by first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        edge_of, keys = rank[inverse.reshape(-1)], keys[order]
    edges = np.stack([keys // max(n, 1), keys % max(n, 1)], axis=1)
    if (arity.shape[0] == n + edges.shape[0] and not (a > b).any()
            and (edge_of == np.arange(edge_of.size)).all()
            and np.array_equal(variables[:n], np.arange(n)) and (arity[:n] == 1).all()):
        theta = tables  # a unary per variable in order, then the edges: the flat layout
    else:
        theta = _added(card, arity, variables, tables, table_off, edges, edge_of, a, b)
    theta.flags.writeable = False   # shared, not copied
    return PairwiseMRF.from_flat(card, edges, theta, names, states)


def _added(card, arity, variables, tables, table_off, edges, edge_of, a, b):
    """θ of `model_from_flat_factors`: each factor's table added into its block."""
    first = variables[np.cumsum(arity) - arity]
    pair = np.flatnonzero(arity == 2)
    node_off, edge_off = block_offsets(card, edges)
    dest = node_off[first]
    dest[pair] = edge_off[edge_of]
    cols = np.ones(arity.shape[0], dtype=np.int64)
    cols[pair] = card[b]
    flipped = np.zeros(arity.shape[0], dtype=np.int8)
    flipped[pair] = a > b
    theta = np.zeros(edge_off[-1])
    add_tables(theta, tables, table_off, dest, card[first], cols, flipped)
    return theta


def solves_factor_graphs(entry: Callable[P, R]) -> Callable[P, R]:
    """Let the inference function ``entry(model, ...)`` of a `PairwiseMRF` take a
    `FactorGraph`: it runs on the reduction, and the result is restricted to the user's
    variables (`FactorGraph.restrict`)."""

    @functools.wraps(entry)
    def run(model, *args, **kwargs):
        if isinstance(model, FactorGraph):
            return model.restrict(entry(model.reduced, *args, **kwargs))
        return entry(model, *args, **kwargs)
    return cast("Callable[P, R]", run)


def _check_factor(k, factor, cards):
    """(scope tuple, float64 table) of factor ``k``, validated (``cards``: the
    cardinalities as a list). A scope that is a tuple of ints is taken as it is (a
    microsecond a factor), any other through the index checks."""
    try:
        scope, table = factor
    except (TypeError, ValueError):
        raise TypeError(f"factors[{k}] must be a pair (scope, table); got "
                        f"{type(factor).__name__}") from None
    if type(scope) is not tuple or not all(type(v) is int for v in scope):
        scope = tuple(int(v) for v in int_array(f"factors[{k}] scope", scope).reshape(-1))
    n = len(cards)
    if any(v < 0 or v >= n for v in scope):
        raise ValueError(f"factors[{k}] scope {scope} must index variables 0..{n - 1}")
    if len(set(scope)) != len(scope):
        raise ValueError(f"factors[{k}] scope {scope} repeats a variable")
    table = np.asarray(table)
    if table.dtype.kind not in "iuf":
        raise TypeError(f"factors[{k}] table must be numeric; got dtype {table.dtype}")
    shape = tuple(cards[v] for v in scope)
    if table.shape != shape:
        raise ValueError(f"factors[{k}] table has shape {table.shape}; its scope {scope} "
                         f"needs {shape}")
    table = table.astype(np.float64)
    check_values(f"factors[{k}] table", table)
    table.setflags(write=False)
    return scope, table


def _sorted_factor(scope, table):
    """The same factor with its scope in increasing order (table axes permuted)."""
    if len(scope) == 2:  # the common case, without numpy's argsort
        return (scope, table) if scope[0] < scope[1] else (scope[::-1], table.T)
    order = sorted(range(len(scope)), key=scope.__getitem__)
    return tuple(scope[i] for i in order), np.transpose(table, order)


def _reduce(card, factors):
    """The pairwise reduction: (PairwiseMRF, ``aux_factors`` as `FactorGraph` documents
    them). Variables with one possible state are conditioned on (their factors sliced);
    constants go into variable 0's unary (if there is no variable, a model with no states
    is refused); factors are folded into the largest factor that contains their scope;
    pairwise factors become edges, larger ones a pivot edge and an auxiliary variable
    (the module's docstring)."""
    n = card.shape[0]
    unary = {}  # variable -> the sum of its unary tables (none: zeros)
    larger = []
    for scope, table in factors:
        if len(scope) == 1:
            unary[scope[0]] = unary[scope[0]] + table if scope[0] in unary else 0.0 + table
        else:
            larger.append(_sorted_factor(scope, table))
    # a variable with one possible state (evidence, or one state) is conditioned on:
    # the factors are sliced there, so it joins no edge and no auxiliary variable
    fixed = {v: int(np.argmax(u)) for v, u in unary.items() if np.isfinite(u).sum() == 1}
    fixed.update((int(v), 0) for v in np.flatnonzero(card == 1) if v not in unary)
    groups = {}  # sorted scope -> summed table (first appearance order)
    constant = 0.0
    for scope, table in larger:
        if any(v in fixed for v in scope):
            table = table[tuple(fixed.get(v, slice(None)) for v in scope)]
            scope = tuple(v for v in scope if v not in fixed)
        if not scope:
            constant += float(table)
        elif len(scope) == 1:
            v = scope[0]
            unary[v] = unary[v] + table if v in unary else 0.0 + table
        else:
            groups[scope] = groups[scope] + table if scope in groups else table
    if constant:
        if n == 0:
            raise ValueError("factors holds a constant but the model has no variable")
        unary[0] = unary.get(0, np.zeros(int(card[0]))) + constant
    big = sorted((s for s in groups if len(s) > 2), key=len, reverse=True)
    containing = {}  # variable -> scopes of arity > 2 holding it, largest first
    for s in big:
        for v in s:
            containing.setdefault(v, []).append(s)
    folded = {}
    for s in list(groups):
        host = next((h for h in containing.get(s[0], ()) if len(h) > len(s) and set(s) <= set(h)),
                    None)
        if host is not None:
            folded[s] = host
    for s in sorted(folded, key=len, reverse=True):  # a host may itself be folded later
        h = folded[s]
        while h in folded:
            h = folded[h]
        groups[h] = groups[h] + _broadcast(groups.pop(s), s, h, card)
    pairs = [(s, t) for s, t in groups.items() if len(s) == 2]
    auxes = [_pivoted(s, t, card) for s, t in groups.items() if len(s) > 2]
    aux_card, aux_edges, aux_tables, aux_factors = [], [], [], []
    for a, (scope, table) in enumerate(auxes):
        rows = table.reshape(table.shape[0], -1)  # pivot x joint states of the rest
        states = np.flatnonzero((rows > -np.inf).any(axis=0))
        if not states.size:  # an impossible factor: one state, -inf (found infeasible later)
            states = np.zeros(1, dtype=np.int64)
        states.setflags(write=False)
        aux_factors.append((scope, states))
        aux_card.append(states.size)
        aux_edges.append((scope[0], n + a))
        aux_tables.append(rows[:, states])
        for v, d in zip(scope[1:], np.unravel_index(states, table.shape[1:])):
            aux_edges.append((v, n + a))
            aux_tables.append(np.where(np.arange(card[v])[:, None] == d[None, :], 0.0, -np.inf))
    model = PairwiseMRF(np.concatenate([card, np.asarray(aux_card, dtype=np.int64)]),
                        [unary.get(v) for v in range(n)] + [None] * len(aux_card),
                        [s for s, _ in pairs] + aux_edges,
                        [t for _, t in pairs] + aux_tables)
    return model, tuple(aux_factors)


def _pivoted(scope, table, card):
    """The factor with its pivot, the variable of most states (the first of them), moved
    to the front of its scope (table axes permuted to match)."""
    p = int(np.argmax(card[list(scope)]))
    order = [p] + [k for k in range(len(scope)) if k != p]
    return tuple(scope[k] for k in order), np.transpose(table, order)


def _broadcast(table, scope, host, card):
    """``table`` over ``scope`` as a table over ``host`` (a sorted superset)."""
    shape = [int(card[v]) if v in scope else 1 for v in host]
    return np.broadcast_to(table.reshape(shape), [int(card[v]) for v in host])
