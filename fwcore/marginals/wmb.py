"""Weighted mini-bucket elimination: a certified upper bound on log Z that tightens with
memory, and marginals from the same mini-buckets (Liu & Ihler 2011, "Bounding the
partition function using Hölder's inequality"; the moment matching of Liu's thesis,
Sec. 4, as Merlin's `wmb` runs it).

Variables are eliminated in the order `fwcore.elimination.choose_order` finds (the fewest
total clique-table entries among min-fill orders and the bandwidth order, within a
share of ``max_time``). The factors (and messages) of variable v's bucket are split into
mini-buckets r whose tables hold at most ``max_entries`` entries (and, with ``ibound``,
at most ``ibound`` + 1 variables); each gets a weight w_r > 0 with Σ_r w_r = 1, and sends
the message

    λ_r(x_{C_r \\ v}) = w_r log Σ_{x_v} exp(f_r(x_{C_r}) / w_r),

f_r its factors, its incoming messages and its reparameterisation. By Hölder's inequality
Σ_{x_v} Π_r exp(f_r) ≤ Π_r (Σ_{x_v} exp(f_r / w_r))^{w_r}, so the sum of the last messages
is an upper bound on log Z whatever the reparameterisation, provided the reparameterisations
of a bucket's mini-buckets sum to zero, and whatever the weights. Each forward pass first
moves the weights along the bound's gradient (the mini-buckets' conditional entropies)
and matches the weighted marginals on x_v of the bucket's mini-buckets (their beliefs use
the backward messages of the previous pass), which tightens the bound; a bucket of one
mini-bucket is eliminated exactly, and a model whose buckets all fit gets log Z itself.

Everything runs in `fwcore._wmb`'s kernels over flat arrays, one call per pass over the
whole tree (building the tree, forward and backward passes, decoding, reading the
beliefs): the model's tables are read in place and a cluster's table is rebuilt when a
pass needs it, so the memory of a run is its messages (two tables over scope minus
variable per cluster) and the scratch of its largest bucket.
"""
from __future__ import annotations

import math
import time
from collections import deque
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from .. import _wmb
from ..auto import PHASE_COSTS, REFEREE_ESS, SLOW_CORE, TIME_SHARES, choose_marginals
from ..checks import (BOOL, CALLABLE, SEED, TIME, Interval, available_bytes, check_bound_feasible,
                      check_feasible, check_model, validate_params)
from .._symbolic import bfs_forest
from ..elimination import bandwidth_order, order_search, stop_at
from ..factor_graph import FactorGraph
from ..loop import LOGGER, Callbacks, Deadline, Stopping, TimeUp, run_loop
from ..model import PairwiseMRF
from ..labelling import feasible_labelling
from ..results import Record, Status
from ..views import FlatFactors, fixed_states, flat_factors
from .estimate import Tally
from .mean_field import flat_mean_field
from .registry import register_method, run_method
from .result import MarginalResult

__all__ = ["weighted_mini_bucket", "importance_samples", "Draws", "MiniBuckets",
           "WeightedMiniBucket", "default_memory_limit"]


class _Graph(NamedTuple):
    """A graph for `fwcore.elimination.choose_order`: ``card`` (int32) and a symmetric CSR
    (``adj_start`` int64[n + 1], ``adj_var`` int32)."""

    card: np.ndarray
    adj_start: np.ndarray
    adj_var: np.ndarray

    @property
    def n_vars(self):
        return len(self.card)


