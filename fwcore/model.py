"""The pairwise MRF and its flat layout (DESIGN.md, "The model and its flat layout").

    p(x) ∝ exp( Σ_i θ_i(x_i) + Σ_{(i,j)∈E} θ_ij(x_i, x_j) )

Log-potentials live in one flat float64 vector ``theta``: node blocks first (``node_off``),
then one row-major card[i] × card[j] block per edge (``edge_off``, x_i major). A marginal
vector μ has the same layout. Every array is read-only after construction.
"""
import itertools
import mmap
import operator
from collections.abc import Hashable, Sequence

import numpy as np

from ._graph import Graph
from ._symbolic import bfs_forest

__all__ = ["PairwiseMRF", "Named", "Blocks", "check_names", "binary_cover"]


def _readonly(a):
    a.setflags(write=False)
    return a


class Named:
    """Variable and state names of a model (`PairwiseMRF`, `FactorGraph`): ``names`` (a
    tuple of distinct hashable names, one per variable; None: unnamed) and ``states`` (per
    variable a tuple of its state names; None: unnamed), kept from the library a model was
    converted from (`fwcore.from_pgmpy`, `from_pyagrum`, `from_networkx`). Evidence
    (`fwcore.apply_evidence`) takes them, and `named` reads answers by name."""

    __slots__ = ()

    def var_index(self, variable):
        """The index of ``variable``: one of ``names``, or an int index 0..n-1 (an int that
        is also a name means that name's variable)."""
        names = self.names or ()
        if isinstance(variable, Hashable) and variable in names:
            return names.index(variable)
        if (isinstance(variable, (int, np.integer)) and not isinstance(variable, bool)
                and 0 <= variable < self.card.shape[0]):
            return int(variable)
        shown = f"one of {_listed(names)}, or " if names else ""
        raise ValueError(f"variable {variable!r} is not in the model: give {shown}an index "
                         f"0..{self.card.shape[0] - 1}")

    def state_index(self, i, state):
        """The index of ``state`` of variable i: one of ``states[i]``, or an int index
        0..card[i]-1 (an int that is also a state name means that state)."""
        names = self.states[i] if self.states is not None else ()
        if isinstance(state, Hashable) and state in names:
            return names.index(state)
        if (isinstance(state, (int, np.integer)) and not isinstance(state, bool)
                and 0 <= state < self.card[i]):
            return int(state)
        shown = f"one of {_listed(names)}, or " if names else ""
        label = f"variable {self.names[i]!r}" if self.names else f"variable {i}"
        raise ValueError(f"{label} has no state {state!r}: give {shown}an index "
                         f"0..{self.card[i] - 1}")

    def named(self, values):
        """``{name: values[i]}`` over the variables (names, or indices when unnamed), for
        any per-variable answer: node marginals, or an assignment, whose states are then
        given by name when the model has state names."""
        if len(values) != self.card.shape[0]:
            raise ValueError(f"values has {len(values)} entries; the model has "
                             f"{self.card.shape[0]} variables")
        keys = self.names if self.names is not None else range(len(values))
        if (self.states is not None and isinstance(values, np.ndarray) and
                values.ndim == 1 and values.dtype.kind in "iu"):
            return {k: self.states[i][s] for i, (k, s) in enumerate(zip(keys, values))}
        return dict(zip(keys, values))


def check_names(names, states, card):
    """(names, states) as tuples, validated against ``card`` (see `Named`); None stays
    None."""
    n = card.shape[0]
    if names is not None:
        names = tuple(names)
        if len(names) != n:
            raise ValueError(f"names has {len(names)} entries; the model has {n} variables")
        for k, v in enumerate(names):
            if not isinstance(v, Hashable):
                raise TypeError(f"names[{k}] must be hashable; got {type(v).__name__}")
        if len(set(names)) != n:
            raise ValueError(f"names must be distinct; {_first_repeat(names)!r} repeats")
    if states is not None:
        states = tuple(tuple(s) for s in states)
        if len(states) != n:
            raise ValueError(f"states has {len(states)} entries; the model has {n} variables")
        for i, s in enumerate(states):
            if len(s) != card[i]:
                raise ValueError(f"states[{i}] names {len(s)} states; variable {i} has "
                                 f"{card[i]}")
            if not all(isinstance(v, Hashable) for v in s) or len(set(s)) != len(s):
                raise ValueError(f"states[{i}] must be distinct hashable state names")
    return names, states


