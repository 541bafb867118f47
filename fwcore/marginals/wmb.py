"""Weighted mini-bucket elimination: a certified upper bound on log Z that tightens with
memory, and marginals from the same mini-buckets (Liu & Ihler 2011, "Bounding the
partition function using Hölder's inequality"; the moment matching of Liu's thesis,
Sec. 4, as Merlin's `wmb` runs it).

Variables are eliminated in the order of fewest table entries among min-fill orders and
a bandwidth order. The factors (and messages) of variable v's
bucket are split into mini-buckets r whose tables hold at most ``max_entries`` entries
(and, with ``ibound``, at most ``ibound`` + 1 variables); each gets a weight w_r > 0 with
Σ_r w_r = 1, and sends the message

    λ_r(x_{C_r \\ v}) = w_r log Σ_{x_v} exp(f_r(x_{C_r}) / w_r),

f_r its factors, its incoming messages and its reparameterisation. By Hölder's inequality
Σ_{x_v} Π_r exp(f_r) ≤ Π_r (Σ_{x_v} exp(f_r / w_r))^{w_r}, so the sum of the last messages
is an upper bound on log Z whatever the reparameterisation, provided the reparameterisations
of a bucket's mini-buckets sum to zero, and whatever the weights. Each forward pass first
moves the weights along the bound's gradient (the mini-buckets' conditional entropies)
and matches the weighted marginals on x_v of the bucket's mini-buckets (their beliefs use
the backward messages of the previous pass), which tightens the bound; a bucket of one
mini-bucket is eliminated exactly, and a model whose buckets all fit gets log Z itself.
The tables' log-sum-exps run in `fwcore._wmb`'s kernels.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._wmb import short_rows, weighted_logsumexp
from ..auto import TIME_SHARES
from ..checks import (BOOL, CALLABLE, TIME, Interval, check_bound_feasible, check_feasible,
                      check_model, validate_params)
from ..factor_graph import FactorGraph
from ..loop import Deadline, Stopping, run_loop
from ..model import PairwiseMRF
from ..oracles._common import feasible_labelling
from ..results import Record, Status
from .condition import fixed_by_evidence
from .mean_field import _entropy, factors_of, mean_field
from .registry import register_method, run_method
from .result import MarginalResult

__all__ = ["weighted_mini_bucket", "MiniBuckets", "WeightedMiniBucket"]


#: rows shorter than this are summed across rows (`fwcore._wmb.short_rows`); the kernel's
#: own rows are the table's last run of axes only when it is at least this long
_SHORT_ROW = 16


def _row_wlse(rows, w):
    """w log Σ_t exp(rows[r, t] / w) for each row of the C-contiguous 2-d ``rows``."""
    out = np.empty(rows.shape[0])
    if rows.shape[1] >= _SHORT_ROW:
        weighted_logsumexp(rows.reshape(-1), np.array(rows.shape, dtype=np.intp),
                           np.array([1, 0], dtype=np.intp), w, out)
        return out
    total = np.empty(rows.shape[0])
    short_rows(rows, w, out, total)
    with np.errstate(divide="ignore"):
        out += w * np.log(total)
    return out


def _wlse(x, axes, w=1.0):
    """w log Σ_axes exp(x / w) (``axes`` a tuple, w > 0) over the other axes in order;
    −inf (never NaN) where every entry is −inf. On the table's axes merged where
    neighbours are both summed or both kept: in place by `fwcore._wmb.weighted_logsumexp`
    when the last run of axes is at least `_SHORT_ROW` long (a row at a time), else as
    rows of the summed axes (`_row_wlse`; the kept axes moved first by one copy when
    they are not already)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    merged = []                                  # [size, kept] of runs of axes
    for a, n in enumerate(x.shape):
        kept = a not in axes
        if merged and merged[-1][1] == kept:
            merged[-1][0] *= n
        else:
            merged.append([n, kept])
    out_shape = [n for a, n in enumerate(x.shape) if a not in axes]
    summed = math.prod(x.shape[a] for a in axes)
    if merged and merged[-1][0] < _SHORT_ROW:
        if len(merged) > 2 or merged[-1][1]:     # the kept axes first
            keep = [a for a in range(x.ndim) if a not in axes]
            x = np.ascontiguousarray(np.transpose(x, keep + list(axes)))
        return _row_wlse(x.reshape(-1, summed), w).reshape(out_shape)
    out_stride = np.zeros(len(merged), dtype=np.intp)
    size = 1
    for k in reversed(range(len(merged))):
        if merged[k][1]:
            out_stride[k] = size
            size *= merged[k][0]
    out = np.empty(size)
    weighted_logsumexp(x.reshape(-1), np.array([n for n, _ in merged], dtype=np.intp),
                       out_stride, w, out)
    return out.reshape(out_shape)