def _graph(card, pairs):
    """The `_Graph` of the variable pairs ``pairs`` (int64[m, 2], no duplicates)."""
    n = len(card)
    both = np.concatenate([pairs, pairs[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=n), out=start[1:])
    return _Graph(card, start, np.ascontiguousarray(both[:, 1], dtype=np.int32))


def _primal_graph(model, flat, fixed):
    """The primal graph of the factors' free variables (fixed ones isolated): a
    PairwiseMRF's own graph when nothing is fixed."""
    if isinstance(model, PairwiseMRF):
        free = fixed < 0
        if free.all():
            return model
        return _graph(flat.card, model.edges[free[model.edges].all(axis=1)].astype(np.int64))
    n, arity = len(flat.card), np.diff(flat.start)
    keys = [np.zeros(0, dtype=np.int64)]
    for k in np.unique(arity[arity > 1]).tolist():      # the factors of k variables at once
        scopes = flat.var[flat.start[:-1][arity == k][:, None] + np.arange(k)].astype(np.int64)
        for a in range(k):
            for b in range(a + 1, k):
                i, j = scopes[:, a], scopes[:, b]
                keep = (fixed[i] < 0) & (fixed[j] < 0) & (i != j)
                keys.append(np.minimum(i, j)[keep] * n + np.maximum(i, j)[keep])
    keys = np.unique(np.concatenate(keys))
    return _graph(flat.card, np.stack([keys // n, keys % n], axis=1))


#: `_order_search` tries min-fill under this many random tie-breaks (as on relabelled
#: graphs) within `_ORDER_WORK` units of min-fill's work: on the UAI 2014 models the best of
#: 30 needs 16x fewer elimination entries than the first on Promedus_17 (2^24.1 against
#: 2^28.2), 10x on Pedigree_11, 4x on linkage_12; on grids the bandwidth order wins (on a
#: 40x40 grid WMB's bound at i-bound 8 is 2-5x closer with it than with min-fill's).
#: The first pass runs on the first order found (`_Run.start`: the bandwidth order, or with
#: an ``ibound`` the better of it and the first min-fill try, as a first pass on a poor
#: order costs more there: 0.20 s against 0.05 s on linkage_12 at i-bound 10, 0.011 s
#: against 0.008 s at the first stage's 2^8 entries) and the search goes on after it
#: (`_Run.search_orders`; a 300x300 grid's first min-fill try runs until the search's 6 s
#: share of max_time=60 is spent and is not finished then): the whole search
#: takes 0.36 / 0.11 / 0.14 s of CPU on linkage_12 / Promedus_17 / Grids_15 (14-49 passes
#: at i-bound 10), and before the first pass it put the first bound 1.3-2.3x later than
#: Merlin's (0.16-0.28x after it; `bench/wmb_scale.py merlin`). With max_time the search takes
#: at most its share of it (`fwcore.auto.TIME_SHARES`; no new try starts after, and a
#: running one stops)
_ORDER_TRIES, _ORDER_WORK = 32, 5e8


def _order_search(model, flat, fixed, deadline):
    """`fwcore.elimination.order_search` on the primal graph: the bandwidth order, then
    the best after each of `_ORDER_TRIES` min-fill tries, within `_ORDER_WORK` and
    ``deadline`` (without a limit the same orders on every run)."""
    return order_search(_primal_graph(model, flat, fixed), by="total", tries=_ORDER_TRIES,
                        budget=_ORDER_WORK, deadline=deadline, separators=False)


def _free_order(choice, fixed):
    """The free variables in the order of an `fwcore.elimination.OrderChoice`."""
    order = np.asarray(choice.order, dtype=np.int64)
    return np.ascontiguousarray(order[fixed[order] < 0])


def _elimination_order(model, flat, fixed, deadline):
    """The free variables in the order the whole search finds (`_order_search`)."""
    return _free_order(deque(_order_search(model, flat, fixed, deadline), maxlen=1)[0], fixed)


class TooLarge(Exception):
    """A mini-bucket tree whose messages alone pass the memory allowed (`MiniBuckets`)."""


class MiniBuckets:
    """The symbolic mini-bucket tree of an elimination ``order`` (WMB's clusters), built by
    `fwcore._wmb.mini_buckets` from the model's `FlatFactors` ``flat`` and evidence states
    ``fixed`` (its docstring states the partition: mini-buckets of at most
    ``max_entries`` table entries and ``ibound`` + 1 variables, an item larger than that
    making its own). `TimeUp` when ``deadline`` (a `fwcore.loop.Deadline`) passes first,
    `TooLarge` as soon as its messages alone pass ``max_memory`` bytes (the build stops
    there: a 10^4-variable grid's next stage, built whole to be refused, took a quarter of
    the run's peak memory).

    The tree's arrays (`fwcore._wmb.Tree`'s names): ``c_var``, ``c_start``, ``c_scope``,
    ``c_parent``, ``b_start`` (the clusters of the p-th variable of ``order``), ``f_cluster``
    (the cluster of each factor, −1 for factors of fixed variables only);
    ``cluster_entries`` (float64: each cluster's table entries)."""

    def __init__(self, flat, fixed, order, max_entries=math.inf, ibound=None, deadline=None,
                 max_memory=math.inf):
        self.flat, self.fixed = flat, fixed
        self.order = np.ascontiguousarray(order, dtype=np.int64)
        max_vars = np.iinfo(np.int64).max if ibound is None else ibound + 1
        built = _wmb.mini_buckets(flat.card, flat.start, flat.var, fixed, self.order, max_vars,
                                  float(max_entries), stop_at(deadline),
                                  max_memory / 16)   # `memory` counts two sets of messages
        if built is None:
            raise TimeUp
        if built is False:
            raise TooLarge
        self.c_var, self.c_start, self.c_scope, self.c_parent, self.b_start, self.f_cluster = built
        card = flat.card.astype(np.float64)
        self.cluster_entries = (np.multiply.reduceat(card[self.c_scope], self.c_start[:-1])
                                if self.n_clusters else np.zeros(0))
        cumulative = np.concatenate([[0.0], np.cumsum(self.cluster_entries)])
        self.bucket_entries = cumulative[self.b_start[1:]] - cumulative[self.b_start[:-1]]
        self.bucket_size = np.diff(self.b_start)

    @property
    def n_clusters(self):
        return len(self.c_var)

    @property
    def entries(self):
        """Table entries of all clusters (the work of a pass)."""
        return float(self.cluster_entries.sum())

    @property
    def message_entries(self):
        """Entries of one set of messages (a table over scope minus variable a cluster)."""
        return float((self.cluster_entries / self.flat.card[self.c_var]).sum())

    @property
    def memory(self):
        """Bytes to run WMB on this tree (`WeightedMiniBucket`): two sets of messages, the
        reparameterisations and weights, the scratch of the largest bucket (twice where
        it is split, as passes keep its beliefs) and of two of the largest cluster, and
        the tree's own arrays."""
        split = self.bucket_entries[self.bucket_size > 1]
        scratch = (3 * self.bucket_entries.max(initial=0) + split.max(initial=0) +
                   2 * self.cluster_entries.max(initial=0))
        structure = 48 * self.n_clusters + 4 * len(self.c_scope) + 8 * len(self.f_cluster)
        return 8 * (2 * self.message_entries + self.flat.card[self.c_var].sum() + scratch +
                    self.n_clusters) + structure

    @property
    def exact(self):
        """Whether every bucket is one mini-bucket (then the bound is log Z)."""
        return not (self.bucket_size > 1).any()

    @property
    def width(self):
        """Variables in the largest cluster."""
        return int(np.diff(self.c_start).max(initial=0))


def _csr(owner, n):
    """(start int64[n + 1], members int32): the indices i with owner[i] = k, for each k <
    n in increasing order (owner −1: none)."""
    members = np.flatnonzero(owner >= 0)
    members = members[np.argsort(owner[members], kind="stable")]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[members], minlength=n), out=start[1:])
    return start, members.astype(np.int32)


class WeightedMiniBucket:
    """WMB message passing on a `MiniBuckets` tree (module docstring), each pass one kernel
    call (`fwcore._wmb`): ``forward(step)`` reweights, matches moments and returns the
    bound, ``backward()`` refreshes the backward messages, ``decode()`` a labelling,
    ``marginals()`` the beliefs. A call raises `fwcore.loop.TimeUp` when ``deadline``
    passes in it (the pass unfinished: its messages are a mix of old and new)."""

    def __init__(self, buckets, deadline=None):
        self.mb = mb = buckets
        self.deadline = Deadline() if deadline is None else deadline
        flat, card = mb.flat, mb.flat.card
        entries = np.rint(mb.cluster_entries).astype(np.int64)
        size = entries // card[mb.c_var]
        msg_off = np.zeros(mb.n_clusters + 1, dtype=np.int64)
        np.cumsum(size, out=msg_off[1:])
        rep_off = np.zeros(mb.n_clusters + 1, dtype=np.int64)
        np.cumsum(card[mb.c_var], out=rep_off[1:])
        ch_start, ch_list = _csr(mb.c_parent, mb.n_clusters)
        own_start, own_list = _csr(mb.f_cluster, mb.n_clusters)
        many = mb.bucket_size[mb.bucket_size > 0]
        arrays = dict(card=card, fixed=mb.fixed, order=mb.order, f_start=flat.start,
                      f_var=flat.var, f_off=flat.off, f_tab=flat.table, c_var=mb.c_var,
                      c_start=mb.c_start, c_scope=mb.c_scope, c_parent=mb.c_parent,
                      b_start=mb.b_start, ch_start=ch_start, ch_list=ch_list,
                      own_start=own_start, own_list=own_list, entries=entries,
                      msg_off=msg_off, rep_off=rep_off,
                      weight=np.repeat(1.0 / many, many), repar=np.zeros(rep_off[-1]),
                      fwd=np.zeros(msg_off[-1]), bwd=np.zeros(msg_off[-1]))
        split = mb.bucket_entries[mb.bucket_size > 1]
        self.tree = _wmb.Tree(arrays, mb.width, int(entries.max(initial=0)),
                              int(mb.bucket_entries.max(initial=0)), int(split.max(initial=0)),
                              self._constant())
        self.eta = _WEIGHT_STEP                      # the weights' step
        self.ceiling = math.inf                      # a negative weight's most |w|

    def _constant(self):
        """What the bound adds to the roots' messages: the factors of fixed variables only
        (at their states) and log |X_v| of each free variable in no factor (its empty
        bucket)."""
        mb, flat = self.mb, self.mb.flat
        at = np.maximum(mb.fixed, 0).astype(np.int64)
        alone = (mb.f_cluster < 0).astype(np.uint8)
        empty = mb.order[mb.bucket_size == 0]
        return (_wmb.labelling_score(flat.card, flat.start, flat.var, flat.off, flat.table, at,
                                     alone) +
                float(np.log(flat.card[empty].astype(np.float64)).sum()))

    def _check(self, status):
        if status == _wmb.PASS_TIMEUP:
            raise TimeUp

    def forward(self, step=1.0):
        """One forward pass (where a bucket has several mini-buckets, their weights' step,
        once backward messages exist, then moment matching); returns the certified bound
        on log Z."""
        status, bound = _wmb.forward(self.tree, step, self.eta, _WEIGHT_FLOOR,
                                     stop_at(self.deadline), self.ceiling)
        self._check(status)
        return bound

    def backward(self):
        """The backward messages (`fwcore._wmb.backward`)."""
        self._check(_wmb.backward(self.tree, stop_at(self.deadline)))

    def decode(self):
        """A labelling (int64[n]; `fwcore._wmb.decode`: Merlin's decoding on the current
        reparameterisation)."""
        x = np.empty(len(self.mb.flat.card), dtype=np.int64)
        self._check(_wmb.decode(self.tree, x, stop_at(self.deadline)))
        return x

    def make_lower(self):
        """Turn the weights to mixed signs for the lower bound (`fwcore._wmb.forward`): in
        each bucket of several clusters the one of most entries (the first of equals)
        gets 1 + s (R − 1) / R, the others −s / R (R clusters, s = `_LOWER_START`); the
        reparameterisation is kept (a warm start), the messages are recomputed by the
        next pass."""
        mb = self.mb
        size = mb.bucket_size[mb.bucket_size > 0]
        bucket = np.repeat(np.arange(len(size)), size)
        many = np.repeat(size, size).astype(np.float64)
        by_entries = np.lexsort((np.arange(mb.n_clusters), -mb.cluster_entries, bucket))
        positive = by_entries[np.cumsum(size) - size]  # each bucket's first (none: none)
        weight = -_LOWER_START / many
        weight[positive] = 1.0 + _LOWER_START * (many[positive] - 1.0) / many[positive]
        self.tree.arrays["weight"][:] = weight
        self.tree.has_backward = False
        self.eta, self.ceiling = _LOWER_STEP, _LOWER_MAX_WEIGHT

    def sample(self, uniforms, x, log_q, log_f):
        """Importance samples from the proposal of the last forward pass into ``x``,
        ``log_q``, ``log_f`` (`fwcore._wmb.sample`), one per row of ``uniforms``; returns
        how many were drawn and whether the deadline passed (the kernel reads the clock
        after a sample: a batch of one is drawn whole past it)."""
        status, done = _wmb.sample(self.tree, uniforms, x, log_q, log_f, stop_at(self.deadline))
        return done, status == _wmb.PASS_TIMEUP

    def marginals(self, node, fac):
        """The beliefs into the zero arrays ``node`` (Σ card: v's states from the cumulative
        cards) and ``fac`` (the layout of the factors' tables; `fwcore._wmb.read`)."""
        node_off = np.zeros(len(self.mb.flat.card) + 1, dtype=np.int64)
        np.cumsum(self.mb.flat.card, out=node_off[1:])
        self._check(_wmb.read(self.tree, node, node_off, fac, stop_at(self.deadline)))


class BlockMeanField:
    """Structured mean field over blocks of variables (the generalised mean field of Xing,
    Jordan & Russell 2003; Saul & Jordan 1996 for chains): a certified lower bound on log
    Z much tighter than naive mean field's, for a PairwiseMRF whose edge tables are finite.

    q(x) = Π_b q_b(x_b) over blocks b, q_b ∝ exp(θ_b + h_b): the block's own unaries and
    edges plus fields h_b(x_i) on its variables. With the exact entropy H(q_b) = log
    Z_b(θ_b + h_b) − E_{q_b}[θ_b + h_b], Gibbs' inequality gives for any fields

        log Z ≥ L(q) = Σ_b (log Z_b(θ_b + h_b) − E_{q_b}[h_b]) + Σ_{(i,j) across} q_i^T θ_ij q_j,

    and block coordinate ascent sets h_b(x_i) = Σ_{j across} θ_ij(x_i, ·) q_j, the best q_b
    given the others. Blocks are runs of ``k`` levels of a breadth-first search
    (`_bfs_levels`: an edge joins the same or adjacent levels, so adjacent runs), so the
    even runs and the odd runs are updated in turn, each set by one pass of an exact
    mini-bucket tree (`WeightedMiniBucket` on their own factors, the fields as its
    clusters' reparameterisations; the bandwidth order within): log Z_b and the node
    marginals. On a grid searched from a corner the runs are diagonal strips of k
    diagonals. Measured on 20x20 grids (couplings U[−1, 1] / U[−3, 3], exact log Z), log
    Z − L a variable from WMB's marginals: naive mean field .072 / .091; k = 2 .050 / .050,
    4 .026 / .026, 8 .013 / .016, 12 .008 / .010, in 3-8 sweeps (table entries a
    variable: 4, 9, 129, 1430). ``ok``: every tree is exact within ``max_entries``
    entries a cluster and the edge tables are finite (else use naive mean
    field); ``entries``: the trees' table entries (a sweep's work). ``levels``:
    `_bfs_levels` of the model, when already found (they do not depend on k)."""

    def __init__(self, model, fixed, k, max_entries=2**16, deadline=None, levels=None):
        self.model, self.fixed = model, fixed
        self.trees, self.entries = [], 0.0
        edges, theta = model.edges, model.theta
        self.ok = model.n_edges > 0
        if not self.ok:
            return
        card = np.ascontiguousarray(model.card, dtype=np.int32)
        block = (_bfs_levels(model) if levels is None else levels) // k
        internal = block[edges[:, 0]] == block[edges[:, 1]]
        self.cross_edges = np.flatnonzero(~internal)
        for parity in (0, 1):
            mine = block % 2 == parity
            if not mine.any():
                continue
            inner = np.flatnonzero(internal & mine[edges[:, 0]])
            unary = np.flatnonzero(mine)
            m = len(unary)
            flat = FlatFactors(
                card, np.concatenate([np.arange(m + 1), m + 2 * np.arange(1, len(inner) + 1)]),
                np.concatenate([unary, edges[inner].reshape(-1)]).astype(np.int32),
                np.concatenate([model.node_off[unary], model.edge_off[inner], [len(theta)]]),
                theta)
            held = np.where(mine, fixed, 0).astype(np.int32)   # the other runs: out
            order = bandwidth_order(_graph(card, edges[inner].astype(np.int64)))
            tree = MiniBuckets(flat, held, order[held[order] < 0], max_entries,
                               deadline=deadline)
            if not tree.exact:
                self.ok = False
                return
            self.trees.append((tree, mine & (fixed < 0)))
            self.entries += tree.entries

    @property
    def memory(self):
        return sum(tree.memory for tree, _ in self.trees)

    def run(self, q, deadline=None, max_iter=100, tol=1e-6):
        """``(L, q)``: block coordinate ascent from the flat node marginals ``q`` (fixed
        variables as point masses), a set of blocks a pass, while a sweep raises L by more
        than ``tol`` nats and, as timed, fits before ``deadline`` (a `fwcore.loop.Deadline`,
        which also stops a pass: L is then that of the last blocks updated in whole); L is
        −inf when the time ran out before every set was updated once."""
        if deadline is not None and deadline.passed():
            return -math.inf, q       # its set-up alone reads no clock (seconds at 10^6)
        card = self.model.card
        node_off = self.model.node_off
        cross = _EdgeGroups(self.model, self.cross_edges)
        runs = []
        for tree, free in self.trees:
            w = WeightedMiniBucket(tree, deadline)
            within = np.arange(int(card[tree.c_var].sum())) - np.repeat(
                np.cumsum(card[tree.c_var]) - card[tree.c_var], card[tree.c_var])
            runs.append((w, np.repeat(node_off[tree.c_var], card[tree.c_var]) + within,
                         np.repeat(free, card)))
        parts, bound, sweep_time = [None] * len(runs), -math.inf, 0.0
        empty = np.zeros(0)
        for _ in range(max_iter):
            left = None if deadline is None else deadline.seconds_left()
            if left is not None and sweep_time >= left:
                break
            started = time.perf_counter()
            stuck = False
            try:
                for k, (w, at, free) in enumerate(runs):
                    h = cross.fields(q)
                    w.tree.arrays["repar"][:] = h[at]
                    log_z = w.forward(0.0)
                    stuck = log_z == -math.inf        # q's support leaves a block no state
                    if stuck:
                        break
                    w.backward()
                    node = np.zeros(len(q))
                    w.marginals(node, empty)
                    q[free] = node[free]
                    held = free & (q > 0.0)        # h is −inf off q's support
                    parts[k] = log_z - float(q[held] @ h[held])
            except TimeUp:
                break
            if stuck:
                break
            sweep_time = time.perf_counter() - started
            before, bound = bound, sum(parts) + cross.expectation(q)
            if bound - before <= tol:
                break
        done = all(p is not None for p in parts)
        return (max(bound, sum(parts) + cross.expectation(q)) if done else -math.inf), q


def _bfs_levels(model):
    """Each variable's level in a breadth-first search of its component from the
    component's variable of least degree (the start of the Cuthill-McKee order)."""
    by_degree = np.argsort(np.diff(model.adj_start), kind="stable")
    return bfs_forest(model.adj_start, model.adj_var, by_degree)[1]


class _EdgeGroups:
    """Some edges of a PairwiseMRF grouped by their tables' shape, for the fields and
    expectations of block mean field under a product q (flat node marginals). A −inf
    entry (an impossible pair) counts as 0 · (−inf) = 0 off q's support, −inf on it."""

    def __init__(self, model, edges):
        self.size = model.node_off[-1]
        self.groups = []
        pairs = model.edges[edges]
        shapes = model.card[pairs]
        for ci, cj in {tuple(s) for s in shapes.tolist()}:
            e = edges[(shapes == (ci, cj)).all(axis=1)]
            i, j = model.edges[e, 0], model.edges[e, 1]
            tables = model.theta[model.edge_off[e][:, None] + np.arange(ci * cj)]
            impossible = ~np.isfinite(tables)
            self.groups.append((np.where(impossible, 0.0, tables).reshape(-1, ci, cj),
                                impossible.reshape(-1, ci, cj) if impossible.any() else None,
                                model.node_off[i][:, None] + np.arange(ci),
                                model.node_off[j][:, None] + np.arange(cj)))

    def fields(self, q):
        """h(x_i) = Σ_{(i,j)} θ_ij(x_i, ·) q_j over the edges, on both ends (flat): −inf
        where an impossible pair meets q_j's support."""
        h = np.zeros(self.size)
        blocked = np.zeros(self.size, dtype=bool)
        support = q > 0.0
        for tables, impossible, at_i, at_j in self.groups:
            h += np.bincount(at_i.reshape(-1), minlength=self.size,
                             weights=np.einsum("eab,eb->ea", tables, q[at_j]).reshape(-1))
            h += np.bincount(at_j.reshape(-1), minlength=self.size,
                             weights=np.einsum("eab,ea->eb", tables, q[at_i]).reshape(-1))
            if impossible is not None:
                blocked[at_i[np.einsum("eab,eb->ea", impossible, support[at_j]) > 0]] = True
                blocked[at_j[np.einsum("eab,ea->eb", impossible, support[at_i]) > 0]] = True
        h[blocked] = -np.inf
        return h

    def expectation(self, q):
        """Σ_{(i,j)} q_i^T θ_ij q_j over the edges (−inf when q puts mass on an impossible
        pair)."""
        support = q > 0.0
        total = 0.0
        for tables, impossible, at_i, at_j in self.groups:
            if impossible is not None and np.einsum("ea,eab,eb->", support[at_i], impossible,
                                                    support[at_j]):
                return -math.inf
            total += float(np.einsum("ea,eab,eb->", q[at_i], tables, q[at_j]))
        return total


#: the weights' first step (`fwcore._wmb.forward`), halved after a pass whose bound is
#: looser than the one before; a weight's least share. Measured at one stage, 20
#: passes, bound − log Z with steps 0 (uniform weights, Merlin's) / 1 / 3: linkage_12 at
#: 2^16 entries 25.3 / 16.4 / 16.4, linkage_14 8.10 / 5.01 / 5.09, Grids_15 5.57 / 4.30 /
#: 4.28, Promedus_17 4.43 / 4.20 / 6.78, ObjectDetection_13 0.78 / 0.66 / 2.23 (3
#: oscillates)
_WEIGHT_STEP, _WEIGHT_FLOOR = 1.0, 1e-6
#: the lower bound's negative weights start at −_LOWER_START / R in a bucket of R clusters
#: (pyGMs' default): on Grids_15 at i-bound 8, 40 passes, log Z − bound 8.5 with 1 (the
#: upper bound's 8.3), 25.6 with 0.1
_LOWER_START = 1.0
#: the lower bound's weights' first step (halved after a pass that lowers the bound) and
#: a negative weight's most |w|: on Grids_15 at 2^12 entries a mini-bucket, 100 passes of
#: step 1, log Z − bound 2.62 with steps of 3 (|w| ≤ 25), 4.5 then NaN with 10 (|w| past
#: 10^15: w_+ log Σ exp(f / w_+) cancels the others' to no digit left)
_LOWER_STEP, _LOWER_MAX_WEIGHT = 3.0, 64.0
#: the lower bound of mixed signs runs on a tree where this many passes are predicted to
#: fit in its share of the time, at most `_MIXED_MAX_PASSES` passes, until
#: `_MIXED_PATIENCE` in a row gain nothing (on Grids_15 it gains 2 nats after 10 flat ones)
_MIXED_PASSES, _MIXED_MAX_PASSES, _MIXED_PATIENCE = 30, 1000, 20
#: the lower bound by conditioning (`_Run.condition_lower`): a cutset whose exact tree
#: holds as many entries as `_CONDITION_BRANCHES` passes of the upper bound's tree (at
#: its seconds per entry) take in its share of the time, at most
#: `_CONDITION_MAX_ENTRIES`; the cutset's variables are picked among those covering at
#: least `_CUTSET_COVER` of the most entries (the least entropy first), at most
#: `_CUTSET_MOST` of them, found in at most `_CUTSET_TIME` of the sampling's time (on
#: linkage_12 in under 0.05 s); the samples' distinct states on it kept up to
#: `_CONDITION_STATES` entries, gathered every `_GATHER` samples. Larger branches sum
#: more of Z (linkage_12, 15 s of passes, 5 s of samples, 15 s of branches, bound −
#: log Z: exact trees of 2^17 entries, 14403 branches, −24.8; 2^20, 1312: −13.5; 2^23,
#: 288: −6.8; 2^25, 46: −6.4; 2^27, 12: −5.1); covering the most entries alone picks
#: variables that the samples spread over (2^25: −8.9)
_CONDITION_BRANCHES, _CONDITION_MAX_ENTRIES, _CUTSET_COVER, _CUTSET_MOST = 8, 2.0**27, 0.5, 256
_CONDITION_STATES, _GATHER, _CUTSET_TIME = 2**24, 2**14, 0.5
#: importance samples: in batches of `_SAMPLE_BATCH` (fewer on a model of over
#: `_SAMPLE_ENTRIES` / `_SAMPLE_BATCH` variables, so that a batch's labellings stay within
#: `_SAMPLE_ENTRIES` int64s, and their entries with the tally's temporaries, about
#: `_SAMPLE_BYTES` / 8 bytes each, within an eighth of ``memory_limit``: at 2^18 entries
#: they took 10 MB of a 10^4-variable grid's 15; at 2^16 on linkage_12 the bound by
#: conditioning lost 0.5-1 nat, medians of 3); without max_time, `_SAMPLES` of them
_SAMPLE_BATCH, _SAMPLE_ENTRIES, _SAMPLE_BYTES, _SAMPLES = 256, 2**18, 320, 2**14
#: a stage's successor not yet looked for
_UNKNOWN = object()
#: the first stage's mini-buckets hold at most this many entries; each next stage 4x more
_FIRST_ENTRIES, _GROWTH = 2**8, 4
#: the lower bound after the passes (`_Run.lower_bound`) gets between the least and the
#: most of its shares of ``max_time`` (`fwcore.auto.TIME_SHARES`): block mean field is
#: given the time of `_LOWER_SWEEPS` sweeps within these (it converges in 3-8 on grids);
#: a sweep is about `_SWEEP_PASSES` passes of its trees' entries (forward, backward and a
#: read); its blocks are runs of k x the bandwidth for the largest k of `_BLOCKS` that fits
_LOWER_SHARE = TIME_SHARES["wmb/lower bound, least"]
_LOWER_MAX = TIME_SHARES["wmb/lower bound, most"]
_SAMPLE_SHARE = TIME_SHARES["wmb/sampling"]
_ORDER_SHARE = TIME_SHARES["wmb/order search"]
_BP_SHARE = TIME_SHARES["wmb/loopy bp"]
_MIXED_SHARE = TIME_SHARES["wmb/lower bound, mixed"]
_CONDITION_SHARE = TIME_SHARES["wmb/lower bound, conditioning"]
_LOWER_SWEEPS, _SWEEP_PASSES = 8, 1.5
#: a phase that takes this many seconds or more says so on the ``fwcore`` logger
_PHASE_LINE = 0.1
_BLOCKS = (16, 12, 8, 6, 4, 2)
#: on a model with zeros, block mean field (from the best labelling, q's support within
#: the possible pairs) may also take blocks of k = 1 level, and clusters of up to
#: `_ZERO_BLOCK_ENTRIES` entries (2^16 on finite tables): ObjectDetection_13's levels
#: need 2^20 (bound − log Z at 10 s: naive mean field −2.45, blocks of one level −1.78;
#: ObjectDetection_16 at 5 s: −0.996 and −0.714)
_ZERO_BLOCK_ENTRIES = 2**20
#: the next stage starts only if this many of its passes (and a read) fit in the time left
#: (a pass's time predicted from the last one's, in proportion to the entries); else the
#: stage goes on. A larger stage's first passes are looser than the one before's last,
#: but it soon passes it (ObjectDetection_13: 2^16 entries converge to +0.79 nats; 2^20:
#: +1.11 after one pass, +0.67 after 2, +0.54 after 5; 2^24: +0.23 after one, +0.14
#: after 2, +0.11 after 5). With 4 passes asked, ObjectDetection_13 on a busy machine
#: stayed at 2^20 (+0.32 at 60 s, where 2^24 gave +0.08)
_STAGE_PASSES = 2
#: the beliefs are read before a pass unless this many passes fit in the time left;
#: while no beliefs are kept, unless `_FIRST_READ_PASSES` passes and reads fit (a pass
#: that the deadline cuts loses its beliefs: on a 10^6-variable grid at 60 s under load,
#: the one pass that ended was never read and the marginals were uniform)
_PASS_MARGIN, _FIRST_READ_PASSES = 1.1, 3
#: the default ``memory_limit``: this share of the memory the machine has available, and
#: at most `_SMALL_MODEL_BYTES` x (`_SMALL_MODEL_VARS` / n) x (`_MID_MODEL_VARS` / n)^2 (no
#: factor over 1) or `_BYTES_PER_VARIABLE` x n less `_CALL_BYTES`, whichever is larger:
#: models of up to a thousand variables (the UAI ones, whose best stages take 1-2 GB:
#: ObjectDetection_13's 2^24-entry stage 1.5 GB) get 2 GiB, 2 GiB x 1000/n up to two
#: thousand (linkage_12's last stage at 60 s: 1.19 GB of 1.73), then a steep fall to a
#: stage in proportion to the model, for a peak RSS of at most 1.5 KB a variable from
#: 10^4 variables up (issue 39). At 10^4 a call's fixed costs outside the stage (about
#: `_CALL_BYTES`: the trees' builds, the lower bounds' plans, the samples) are most of it;
#: there the limit is 8.6 MB, whose stage (2^6 entries a mini-bucket, 7.0 MB) gives a
#: 100x100 binary grid of couplings U[-3, 3] an interval of 4.8% of log Z at 60 s (12.7%
#: at 2^4 entries, 3.3 MB; 200 MB gave U[-1, 1] 1.0% at 30 s)
_MEMORY_SHARE, _SMALL_MODEL_BYTES, _SMALL_MODEL_VARS, _MID_MODEL_VARS = 0.25, 2**31, 1000, 2000
_BYTES_PER_VARIABLE, _CALL_BYTES = 1024, 6 * 2**20


def default_memory_limit(n_vars=0, ibound=None):
    """The default ``memory_limit`` of a model of ``n_vars`` variables (the constants
    above): `_MEMORY_SHARE` of the memory this process can allocate now
    (`fwcore.checks.available_bytes`; 16 GiB when unknown), capped in proportion to the
    model unless an ``ibound`` chooses the tree, at least 2^20 bytes."""
    available = available_bytes()
    n = max(n_vars, 1)
    cap = math.inf if ibound is not None else max(
        _SMALL_MODEL_BYTES * min(1.0, _SMALL_MODEL_VARS / n) * min(1.0, _MID_MODEL_VARS / n) ** 2,
        _BYTES_PER_VARIABLE * n - _CALL_BYTES)
    return max(2**20, min(_MEMORY_SHARE * (2**34 if available is None else available), cap))


_PARAMS = {
    "ibound": [Interval(1, integer=True), None],
    "memory_limit": [Interval(2**16), None],
    "max_iter": Interval(0, integer=True),
    "tol": Interval(0.0),
    "max_time": TIME,
    "callback": [CALLABLE, None],
    "verbose": BOOL,
    "confidence": Interval(0.0, 1.0, lo_open=True, hi_open=True),
    "n_samples": [Interval(0, integer=True), None],
    "seed": SEED,
}


@validate_params(_PARAMS, unchecked=("model",))
def weighted_mini_bucket(model: PairwiseMRF | FactorGraph, *, ibound: int | None = None,
                         memory_limit: float | None = None, max_iter: int = 1000,
                         tol: float = 1e-6, max_time: float | None = None, callback=None,
                         verbose: bool = False, confidence: float = 0.95,
                         n_samples: int | None = None,
                         seed: int | None = None) -> MarginalResult:
    """A certified interval on log Z and marginals by weighted mini-bucket elimination
    (module docstring; Liu & Ihler 2011), anytime.

    ibound : None (default): stages of growing mini-buckets (at most 2^8, 2^10, 2^12, ...
        table entries), the next started after one pass of the last while
        ``memory_limit`` allows and 2 of its passes and a read of its beliefs fit in
        ``max_time`` (predicted from the last pass), the last one run while its passes
        tighten the bound by more than ``tol``. An int: one stage with mini-buckets of at
        most ``ibound`` + 1 variables (Merlin's ``--ibound``).
    memory_limit : bytes for a stage's messages, scratch and tree (`MiniBuckets.memory`);
        None: `default_memory_limit` (a quarter of the memory available, capped in
        proportion to the model unless ``ibound`` is given). An ``ibound`` whose tree needs
        more is a ValueError, before anything is allocated.
    max_iter : int
        passes (forward and backward).

    The bound is certified at every stop (``log_z_upper``, the least over all passes,
    the product bound Σ_f max f + Σ_v log ``|X_v|`` before any); ``log_z_lower`` is the best
    of the scores of the labellings decoded after each pass (log Z ≥ max_x score(x); the
    first, before any pass, each variable at its best unary state, repaired to a
    feasible labelling where arc consistency finds one), the bound of weights of mixed
    sign on a model whose tables are finite (`_Run.mixed_lower`: reverse Hölder, Liu &
    Ihler 2011), on a model with zeros the bound by conditioning (`_Run.condition_lower`:
    log Z ≥ log Σ_{c ∈ S} Z(x_C = c), each branch summed exactly, with ``max_time``) and
    a mean-field bound (`_Run.lower_bound`: block mean field from the
    marginals on a PairwiseMRF, else naive mean field from them and from the best
    labelling), each in its share of ``max_time`` (`fwcore.auto.TIME_SHARES`);
    ``gap`` = ``certified_gap`` = their difference, so the status is ``converged`` when
    it is at most ``tol`` (or the elimination is exact), ``stalled`` when no stage that
    fits tightens it further. Between the passes and the lower bounds, importance
    sampling from the last pass's proposal (Liu, Fisher & Ihler 2015; `_Run.sample`)
    gives ``log_z_estimate`` and the interval ``log_z_estimate_lower`` to
    ``log_z_estimate_upper``, which holds with probability at least ``confidence``
    (`fwcore.marginals.estimate` names the inequality); ``n_samples`` of them (None: as
    many as its share of ``max_time`` allows, 2^14 without max_time), from uniforms drawn
    by ``np.random.default_rng(seed)``: a run of fixed ``max_iter`` without ``max_time``
    is the same for the same seed. When the bounds meet, the estimate is log Z and its
    interval the bounds. ``info`` has the samples' number, their effective number
    (``ess``), the proposal's bound and their node marginals. Marginals are the weighted
    beliefs of the pass of tightest
    bound read (exact when its buckets are whole), within ``max_time``; when no pass's
    beliefs could be read in time the marginals are uniform, the method says so
    ("wmb+uniform") and the status is never ``converged``. Variables that evidence fixes
    (one finite unary state) are conditioned on. Everything, the order search included,
    counts against ``max_time``; Ctrl-C returns the best so far (``interrupted``). A model
    with no feasible assignment raises ValueError: at the start when arc consistency finds it
    (`fwcore.checks.check_feasible`), at the end when the bound proves it."""
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    return run_method(WMB, checked, deadline=deadline, max_iter=max_iter, callback=callback,
                      verbose=verbose,
                      options=dict(ibound=ibound, memory_limit=memory_limit, tol=tol,
                                   confidence=confidence, n_samples=n_samples, seed=seed))


class Draws(NamedTuple):
    """`importance_samples`' answer: ``x`` (int64[k, n_vars]) drawn from the proposal,
    ``log_w`` their log importance weights log f(x) − log q(x) (their mean estimates Z,
    each at most ``log_z_proposal``), the certified bounds ``log_z_upper`` and
    ``log_z_lower`` of the passes (equal when the elimination was exact: then the
    proposal is the model's distribution), ``exact``, the passes' ``status``."""

    x: np.ndarray
    log_w: np.ndarray
    log_z_upper: float
    log_z_lower: float
    log_z_proposal: float
    exact: bool
    status: Status


#: `importance_samples`: the passes' share of ``max_time`` (the samples get the rest) and
#: their default ``tol``: on a 14x14 grid (coupling 1) at 4 MB, 3000 samples' effective
#: number 2710 after passes to tol 1e-3 (0.7 s), 2733 after 100 passes (1.6 s), 2648
#: after 10; passes to tol 1e-6 took 14 s
_PROPOSAL_SHARE, _PROPOSAL_TOL = 0.5, 1e-3


def importance_samples(model: PairwiseMRF | FactorGraph, n: int | None, *, max_time=None,
                       memory_limit=None, max_iter=None, tol=_PROPOSAL_TOL, seed=None,
                       keep=None) -> Draws:
    """``n`` importance samples of ``model`` (evidence as fixed states) from weighted
    mini-bucket's proposal (Liu, Fisher & Ihler 2015, Sec. 3): `weighted_mini_bucket`'s
    passes (stages growing within ``memory_limit``, at most ``max_iter``, until they
    tighten the bound by at most ``tol``) in `_PROPOSAL_SHARE` of ``max_time``, then the
    samples from the last whole forward pass (`_Run.draws`) until ``max_time`` (fewer
    than ``n`` then: the `Draws` say how many; ``n`` None: until ``max_time``), from
    ``np.random.default_rng(seed)``. ``keep``: the variables whose states ``x`` holds
    (None: all). Ctrl-C in the passes or the draws returns what is drawn."""
    call = Deadline(max_time)
    pairwise = model.reduced if isinstance(model, FactorGraph) else model
    check_feasible(pairwise)
    limit = default_memory_limit(len(model.card)) if memory_limit is None else memory_limit
    run = _Run(model, None, limit, tol, call, max_time)
    run.deadline = call.share(_PROPOSAL_SHARE)
    check_bound_feasible(pairwise, run.upper)
    outcome = run_loop(run.measure, run.step,
                       Stopping(_MAX_PASSES if max_iter is None else max_iter, tol,
                                deadline=run.deadline), Callbacks(trace=False),
                       start=run.start)
    xs, logs = [], []
    if outcome.status is not Status.INTERRUPTED and run.wmb is not None:
        try:
            for x, log_w in run.draws(call, n, seed):
                xs.append(x if keep is None else x[:, keep])
                logs.append(log_w)
        except KeyboardInterrupt:
            pass
    check_bound_feasible(pairwise, run.upper)
    width = len(model.card) if keep is None else len(keep)
    x = np.concatenate(xs) if xs else np.zeros((0, width), dtype=np.int64)
    log_w = np.concatenate(logs) if logs else np.zeros(0)
    proposal = run.upper if run.proposal_bound is None else run.proposal_bound
    return Draws(x, log_w, run.upper, run.lower, proposal, run.exact, outcome.status)


#: passes unless max_iter is given
_MAX_PASSES = 1000


def _run_wmb(model, budget, callbacks, *, ibound=None, memory_limit=None, tol=1e-6,
             confidence=0.95, n_samples=None, seed=None):
    """`weighted_mini_bucket` on the checked ``model``: the registered run. Its phases
    (`_Run.phase_end`): the passes, then importance sampling, loopy BP (a candidate for
    the marginals), the lower bound by conditioning (models with zeros; its cutset chosen
    before the samples, which rank its branches), the lower bound of mixed signs (models
    with finite tables) and mean field, each until its share of the time
    (`fwcore.auto.TIME_SHARES`) is used, the time one leaves going to the next; Ctrl-C
    in one ends the run (``interrupted``)."""
    call = budget.deadline
    max_time = call.seconds_left()
    pairwise = model.reduced if isinstance(model, FactorGraph) else model
    check_feasible(pairwise)
    limit = default_memory_limit(len(model.card), ibound) if memory_limit is None else memory_limit
    run = _Run(model, ibound, limit, tol, call, max_time)
    check_bound_feasible(pairwise, run.upper)      # its floor found now, within the time
    outcome = run_loop(run.measure, run.step,
                       Stopping(budget.iterations(_MAX_PASSES), tol, deadline=run.deadline),
                       callbacks, start=run.start)
    status = outcome.status
    if status is not Status.INTERRUPTED:
        if run.wmb is not None:           # the passes' deadline has passed: the phases'
            run.wmb.deadline = run.end
        try:
            with run.phase("beliefs"):
                run.read(run.end.seconds_left())
            with run.phase("block plan"):
                run.plan_lower_bound()              # when the passes ended after one
            with run.phase("sampling"):
                run.plan_conditioning(run.phase_end("sampling"))
                run.sample(run.phase_end("sampling"), n_samples, seed)
            with run.phase("loopy bp"):
                run.message_passing(run.phase_end("loopy bp"))
            with run.phase("conditioning"):
                run.condition_lower(run.phase_end("conditioning"))
            with run.phase("mixed lower bound"):
                run.mixed_lower(run.phase_end("mixed"))
            with run.phase("mean field"):
                run.lower_bound(run.end)
        except KeyboardInterrupt:
            status = Status.INTERRUPTED
    check_bound_feasible(pairwise, run.upper)
    if status is Status.CONVERGED and run.gap > tol:
        status = Status.STALLED
    if status in (Status.CONVERGED, Status.STALLED) and (
            run.node is None or (run.exact and not run.marginals_exact)):
        status = Status.MAX_TIME       # the time ran out for the (exact) pass's beliefs
    with run.phase("result"):
        return run.result(status, outcome, call.elapsed(), confidence)


class _Run:
    """The state of a `weighted_mini_bucket` run: the stages' trees, the current
    message passing, the best bounds and the marginals of the best pass read."""

    def __init__(self, model, ibound, memory_limit, tol, call, max_time=None):
        self.model, self.ibound, self.tol, self.call = model, ibound, tol, call
        self.max_time, self.blocks = max_time, None
        self.memory_limit = memory_limit
        self.order_deadline = call.share(_ORDER_SHARE)
        self.orders = self.search_left = None       # the order search (`search_orders`)
        self.choice = None                          # its choice the stage's order is of
        self.flat = flat = flat_factors(model)
        self.fixed = fixed_states(model)
        self.node_off = np.zeros(len(flat.card) + 1, dtype=np.int64)
        np.cumsum(flat.card, out=self.node_off[1:])
        self.lower, self.best_x = -math.inf, None
        self.cap = _FIRST_ENTRIES if ibound is None else math.inf
        self.wmb, self.upcoming = None, _UNKNOWN
        self.node = self.fac = None                 # the marginals kept (flat)
        self.marginals_exact = False                # ... read from an exact pass
        self.exact = False                          # an exact pass ended
        self.pass_time = 0.0
        self.marginals_bound = math.inf              # the pass bound of the marginals kept
        self.n_passes, self.stage_passes, self.last, self.previous = 0, 0, math.inf, math.inf
        self.passed = False                         # the last pass ended (beliefs readable)
        self.finished = False
        self.planned = False                        # `_plan_lower_bound` done
        free = flat.card[self.fixed < 0].astype(np.float64)
        self.upper = (_wmb.factor_max(flat.card, flat.start, flat.var, flat.off, flat.table,
                                      self.fixed) + float(np.log(free).sum()))
        self.finite = _finite_tables(flat, self.fixed)
        self.proposal_bound = None                  # the bound of the last whole forward pass
        self.tally = None                           # the importance samples (`sample`)
        self.bp = None                              # loopy BP's result (`message_passing`)
        # seconds kept for the phases after the passes: mean field (at least), sampling,
        # the lower bound of mixed signs (on finite tables; block mean field may take it)
        # (conditioning, on tables with zeros, takes its share from mean field's)
        condition = 0.0 if self.finite else _CONDITION_SHARE
        shares = {"mean field": max(_LOWER_SHARE - condition, 0.0), "sampling": _SAMPLE_SHARE,
                  "loopy bp": _BP_SHARE, "conditioning": condition,
                  "mixed": _MIXED_SHARE if self.finite else 0.0}
        self.branches = None                        # conditioning's (`plan_conditioning`)
        self.reserve = {k: 0.0 if max_time is None else v * max_time for k, v in shares.items()}
        # every phase ends by ``end``: the call's end less the result's predicted time
        self.end = call.share(1.0)
        if self.end.at is not None:
            pairwise = model.skeleton if isinstance(model, FactorGraph) else model
            entries = pairwise.dim + (len(flat.table) if isinstance(model, FactorGraph) else 0)
            self.end.at -= SLOW_CORE * PHASE_COSTS["wmb/result"] * entries
        self.deadline = self.phase_end("passes")

    def phase_end(self, phase):
        """The deadline of a ``phase`` ("passes", "sampling", "loopy bp", "conditioning",
        "mixed"; mean field's is ``end``): ``end`` less the seconds kept for the phases
        after it."""
        phases = ("passes", "sampling", "loopy bp", "conditioning", "mixed", "mean field")
        later = phases[phases.index(phase) + 1:]
        part = self.end.share(1.0)
        if part.at is not None:
            part.at -= sum(self.reserve[k] for k in later)
        return part

    @contextmanager
    def phase(self, name):
        """Log on the ``fwcore`` logger the seconds the phase ``name`` took, when at least
        `_PHASE_LINE` (at 10^6 variables each takes seconds: where the time went)."""
        started = time.monotonic()
        try:
            yield
        finally:
            seconds = time.monotonic() - started
            if seconds >= _PHASE_LINE:
                LOGGER.info("wmb %s  %.1f s, ended at %.1f s", name, seconds,
                            self.call.elapsed())

    def start(self):
        """A first labelling (each variable's best unary state), the first elimination order
        found (`_order_search`, whose search goes on after the first pass:
        `search_orders`) and the first stage (`_FIRST_ENTRIES`, or less until it fits in
        ``memory_limit``; a ValueError when ``ibound``'s tree exceeds it)."""
        self._offer(self._unary_argmax())
        with self.phase("order"):
            window, started = self.order_deadline.seconds_left(), time.monotonic()
            self.orders = _order_search(self.model, self.flat, self.fixed, self.order_deadline)
            self.choice = next(self.orders)                    # the bandwidth order
            if self.ibound is not None:
                self.choice = next(self.orders, self.choice)   # and a min-fill try
            self.order = _free_order(self.choice, self.fixed)
            if window is not None:              # what the first order left of its share
                self.search_left = window - (time.monotonic() - started)
        with self.phase("first stage's tree"):
            tree, self.cap = self._fitting_tree(self.order)
        if self.ibound is not None and tree.memory > self.memory_limit:
            raise ValueError(f"ibound={self.ibound} needs about {tree.memory:.3g} bytes, "
                             f"over memory_limit={self.memory_limit:.3g}: give a smaller "
                             "ibound, a larger memory_limit, or ibound=None (the largest "
                             "that fits)")
        self._start(tree)

    def _fitting_tree(self, order):
        """``(tree, cap)``: the tree on ``order`` at this stage's cap, without ``ibound``
        at 4x smaller ones until it fits in ``memory_limit`` (or the cap is `_GROWTH`)."""
        cap = self.cap
        while True:
            last = self.ibound is not None or cap <= _GROWTH
            tree = self._tree(cap, order, fits=not last)
            if last or (tree is not None and tree.memory <= self.memory_limit):
                return tree, cap
            cap /= _GROWTH

    def search_orders(self):
        """The rest of the order search (`_order_search`) once, after the first pass: in
        what the first order left of its share of ``max_time`` (within the passes'
        deadline; none when the stage is exact). When it finds a better order whose tree
        fits in memory, the stage starts again on it (`_switch`); the bound stays the
        least of all passes'."""
        orders, self.orders = self.orders, None
        if self.wmb.mb.exact:
            return
        if self.search_left is not None:
            self.order_deadline.at = time.monotonic() + max(self.search_left, 0.0)
            if self.deadline.at is not None:
                self.order_deadline.at = min(self.order_deadline.at, self.deadline.at)
        last = deque(orders, maxlen=1)
        if not last or last[0].order is self.choice.order:
            return
        order = _free_order(last[0], self.fixed)
        tree, cap = self._fitting_tree(order)
        if tree.memory <= max(self.memory_limit, self.wmb.mb.memory):
            self.order, self.cap = order, cap
            self._switch(tree)

    def _switch(self, tree):
        """Start a stage on ``tree`` after a pass of the current one, whose beliefs are read
        first when none are kept (the first marginals, from a cheaper stage); its pass
        time predicted from the last one's, in proportion to the entries."""
        if self.node is None:
            self.read()
        self.pass_time *= tree.entries / max(self.wmb.mb.entries, 1)
        self.passed = False            # its passes are read later (a read costs a pass)
        self.proposal_bound = None     # none of its passes yet (`draws` runs one)
        self._start(tree)

    def _unary_argmax(self):
        """Each free variable at its best state under the sum of its one-variable factors
        (the first index among equals), fixed ones at their states."""
        flat, off = self.flat, self.node_off
        unary = np.flatnonzero(np.diff(flat.start) == 1)
        var = flat.var[flat.start[unary]]
        size = flat.card[var].astype(np.int64)
        first = np.cumsum(size) - size
        within = np.arange(int(size.sum())) - np.repeat(first, size)
        scores = np.bincount(np.repeat(off[var], size) + within,
                             weights=flat.table[np.repeat(flat.off[unary], size) + within],
                             minlength=int(off[-1]))
        if len(flat.card) and (flat.card == flat.card[0]).all():
            x = scores.reshape(len(flat.card), -1).argmax(axis=1)
        else:
            segment = np.repeat(np.arange(len(flat.card)), flat.card)
            x = np.lexsort((-scores, segment))[off[:-1]] - off[:-1]
        return np.where(self.fixed >= 0, self.fixed, x).astype(np.int64)

    @property
    def gap(self):
        return 0.0 if self.upper == self.lower else self.upper - self.lower

    def _tree(self, cap, order=None, fits=True):
        """The tree at ``cap`` on ``order`` (None: this stage's); with ``fits``, None when
        its messages alone pass ``memory_limit``."""
        try:
            return MiniBuckets(self.flat, self.fixed, self.order if order is None else order,
                               cap, self.ibound, self.deadline,
                               self.memory_limit if fits else math.inf)
        except TooLarge:
            return None

    def _start(self, tree):
        """A stage on ``tree`` (its successor is found when it stalls)."""
        self.wmb, self.stage_passes = WeightedMiniBucket(tree, self.deadline), 0
        self.upcoming = _UNKNOWN

    def _next_tree(self):
        """The next stage's tree, or None when there is none that fits (found once per
        stage): the first of growing caps that fits in memory and has more entries than
        this stage's, or whole buckets (an exact tree may hold fewer entries than a split
        one: a larger one is never found then, issue 41)."""
        if self.upcoming is not _UNKNOWN:
            return self.upcoming
        self.upcoming = None
        if self.ibound is None and not self.wmb.mb.exact:
            while True:
                self.cap *= _GROWTH
                tree = self._tree(self.cap)
                if tree is None or tree.memory > self.memory_limit:
                    break
                if tree.entries > self.wmb.mb.entries or tree.exact:
                    self.upcoming = tree
                    break
        return self.upcoming

    def measure(self, k):
        record = Record(iteration=k, time=self.call.elapsed(),
                        primal=self.upper if self.n_passes == 0 else self.last,
                        gap=self.gap, bound=self.upper, score=self.lower)
        return record, 0.0 if self.finished else self.gap

    def step(self, k):
        """One pass (forward with reweighting and matching, backward, decoding), the rest of
        the order search first after the run's first pass (`search_orders`). After a
        stage's first pass (whose time predicts the next stage's, in proportion to the
        entries), the next stage starts when it fits in memory and `_STAGE_PASSES` of its
        passes and a read of its beliefs fit in the time left; else the stage goes on
        while a pass tightens the bound by more than ``tol``, and the run is finished
        after (or at once when exact). The beliefs are read (`read`) before a pass that
        may not end in time (while none are kept, before one that leaves fewer than
        `_FIRST_READ_PASSES` passes and reads), at the end, and before the first stage
        change (so that some are kept); a pass predicted to end after the deadline is not
        started (its time goes to the phases after the passes, whose proposal is the last
        whole pass's)."""
        self.plan_lower_bound()                # after the first pass's record
        if self.orders is not None and self.n_passes:
            self.search_orders()
        mb = self.wmb.mb
        left = self.deadline.left()
        if self.stage_passes:
            tree = None if mb.exact else self._next_tree()
            cost = (math.inf if tree is None else
                    self.pass_time * tree.entries / max(mb.entries, 1))
            if tree is not None and (left is None or left > _STAGE_PASSES * cost +
                                     self._read_time(tree.entries)):
                self._switch(tree)
            elif mb.exact or (self.stage_passes > 1 and self.previous - self.last <= self.tol):
                self.finished = True
                return
        if (left is not None and self.node is None and
                left < _FIRST_READ_PASSES * (self.pass_time + self._read_time())):
            self.read(left)
        if left is not None and left < _PASS_MARGIN * self.pass_time + self._read_time():
            self.read(left)
            if left < self.pass_time:      # a pass cut short is lost, and so is the proposal
                raise TimeUp
        self._pass()

    def _pass(self):
        w = self.wmb
        # the first pass is every later phase's start (beliefs, proposal, labelling): it
        # may take the phases' time (under a third of a core at 10^6 its backward was cut)
        w.deadline = self.end if self.n_passes == 0 else self.deadline
        started = time.perf_counter()
        self.stage_passes += 1
        self.previous = self.last
        self.passed = False
        self.proposal_bound = None
        self.last = self.proposal_bound = w.forward(1.0 / self.stage_passes)
        if self.stage_passes > 1 and self.last > self.previous:
            w.eta /= 2
        self.upper = min(self.upper, self.last)
        if w.mb.exact:
            self.lower = self.upper = self.last
            self.exact = True
        w.backward()
        self.passed = True
        self.pass_time = time.perf_counter() - started
        self.n_passes += 1
        self._offer(w.decode())

    def plan_lower_bound(self):
        """`_plan_lower_bound` once, after a first pass, on a PairwiseMRF (none when the
        passes' deadline passes in it)."""
        if (self.planned or not self.n_passes or not isinstance(self.model, PairwiseMRF) or
                self.deadline.passed()):      # its search reads no clock (1-2 s at 10^6)
            return
        self.planned = True
        try:
            self._plan_lower_bound()
        except TimeUp:
            self.blocks = None

    def _plan_lower_bound(self):
        """After the first pass (before the second, so that the first bound is recorded
        first): the blocks of block mean field (`BlockMeanField`), the
        largest k of `_BLOCKS` whose predicted `_LOWER_SWEEPS` sweeps (a sweep costs about
        `_SWEEP_PASSES` passes of its trees' entries at the first pass's seconds per entry)
        fit in `_LOWER_MAX` of ``max_time`` and whose trees fit in memory (found by
        bisection: a smaller k's trees are smaller; at 10^6 variables each try takes about
        a pass); the passes then leave those sweeps' time to it (at least `_LOWER_SHARE` of
        ``max_time``), and none to the bounds of mixed signs and by conditioning (on
        ObjectDetection_13 at 15 s of passes, conditioning −3.5 where blocks of one level
        give −1.78)."""
        per_entry = self.pass_time / max(self.wmb.mb.entries, 1.0)
        levels = _bfs_levels(self.model)
        sizes, cap = (_BLOCKS, 2**16) if self.finite else (_BLOCKS + (1,), _ZERO_BLOCK_ENTRIES)
        fits, misses = len(sizes), -1                # sizes[fits] fits, sizes[misses] not
        chosen = {}
        while fits - misses > 1:
            at = (fits + misses) // 2
            blocks = None             # a try that missed is freed before the next one's
            blocks = BlockMeanField(self.model, self.fixed, sizes[at], cap,
                                    deadline=self.deadline, levels=levels)
            sweeps = _LOWER_SWEEPS * _SWEEP_PASSES * blocks.entries * per_entry
            if blocks.ok and blocks.memory <= self.memory_limit and (
                    self.max_time is None or sweeps <= _LOWER_MAX * self.max_time):
                fits, chosen = at, dict(blocks=blocks, sweeps=sweeps)
            else:
                misses = at
        self.blocks = chosen.get("blocks")
        if self.blocks is not None and self.max_time is not None and self.deadline.at:
            share = min(max(chosen["sweeps"] / self.max_time, _LOWER_SHARE), _LOWER_MAX)
            released = ("mixed", "conditioning", "mean field")
            self.deadline.at += sum(self.reserve[k] for k in released)
            self.reserve.update(dict.fromkeys(released, 0.0))
            self.reserve["mean field"] = share * self.max_time
            self.deadline.at -= self.reserve["mean field"]

    def _offer(self, x):
        """Keep the labelling ``x`` (repaired to a feasible one when it scores −inf) as the
        lower bound when it scores higher."""
        score = self._score(x)
        if score == -math.inf:
            x = self._feasible(x)
            score = self._score(x)
        if score > self.lower:
            self.lower, self.best_x = score, x

    def _score(self, x):
        f = self.flat
        return _wmb.labelling_score(f.card, f.start, f.var, f.off, f.table, x)

    def _feasible(self, x):
        """A labelling of finite score near ``x`` where arc consistency finds one
        (`fwcore.labelling.feasible_labelling`, on a factor graph's reduction)."""
        model = self.model
        if isinstance(model, FactorGraph):
            reduced = model.reduced
            full = np.zeros(reduced.n_vars, dtype=np.int64)
            full[:model.n_vars] = x
            return feasible_labelling(reduced, reduced.theta, full)[:model.n_vars].astype(
                np.int64)
        return feasible_labelling(model, model.theta, x).astype(np.int64)

    def read(self, left=None):
        """Keep the marginals of the last whole pass when none are kept or its bound is
        the tightest of the passes read (a new stage's first passes are looser than the
        last stage's, and so are their beliefs), and when reading them fits in ``left``
        seconds (None: no limit; `_read_time`) or none are kept (else the marginals are
        uniform: a read is 0.3-0.35 of a pass at 10^6, predicted as a whole one, and
        Potts-8 10^6 at load 6 skipped it with 17 s left): a read the deadline cuts is
        dropped."""
        if not self.passed or (self.node is not None and self.last > self.marginals_bound):
            return
        if left is not None and self.node is not None and self._read_time() > left:
            return            # the first read is tried whatever is left: else uniform
        if isinstance(self.model, PairwiseMRF):      # μ's layout is the factors'
            fac = np.zeros(self.model.dim)
            node = fac[:self.node_off[-1]]
        else:
            node, fac = np.zeros(self.node_off[-1]), np.zeros(len(self.flat.table))
        try:
            self.wmb.marginals(node, fac)
        except TimeUp:
            return
        self.node, self.fac, self.marginals_bound = node, fac, self.last
        self.marginals_exact = self.wmb.mb.exact

    def _read_time(self, entries=None):
        """The predicted seconds of a `read` in this stage (or one of ``entries``): a
        pass's, in proportion to the entries (measured at 0.5-1 pass on ObjectDetection_13
        and relational_1; a read of a small stage, mostly overhead, predicts large ones
        badly)."""
        entries = self.wmb.mb.entries if entries is None else entries
        return self.pass_time * entries / max(self.wmb.mb.entries, 1)

    def sample(self, deadline, n_samples=None, seed=None):
        """Importance samples (`fwcore._wmb.sample`) from the proposal of the last stage's
        last whole forward pass (one without steps first when the last was cut), their log
        weights and labellings kept in ``tally`` (`fwcore.marginals.estimate.Tally`) with
        the weights' bound ``proposal_bound``, until ``deadline`` or ``n_samples`` (None:
        until the deadline; without max_time, `_SAMPLES`), drawn from
        ``np.random.default_rng(seed)``'s uniforms. None when the bounds meet (log Z is
        known)."""
        if self.wmb is None or self.gap == 0.0 or n_samples == 0 or deadline.passed():
            return
        if n_samples is None and self.max_time is None:
            n_samples = _SAMPLES
        for x, log_w in self.draws(deadline, n_samples, seed):
            if self.tally is None:
                self.tally = Tally(self.proposal_bound, self.node_off)
            self.tally.add(log_w, x)
            if self.branches is not None:
                self.branches.add(x, log_w)

    def draws(self, deadline, n_samples=None, seed=None):
        """Batches (labellings int64[k, n_vars], log weights float64[k]) of importance
        samples from the proposal of the last whole forward pass (one without steps first
        when the last was cut; its bound is ``proposal_bound``), until ``deadline`` or
        ``n_samples`` (None: until the deadline), from ``np.random.default_rng(seed)``'s
        uniforms."""
        w = self.wmb
        w.deadline = deadline
        try:
            if self.proposal_bound is None:
                self.proposal_bound = w.forward(0.0)
        except TimeUp:
            return
        rng = np.random.default_rng(seed)
        n, m = len(self.flat.card), len(w.mb.order)
        batch = max(1, min(_SAMPLE_BATCH, _SAMPLE_ENTRIES // max(n, 1),
                           int(self.memory_limit // (_SAMPLE_BYTES * max(n, 1)))))
        drawn = 0
        while n_samples is None or drawn < n_samples:
            k = batch if n_samples is None else min(batch, n_samples - drawn)
            x = np.empty((k, n), dtype=np.int64)
            log_q, log_f = np.empty(k), np.empty(k)
            done, late = w.sample(rng.random((k, m)), x, log_q, log_f)
            drawn += done
            yield x[:done], log_f[:done] - log_q[:done]
            if late or done < k:
                break

    def message_passing(self, deadline):
        """Loopy BP (`fwcore.loopy_bp`, until ``deadline``): a candidate for the marginals
        (`fwcore.auto.choose_marginals`) when the samples can referee (their effective
        size at least `fwcore.auto.REFEREE_ESS`) and the bounds do not meet."""
        from .bp import loopy_bp
        if self.gap == 0.0 or self.tally is None or self.tally.ess < REFEREE_ESS:
            return
        left = deadline.seconds_left()
        if left is None or left > 0:
            self.bp = loopy_bp(self.model, max_time=left)

    def plan_conditioning(self, deadline):
        """On a model with zeros (no lower bound of mixed signs), before the samples: the
        variables C to condition on (`_cutset`) and the exact tree of the model with them
        fixed, so that `sample` tallies the samples' weights by their states on C for
        `condition_lower`; none when the bounds meet or no cutset is found in
        `_CUTSET_TIME` of the time left to ``deadline`` (the rest goes to the samples)."""
        left = self.reserve["conditioning"]
        if self.finite or self.gap == 0.0 or self.wmb is None or left <= 0.0:
            return
        per_entry = self.pass_time / max(self.wmb.mb.entries, 1.0)
        entries = left / (_CONDITION_BRANCHES * max(per_entry, 1e-12))
        try:
            self.branches = _cutset(self, min(entries, _CONDITION_MAX_ENTRIES),
                                    deadline.share(_CUTSET_TIME))
        except TimeUp:
            self.branches = None

    def condition_lower(self, deadline):
        """log Z ≥ log Σ_{c ∈ S} Z(x_C = c) (Z a sum of nonnegative terms): the assignments
        c of the cutset (`plan_conditioning`) that the importance samples drew, the
        largest sum of weights first (an unbiased estimate of Z(x_C = c)), each summed
        exactly by one pass of its exact tree, until ``deadline``; every branch summed
        raises ``lower``. The upper bound's tree is dropped first."""
        branches, self.branches = self.branches, None
        if branches is None or self.gap == 0.0:
            return
        self.wmb = self.upcoming = None
        ranked = branches.ranked()
        if not len(ranked):
            return
        try:
            w = WeightedMiniBucket(branches.tree, deadline)
        except TimeUp:
            return
        fixed, total = w.tree.arrays["fixed"], -math.inf
        for states in ranked:
            fixed[branches.variables] = states
            w.tree.constant = w._constant()
            try:
                total = float(np.logaddexp(total, w.forward(0.0)))
            except TimeUp:
                return
            self.lower = max(self.lower, total)

    def mixed_lower(self, deadline):
        """The lower bound of weights of mixed sign (`WeightedMiniBucket.make_lower`, reverse
        Hölder) on a model whose tables are finite (a −inf entry in a cluster of negative
        weight makes its message −inf), until ``deadline``: passes of whole moment
        matching (step 1; the weights' step halved after a pass that lowers the bound) on
        the last stage's tree, or a smaller one (caps 4x smaller) until `_MIXED_PASSES` of
        its passes are predicted to fit (a pass's time in proportion to its entries), until
        `_MIXED_PATIENCE` passes in a row gain at most ``tol``; the best bound raises
        ``lower``. The upper bound's tree is dropped first."""
        if not self.finite or self.gap == 0.0 or self.wmb is None or deadline.passed():
            return
        tree, per_entry = self.wmb.mb, self.pass_time / max(self.wmb.mb.entries, 1.0)
        self.wmb = self.upcoming = None
        left = deadline.seconds_left()
        try:
            cap = float(tree.cluster_entries.max(initial=1.0))
            while (self.ibound is None and left is not None and cap > _FIRST_ENTRIES and
                   _MIXED_PASSES * per_entry * tree.entries > left):
                cap /= _GROWTH
                tree = MiniBuckets(self.flat, self.fixed, self.order, cap, None, deadline)
            w = WeightedMiniBucket(tree, deadline)
        except TimeUp:
            return
        w.make_lower()
        previous, best, since = -math.inf, -math.inf, 0
        for _ in range(_MIXED_MAX_PASSES):
            try:
                bound = w.forward(1.0)
                w.backward()
            except TimeUp:
                return
            if not math.isfinite(bound):
                return
            if bound < previous:
                w.eta /= 2
            previous = bound
            since = 0 if bound > best + self.tol else since + 1
            best = max(best, bound)
            self.lower = max(self.lower, bound)
            if since >= _MIXED_PATIENCE:
                return

    def lower_bound(self, deadline):
        """Raise the lower bound until ``deadline`` (a `fwcore.loop.Deadline`; None: the
        sweeps' own limits) once the passes end: by block mean field (`BlockMeanField`,
        PairwiseMRF) from the marginals, else by naive mean field
        (`fwcore.marginals.mean_field`) from the marginals and from the best labelling;
        the WMB tree is dropped first (its memory goes to the blocks')."""
        if self.gap == 0.0:
            return
        self.wmb = self.upcoming = None
        starts = [] if self.node is None else [self.node]
        if self.best_x is not None:
            point = np.zeros(self.node_off[-1])
            point[self.node_off[:-1] + self.best_x] = 1.0
            starts.append(point)
        if self.blocks is not None:     # with zeros, from a point of finite bound
            start = starts[0] if self.finite or self.best_x is None else starts[-1]
            lower, _ = self.blocks.run(start.copy(), deadline)
            self.lower = max(self.lower, lower)
            return
        for start in starts:
            if deadline is not None and deadline.passed():
                return                # its set-up alone reads no clock (seconds at 10^6)
            lower, _ = flat_mean_field(self.model, start, 100, 1e-6, deadline)
            self.lower = max(self.lower, lower)

    def result(self, status, outcome, seconds, confidence=0.95):
        """The `MarginalResult` on the user's variables (fixed ones as point masses; edge
        marginals of the pairwise factors from their clusters' beliefs, outer products of
        the node marginals where a factor has under two free variables), with the sampled
        estimate and its interval at ``confidence`` (`estimate`)."""
        model, off, card = self.model, self.node_off, self.flat.card
        node, fac = self.node, self.fac
        pairwise = model.skeleton if isinstance(model, FactorGraph) else model
        edges = pairwise.edges
        if node is None:          # uniform: no beliefs were read (no outer products at 10^6)
            fac = pairwise.uniform_marginals() if isinstance(model, PairwiseMRF) else None
            node = np.repeat(1.0 / card, card) if fac is None else fac[:off[-1]]
            held = self.fixed >= 0
            node[np.repeat(held, card)] = 0.0
            node[off[:-1][held] + self.fixed[held]] = 1.0
        owned = fac                  # an array of μ's layout made for this result
        candidates = {"beliefs" if self.node is not None else "uniform": node}
        if self.bp is not None:
            candidates["loopy-bp"] = self.bp.mu[:off[-1]]
        tally = self.tally
        chosen = (next(iter(candidates)) if tally is None or tally.ess < REFEREE_ESS else
                  choose_marginals(candidates, tally.marginals(), tally.noise(), tally.ess,
                                   off))
        if chosen not in ("beliefs", "uniform"):
            node = tally.marginals() if chosen == "samples" else candidates[chosen]
            fac = self.bp.mu if chosen == "loopy-bp" and isinstance(model, PairwiseMRF) else None
        if isinstance(model, PairwiseMRF) and fac is not None:
            # the beliefs' (or uniform) array has μ's layout, ``node`` its start: μ itself
            mu = fac if fac is owned else fac.copy()
            mu[:off[-1]] = node
            outer = np.flatnonzero((self.fixed[edges] >= 0).any(axis=1))
        elif fac is not None:
            mu = np.zeros(pairwise.dim)
            mu[:off[-1]] = node
            outer = self._factor_pairs(mu)
        else:
            mu = np.zeros(pairwise.dim)
            mu[:off[-1]] = node
            outer = np.arange(len(edges))
        _outer_products(mu, pairwise, outer)
        mu.flags.writeable = False                     # the result's views, no copy
        fields = self.estimate(confidence)
        fields.setdefault("info", {})["marginals"] = chosen
        return MarginalResult.from_mu(
            pairwise, mu, gap=self.gap, certified_gap=self.gap, log_z_upper=self.upper,
            certified=True, status=status, n_iter=self.n_passes, time=seconds,
            method="wmb" if chosen != "uniform" else "wmb+uniform", trace=outcome.trace,
            log_z_lower=self.lower, **fields)

    def estimate(self, confidence):
        """The result's fields of the sampled estimate: log of the mean importance weight
        (moved into the certified interval when a sample falls outside it) and the
        interval of `fwcore.marginals.estimate.Tally.interval` within the certified bounds
        (the bounds themselves when they meet: log Z is known), and ``info``:
        ``n_samples``, ``ess`` (their effective number), ``log_z_proposal`` (the
        proposal's bound on the weights), ``sample_marginals`` (the self-normalised node
        marginals, flat) and ``sample_noise`` (their estimated ζ); none without samples."""
        if self.gap == 0.0:
            return dict(log_z_estimate=self.upper, log_z_estimate_lower=self.lower,
                        log_z_estimate_upper=self.upper, confidence=confidence)
        tally = self.tally
        if tally is None or tally.n == 0:
            return {}
        lower, upper = tally.interval(confidence, self.lower, self.upper)
        return dict(log_z_estimate=min(max(tally.log_mean, self.lower), self.upper),
                    log_z_estimate_lower=lower,
                    log_z_estimate_upper=upper, confidence=confidence,
                    info=dict(n_samples=tally.n, ess=tally.ess,
                              log_z_proposal=self.proposal_bound,
                              sample_marginals=tally.marginals(),
                              sample_noise=tally.noise()))

    def _factor_pairs(self, mu):
        """Writes into ``mu`` the skeleton edges' marginals that a factor of exactly two
        free variables gives (summed over its fixed ones); returns the edges left."""
        flat, skeleton = self.flat, self.model.skeleton
        where = {(int(i), int(j)): e for e, (i, j) in enumerate(skeleton.edges)}
        left = set(range(skeleton.n_edges))
        for f in range(len(flat.start) - 1):
            scope = flat.var[flat.start[f]:flat.start[f + 1]].tolist()
            free = [a for a, v in enumerate(scope) if self.fixed[v] < 0]
            e = where.get(tuple(sorted(scope[a] for a in free))) if len(free) == 2 else None
            if e not in left:
                continue
            table = self.fac[flat.off[f]:flat.off[f + 1]].reshape(flat.card[scope])
            table = table.sum(axis=tuple(a for a in range(len(scope)) if a not in free))
            if scope[free[0]] > scope[free[1]]:
                table = table.T
            mu[skeleton.edge_off[e]:skeleton.edge_off[e + 1]] = table.ravel()
            left.discard(e)
        return np.array(sorted(left), dtype=np.int64)


class _Branches:
    """The cutset ``variables`` (int64) of `_Run.condition_lower`, the exact ``tree`` of the
    model with them fixed, and the distinct states on them of the importance samples of
    finite weight with the log of their summed weights (gathered every `_GATHER` samples;
    at most `_CONDITION_STATES` entries of distinct states kept)."""

    def __init__(self, variables, tree):
        self.variables, self.tree = variables, tree
        self.distinct = np.zeros((0, len(variables)), dtype=np.int32)
        self.log_sum = np.zeros(0)
        self.pending, self.pending_log_w, self.n_pending = [], [], 0

    def add(self, x, log_w):
        finite = np.isfinite(log_w)
        if self.distinct.size >= _CONDITION_STATES or not finite.any():
            return
        self.pending.append(x[finite][:, self.variables].astype(np.int32))
        self.pending_log_w.append(log_w[finite])
        self.n_pending += int(finite.sum())
        if self.n_pending >= _GATHER:
            self._gather()

    def _gather(self):
        """Merge the pending samples into ``distinct`` and ``log_sum``."""
        states = np.concatenate([self.distinct] + self.pending)
        log_w = np.concatenate([self.log_sum] + self.pending_log_w)
        self.pending, self.pending_log_w, self.n_pending = [], [], 0
        if not len(log_w):
            return
        width = states.shape[1]
        keys = (states.view(np.dtype((np.void, 4 * width))).ravel() if width else
                np.zeros(len(states), dtype=np.int8))
        _, first, group = np.unique(keys, return_index=True, return_inverse=True)
        top = float(log_w.max())
        with np.errstate(divide="ignore"):
            self.log_sum = top + np.log(np.bincount(group.ravel(), weights=np.exp(log_w - top)))
        self.distinct = states[first]

    def ranked(self):
        """The distinct states on ``variables`` (int32[k, |C|]), by decreasing sum of
        weights."""
        self._gather()
        return self.distinct[np.argsort(-self.log_sum, kind="stable")]


def _cutset(run, max_entries, deadline):
    """`_Branches` on a cutset: variables fixed one at a time, each time one of the
    clusters of the exact tree of the run's order (the fixed variables left out) that
    holds the most table entries, among those covering at least `_CUTSET_COVER` of the
    most, the one of least entropy under the beliefs (under the samples' when no beliefs
    are read), until the tree holds at most ``max_entries`` entries and fits in the
    memory limit (at most `_CUTSET_MOST` variables: else None). `TimeUp` when
    ``deadline`` passes first."""
    mu = run.node
    if mu is None:
        mu = np.repeat(1.0 / run.flat.card, run.flat.card)
    entropy = -np.add.reduceat(mu * np.log(np.where(mu > 0.0, mu, 1.0)), run.node_off[:-1])
    fixed, chosen = run.fixed.copy(), []
    while len(chosen) <= _CUTSET_MOST:
        tree = MiniBuckets(run.flat, fixed, run.order[fixed[run.order] < 0], deadline=deadline)
        if tree.entries <= max_entries and tree.memory <= run.memory_limit:
            return _Branches(np.array(chosen, dtype=np.int64), tree)
        cover = np.bincount(tree.c_scope, minlength=len(fixed),
                            weights=np.repeat(tree.cluster_entries, np.diff(tree.c_start)))
        cover[fixed >= 0] = 0.0
        candidates = np.flatnonzero(cover >= _CUTSET_COVER * cover.max())
        v = int(candidates[np.argmin(entropy[candidates])])
        fixed[v] = 0
        chosen.append(v)
    return None


def _finite_tables(flat, fixed):
    """Whether every factor with a free variable (``fixed`` < 0) has finite entries only
    (then no message is −inf, and the lower bound of mixed signs is finite): at once when
    every entry is (the per-factor sums took 6.5 s on a 10^6 Potts-8 grid)."""
    if np.isfinite(flat.table).all():
        return True
    def per_factor(values, start):
        total = np.concatenate([[0], np.cumsum(values)])
        return total[start[1:]] - total[start[:-1]]
    free = per_factor(fixed[flat.var] < 0, flat.start) > 0
    infinite = per_factor(~np.isfinite(flat.table), flat.off) > 0
    return not (free & infinite).any()


def _outer_products(mu, model, edges):
    """μ_ij = μ_i μ_j^T into ``mu`` (``model``'s layout) for the ``edges`` given, a group of
    equal table shapes at a time."""
    card = model.card
    if len(card) and (card == card[0]).all():
        k = int(card[0])
        node = mu[:model.node_off[-1]].reshape(-1, k)
        table = mu[model.edge_off[0]:].reshape(-1, k, k)
        i, j = model.edges[edges, 0], model.edges[edges, 1]
        if len(edges) == model.n_edges:                # all of them: no temporary
            np.multiply(node[i][:, :, None], node[j][:, None, :], out=table)
        else:
            table[edges] = node[i][:, :, None] * node[j][:, None, :]
        return
    pairs = model.edges[edges]
    shapes = card[pairs]
    for ci, cj in {tuple(s) for s in shapes.tolist()}:
        e = edges[(shapes == (ci, cj)).all(axis=1)]
        i, j = model.edges[e, 0], model.edges[e, 1]
        mu_i = mu[model.node_off[i][:, None] + np.arange(ci)]
        mu_j = mu[model.node_off[j][:, None] + np.arange(cj)]
        mu[model.edge_off[e][:, None] + np.arange(ci * cj)] = (
            mu_i[:, :, None] * mu_j[:, None, :]).reshape(len(e), -1)


WMB = register_method(
    "wmb", _run_wmb, {k: _PARAMS[k] for k in ("ibound", "memory_limit", "tol", "confidence",
                                               "n_samples", "seed")},
    certifies=("upper", "lower", "estimate"), iteration="passes", seeded=True,
    summary="weighted mini-bucket elimination: a certified interval on log Z and "
            "marginals, anytime (Liu & Ihler 2011)")