def _first_repeat(values):
    seen = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)


def _listed(values, most=8):
    """``values`` as a short comma-separated list of reprs."""
    shown = ", ".join(map(repr, values[:most]))
    return shown + (f", ... ({len(values)} in all)" if len(values) > most else "")


class Blocks(Sequence):
    """The blocks of a flat vector as a read-only sequence of views, made when read: block
    k is ``vec[off[k]:off[k + 1]]``, 1-D, or with ``rows`` a table of ``rows[k]`` rows
    (node marginals and edge tables of `PairwiseMRF.split_marginals`). It slices (a
    `Blocks` of the range), iterates, has a length, and adds and compares as a list does."""

    __slots__ = ("vec", "off", "rows")

    def __init__(self, vec, off, rows=None):
        self.vec, self.off, self.rows = vec, off, rows

    def __len__(self):
        return self.off.shape[0] - 1

    def __getitem__(self, k):
        if isinstance(k, slice):
            start, stop, step = k.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            stop = max(start, stop)
            return Blocks(self.vec, self.off[start:stop + 1],
                          None if self.rows is None else self.rows[start:stop])
        k = operator.index(k)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"block {k} of {len(self)}")
        block = self.vec[self.off[k]:self.off[k + 1]]
        if self.rows is not None:
            block = block.reshape(int(self.rows[k]), -1)
        block.flags.writeable = False
        return block

    def __add__(self, other):
        return list(self) + list(other)

    def __eq__(self, other):
        if not isinstance(other, (Blocks, list, tuple)):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal as lists are: not hashable

    def __radd__(self, other):
        return list(other) + list(self)

    def __reduce__(self):
        return Blocks, (self.vec, self.off, self.rows)

    def __repr__(self):
        return f"Blocks({len(self)} {'tables' if self.rows is not None else 'arrays'})"


#: the slots a model shares with its `PairwiseMRF.with_theta` copies
_GRAPH_SLOTS = ("card", "edges", "node_off", "edge_off", "adj_start", "adj_var", "adj_edge",
                "adj_first", "graph")