#: `_elimination_order` tries min-fill under this many random relabellings (ties broken
#: differently) within `_ORDER_WORK` of min-fill's work: on the UAI 2014 models the best of
#: 30 needs 16x fewer elimination entries than the first on Promedus_17 (2^24.1 against
#: 2^28.2), 10x on Pedigree_11, 4x on linkage_12; on grids the bandwidth order wins.
#: With max_time the search takes at most its share of it (`fwcore.auto.TIME_SHARES`; no
#: new try starts after), so that the first pass ends within a short max_time
_ORDER_TRIES, _ORDER_WORK = 32, 5e8


def _log_entries(model, order):
    """log of the total clique-table entries of exact elimination along ``order`` (the
    `eliminate` kernel's separators; in floats: the sizes overflow int64 on large models)."""
    from .._symbolic import eliminate
    order = np.ascontiguousarray(order, dtype=np.int64)
    start, var, _ = eliminate(model.adj_start, model.adj_var, model.card, order,
                              np.iinfo(np.int64).max)
    log_card = np.log(model.card.astype(np.float64))
    log_sep = np.concatenate([[0.0], np.cumsum(log_card[np.asarray(var)])])
    start = np.asarray(start)
    log_sizes = log_card[order] + log_sep[start[1:]] - log_sep[start[:-1]]
    return float(np.logaddexp.reduce(log_sizes)) if log_sizes.size else -math.inf


def _elimination_order(card, scopes, deadline):
    """The elimination order of least total clique-table entries (`_log_entries`) among
    the bandwidth order and min-fill (`fwcore.elimination`) under `_ORDER_TRIES` seeded
    random relabellings of the primal graph of ``scopes``, within `_ORDER_WORK` units of
    min-fill's work, the last try started before ``deadline`` (a `fwcore.loop.Deadline`;
    without a limit the same order on every run)."""
    from ..elimination import _bandwidth_order, _min_fill_order
    n = len(card)
    pairs = np.array(sorted({(min(a, b), max(a, b)) for s in scopes
                             for i, a in enumerate(s) for b in s[i + 1:]}),
                     dtype=np.int64).reshape(-1, 2)

    def primal(label):          # the primal graph with variable v renamed label[v]
        edges = np.sort(label[pairs], axis=1)
        c = np.empty_like(card)
        c[label] = card
        theta = np.zeros(int(c.sum()) + int((c[edges[:, 0]] * c[edges[:, 1]]).sum()))
        return PairwiseMRF.from_flat(c, edges, theta)

    model = primal(np.arange(n))
    order = _bandwidth_order(model)
    best = (_log_entries(model, order), order)
    rng, spent = np.random.default_rng(0), 0
    for k in range(_ORDER_TRIES):
        if deadline.passed():
            break
        label = np.arange(n) if k == 0 else rng.permutation(n)
        renamed = primal(label)
        order, used = _min_fill_order(renamed, budget=_ORDER_WORK - spent)
        spent += used
        if len(order) < n:
            break
        order = np.argsort(label)[order]
        best = min(best, (_log_entries(model, order), order), key=lambda c: c[0])
    return [int(v) for v in best[1]]


