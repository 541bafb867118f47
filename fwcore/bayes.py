"""The Bayesian-network form of a model: one conditional probability table (CPT) per
variable over an acyclic graph of parents, whose product is the joint distribution
(log Z = 0).

A model read from a BAYES file, a BIF or XMLBIF file, or converted from a pgmpy or
pyAgrum Bayesian network keeps its CPTs as factors; `bayes_form` finds them again, so
that writers keep the network's form (`fwcore.write_uai`'s BAYES, `fwcore.io.bif`,
`fwcore.to_pgmpy`, `fwcore.to_pyagrum`) and `fwcore.sample` draws exact samples by
forward (ancestral) sampling at any treewidth.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._query import topological_order
from .factor_graph import FactorGraph
from .model import PairwiseMRF

__all__ = ["BayesForm", "bayes_form", "factor_view"]


@dataclass(frozen=True)
class BayesForm:
    """A Bayesian network: ``parents[v]`` (variable indices, in the order of the CPT's
    axes), ``cpts[v]`` = P(x_v | parents) as probabilities of shape
    ``card[parents] + (card[v],)`` (the child last), and ``order``, a topological order
    (every variable after its parents; int64)."""

    parents: tuple
    cpts: tuple
    order: np.ndarray


def factor_view(model: PairwiseMRF | FactorGraph) -> list:
    """The factors (scope, log-table) of a model: a FactorGraph's as given; for a
    PairwiseMRF its unaries that are not all zero (a zero unary is no factor), then its
    edges."""
    if isinstance(model, FactorGraph):
        return list(model.factors)
    unary = [((i,), model.unary(i)) for i in range(model.n_vars) if model.unary(i).any()]
    return unary + [(tuple(map(int, model.edges[e])), model.pairwise(e))
                    for e in range(model.n_edges)]


def _n_factors(model):
    """The length of `factor_view` (without building it)."""
    if isinstance(model, FactorGraph):
        return model.n_factors
    unary = model.theta[:model.node_off[-1]] != 0
    used = np.logical_or.reduceat(unary, model.node_off[:-1]) if unary.size else unary
    return int(np.count_nonzero(used)) + model.n_edges


def bayes_form(model: PairwiseMRF | FactorGraph, tol: float = 1e-9) -> BayesForm | None:
    """The model's Bayesian-network form, or None when it has none: each factor is a CPT
    of one variable of its scope, its child (exp of the table sums to 1 within ``tol``
    over the child's axis for every state of the others: the last axis is tried first,
    as UAI BAYES files write CPTs, then the first, as pgmpy's CPDs hold them, then the
    rest), each variable is the child of one factor (a variable of one state in no
    factor is a root of table [1]), and the graph of parents is acyclic. Children are
    given greedily (factors with fewest candidates first), so a network whose tables
    normalise over several axes may be missed: it is then written as a Markov network,
    the same distribution."""
    n, card = model.n_vars, model.card
    if not n or not n >= _n_factors(model) >= int((card > 1).sum()):
        return None
    factors = factor_view(model)
    if any(not scope for scope, _ in factors):  # a constant
        return None
    # the normalisation of every axis, vectorised over the factors of each table shape
    groups: dict[tuple[int, ...], list[int]] = {}
    for f, (_, theta) in enumerate(factors):
        groups.setdefault(theta.shape, []).append(f)
    candidates: dict[int, list[int]] = {}  # factor -> the axes its table normalises over
    probs: dict[int, np.ndarray] = {}
    for shape, fs in groups.items():
        p = np.exp(np.stack([factors[f][1] for f in fs]))
        axes = list(dict.fromkeys([len(shape) - 1, 0, *range(1, len(shape) - 1)]))
        good = [np.abs(p.sum(axis=1 + a) - 1.0).reshape(len(fs), -1).max(axis=1) <= tol
                for a in axes]
        for k, f in enumerate(fs):
            candidates[f] = [a for a, g in zip(axes, good) if g[k]]
            probs[f] = p[k]
    if not all(candidates.values()):
        return None
    child_of = [-1] * len(factors)
    owner = np.full(n, -1, dtype=np.int64)
    for f in sorted(range(len(factors)), key=lambda f: len(candidates[f])):
        scope = factors[f][0]
        free = [a for a in candidates[f] if owner[scope[a]] < 0]
        if not free:
            return None
        child_of[f] = free[0]
        owner[scope[free[0]]] = f
    if (owner[card > 1] < 0).any():
        return None
    parents: list[tuple[int, ...]] = [()] * n
    cpts = [np.ones(1)] * n
    for f, (scope, _) in enumerate(factors):
        a = child_of[f]
        v = scope[a]
        parents[v] = scope[:a] + scope[a + 1:]
        cpts[v] = probs[f].transpose((*range(a), *range(a + 1, len(scope)), a))
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parents], out=start[1:])
    flat = np.fromiter((u for p in parents for u in p), np.int64, int(start[-1]))
    order = topological_order(start, flat)
    if order.size < n:  # a cycle
        return None
    return BayesForm(tuple(parents), tuple(cpts), order)
