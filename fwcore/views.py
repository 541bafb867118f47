"""Views of a model that every method reads (DESIGN.md "Marginal methods behind one
door": model-level services live in the model layer): its log-potential factors, as
(scope, table) pairs (`factors_of`) or as flat arrays (`flat_factors`), and the variables
its evidence fixes (`fixed_states`, `fixed_by_evidence`). A `PairwiseMRF`'s views read its
flat layout in place; a `FactorGraph`'s its ``factors``, never its pairwise reduction."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .factor_graph import FactorGraph
from .model import PairwiseMRF

__all__ = ["factors_of", "FlatFactors", "flat_factors", "fixed_states", "fixed_by_evidence"]


def _checked_kind(model):
    if not isinstance(model, (PairwiseMRF, FactorGraph)):
        raise TypeError(f"model must be a fwcore.PairwiseMRF or FactorGraph; got "
                        f"{type(model).__name__}")


def factors_of(model):
    """The (scope, table) log-potential factors of ``model``: a FactorGraph's ``factors``;
    a PairwiseMRF's unaries ((i,), θ_i) and edges ((i, j), θ_ij)."""
    _checked_kind(model)
    if isinstance(model, FactorGraph):
        return model.factors
    return tuple([((i,), model.unary(i)) for i in range(model.n_vars)] +
                 [((int(i), int(j)), model.pairwise(e)) for e, (i, j) in enumerate(model.edges)])


class FlatFactors(NamedTuple):
    """A model's log-potential factors as flat arrays: ``card`` (int32[n]), the scopes
    (factor f's variables ``var[start[f]:start[f + 1]]``, int64 / int32) and tables
    (factor f's from ``off[f]`` in ``table``, C order over its scope as given; int64[F +
    1] / float64)."""

    card: np.ndarray
    start: np.ndarray
    var: np.ndarray
    off: np.ndarray
    table: np.ndarray


def flat_factors(model):
    """``model``'s factors (`FlatFactors`): a PairwiseMRF's unaries then edges, on θ itself
    (no copy: its node and edge offsets are the table offsets); a FactorGraph's
    ``factors``."""
    _checked_kind(model)
    card = np.ascontiguousarray(model.card, dtype=np.int32)
    if isinstance(model, FactorGraph):
        factors = model.factors
        start = np.zeros(len(factors) + 1, dtype=np.int64)
        np.cumsum([len(s) for s, _ in factors], out=start[1:])
        var = np.array([v for s, _ in factors for v in s], dtype=np.int32)
        tables = [np.asarray(t, dtype=np.float64).reshape(-1) for _, t in factors]
        off = np.zeros(len(factors) + 1, dtype=np.int64)
        np.cumsum([t.size for t in tables], out=off[1:])
        table = np.concatenate(tables) if tables else np.zeros(0)
        return FlatFactors(card, start, var, off, table)
    n, n_edges = model.n_vars, model.n_edges
    start = np.concatenate([np.arange(n + 1),
                            n + 2 * np.arange(1, n_edges + 1)]).astype(np.int64)
    var = np.concatenate([np.arange(n), model.edges.reshape(-1)]).astype(np.int32)
    off = np.concatenate([model.node_off[:-1], model.edge_off]).astype(np.int64)
    return FlatFactors(card, start, var, off,
                       np.ascontiguousarray(model.theta, dtype=np.float64))


def fixed_states(model):
    """int32[n]: the state of each variable with exactly one state of finite unary score
    (a FactorGraph: the sum of its one-variable factors; a variable with one state and a
    finite unary counts too), −1 where there are more: the clamps
    `fwcore.io.uai.apply_evidence` writes as −inf. One pass over the unaries."""
    _checked_kind(model)
    card = np.asarray(model.card, dtype=np.int64)
    off = np.zeros(card.shape[0] + 1, dtype=np.int64)
    np.cumsum(card, out=off[1:])
    if isinstance(model, FactorGraph):
        unary = np.zeros(int(off[-1]))
        for scope, table in model.factors:
            if len(scope) == 1:
                unary[off[scope[0]]:off[scope[0] + 1]] += table
    else:
        unary = model.theta[:off[-1]]
    fixed = np.full(card.shape[0], -1, dtype=np.int32)
    if not card.shape[0]:
        return fixed
    finite = np.isfinite(unary)
    count = np.add.reduceat(finite, off[:-1])
    var = np.repeat(np.arange(card.shape[0]), card)
    where = np.flatnonzero(finite & (count[var] == 1))
    fixed[var[where]] = (where - off[var[where]]).astype(np.int32)
    return fixed


def fixed_by_evidence(model: PairwiseMRF | FactorGraph) -> dict:
    """{variable: state} of the variables `fixed_states` finds: ``clamp(model,
    fixed_by_evidence(model))`` removes them (`fwcore.clamp`): the same log Z (plus
    ``constant``) and marginals, fewer variables."""
    fixed = fixed_states(model)
    held = np.flatnonzero(fixed >= 0)
    return dict(zip(held.tolist(), fixed[held].tolist()))