class PairwiseMRF(Named):
    """A pairwise Markov random field over discrete variables, scores maximised.

    Parameters
    ----------
    card : sequence of int, shape (n,)
        Number of states of each variable (>= 1); integers, or floats holding whole numbers.
    unary : sequence of 1-D arrays, or 2-D array of shape (n, k) when all cards equal k
        Node log-potentials θ_i. ``None`` means all zero.
    edges : array-like of int, shape (E, 2)
        Variable pairs: integers, or floats holding whole numbers (2.0, not 0.5). A pair
        written (j, i) with j > i is stored as (i, j) and its table transposed. Self loops
        and duplicate pairs are rejected.
    pairwise : sequence of 2-D arrays, or 3-D array of shape (E, k, k)
        Edge log-potentials θ_ij, table ``[x_i, x_j]`` for the pair as given in ``edges``.
        ``None`` means all zero.

    names, states : optional variable names and per-variable state names (`Named`).

    Notes
    -----
    Log-potentials may be ``-inf`` (impossible states); NaN and ``+inf`` are rejected.
    """

    __slots__ = (*_GRAPH_SLOTS, "theta", "names", "states", "__weakref__")

    def __init__(self, card, unary=None, edges=(), pairwise=None, *, names=None, states=None):
        card = check_card(card)
        n = card.shape[0]
        edges = int_array("edges", edges if len(edges) else np.empty((0, 2)))
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"edges must have shape (E, 2); got shape {edges.shape}")
        n_edges = edges.shape[0]
        if pairwise is not None and len(pairwise) != n_edges:
            raise ValueError(f"pairwise has {len(pairwise)} tables but edges has {n_edges} "
                             "rows; give one table per edge")
        if n_edges and (edges.min() < 0 or edges.max() >= n):
            raise ValueError(f"edges must index variables 0..{n - 1}; "
                             f"found {edges.min()}..{edges.max()}")
        flipped = edges[:, 0] > edges[:, 1]
        canonical = edges.copy()
        canonical[flipped] = edges[flipped, ::-1]
        node_off, edge_off = block_offsets(card, canonical)
        theta = np.empty(edge_off[-1])
        _fill_blocks("unary", unary, theta, node_off, card, None)
        _fill_blocks("pairwise", pairwise, theta, edge_off, card[edges[:, 0]],
                     card[edges[:, 1]], flipped)
        self._set_flat(card, canonical, theta, names, states, owned=True)

    # -- construction from flat arrays (the fast path used inside the library) ---------

    @classmethod
    def from_flat(cls, card, edges, theta, names=None, states=None):
        """Build from the flat layout: ``card`` (n,), canonical ``edges`` (E, 2) with
        i < j, and ``theta`` of length ``dim`` (copied, unless it is a read-only C-ordered
        float64 array: then shared); optional ``names`` and ``states``."""
        self = cls.__new__(cls)
        card = check_card(card)
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if edges.size and (edges[:, 0] >= edges[:, 1]).any():
            raise ValueError("edges for from_flat must satisfy i < j in every row")
        if edges.size and (edges.min() < 0 or edges.max() >= card.shape[0]):
            raise ValueError(f"edges must index variables 0..{card.shape[0] - 1}")
        self._set_flat(card, edges, np.asarray(theta, dtype=np.float64), names, states)
        return self

    def with_theta(self, theta):
        """The same graph, cardinalities and names with other log-potentials (flat
        layout), sharing this model's read-only graph arrays."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != self.theta.shape:
            raise ValueError(f"theta must be a 1-D array of length {self.dim} (the flat "
                             f"layout's dim); got shape {theta.shape}")
        check_values("theta", theta)
        other = PairwiseMRF.__new__(PairwiseMRF)
        for name in (*_GRAPH_SLOTS, "names", "states"):
            object.__setattr__(other, name, getattr(self, name))
        object.__setattr__(other, "theta", _readonly(np.array(theta, order="C")))
        return other

    def _set_flat(self, card, edges, theta, names=None, states=None, owned=False):
        """Store the flat layout (canonical ``edges``); ``theta`` is copied unless it is a
        read-only C-ordered float64 array or ``owned`` (a fresh array of this model's
        own)."""
        n = card.shape[0]
        n_edges = edges.shape[0]
        if n_edges:
            if (edges[:, 0] == edges[:, 1]).any():
                e = int(np.flatnonzero(edges[:, 0] == edges[:, 1])[0])
                raise ValueError(f"edges has a self loop at row {e}: "
                                 f"({edges[e, 0]}, {edges[e, 1]})")
            keys = edges[:, 0] * n + edges[:, 1]
            if not (keys[1:] > keys[:-1]).all():  # else sorted and distinct (grids are)
                uniq, counts = np.unique(keys, return_counts=True)
                if (counts > 1).any():
                    k = uniq[counts > 1][0]
                    raise ValueError(f"edges has the pair ({k // n}, {k % n}) more than "
                                     "once; sum their tables into one edge")
        node_off, edge_off = block_offsets(card, edges)
        if theta.ndim != 1 or theta.shape[0] != edge_off[-1]:
            raise ValueError(f"theta must be a 1-D array of length {edge_off[-1]} (the flat "
                             f"layout's dim); got shape {theta.shape}")
        check_values("theta", theta)
        names, states = check_names(names, states, card)
        # CSR adjacency: for variable v, slots adj_start[v]:adj_start[v+1] list each incident
        # edge once, with the neighbour, the edge id, and 1 when v is the edge's first end.
        ends = edges.T.ravel()                     # the first ends, then the second ends
        order = np.argsort(ends, kind="stable")
        eid = order % max(n_edges, 1)
        first = order < n_edges
        other = edges[eid, first.astype(np.int64)]  # the end that is not v
        adj_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=adj_start[1:])
        self.card = _readonly(np.ascontiguousarray(card, dtype=np.int32))
        self.edges = _readonly(np.ascontiguousarray(edges, dtype=np.int32))
        self.node_off = _readonly(node_off)
        self.edge_off = _readonly(edge_off)
        own = ((owned or not theta.flags.writeable) and theta.dtype == np.float64
               and theta.flags.c_contiguous)
        self.theta = _readonly(theta if own else np.array(theta, dtype=np.float64, order="C"))
        self.names, self.states = names, states
        self.adj_start = _readonly(adj_start)
        self.adj_var = _readonly(other.astype(np.int32))
        self.adj_edge = _readonly(eid.astype(np.int32))
        self.adj_first = _readonly(first.astype(np.int8))
        #: the graph arrays as one unit for the kernels
        self.graph = Graph(self.card, self.edges, self.node_off, self.edge_off, self.adj_start,
                           self.adj_var, self.adj_edge, self.adj_first)

    def __setattr__(self, name, value):
        if hasattr(self, name):  # a slot already set: read-only
            raise AttributeError(f"PairwiseMRF is read-only; use with_theta() for new "
                                 f"potentials instead of setting {name!r}")
        object.__setattr__(self, name, value)

    # -- sizes -----------------------------------------------------------------------

    @property
    def n_vars(self):
        return int(self.card.shape[0])

    @property
    def n_edges(self):
        return int(self.edges.shape[0])

    @property
    def dim(self):
        """Length of the flat θ / μ vector."""
        return int(self.edge_off[-1])

    def __repr__(self):
        return (f"PairwiseMRF(n_vars={self.n_vars}, n_edges={self.n_edges}, "
                f"max_card={int(self.card.max()) if self.n_vars else 0}, dim={self.dim})")

    # -- views into the flat vector --------------------------------------------------

    def unary(self, i, vec=None):
        """θ_i (or block i of ``vec``, same layout) as a 1-D view."""
        vec = self.theta if vec is None else vec
        return vec[self.node_off[i]:self.node_off[i + 1]]

    def pairwise(self, e, vec=None):
        """θ_e (or block e of ``vec``) as a card[i] × card[j] view."""
        vec = self.theta if vec is None else vec
        i, j = self.edges[e]
        return vec[self.edge_off[e]:self.edge_off[e + 1]].reshape(self.card[i], self.card[j])

    def padded_tables(self, scores=None):
        """Node tables (n, K) and edge tables (E, K, K) of ``scores`` (flat layout; default
        θ), K the largest cardinality, −inf outside each variable's states; with the
        masks of the real entries (node (n, K), pair (E, K, K)), whose row-major order is
        the flat layout's: ``node[node_mask]`` is the node part of ``scores``."""
        scores = self.theta if scores is None else np.asarray(scores, dtype=np.float64)
        k = int(self.card.max()) if self.n_vars else 1
        states = np.arange(k)
        node_mask = states < self.card[:, None]
        pair_mask = (node_mask[self.edges[:, 0]][:, :, None]
                     & node_mask[self.edges[:, 1]][:, None, :])
        node = np.full(node_mask.shape, -np.inf)
        pair = np.full(pair_mask.shape, -np.inf)
        node[node_mask] = scores[:self.node_off[-1]]
        pair[pair_mask] = scores[self.node_off[-1]:self.dim]
        return node, pair, node_mask, pair_mask

    def edge_entries(self, edge_ids=None):
        """The entries of the edge blocks ``edge_ids`` (default: all), each at its edge's own
        size, in flat order: (positions in the flat vector, index into ``edge_ids`` of
        each entry's edge, its state a of x_i, its state b of x_j)."""
        edge_ids = np.arange(self.n_edges) if edge_ids is None else np.asarray(edge_ids)
        cj = self.card[self.edges[edge_ids, 1]].astype(np.int64)
        sizes = self.card[self.edges[edge_ids, 0]].astype(np.int64) * cj
        pos = concat_ranges(self.edge_off[edge_ids], sizes)
        k = np.repeat(np.arange(edge_ids.size), sizes)
        local = pos - self.edge_off[edge_ids][k]
        return pos, k, local // cj[k], local % cj[k]

    # -- assignments and vertices ----------------------------------------------------

    def check_assignment(self, x, name="assignment"):
        """Validated int64 copy of an assignment (or a batch of them, shape (m, n))."""
        x = np.asarray(x)
        if x.dtype.kind not in "iu":
            if x.dtype.kind == "f" and np.all(np.isfinite(x)) and np.all(x == np.round(x)):
                x = x.astype(np.int64)
            else:
                raise TypeError(f"{name} must hold integer states; got dtype {x.dtype}")
        if x.shape[-1:] != (self.n_vars,) or x.ndim > 2:
            raise ValueError(f"{name} must have shape ({self.n_vars},) or (m, {self.n_vars}); "
                             f"got {x.shape}")
        x = x.astype(np.int64)
        if ((x < 0) | (x >= self.card)).any():
            raise ValueError(f"{name} has a state outside 0..card[i]-1")
        return x

    def flat_index(self, x):
        """Positions in the flat vector that μ(x) sets to one: n node slots then E edge
        slots (for a batch, shape (m, n + E))."""
        x = self.check_assignment(x)
        node = self.node_off[:-1] + x
        xi, xj = x[..., self.edges[:, 0]], x[..., self.edges[:, 1]]
        edge = self.edge_off[:-1] + xi * self.card[self.edges[:, 1]] + xj
        return np.concatenate([node, edge], axis=-1)

    def score(self, x, theta=None):
        """<θ, μ(x)>: the log-score of an assignment (or of each row of a batch)."""
        theta = self.theta if theta is None else theta
        return theta[self.flat_index(x)].sum(axis=-1)

    def marginal_vector(self, x):
        """Dense μ(x): the vertex of the marginal polytope for assignment x."""
        mu = np.zeros(self.dim)
        mu[self.flat_index(x)] = 1.0
        return mu

    def uniform_marginals(self):
        """u0: μ_i = 1/card_i, μ_ij = 1/(card_i card_j) (two fills of `fresh_array` when the
        cards are equal: np.repeat took 0.6-2 s on a 10^6 Potts-8 grid's 1 GB, where Ctrl-C
        must answer)."""
        card = self.card
        if len(card) and (card == card[0]).all():
            mu = fresh_array(self.dim)
            mu[:self.node_off[-1]] = 1.0 / card[0]
            mu[self.node_off[-1]:] = 1.0 / (float(card[0]) * float(card[0]))
            return mu
        sizes = np.diff(np.concatenate([self.node_off, self.edge_off[1:]]))
        return np.repeat(1.0 / sizes, sizes)

    def split_marginals(self, mu):
        """Flat μ → (node arrays, edge tables) as two `Blocks`: read-only views of μ when
        it is a read-only float64 array, else of one read-only copy of it (so never one
        Python object, nor one copy, per block)."""
        mu = np.asarray(mu, dtype=np.float64)
        if mu.flags.writeable or not mu.flags.c_contiguous:
            mu = _readonly(np.array(mu, order="C"))
        if mu.shape != (self.dim,):
            raise ValueError(f"mu must be a 1-D array of length {self.dim} (the flat "
                             f"layout's dim); got shape {mu.shape}")
        return (Blocks(mu, self.node_off),
                Blocks(mu, self.edge_off, self.card[self.edges[:, 0]]))

    def n_components(self):
        """Number of connected components of the graph (isolated variables count)."""
        label, _ = bfs_forest(self.adj_start, self.adj_var, np.arange(self.n_vars))
        return int(label.max()) + 1 if self.n_vars else 0

    def is_forest(self):
        """Is the graph acyclic (a forest: E = n - components)?"""
        return self.n_edges == self.n_vars - self.n_components()