class MiniBuckets:
    """The symbolic mini-bucket tree of an elimination ``order`` (WMB's clusters).

    Cluster c eliminates ``var[c]`` from ``scope[c]``, holds the original factors
    ``originals[c]``, receives the messages of ``children[c]`` and sends its own to
    ``parent[c]`` (−1: a root, whose message is a number). A scope lists its variables
    latest-eliminated first, so ``var[c]`` is its last axis and every sub-scope is in
    the same order. Each bucket is split (`_partition`) into mini-buckets of at most
    ``max_entries`` table entries and ``ibound`` + 1 variables (an item larger than that
    makes its own). Building it checks ``deadline`` (a `fwcore.loop.Deadline`: `TimeUp`
    when it passes)."""

    def __init__(self, card, scopes, order, max_entries=math.inf, ibound=None,
                 deadline=None):
        self.card, self.order = card, list(order)
        self._card = card.tolist()
        position = np.full(len(card), -1, dtype=np.int64)
        position[self.order] = np.arange(len(self.order))
        self.position = position = position.tolist()
        buckets = [[] for _ in self.order]          # items (scope, factor k | -1, cluster | -1)
        for k, s in enumerate(scopes):
            if s:
                buckets[min(position[v] for v in s)].append((frozenset(s), k, -1))
        self.constants = [k for k, s in enumerate(scopes) if not s]
        self.scope, self.var, self.originals, self.children, self.parent = [], [], [], [], []
        self.bucket = []                             # the clusters of each variable in order
        max_vars = math.inf if ibound is None else ibound + 1
        deadline = Deadline() if deadline is None else deadline
        for p, v in enumerate(self.order):
            if p % 256 == 0:
                deadline.left()
            groups = self._partition(buckets[p], max_vars, max_entries)
            mine = []
            for s, originals, children in groups:
                c = len(self.scope)
                mine.append(c)
                self.scope.append(self.sorted(s))
                self.var.append(v)
                self.originals.append(originals)
                self.children.append(children)
                self.parent.append(-1)
                for child in children:
                    self.parent[child] = c
                rest = s - {v}
                if rest:
                    buckets[min(position[u] for u in rest)].append((rest, -1, c))
            self.bucket.append(mine)

    def _partition(self, items, max_vars, max_entries):
        """A bucket's items as mini-buckets [scope, originals, children]: items from the
        fewest variables up, each joined to the mini-bucket of fewest variables it fits
        in (else a new one): small scopes are joined first, as by Merlin's greedy, which
        merges the fitting pair of fewest variables (its O(R^3) took 42 s on
        relational_1's 500-item buckets)."""
        groups = []
        for s, k, c in sorted(items, key=lambda item: len(item[0])):
            g, fewest = None, math.inf
            for h in groups:
                joined = h[0] | s
                if (len(h[0]) < fewest and len(joined) <= max_vars and
                        self.entries_of(joined) <= max_entries):
                    g, fewest = h, len(h[0])
            if g is not None:
                g[0] = g[0] | s
            else:
                g = [s, [], []]
                groups.append(g)
            (g[1] if c < 0 else g[2]).append(k if c < 0 else c)
        return groups

    def sorted(self, variables):
        """``variables`` latest-eliminated first (the axis order of every table here)."""
        position = self.position
        return tuple(sorted(variables, key=lambda v: -position[v]))

    def entries_of(self, variables):
        card = self._card
        return math.prod([card[v] for v in variables])

    @property
    def n_clusters(self):
        return len(self.scope)

    @property
    def entries(self):
        """Table entries of all clusters (the memory of one set of cluster tables)."""
        return sum(self.entries_of(s) for s in self.scope)

    @property
    def memory(self):
        """Bytes to run WMB on this tree: two sets of its cluster tables (the factors and
        the incoming tables of a pass) and `_TEMPORARIES` tables of its largest cluster."""
        return 8 * (2 * self.entries + _TEMPORARIES * max(map(self.entries_of, self.scope),
                                                              default=0))

    @property
    def exact(self):
        """Whether every bucket is one mini-bucket (then the bound is log Z)."""
        return all(len(b) == 1 for b in self.bucket)

    @property
    def width(self):
        """Variables in the largest cluster."""
        return max((len(s) for s in self.scope), default=0)


def _subset_marginals(p, scope, subsets):
    """{subset: the marginal of the table ``p`` (over ``scope``) on it} for each subset (a
    tuple of ``scope``'s variables, in its order): variables no subset needs are summed
    out first, then, recursively, the subsets without the variable that most (but not
    all) of them hold are found on the table with it summed out, and the rest on the
    table as it is; a pass over a table per level, not one per subset (a cluster of six
    21-state variables with its 15 pairwise factors: about 3 passes instead of 15)."""
    need = set().union(*subsets)
    drop = tuple(i for i, v in enumerate(scope) if v not in need)
    if drop:
        p, scope = p.sum(axis=drop), tuple(v for v in scope if v in need)
    out = {s: p for s in subsets if len(s) == len(scope)}
    rest = [s for s in subsets if len(s) < len(scope)]
    if rest:
        count = {v: sum(v in s for s in rest) for v in scope}
        v = max((u for u in scope if count[u] < len(rest)), key=count.get)
        without = [s for s in rest if v not in s]
        out.update(_subset_marginals(p.sum(axis=scope.index(v)),
                                     tuple(u for u in scope if u != v), without))
        out.update(_subset_marginals(p, scope, [s for s in rest if v in s]))
    return out


def _conditional_entropy(belief, w):
    """H(x_v | the rest) under the weighted belief ∝ exp(belief / w) (x_v its last axis)."""
    b = belief / w
    top = np.max(b)
    if not np.isfinite(top):
        return 0.0
    p = np.exp(b - top)
    p /= p.sum()
    rest = p.sum(axis=-1)
    return float(_entropy(p) - _entropy(rest))


def _embed(table, scope, into):
    """``table`` over ``scope`` (a subset of ``into``, in the same order) reshaped to
    broadcast over ``into``'s axes."""
    inside = set(scope)
    it = iter(table.shape)
    return table.reshape([next(it) if v in inside else 1 for v in into])


def _aligned(table, scope, into):
    """A factor's ``table`` over ``scope`` (any order) embedded in ``into``'s axes."""
    ordered = sorted(range(len(scope)), key=lambda a: into.index(scope[a]))
    return _embed(np.transpose(table, ordered), tuple(scope[a] for a in ordered), into)


