"""Regions, containment and reparameterisation (Smooth and Strong, Sec. 3, eq. 2).

Regions are the nodes i, the edges e = (i, j) of a PairwiseMRF (each containing its two
nodes) and global factors c (each containing the nodes of its scope). Dual messages go
from a parent region to each node it contains:

    θ̂_i = θ_i + Σ_{p ∋ i} δ_pi,   θ̂_e(x_i, x_j) = θ_e - δ_ei(x_i) - δ_ej(x_j),
    θ̂_c(x) = θ_c(x) - Σ_{i ∈ c} δ_ci(x_i).

Every table is stored at its own size, in the model's flat layout (`fwcore.model`): node
tables are one vector of Σ_i card_i entries (node i's block at ``node_off[i]``), edge
tables one vector of Σ_e card_i·card_j entries (row-major blocks at ``edge_off[e]``).
The messages δ_ei to the first and second end of every edge are one vector ``d``: first
the E blocks to the first ends (card_i entries each), then the E blocks to the second
ends (card_j each), block m at ``msg_off[m]``. Maxima, sums and soft-maxima over a block
are segment reductions (`Segments`), so memory stays proportional to the model for any
mix of cardinalities (no padding to the largest one). A global factor's messages are an
(m, K) array, K the largest cardinality in its scope (the `Factor` interface).
"""
import numpy as np

from ..checks import check_feasible, check_model, finite_penalty
from ..model import concat_ranges
from ..labelling import feasible_labelling
from .factors import CardinalityFactor, Factor

__all__ = ["Regions", "Segments"]


class Segments:
    """Consecutive non-empty segments of a flat vector, given by their sizes; reductions
    over each segment. When every segment has the same size w the vector is reshaped to
    (count, w) and reduced along the rows (the fast path of uniform cardinalities)."""

    def __init__(self, sizes):
        sizes = np.asarray(sizes, dtype=np.int64)
        self.sizes, self.count = sizes, sizes.size
        self.starts = np.zeros(sizes.size, dtype=np.int64)
        if sizes.size:
            np.cumsum(sizes[:-1], out=self.starts[1:])
        self.total = int(sizes.sum())
        self.offsets = np.append(self.starts, self.total)
        self.width = int(sizes[0]) if sizes.size and (sizes == sizes[0]).all() else None
        self._owner = None

    @property
    def owner(self):
        """Segment index of every entry."""
        if self._owner is None:
            self._owner = np.repeat(np.arange(self.count), self.sizes)
        return self._owner

    def expand(self, per_segment):
        """One value per segment repeated over its entries."""
        return np.repeat(per_segment, self.sizes)

    def max(self, v):
        return self._reduce(np.maximum, v)

    def sum(self, v):
        return self._reduce(np.add, v)

    def _reduce(self, ufunc, v):
        """``ufunc`` over each segment: along rows when all segments have one width."""
        if self.width is not None:
            return ufunc.reduce(v.reshape(self.count, self.width), axis=1)
        if not self.count:
            return np.zeros(0)
        return ufunc.reduceat(v, self.starts)

    def argmax(self, v):
        """Position in ``v`` of the first maximum of each segment (as ndarray.argmax)."""
        if self.width is not None:
            return v.reshape(self.count, self.width).argmax(axis=1) + self.starts
        out = self.starts.copy()
        if not self.count:
            return out
        hit = np.flatnonzero(v == self.expand(self.max(v)))
        seg = self.owner[hit]
        first = np.ones(hit.size, dtype=bool)
        first[1:] = seg[1:] != seg[:-1]
        out[seg[first]] = hit[first]     # a segment with NaN keeps its first entry
        return out

    def softmax(self, v, gamma):
        """γ log Σ exp(v/γ) over each segment and the soft-max beliefs (eq. 3, 6)."""
        top = self.max(v)
        with np.errstate(invalid="ignore"):
            e = np.exp((v - self.expand(top)) / gamma)
            s = self.sum(e)
            return top + gamma * np.log(s), e / self.expand(s)