#: float64 arrays of this many bytes or more are mapped afresh by `fresh_array`
_FRESH_BYTES = 2**22


def fresh_array(n):
    """An uninitialised float64[n] that is quick to fill on a busy machine: from this many
    bytes (`_FRESH_BYTES`) in freshly mapped memory that numpy has not advised to back
    with huge pages, so that its first touch costs page faults only. With numpy's advice
    the kernel may compact memory first: Ctrl-C 5 s into infer on a Potts-8 10^6 grid
    filled its uniform μ (1.1 GB) in 2.4 s, 0.6 s without (0.13 s on an idle machine)."""
    if 8 * n < _FRESH_BYTES:
        return np.empty(n)
    return np.frombuffer(mmap.mmap(-1, 8 * n), dtype=np.float64)


#: the types of a bool, which numpy reads as 0 or 1 inside a sequence of ints
_BOOLS = frozenset((bool, np.bool_))


def int_array(name, a):
    """``a`` as an int64 array: integers, or floats holding whole numbers (2.0 is taken,
    0.5 is a TypeError rather than truncated to 0). A bool is a TypeError, also inside a
    (nested) sequence of ints, which numpy reads as ints (``[(True, 2)]`` as ``[(1, 2)]``):
    found by the types of the elements, collected in C without a Python loop (0.09-0.14 s
    per million pairs, a third of numpy's conversion; a generator expression took 0.17-0.37
    s)."""
    arr = np.asarray(a)
    if (arr.ndim and arr.size and arr.dtype.kind in "iu" and not isinstance(a, np.ndarray)
            and not _BOOLS.isdisjoint(map(type, _elements(a, arr.ndim)))):
        k = next(k for k, v in enumerate(_elements(a, arr.ndim)) if type(v) in _BOOLS)
        where = k if arr.ndim == 1 else tuple(map(int, np.unravel_index(k, arr.shape)))
        raise TypeError(f"{name} must hold integers; got the bool {arr.flat[k] != 0} at "
                        f"index {where}")
    if arr.size and arr.dtype.kind == "f":
        whole = np.isfinite(arr) & (arr == np.round(arr))
        if not whole.all():
            k = tuple(map(int, np.argwhere(~whole)[0]))
            raise TypeError(f"{name} must hold integers; got {float(arr[k])!r} at index {k} "
                            "(whole-number floats such as 2.0 are taken)")
        if (np.abs(arr) >= 2.0**62).any():
            raise ValueError(f"{name} holds {float(np.abs(arr).max())!r}, too large for an "
                             "index or a count")
    elif arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers; got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _elements(a, depth):
    """The elements of the sequence ``a`` nested ``depth`` deep, in order (an iterator)."""
    for _ in range(depth - 1):
        a = itertools.chain.from_iterable(a)
    return iter(a)