class WeightedMiniBucket:
    """WMB message passing on a `MiniBuckets` tree (module docstring): ``forward(step)``
    matches moments and returns the bound, ``backward()`` refreshes the backward
    messages; ``node_marginals``, ``factor_marginals`` and ``decode`` read the beliefs.
    A pass raises `fwcore.loop.TimeUp` when the ``deadline`` passes in it."""

    def __init__(self, buckets, tables, deadline=None):
        self.mb = mb = buckets
        self.deadline = Deadline() if deadline is None else deadline
        self.weight = np.empty(mb.n_clusters)
        for clusters in mb.bucket:
            self.weight[clusters] = 1.0 / len(clusters)
        self.base = []
        for c in range(mb.n_clusters):
            if c % 256 == 0:
                self.deadline.left()
            f = np.zeros([int(mb.card[v]) for v in mb.scope[c]])
            for k in mb.originals[c]:
                f += _aligned(tables[k][1], tables[k][0], mb.scope[c])
            self.base.append(f)
        self.constant = sum(float(tables[k][1]) for k in mb.constants)
        self.repar = [np.zeros(int(mb.card[mb.var[c]])) for c in range(mb.n_clusters)]
        self.incoming = [None] * mb.n_clusters       # f_c of the last forward pass
        self.forward_msg = [None] * mb.n_clusters    # over scope \ var, embedded in parent
        self.backward_msg = [None] * mb.n_clusters   # over scope \ var, embedded in c
        self.bound = math.inf
        self.eta = _WEIGHT_STEP                      # the weights' step (`_reweight`)

    def _incoming(self, c):
        """f_c: its factors, reparameterisation and the children's forward messages (the
        table of the last forward pass, kept until the next one)."""
        if self.incoming[c] is None:
            f = self.base[c] + self.repar[c]
            for child in self.mb.children[c]:
                f += self.forward_msg[child]
            self.incoming[c] = f
        return self.incoming[c]

    def _belief(self, c):
        """f_c plus its backward message: w_c log of its unnormalised weighted belief."""
        f = self._incoming(c)
        return f if self.backward_msg[c] is None else f + self.backward_msg[c]

    def _node_log_marginal(self, c, belief):
        """log of the normalised weighted marginal of cluster c on its variable."""
        w = self.weight[c]
        rest = tuple(range(belief.ndim - 1))
        m = (_wlse(belief, rest, w) if rest else belief) / w
        return m - _wlse(m, (0,))

    def _reweight(self, clusters, beliefs):
        """An exponentiated-gradient step on the weights of a bucket's mini-buckets (Liu
        & Ihler 2011, Sec. 5): ∂bound/∂w_r = H_r, the conditional entropy of x_v given
        the rest of r's scope under r's weighted belief, so w_r ∝ w_r exp(−η (H_r − H̄)),
        H̄ = Σ_r w_r H_r, a weight kept above `_WEIGHT_FLOOR`. Any positive weights summing
        to 1 keep the bound certified (Hölder's inequality). ``beliefs``: the clusters'
        (`_belief`)."""
        w = self.weight[clusters]
        entropy = np.array([_conditional_entropy(b, self.weight[c])
                            for c, b in zip(clusters, beliefs)])
        new = w * np.exp(-self.eta * (entropy - (w * entropy).sum()))
        new = np.maximum(new / new.sum(), _WEIGHT_FLOOR)
        self.weight[clusters] = new / new.sum()

    def _match(self, clusters, beliefs, step):
        """Moment matching of a bucket's mini-buckets on x_v: each reparameterisation
        moves by step · w_r (log b̄ − log b_r), b̄ = Π_r b_r^{w_r}; they sum to no move
        (no move at a state where a marginal is 0). ``beliefs``: the clusters'
        (`_belief`), which the move leaves as they are but for the reparameterisation."""
        logs = np.array([self._node_log_marginal(c, b) for c, b in zip(clusters, beliefs)])
        weights = self.weight[clusters][:, None]
        with np.errstate(invalid="ignore"):
            moves = step * weights * ((weights * logs).sum(axis=0) - logs)
        moves[:, ~np.isfinite(moves).all(axis=0)] = 0.0
        for c, move in zip(clusters, moves):
            self.repar[c] = self.repar[c] + move
            self.incoming[c] += move

    def forward(self, step=1.0):
        """One forward pass (where a bucket has several mini-buckets, their weights'
        step, once backward messages exist, then moment matching); returns the certified
        bound on log Z."""
        mb = self.mb
        total = self.constant
        self.incoming = [None] * mb.n_clusters
        for clusters in mb.bucket:
            self.deadline.left()
            if len(clusters) > 1 and step > 0:
                beliefs = [self._belief(c) for c in clusters]   # once for both steps
                if self.eta > 0 and self.backward_msg[clusters[0]] is not None:
                    self._reweight(clusters, beliefs)
                self._match(clusters, beliefs, step)
            for c in clusters:
                f = self._incoming(c)
                msg = _wlse(f, (f.ndim - 1,), self.weight[c])
                if mb.parent[c] < 0:
                    total += float(msg)
                    continue
                top = np.max(msg)
                if np.isfinite(top):
                    msg -= top
                total += float(top)
                self.forward_msg[c] = _embed(msg, mb.scope[c][:-1], mb.scope[mb.parent[c]])
        self.bound = min(self.bound, total)
        return total

    def backward(self):
        """Backward messages, parents first: b → a is
        w_a log Σ_{C_b \\ C_a} exp(belief_b / w_b − λ_a / w_a)
        = w_a log Σ_{C_b \\ C_a} exp(belief_b / w_b) − λ_a (λ_a is constant there)."""
        mb = self.mb
        for clusters in reversed(mb.bucket):
            self.deadline.left()
            for b in clusters:
                if not mb.children[b]:
                    continue
                belief, wb = self._belief(b), self.weight[b]
                for a in mb.children[b]:
                    keep = set(mb.scope[a])
                    drop = tuple(i for i, v in enumerate(mb.scope[b]) if v not in keep)
                    sums = (_wlse(belief, drop, wb) if drop else belief) * (self.weight[a] / wb)
                    with np.errstate(invalid="ignore"):
                        msg = _embed(sums, mb.scope[a][:-1], mb.scope[b]) - self.forward_msg[a]
                    msg[np.isnan(msg)] = -np.inf
                    top = np.max(msg)
                    if np.isfinite(top):
                        msg -= top
                    self.backward_msg[a] = msg.reshape(
                        [n for n, v in zip(msg.shape, mb.scope[b]) if v in keep] + [1])

    def _weighted_belief(self, c):
        """The normalised weighted belief of cluster c, ∝ exp(belief_c / w_c)."""
        b = self._belief(c) / self.weight[c]
        top = np.max(b)
        if not np.isfinite(top):
            return np.zeros_like(b)
        b = np.exp(b - top)
        return b / b.sum()

    def marginals(self, tables):
        """({v: node marginal}, {k: marginal over tables[k]'s scope, in its order, for each
        original factor of arity ≥ 2}) from the clusters' normalised weighted beliefs, each
        exponentiated once (`_subset_marginals`): v's is the mean of its mini-buckets'
        (equal after a full matching step), a factor's is from the cluster that holds it."""
        mb = self.mb
        nodes, factors = {}, {}
        for v, clusters in zip(mb.order, mb.bucket):
            total = 0.0
            for c in clusters:
                scope = mb.scope[c]
                big = {k: tuple(sorted(tables[k][0], key=scope.index))
                       for k in mb.originals[c] if len(tables[k][0]) >= 2}
                found = _subset_marginals(self._weighted_belief(c), scope,
                                          set(big.values()) | {(v,)})
                total = total + found[(v,)]
                for k, subset in big.items():
                    factors[k] = np.transpose(found[subset],
                                              [subset.index(u) for u in tables[k][0]])
            mass = np.sum(total)
            nodes[v] = total / mass if mass > 0 else np.full(int(mb.card[v]), 1.0 / mb.card[v])
        return nodes, factors

    def decode(self):
        """A labelling: variables from the last eliminated, each at the argmax of its
        bucket's f (mini-buckets summed) given the variables already set (Merlin's MAP
        decoding on the current reparameterisation)."""
        mb = self.mb
        x = np.zeros(len(mb.card), dtype=np.int64)
        for v, clusters in zip(reversed(mb.order), reversed(mb.bucket)):
            score = np.zeros(int(mb.card[v]))
            for c in clusters:
                parts = ([self.base[c], self.repar[c]] +
                         [self.forward_msg[k] for k in mb.children[c]])
                for t in parts:
                    index = tuple(0 if n == 1 else x[u]
                                  for u, n in zip(mb.scope[c][:-1], t.shape[:-1]))
                    score = score + t[index]
            x[v] = int(np.argmax(score))
        return x