class MessageGroups:
    """The entries of the edges ``sel`` grouped by the messages to their ``end`` (rows for
    end 0, columns for end 1): ``entries`` (edge-table positions in that order), their
    segments ``seg`` (one per message entry), the message positions ``msg`` of the
    segments and the message positions ``other`` of each entry's other end."""

    def __init__(self, regions, sel, end):
        card_i, card_j = regions.card[regions.ends[0][sel]], regions.card[regions.ends[1][sel]]
        entries = concat_ranges(regions.edge_off[sel], card_i * card_j)
        key0, key1 = regions.entry_msg[0][entries], regions.entry_msg[1][entries]
        if end == 0:     # row-major already groups the rows
            self.seg = Segments(np.repeat(card_j, card_i))
        else:
            entries, key0, key1 = (a[np.argsort(key1, kind="stable")]
                                   for a in (entries, key0, key1))
            self.seg = Segments(np.repeat(card_i, card_j))
        self.entries = entries
        self.msg = (key0 if end == 0 else key1)[self.seg.starts]
        self.other = key1 if end == 0 else key0


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
        # θ = -inf on a state becomes a finite penalty (`fwcore.checks.finite_penalty`,
        # margin 1): every assignment using one scores at least 1 below every possible
        # assignment, so the MAP and every dual bound stay valid (decoded scores are always
        # taken from the model itself).
        self.theta = theta = finite_penalty(model, model.theta, 1.0)
        n_node = int(model.node_off[-1])
        self.node_theta, self.edge_theta = theta[:n_node], theta[n_node:model.dim]
        self.node_off = model.node_off.astype(np.int64)
        self.edge_off = model.edge_off.astype(np.int64) - n_node
        self.nodes = Segments(card)
        self.edges = Segments(card[self.ends[0]] * card[self.ends[1]])
        msg_sizes = np.concatenate([card[self.ends[0]], card[self.ends[1]]])
        self.msgs = Segments(msg_sizes)                               # 2E blocks
        self.msg_off = self.msgs.offsets
        self.n_messages = self.msgs.total
        # node entry of every message entry, edge of every message entry
        self.msg_node = concat_ranges(self.node_off[np.concatenate(self.ends)], msg_sizes)
        self.msg_edge = self.msgs.owner % max(n_edges, 1)
        # message entries of every edge entry: δ_ei(a) and δ_ej(b) for entry (e, a, b)
        _, e, a, b = model.edge_entries()
        self.entry_msg = (self.msg_off[e] + a, self.msg_off[n_edges + e] + b)
        self.factors = _check_factors(factors, card)
        # per factor: the node entries of its scope and their (row, state) in its messages
        self.factor_slots = []
        for f in self.factors:
            rows = np.repeat(np.arange(f.scope.size), card[f.scope])
            pos = concat_ranges(self.node_off[f.scope], card[f.scope])
            self.factor_slots.append((pos, rows, pos - self.node_off[f.scope][rows]))
        self.n_edge_parents = np.bincount(self.ends.ravel(), minlength=n)
        self.n_parents = self.n_edge_parents + sum(
            np.bincount(f.scope, minlength=n) for f in self.factors)
        self.n_regions = n + n_edges + len(self.factors)              # q in the paper
        # Σ_r log W_r: the soft-max sandwich width (eq. 5) per unit γ (pairwise part)
        self.log_states = float(np.log(card).sum()
                                + np.log(card[self.ends[0]] * card[self.ends[1]]).sum())

    # -- reparameterisation (eq. 2) ------------------------------------------------------

    def zero_messages(self):
        return np.zeros(self.n_messages)

    def scatter(self, d):
        """Σ_{e ∋ i} δ_ei for messages d: a node vector."""
        return np.bincount(self.msg_node, weights=d, minlength=self.nodes.total)

    def node_hat(self, d, dc=()):
        """θ̂_i for every node, with factor messages dc (one (m, K) array per factor)."""
        h = self.node_theta + self.scatter(d)
        for (pos, rows, cols), m in zip(self.factor_slots, dc):
            h[pos] += m[rows, cols]
        return h

    def edge_hat(self, d):
        return self.edge_theta - d[self.entry_msg[0]] - d[self.entry_msg[1]]

    def edge_to_node(self, tables):
        """Marginalise edge tables onto their two ends: a message vector."""
        size = self.n_messages
        return (np.bincount(self.entry_msg[0], weights=tables, minlength=size) +
                np.bincount(self.entry_msg[1], weights=tables, minlength=size))

    def factor_rows(self, h, c, fill):
        """Factor c's scope rows of the node vector h as an (m, K) array, ``fill`` beyond
        each variable's states."""
        pos, rows, cols = self.factor_slots[c]
        out = np.full((self.factors[c].scope.size, int(cols.max()) + 1), fill)
        out[rows, cols] = h[pos]
        return out

    def node_argmax(self, h):
        """The state maximising each node's block of the node vector h."""
        return (self.nodes.argmax(h) - self.node_off[:-1]).astype(np.int32)

    def decode(self, h):
        """`node_argmax`, `repaired`."""
        return self.repaired(self.node_argmax(h))

    def repaired(self, x):
        """``x``; when it uses a -inf entry of the model, a repaired copy
        (`fwcore.labelling.feasible_labelling`: feasible whenever arc consistency,
        maintained variable by variable, finds a labelling)."""
        return feasible_labelling(self.model, self.model.theta, x, self.theta)

    # -- values of assignments -----------------------------------------------------------

    def score(self, x, penalised=False):
        """Pairwise score (on the penalised scores `theta` when ``penalised``: always
        finite) plus every global factor's potential."""
        pairwise = self.model.score(x, self.theta if penalised else None)
        return float(pairwise) + sum(f.potential(x[f.scope]) for f in self.factors)

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