def concat_ranges(starts, sizes):
    """The ranges starts[k] .. starts[k] + sizes[k] - 1 one after another, as int64."""
    sizes = np.asarray(sizes, dtype=np.int64)
    offset = np.repeat(np.asarray(starts, dtype=np.int64) - (np.cumsum(sizes) - sizes), sizes)
    return offset + np.arange(int(sizes.sum()), dtype=np.int64)


def binary_cover(model):
    """A vertex cover of ``model``'s graph made of binary variables, small when the graph
    allows (the complement of a greedy maximal independent set, lowest degree first,
    non-binary variables first so that they land outside the cover), and its complement
    (an independent set). Returns (cover, free), int32 arrays; None when a non-binary
    variable must be in the cover (two non-binary neighbours)."""
    n = model.n_vars
    deg = np.diff(model.adj_start)
    order = np.lexsort((deg, model.card == 2))      # non-binary first, then by degree
    taken = np.zeros(n, dtype=bool)
    blocked = np.zeros(n, dtype=bool)
    start, nbr = model.adj_start, model.adj_var
    for v in order:
        if not blocked[v]:
            taken[v] = True
            blocked[nbr[start[v]:start[v + 1]]] = True
    cover = np.flatnonzero(~taken).astype(np.int32)
    if (model.card[cover] != 2).any():
        return None
    return cover, np.flatnonzero(taken).astype(np.int32)