#: the weights' first step (`WeightedMiniBucket._reweight`), halved after a pass whose bound
#: is looser than the one before; a weight's least share. Measured at one stage, 20
#: passes, bound − log Z with steps 0 (uniform weights, Merlin's) / 1 / 3: linkage_12 at
#: 2^16 entries 25.3 / 16.4 / 16.4, linkage_14 8.10 / 5.01 / 5.09, Grids_15 5.57 / 4.30 /
#: 4.28, Promedus_17 4.43 / 4.20 / 6.78, ObjectDetection_13 0.78 / 0.66 / 2.23 (3
#: oscillates)
_WEIGHT_STEP, _WEIGHT_FLOOR = 1.0, 1e-6
#: a stage's successor not yet looked for
_UNKNOWN = object()
#: the first stage's mini-buckets hold at most this many entries; each next stage 4x more
_FIRST_ENTRIES, _GROWTH = 2**8, 4
#: a stage's memory: 8 bytes per entry of its cluster tables, and temporaries of
#: `_TEMPORARIES` tables of its largest cluster
_TEMPORARIES = 4
#: the next stage starts only if this many of its passes (and a read) fit in the time left
#: (a pass's time predicted from the last one's, in proportion to the entries); else the
#: stage goes on. A larger stage's first passes are looser than the one before's last,
#: but it soon passes it (ObjectDetection_13: 2^16 entries converge to +0.79 nats; 2^20:
#: +1.11 after one pass, +0.67 after 2, +0.54 after 5; 2^24: +0.23 after one, +0.14
#: after 2, +0.11 after 5). With 4 passes asked, ObjectDetection_13 on a busy machine
#: stayed at 2^20 (+0.32 at 60 s, where 2^24 gave +0.08)
_STAGE_PASSES = 2
#: the beliefs are read before a pass unless this many passes fit in the time left
_PASS_MARGIN = 1.1

