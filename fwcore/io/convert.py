"""Models from other libraries and back: pgmpy and pyAgrum networks (Markov and
Bayesian) both ways (`to_pgmpy`, `to_pyagrum`), and networkx graphs carrying
log-potentials.

Each converter returns the model: a `PairwiseMRF` when every factor has arity 1 or 2,
else a `FactorGraph` (`fwcore.factor_graph.model_from_factors`), with the other library's
variable names as ``model.names`` (``names[i]`` is variable i) and, from pgmpy and
pyAgrum, its state names as ``model.states``, so evidence and answers go by name
(`fwcore.apply_evidence`, `fwcore.model.Named.named`). Tables of potentials (pgmpy,
pyAgrum) become log-potentials; zeros are impossible states (−inf), negative or
non-finite entries are refused. The libraries are optional extras, never imported here:
the converters read the objects they are given.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import cast

import numpy as np

from ..bayes import bayes_form, factor_view
from ..checks import Kind, validate_params
from ..factor_graph import FactorGraph, model_from_factors
from ..model import PairwiseMRF
from .uai import CPT_TOL

__all__ = ["from_pgmpy", "from_pyagrum", "from_networkx", "to_pgmpy", "to_pyagrum"]

_ATTRIBUTE = Kind(lambda key: isinstance(key, Hashable), "a networkx attribute name (hashable)")


def from_pgmpy(network) -> PairwiseMRF | FactorGraph:
    """A pgmpy network as a fwcore model: a ``DiscreteBayesianNetwork`` (its CPDs, whose
    product is the joint: log Z = 0), a ``DiscreteMarkovNetwork`` or a pgmpy
    ``FactorGraph`` (their factors). Variables are numbered in order of first appearance
    in the CPDs or factors and named as in pgmpy; states in pgmpy's order, named by its
    ``state_names``."""
    if hasattr(network, "get_cpds"):
        factors = network.get_cpds()
        if not factors:
            raise ValueError("the Bayesian network has no CPDs; add them with add_cpds()")
    elif hasattr(network, "factors"):
        factors = list(network.factors)
        if not factors:
            raise ValueError("the Markov network has no factors; add them with add_factors()")
    else:
        raise TypeError(f"network must be a pgmpy DiscreteBayesianNetwork, DiscreteMarkovNetwork "
                        f"or FactorGraph; got {type(network).__name__}")
    tables = [(list(f.variables), np.asarray(f.values, dtype=np.float64)) for f in factors]
    states = {}
    for f in factors:
        states.update(f.state_names)
    return _model(tables, states=states)


def from_pyagrum(network) -> PairwiseMRF | FactorGraph:
    """A pyAgrum ``BayesNet`` (its CPTs) or ``MarkovRandomField`` (its factors) as a
    fwcore model; variables in the order of pyAgrum's node ids, named as in pyAgrum, with
    their labels as state names."""
    if hasattr(network, "cpt"):
        tensors = [network.cpt(v) for v in sorted(network.nodes())]
    elif hasattr(network, "factor") and hasattr(network, "factors"):
        tensors = [network.factor(set(f)) for f in network.factors()]
    else:
        raise TypeError(f"network must be a pyAgrum BayesNet or MarkovRandomField; got "
                        f"{type(network).__name__}")
    variables = [network.variable(v) for v in sorted(network.nodes())]
    order = [v.name() for v in variables]
    # a pyAgrum tensor's array has its axes in the reverse order of its variable names
    tables = [(list(t.names), np.asarray(t.toarray(), dtype=np.float64).T) for t in tensors]
    return _model(tables, order, {v.name(): v.labels() for v in variables})


@validate_params({"card": _ATTRIBUTE, "unary": _ATTRIBUTE, "pairwise": _ATTRIBUTE},
                 unchecked=("graph",))
def from_networkx(graph, card: str = "card", unary: str = "unary",
                  pairwise: str = "pairwise") -> PairwiseMRF:
    """A pairwise model from a networkx graph: node attribute ``card`` (the number of
    states; else the length of the node's ``unary``), optional node attribute ``unary``
    (log-potentials θ_i) and edge attribute ``pairwise`` (the log-potential table
    θ_ij[x_a, x_b], a the edge's end that comes first in ``graph.nodes``); missing
    log-potentials are 0. Variables in the order of ``graph.nodes``, named by their
    nodes."""
    if not hasattr(graph, "nodes") or not hasattr(graph, "edges"):
        raise TypeError(f"graph must be a networkx graph; got {type(graph).__name__}")
    if graph.is_directed() or graph.is_multigraph():
        raise ValueError("graph must be an undirected simple graph (networkx.Graph); convert "
                         "it with graph.to_undirected() or networkx.Graph(graph)")
    names = list(graph.nodes)
    index = {v: i for i, v in enumerate(names)}
    cards: list[int] = []
    factors: list[tuple[tuple[int, ...], object]] = []
    for i, (v, data) in enumerate(graph.nodes(data=True)):
        if card in data:
            cards.append(data[card])
        elif unary in data:
            cards.append(len(data[unary]))
        else:
            raise ValueError(f"node {v!r} has neither a {card!r} nor a {unary!r} attribute: "
                             "give its number of states")
        if unary in data:
            factors.append(((i,), data[unary]))
    for a, b, data in graph.edges(data=True):
        i, j = index[a], index[b]
        table = data.get(pairwise)
        if table is None:
            table = np.zeros((int(cards[i]), int(cards[j])))
        factors.append(((i, j) if i < j else (j, i), table))
    # nodes and edges: factors of arity 1 and 2, so the model is pairwise
    return cast(PairwiseMRF, model_from_factors(cards, factors, names))


def _model(tables, order=None, states=None):
    """The model of (variable names, potential table) pairs, named; ``order`` fixes the
    variable order (default: first appearance); ``states``: {variable: its state names}
    (None: unnamed states)."""
    names = list(order) if order is not None else []
    known = set(names)
    for scope, _ in tables:
        for v in scope:
            if v not in known:
                known.add(v)
                names.append(v)
    index = {v: i for i, v in enumerate(names)}
    card = [0] * len(names)
    factors = []
    for k, (scope, table) in enumerate(tables):
        if len(set(scope)) != len(scope):
            raise ValueError(f"factor {k} has a variable twice in its scope {scope}")
        for v, c in zip(scope, table.shape):
            if card[index[v]] not in (0, c):
                raise ValueError(f"variable {v!r} has {card[index[v]]} states in one factor "
                                 f"and {c} in factor {k}")
            card[index[v]] = c
        if not np.isfinite(table).all() or (table < 0).any():
            raise ValueError(f"factor {k} over {scope} has a negative or non-finite "
                             "potential; tables hold potentials >= 0")
        with np.errstate(divide="ignore"):
            factors.append((tuple(index[v] for v in scope), np.log(table)))
    if 0 in card:
        v = names[card.index(0)]
        raise ValueError(f"variable {v!r} is in no factor, so its number of states is unknown")
    return model_from_factors(card, factors, names,
                              None if states is None else [states[v] for v in names])


def to_pgmpy(model: PairwiseMRF | FactorGraph):
    """The model as a pgmpy network: a ``DiscreteBayesianNetwork`` of ``TabularCPD``s
    when it has a Bayesian-network form (`fwcore.bayes.bayes_form`), else a
    ``DiscreteMarkovNetwork`` of ``DiscreteFactor``s (potentials exp(θ)); named by
    ``model.names`` and ``model.states`` (``x<i>`` and ``s<k>`` where it has none).
    Needs the ``pgmpy`` extra."""
    try:
        from pgmpy.factors.discrete import DiscreteFactor, TabularCPD
        from pgmpy.models import DiscreteBayesianNetwork, DiscreteMarkovNetwork
    except ImportError:
        raise ImportError("to_pgmpy needs pgmpy: pip install 'fwcore[pgmpy]'") from None
    names, states = text_labels(model)
    card = model.card.tolist()
    form = bayes_form(model, tol=CPT_TOL)
    if form is not None:
        net = DiscreteBayesianNetwork()
        net.add_nodes_from(names)
        net.add_edges_from((names[p], names[v]) for v in range(model.n_vars)
                           for p in form.parents[v])
        for v, (parents, cpt) in enumerate(zip(form.parents, form.cpts)):
            scope = [v, *parents]
            net.add_cpds(TabularCPD(
                names[v], card[v], np.moveaxis(cpt, -1, 0).reshape(card[v], -1),
                evidence=[names[p] for p in parents] or None,
                evidence_card=[card[p] for p in parents] or None,
                state_names={names[u]: list(states[u]) for u in scope}))
        return net
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(names)
    for scope, theta in factor_view(model):
        net.add_edges_from((names[a], names[b]) for k, a in enumerate(scope)
                           for b in scope[k + 1:])
        net.add_factors(DiscreteFactor([names[u] for u in scope], [card[u] for u in scope],
                                       np.exp(theta),
                                       state_names={names[u]: list(states[u]) for u in scope}))
    return net


def to_pyagrum(model: PairwiseMRF | FactorGraph):
    """The model as a pyAgrum ``BayesNet`` (its CPTs) when it has a Bayesian-network form
    (`fwcore.bayes.bayes_form`), else a ``MarkovRandomField`` (one factor per scope,
    potentials exp(θ), factors on the same scope multiplied); variables added in index
    order (pyAgrum's node ids 0..n-1), named as `to_pgmpy` names them. Needs the
    ``pyagrum`` extra."""
    try:
        import pyagrum as gum
    except ImportError:
        raise ImportError("to_pyagrum needs pyAgrum: pip install 'fwcore[pyagrum]'") from None
    names, states = text_labels(model)
    variables = [gum.LabelizedVariable(v, v, list(ss)) for v, ss in zip(names, states)]
    form = bayes_form(model, tol=CPT_TOL)
    if form is not None:
        bn = gum.BayesNet()
        for variable in variables:
            bn.add(variable)
        for v, parents in enumerate(form.parents):
            for p in parents:
                bn.addArc(names[p], names[v])
        for v, (parents, cpt) in enumerate(zip(form.parents, form.cpts)):
            _fill(bn.cpt(names[v]), (*parents, v), cpt, names)
        return bn
    mrf = gum.MarkovRandomField()
    for variable in variables:
        mrf.add(variable)
    # pyAgrum keeps one factor per set of variables: multiply them
    merged: dict[frozenset[int], tuple[tuple[int, ...], np.ndarray]] = {}
    for scope, theta in factor_view(model):
        key = frozenset(scope)
        if key in merged:
            old_scope, old = merged[key]
            theta = theta + np.transpose(old, [old_scope.index(u) for u in scope])
        merged[key] = (scope, theta)
    for scope, theta in merged.values():
        _fill(mrf.addFactor([names[u] for u in scope]), scope, np.exp(theta), names)
    return mrf


def _fill(tensor, scope, table, names):
    """Write ``table`` (axes in the order of ``scope``, variable indices) into the pyAgrum
    ``tensor``, whose flat order is C order over its variables reversed (`from_pyagrum`)."""
    axes = [scope.index(names.index(u)) for u in reversed(tensor.names)]
    tensor.fillWith(np.transpose(table, axes).ravel().tolist())


def text_labels(model: PairwiseMRF | FactorGraph) -> tuple[list, list]:
    """(names, states) of ``model`` as text, for the libraries and files that need names:
    its own, or ``x<i>`` and ``s<k>`` where it has none; names that are not distinct as
    text are a ValueError."""
    names = [str(v) for v in model.names] if model.names else [
        f"x{i}" for i in range(model.n_vars)]
    states = ([[str(s) for s in ss] for ss in model.states] if model.states else
              [[f"s{k}" for k in range(c)] for c in model.card.tolist()])
    if len(set(names)) < len(names):
        raise ValueError("model.names are not distinct as text; give the model distinct names")
    return names, states