def check_card(card) -> np.ndarray:
    """``card`` as a 1-D int64 array of state counts >= 1 (ValueError otherwise)."""
    arr = int_array("card", card)
    if arr.ndim != 1:
        raise ValueError(f"card must be a 1-D sequence of state counts; got shape {arr.shape}")
    if (arr < 1).any():
        i = int(np.flatnonzero(arr < 1)[0])
        raise ValueError(f"card[{i}] = {arr[i]}: every variable needs at least 1 state")
    if (arr > 2**31 - 1).any():
        raise ValueError("card entries must fit in int32")
    return arr


def block_offsets(card, edges):
    """(node_off, edge_off) of the flat layout of ``card`` and canonical ``edges``."""
    node_off = np.zeros(card.shape[0] + 1, dtype=np.int64)
    np.cumsum(card, out=node_off[1:])
    edge_off = np.empty(edges.shape[0] + 1, dtype=np.int64)
    edge_off[0] = node_off[-1]
    np.cumsum(card[edges[:, 0]].astype(np.int64) * card[edges[:, 1]], out=edge_off[1:])
    edge_off[1:] += node_off[-1]
    return node_off, edge_off


def check_values(name, a, off=None):
    """Refuse NaN and +inf in ``a``, read in one pass without a temporary (the maximum of
    an array is NaN when it holds one, else +inf when it holds one); with the block
    offsets ``off`` (into ``a``) the message names block k as ``name[k]``."""
    top = a.max() if a.size else 0.0
    if not (np.isnan(top) or top == np.inf):
        return
    what = "NaN" if np.isnan(top) else "+inf"
    if off is not None:
        at = int(np.flatnonzero(np.isnan(a) if what == "NaN" else np.isposinf(a))[0])
        name = f"{name}[{int(np.searchsorted(off, at, side='right')) - 1}]"
    raise ValueError(f"{name} contains {what}; log-potentials must be finite or -inf")