_PARAMS = {
    "ibound": [Interval(1, integer=True), None],
    "memory_limit": Interval(2**16),
    "max_iter": Interval(1, integer=True),
    "tol": Interval(0.0),
    "max_time": TIME,
    "callback": [CALLABLE, None],
    "verbose": BOOL,
}


@validate_params(_PARAMS, unchecked=("model",))
def weighted_mini_bucket(model: PairwiseMRF | FactorGraph, *, ibound: int | None = None,
                         memory_limit: float = 2**32, max_iter: int = 1000,
                         tol: float = 1e-6, max_time: float | None = None, callback=None,
                         verbose: bool = False) -> MarginalResult:
    """A certified interval on log Z and marginals by weighted mini-bucket elimination
    (module docstring; Liu & Ihler 2011), anytime. ``fwcore.infer(model, method="wmb",
    ...)`` is the same call.

    ibound : None (default): stages of growing mini-buckets (at most 2^8, 2^10, 2^12, ...
        table entries), the next started after one pass of the last while
        ``memory_limit`` allows and 2 of its passes and a read of its beliefs fit in
        ``max_time`` (predicted from the last pass), the last one run while its passes
        tighten the bound by more than ``tol``. An int: one stage with mini-buckets of at
        most ``ibound`` + 1 variables (Merlin's ``--ibound``).
    memory_limit : float
        bytes for the cluster tables (8 per entry) and the temporaries.
    max_iter : int
        passes (forward and backward).

    The bound is certified at every stop (``log_z_upper``, the least over all passes);
    ``log_z_lower`` is the best of the scores of the labellings decoded after each pass
    (log Z ≥ max_x score(x)) and the naive mean-field bound started from the best of them
    and from the marginals (`fwcore.marginals.mean_field`, in the last share of
    ``max_time``, `fwcore.auto.TIME_SHARES`); ``gap`` = ``certified_gap`` = their
    difference, so the status is ``converged`` when it is at most ``tol`` (or the
    elimination is exact), ``stalled`` when no stage that fits tightens it further.
    Marginals are the weighted beliefs of the pass of tightest bound read (exact when
    its buckets are whole), within ``max_time``. Variables that evidence fixes (one
    finite unary state) are conditioned on first. A model with no feasible assignment
    raises ValueError: at the start when arc consistency finds it
    (`fwcore.checks.check_feasible`), at the end when the bound proves it."""
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    return run_method(WMB, checked, deadline=deadline, max_iter=max_iter, callback=callback,
                      verbose=verbose,
                      options=dict(ibound=ibound, memory_limit=memory_limit, tol=tol))


#: passes unless max_iter is given
_MAX_PASSES = 1000


def _run_wmb(model, budget, callbacks, *, ibound=None, memory_limit=2**32, tol=1e-6):
    """`weighted_mini_bucket` on the checked ``model``: the registered run."""
    deadline = budget.deadline
    pairwise = model.reduced if isinstance(model, FactorGraph) else model
    check_feasible(pairwise)
    passes = deadline.share(1 - TIME_SHARES["wmb/mean field"])
    run = _Run(model, ibound, memory_limit, tol, passes, deadline,
               deadline.share(TIME_SHARES["wmb/order search"]))
    outcome = run_loop(run.measure, run.step,
                       Stopping(budget.iterations(_MAX_PASSES), tol, deadline=passes),
                       callbacks, start=run.start)
    run.read(deadline.seconds_left())
    if outcome.status is not Status.INTERRUPTED:
        run.mean_field(deadline)
    check_bound_feasible(pairwise, run.upper)
    status = outcome.status
    if status is Status.CONVERGED and run.gap > tol:
        status = Status.STALLED
    return run.result(status, outcome, deadline.elapsed())


