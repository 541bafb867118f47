"""Regions, containment and reparameterisation (Smooth and Strong, Sec. 3, eq. 2).

Regions are the nodes i, the edges e = (i, j) of a PairwiseMRF (each containing its two
nodes) and global factors c (each containing the nodes of its scope). Dual messages go
from a parent region to each node it contains:

    θ̂_i = θ_i + Σ_{p ∋ i} δ_pi,   θ̂_e(x_i, x_j) = θ_e - δ_ei(x_i) - δ_ej(x_j),
    θ̂_c(x) = θ_c(x) - Σ_{i ∈ c} δ_ci(x_i).

Tables are padded to the largest cardinality K so every operation is vectorised over
regions: node tables (n, K), edge tables (E, K, K), padding -inf; messages to the first
and second end of every edge are one array ``d`` of shape (2, E, K) (padding kept at 0);
a global factor's messages are an (m, K) array.
"""
import numpy as np

from ..checks import check_feasible, check_model, finite_penalty
from .factors import CardinalityFactor, Factor

__all__ = ["Regions"]


class Regions:
    """The region graph of a pairwise model plus global factors."""

    def __init__(self, model, factors=()):
        check_feasible(check_model(model))
        if model.n_vars == 0:
            raise ValueError("model has no variables")
        self.model = model
        n, n_edges = model.n_vars, model.n_edges
        card = model.card.astype(np.int64)
        self.n, self.n_edges, self.card = n, n_edges, card
        self.ends = model.edges.astype(np.int64).T.copy()            # (2, E)
        _check_padding(model)
        # θ = -inf on a real state becomes a finite penalty (`fwcore.checks.finite_penalty`,
        # margin 1): every assignment using one scores at least 1 below every possible
        # assignment, so the MAP and every dual bound stay valid (decoded scores are always
        # taken from the model itself). Padding stays -inf.
        self.node_theta, self.edge_theta, self.node_valid, self.edge_valid = \
            model.padded_tables(finite_penalty(model, model.theta, 1.0))
        self.k = self.node_theta.shape[1]
        self.msg_valid = self.node_valid[self.ends]                   # (2, E, K)
        self.factors = _check_factors(factors, card)
        self.n_parents = np.bincount(self.ends.ravel(), minlength=n) + sum(
            np.bincount(f.scope, minlength=n) for f in self.factors)
        self.n_regions = n + n_edges + len(self.factors)              # q in the paper
        # Σ_r log W_r: the soft-max sandwich width (eq. 5) per unit γ (pairwise part)
        self.log_states = float(np.log(card).sum() + np.log(card[self.ends[0]] * card[self.ends[1]]).sum())

    # -- reparameterisation (eq. 2) ------------------------------------------------------

    def scatter(self, d):
        """Σ_{e ∋ i} δ_ei for messages d (2, E, K): an (n, K) array."""
        out = np.zeros(self.n * self.k)
        cols = np.arange(self.k)
        for end in (0, 1):
            idx = (self.ends[end][:, None] * self.k + cols).ravel()
            out += np.bincount(idx, weights=d[end].ravel(), minlength=out.size)
        return out.reshape(self.n, self.k)

    def node_hat(self, d, dc=()):
        """θ̂_i for every node, with factor messages dc (one (m, K) array per factor)."""
        h = self.node_theta + self.scatter(d)
        for f, m in zip(self.factors, dc):
            h[f.scope, :m.shape[1]] += m
        return h

    def edge_hat(self, d):
        return self.edge_theta - d[0][:, :, None] - d[1][:, None, :]

    def edge_to_node(self, tables):
        """Marginalise (E, K, K) edge tables onto their two ends: (2, E, K). (A loop over
        the K slices: numpy reductions over short strided axes are several times slower.)"""
        out = np.empty((2,) + tables.shape[:2])
        out[0], out[1] = tables[:, :, 0], tables[:, 0, :]
        for k in range(1, self.k):
            out[0] += tables[:, :, k]
            out[1] += tables[:, k, :]
        return out

    # -- values of assignments -----------------------------------------------------------

    def score(self, x):
        """Pairwise score plus every global factor's potential."""
        return float(self.model.score(x)) + sum(f.potential(x[f.scope]) for f in self.factors)

    def lipschitz(self):
        """A Lipschitz constant (times γ) of the smoothed dual's gradient: by Gershgorin
        on Σ_r B_rᵀB_r, max over messages (e, i) of P_i + 2·card(other end). It is
        valid for eq. 3 and eq. 11 and tighter than the paper's Σ_r V_r and q."""
        if self.n_edges == 0:
            return 1.0
        return float(max((self.n_parents[self.ends[0]] + 2 * self.card[self.ends[1]]).max(),
                         (self.n_parents[self.ends[1]] + 2 * self.card[self.ends[0]]).max()))

    def colouring(self):
        """Node colour classes with no edge inside a class (greedy, largest degree
        first), so star updates of one class are independent."""
        model = self.model
        colour = np.full(self.n, -1, dtype=np.int64)
        for v in np.argsort(-np.diff(model.adj_start), kind="stable"):
            used = colour[model.adj_var[model.adj_start[v]:model.adj_start[v + 1]]]
            free = np.ones(used.size + 1, dtype=bool)
            free[used[(used >= 0) & (used <= used.size)]] = False
            colour[v] = int(np.argmax(free))
        return [np.flatnonzero(colour == c) for c in range(colour.max() + 1)]


#: the padded tables may hold this many times the model's entries (plus PADDING_SLACK)
PADDING_FACTOR = 8
PADDING_SLACK = 2**20


def _check_padding(model):
    """Refuse, before allocating, a model whose tables padded to the largest cardinality K
    (n x K and E x K x K, which every solver here works on) would hold more than
    PADDING_FACTOR times its own entries, plus PADDING_SLACK: very uneven cardinalities,
    e.g. one variable with 5000 labels among binary ones."""
    k = int(model.card.max())
    padded = model.n_vars * k + model.n_edges * k * k
    if padded > PADDING_FACTOR * model.dim + PADDING_SLACK:
        raise ValueError(
            f"infer_lp pads every table to the largest cardinality K = {k}: "
            f"{model.n_edges} edges x K x K = {padded:.3g} entries ({8 * padded / 2**30:.2g} "
            f"GiB per table set) against the model's {model.dim}; for such uneven "
            "cardinalities use fwcore.infer_map(model, method='lp') or 'trws'")


def _check_factors(factors, card):
    if isinstance(factors, Factor):
        factors = (factors,)
    factors = tuple(factors)
    for k, f in enumerate(factors):
        if not isinstance(f, Factor):
            raise TypeError(f"factors[{k}] must be a fwcore Factor (e.g. CardinalityFactor); "
                            f"got {type(f).__name__}")
        if f.scope.max() >= card.size:
            raise ValueError(f"factors[{k}].scope indexes variable {f.scope.max()}; the "
                             f"model has {card.size}")
        if isinstance(f, CardinalityFactor) and (card[f.scope] != 2).any():
            raise ValueError(f"factors[{k}] is a cardinality factor: its scope must hold "
                             "binary variables")
    return factors