def _fill_blocks(name, blocks, theta, off, rows, cols, flipped=None):
    """Write the tables ``blocks`` (None: all zero; else one per block, None for zeros) of
    shapes (rows[k],) (``cols`` None) or (rows[k], cols[k]) into ``theta`` at ``off[k]``,
    transposed where ``flipped``; refuse wrong counts, shapes, dtypes, NaN and +inf,
    naming the block ``name[k]``. An array of equal blocks is written whole (no loop over
    blocks)."""
    count = rows.shape[0]
    out = theta[off[0]:off[-1]]
    if blocks is None:
        out[:] = 0.0
        return
    if len(blocks) != count:
        raise ValueError(f"{name} has {len(blocks)} entries; expected {count}")
    shape = (rows[:1], cols[:1]) if cols is not None else (rows[:1],)
    shape = tuple(int(d[0]) for d in shape) if count else ()
    if (isinstance(blocks, np.ndarray) and count and blocks.shape == (count, *shape)
            and (rows == shape[0]).all() and (cols is None or (cols == shape[1]).all())):
        if blocks.dtype.kind not in "iuf":
            raise TypeError(f"{name}[0] must be numeric; got dtype {blocks.dtype}")
        if flipped is None or not flipped.any():
            out.reshape(count, *shape)[:] = blocks  # a broadcast table: no copy
        else:
            flat = out.reshape(count, -1)
            flat[~flipped] = blocks[~flipped].reshape(-1, flat.shape[1])
            flat[flipped] = blocks[flipped].transpose(0, 2, 1).reshape(-1, flat.shape[1])
    else:
        for k, b in enumerate(blocks):
            o = off[k] - off[0]
            if b is None:
                out[o:off[k + 1] - off[0]] = 0.0
                continue
            b = np.asarray(b)
            if b.dtype.kind not in "iuf":
                raise TypeError(f"{name}[{k}] must be numeric; got dtype {b.dtype}")
            s = (int(rows[k]),) if cols is None else (int(rows[k]), int(cols[k]))
            if b.shape != s:
                raise ValueError(f"{name}[{k}] has shape {b.shape}; expected {s}")
            out[o:off[k + 1] - off[0]] = (b.T if flipped is not None and flipped[k] else b).ravel()
    check_values(name, out, off - off[0])