class _Run:
    """The state of a `weighted_mini_bucket` run: the stages' trees, the current
    message passing, the best bounds and the marginals of the last pass."""

    def __init__(self, model, ibound, memory_limit, tol, deadline, call, order_deadline):
        if not isinstance(model, (PairwiseMRF, FactorGraph)):
            check_model(model)
        self.model, self.ibound, self.tol, self.deadline, self.call = (
            model, ibound, tol, deadline, call)
        self.memory_limit, self.order_deadline = memory_limit, order_deadline
        self.card = card = np.asarray(model.card, dtype=np.int64)
        self.fixed = fixed_by_evidence(model)
        self.tables = _conditioned(card, factors_of(model), self.fixed)
        self.lower, self.best_x = -math.inf, None
        self.cap = _FIRST_ENTRIES if ibound is None else math.inf
        self.wmb, self.upcoming = None, _UNKNOWN
        self.marginals, self.pairs, self.pass_time = None, None, 0.0
        self.marginals_bound = math.inf              # the pass bound of the marginals kept
        self.n_passes, self.stage_passes, self.last, self.previous = 0, 0, math.inf, math.inf
        self.passed = False                         # the last pass ended (beliefs readable)
        self.finished = self.tables is None
        if self.finished:                           # some variable has no finite state
            self.upper = self.lower = -math.inf
        else:
            self.upper = _product_bound(card, self.tables, self.fixed)

    def start(self):
        """The elimination order and the first stage (a ValueError when ``ibound``'s
        tables exceed ``memory_limit``)."""
        if self.finished:
            return
        scopes = [s for s, _ in self.tables]
        self.order = [v for v in _elimination_order(self.card, scopes, self.order_deadline)
                      if v not in self.fixed]
        tree = self._tree(self.cap)
        if self.ibound is not None and tree.memory > self.memory_limit:
            raise ValueError(f"ibound={self.ibound} needs about {tree.memory:.3g} bytes, "
                             f"over memory_limit={self.memory_limit:.3g}: give a smaller "
                             "ibound, a larger memory_limit, or ibound=None (the largest "
                             "that fits)")
        self._start(tree)

    @property
    def gap(self):
        return 0.0 if self.upper == self.lower else self.upper - self.lower

    def _tree(self, cap):
        return MiniBuckets(self.card, [s for s, _ in self.tables], self.order, cap,
                           self.ibound, self.deadline)

    def _start(self, tree):
        """A stage on ``tree`` (its successor is found when it stalls)."""
        self.wmb, self.stage_passes = WeightedMiniBucket(tree, self.tables, self.deadline), 0
        self.upcoming = _UNKNOWN

    def _next_tree(self):
        """The next stage's tree, or None when there is none that fits (found once per
        stage)."""
        if self.upcoming is not _UNKNOWN:
            return self.upcoming
        self.upcoming = None
        if self.ibound is None and not self.wmb.mb.exact:
            while True:
                self.cap *= _GROWTH
                tree = self._tree(self.cap)
                if tree.memory > self.memory_limit:
                    break
                if tree.entries > self.wmb.mb.entries:
                    self.upcoming = tree
                    break
        return self.upcoming

    def measure(self, k):
        record = Record(iteration=k, time=self.call.elapsed(),
                        primal=self.upper if self.n_passes == 0 else self.last,
                        gap=self.gap, bound=self.upper, score=self.lower)
        return record, 0.0 if self.finished else self.gap

    def step(self, k):
        """One pass (forward with reweighting and matching, backward, decoding). After a
        stage's first pass (whose time predicts the next stage's, in proportion to the
        entries), the next stage starts when it fits in memory and `_STAGE_PASSES` of its
        passes and a read of its beliefs fit in the time left; else the stage goes on
        while a pass tightens the bound by more than ``tol``, and the run is finished
        after (or at once when exact). The beliefs are read (`read`) before a pass that
        may not end in time, at the end, and before the first stage change (so that some
        are kept)."""
        mb = self.wmb.mb
        left = self.deadline.left()
        if self.stage_passes:
            tree = None if mb.exact else self._next_tree()
            cost = (math.inf if tree is None else
                    self.pass_time * tree.entries / max(mb.entries, 1))
            if tree is not None and (left is None or left > _STAGE_PASSES * cost +
                                     self._read_time(tree.entries)):
                if self.marginals is None:
                    self.read()            # the first marginals, from a cheaper stage
                self.passed = False        # its passes are read later (a read costs a pass)
                self._start(tree)
                self.pass_time = cost
            elif mb.exact or (self.stage_passes > 1 and self.previous - self.last <= self.tol):
                self.finished = True
                return
        if left is not None and left < _PASS_MARGIN * self.pass_time + self._read_time():
            self.read(left)
        self._pass()

    def _pass(self):
        w = self.wmb
        started = time.monotonic()
        self.stage_passes += 1
        self.previous = self.last
        self.passed = False
        self.last = w.forward(1.0 / self.stage_passes)
        if self.stage_passes > 1 and self.last > self.previous:
            w.eta /= 2
        self.upper = min(self.upper, self.last)
        if w.mb.exact:
            self.lower = self.upper = self.last
        w.backward()
        self.passed = True
        self.pass_time = time.monotonic() - started
        self.n_passes += 1
        x = w.decode()
        for v, state in self.fixed.items():
            x[v] = state
        score = self._score(x)
        if score == -math.inf:
            x = self._feasible(x)
            score = self._score(x)
        if score > self.lower:
            self.lower, self.best_x = score, x

    def _score(self, x):
        return sum(float(t[tuple(x[list(s)])]) for s, t in self.tables)

    def _feasible(self, x):
        """A labelling of finite score near ``x`` where arc consistency finds one
        (`fwcore.oracles._common.feasible_labelling`, on a factor graph's reduction)."""
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
        seconds (None: no limit; `_read_time`)."""
        if not self.passed or (self.marginals is not None and self.last > self.marginals_bound):
            return
        if left is not None and self._read_time() > left:
            return
        self.marginals, self.pairs = self.wmb.marginals(self.tables)
        self.marginals_bound = self.last

    def _read_time(self, entries=None):
        """The predicted seconds of a `read` in this stage (or one of ``entries``): a
        pass's, in proportion to the entries (measured at 0.5-1 pass on ObjectDetection_13
        and relational_1; a read of a small stage, mostly overhead, predicts large ones
        badly)."""
        entries = self.wmb.mb.entries if entries is None else entries
        return self.pass_time * entries / max(self.wmb.mb.entries, 1)

    def mean_field(self, deadline):
        """Raise the lower bound by naive mean field (`fwcore.marginals.mean_field`),
        started from the best labelling and from the marginals, within ``deadline``."""
        if self.tables is None or self.gap == 0.0:
            return
        n = len(self.card)
        starts = [] if self.marginals is None else [self.node_marginals()]
        if self.best_x is not None:
            starts.append([np.eye(int(self.card[v]))[self.best_x[v]] for v in range(n)])
        for start in starts:
            lower = mean_field(self.model, start, 100, 1e-6, deadline).log_z_lower
            self.lower = max(self.lower, lower)

    def node_marginals(self):
        """The marginals of the last pass read, on every variable (fixed ones as point
        masses, uniform before any pass)."""
        nodes = []
        for v, n in enumerate(self.card.tolist()):
            if v in self.fixed:
                nodes.append(np.eye(n)[self.fixed[v]])
            elif self.marginals is not None and v in self.marginals:
                nodes.append(self.marginals[v])
            else:
                nodes.append(np.full(n, 1.0 / n))
        return nodes

    def result(self, status, outcome, seconds):
        """The `MarginalResult` on the user's variables (fixed ones as point masses; edge
        marginals of the pairwise factors from their clusters' beliefs)."""
        model = self.model
        pairwise = model.skeleton if isinstance(model, FactorGraph) else model
        nodes = self.node_marginals()
        by_pair = {}
        for k, m in (self.pairs or {}).items():
            if len(self.tables[k][0]) == 2:
                i, j = self.tables[k][0]
                by_pair[(i, j)], by_pair[(j, i)] = m, m.T
        edges = [by_pair.get((int(i), int(j)), np.outer(nodes[i], nodes[j]))
                 for i, j in pairwise.edges]
        mu = np.concatenate([np.concatenate(nodes)] + [e.ravel() for e in edges])
        return MarginalResult(
            node_marginals=nodes, edge_marginals=edges, mu=mu, log_z_upper=self.upper,
            certified=True, gap=self.gap, certified_gap=self.gap, status=status,
            n_iter=self.n_passes, time=seconds, method="wmb", trace=outcome.trace,
            log_z_lower=self.lower)


def _product_bound(card, tables, fixed):
    """log Z ≤ Σ_f max f + Σ_v log |X_v| over the variables not ``fixed``: every labelling
    counted at every factor's best score (the bound before any pass)."""
    free = [int(n) for v, n in enumerate(card.tolist()) if v not in fixed]
    return float(sum(np.max(t) for _, t in tables) + np.log(np.asarray(free, float)).sum())


def _conditioned(card, tables, fixed):
    """The tables sliced at the ``fixed`` variables' states (their scopes without them);
    None when some variable has no state of finite unary score (no feasible labelling)."""
    allowed = [np.ones(int(n), dtype=bool) for n in card]
    for s, t in tables:
        if len(s) == 1:
            allowed[s[0]] &= np.isfinite(t)
    if any(not a.any() for a in allowed):
        return None
    out = []
    for s, t in tables:
        if any(v in fixed for v in s):
            t = t[tuple(fixed.get(v, slice(None)) for v in s)]
            s = tuple(v for v in s if v not in fixed)
        out.append((tuple(s), np.asarray(t, dtype=np.float64)))
    return out


WMB = register_method(
    "wmb", _run_wmb, {k: _PARAMS[k] for k in ("ibound", "memory_limit", "tol")},
    certifies=("upper", "lower"), iteration="passes",
    summary="weighted mini-bucket elimination: a certified interval on log Z and "
            "marginals, anytime (Liu & Ihler 2011)")
