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
of a bucket's mini-buckets sum to zero. Each forward pass first matches the weighted
marginals on x_v of the bucket's mini-buckets (their beliefs use the backward messages of
the previous pass), which tightens the bound; a bucket of one mini-bucket is eliminated
exactly, and a model whose buckets all fit gets log Z itself.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._wmb import weighted_logsumexp_rows
from ..checks import BOOL, CALLABLE, TIME, Interval, check_bound_feasible, check_feasible, \
    check_model, validate_params
from ..factor_graph import FactorGraph
from ..loop import Callbacks, Deadline, Stopping, run_loop
from ..model import PairwiseMRF
from ..results import Record, Status
from .condition import fixed_by_evidence
from .mean_field import factors_of, mean_field_lower_bound
from .result import MarginalResult

__all__ = ["weighted_mini_bucket", "MiniBuckets", "WeightedMiniBucket"]


def _wlse(x, axes, w=1.0):
    """w log Σ_axes exp(x / w) (``axes`` a tuple, w > 0) over the other axes in order;
    −inf (never NaN) where every entry is −inf (`fwcore._wmb.weighted_logsumexp_rows`)."""
    keep = [a for a in range(x.ndim) if a not in axes]
    rows = np.ascontiguousarray(np.transpose(x, keep + list(axes)))
    shape = rows.shape[:len(keep)]
    out = np.empty(math.prod(shape))
    weighted_logsumexp_rows(rows.reshape(out.shape[0], -1), w, out)
    return out.reshape(shape)


#: `_elimination_order` tries min-fill under this many random relabellings (ties broken
#: differently) within `_ORDER_WORK` of min-fill's work: on the UAI 2014 models the best of
#: 30 needs 16x fewer elimination entries than the first on Promedus_17 (2^24.1 against
#: 2^28.2), 10x on Pedigree_11, 4x on linkage_12; on grids the bandwidth order wins
_ORDER_TRIES, _ORDER_WORK = 32, 5e8


def _elimination_order(card, scopes):
    """The elimination order of least total clique-table entries among the bandwidth
    order and min-fill (`fwcore.elimination`) under `_ORDER_TRIES` seeded random
    relabellings of the primal graph of ``scopes`` (the same order on every run)."""
    from ..elimination import _bandwidth_order, _eliminate, _min_fill_order
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
    best = (sum(_eliminate(model, order)[1]), order)
    rng, work = np.random.default_rng(0), 0
    for k in range(_ORDER_TRIES):
        label = np.arange(n) if k == 0 else rng.permutation(n)
        renamed = primal(label)
        order, spent = _min_fill_order(renamed, budget=_ORDER_WORK - work)
        work += spent
        if len(order) < n:
            break
        order = np.argsort(label)[order]
        best = min(best, (sum(_eliminate(model, order)[1]), order), key=lambda c: c[0])
    return [int(v) for v in best[1]]


class MiniBuckets:
    """The symbolic mini-bucket tree of an elimination ``order`` (WMB's clusters).

    Cluster c eliminates ``var[c]`` from ``scope[c]``, holds the original factors
    ``originals[c]``, receives the messages of ``children[c]`` and sends its own to
    ``parent[c]`` (−1: a root, whose message is a number). A scope lists its variables
    latest-eliminated first, so ``var[c]`` is its last axis and every sub-scope is in
    the same order. Each bucket is split first-fit, largest item first, into
    mini-buckets of at most ``max_entries`` table entries and ``ibound`` + 1 variables (an
    item larger than that makes its own)."""

    def __init__(self, card, scopes, order, max_entries=math.inf, ibound=None):
        self.card, self.order = card, list(order)
        self.position = position = np.empty(len(card), dtype=np.int64)
        position[self.order] = np.arange(len(self.order))
        buckets = [[] for _ in self.order]          # items (scope, factor k | -1, cluster | -1)
        for k, s in enumerate(scopes):
            if s:
                buckets[min(position[v] for v in s)].append((frozenset(s), k, -1))
        self.constants = [k for k, s in enumerate(scopes) if not s]
        self.scope, self.var, self.originals, self.children, self.parent = [], [], [], [], []
        self.bucket = []                             # the clusters of each variable in order
        max_vars = math.inf if ibound is None else ibound + 1
        for p, v in enumerate(self.order):
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
            fits = [g for g in groups if len(g[0] | s) <= max_vars
                    and self.entries_of(g[0] | s) <= max_entries]
            if fits:
                g = min(fits, key=lambda g: len(g[0]))
                g[0] = g[0] | s
            else:
                g = [s, [], []]
                groups.append(g)
            (g[1] if c < 0 else g[2]).append(k if c < 0 else c)
        return groups

    def sorted(self, variables):
        """``variables`` latest-eliminated first (the axis order of every table here)."""
        return tuple(sorted(variables, key=lambda v: -self.position[v]))

    def entries_of(self, variables):
        return math.prod(int(self.card[v]) for v in variables)

    @property
    def n_clusters(self):
        return len(self.scope)

    @property
    def entries(self):
        """Table entries of all clusters (the memory of one set of cluster tables)."""
        return sum(self.entries_of(s) for s in self.scope)

    @property
    def memory(self):
        """Bytes to run WMB on this tree: its cluster tables and `_TEMPORARIES` tables
        of its largest cluster."""
        return 8 * (self.entries + _TEMPORARIES * max(map(self.entries_of, self.scope),
                                                          default=0))

    @property
    def exact(self):
        """Whether every bucket is one mini-bucket (then the bound is log Z)."""
        return all(len(b) == 1 for b in self.bucket)

    @property
    def width(self):
        """Variables in the largest cluster."""
        return max((len(s) for s in self.scope), default=0)


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
            f = np.zeros([int(mb.card[v]) for v in mb.scope[c]])
            for k in mb.originals[c]:
                f += _aligned(tables[k][1], tables[k][0], mb.scope[c])
            self.base.append(f)
        self.constant = sum(float(tables[k][1]) for k in mb.constants)
        self.repar = [np.zeros(int(mb.card[mb.var[c]])) for c in range(mb.n_clusters)]
        self.forward_msg = [None] * mb.n_clusters    # over scope \ var, embedded in parent
        self.backward_msg = [None] * mb.n_clusters   # over scope \ var, embedded in c
        self.bound = math.inf

    def _incoming(self, c):
        """f_c: its factors, reparameterisation and the children's forward messages."""
        f = self.base[c] + self.repar[c]
        for child in self.mb.children[c]:
            f += self.forward_msg[child]
        return f

    def _belief(self, c, f=None):
        """f_c plus its backward message: w_c log of its unnormalised weighted belief."""
        f = self._incoming(c) if f is None else f
        return f if self.backward_msg[c] is None else f + self.backward_msg[c]

    def _node_log_marginal(self, c, belief):
        """log of the normalised weighted marginal of cluster c on its variable."""
        rest = tuple(range(belief.ndim - 1))
        w = self.weight[c]
        m = _wlse(belief, rest, w) / w if rest else belief / w
        return m - _wlse(m, (0,))

    def _match(self, clusters, incoming, step):
        """Moment matching of a bucket's mini-buckets on x_v: each reparameterisation
        moves by step · w_r (log b̄ − log b_r), b̄ = Π_r b_r^{w_r}; they sum to no move."""
        logs = [self._node_log_marginal(c, self._belief(c, f))
                for c, f in zip(clusters, incoming)]
        mean = sum(self.weight[c] * m for c, m in zip(clusters, logs))
        for c, f, m in zip(clusters, incoming, logs):
            with np.errstate(invalid="ignore"):
                move = step * self.weight[c] * (mean - m)
            move[np.isnan(move)] = 0.0
            self.repar[c] = self.repar[c] + move
            f += move

    def forward(self, step=1.0):
        """One forward pass (moment matching first where a bucket has several
        mini-buckets); returns the certified bound on log Z."""
        mb = self.mb
        total = self.constant
        for clusters in mb.bucket:
            self.deadline.left()
            incoming = [self._incoming(c) for c in clusters]
            if len(clusters) > 1 and step > 0:
                self._match(clusters, incoming, step)
            for c, f in zip(clusters, incoming):
                w = self.weight[c]
                msg = _wlse(f, (f.ndim - 1,), w)
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
        w_a log Σ_{C_b \\ C_a} exp(belief_b / w_b − λ_a / w_a)."""
        mb = self.mb
        for clusters in reversed(mb.bucket):
            self.deadline.left()
            for b in clusters:
                if not mb.children[b]:
                    continue
                belief = self._belief(b)
                for a in mb.children[b]:
                    wa = self.weight[a]
                    with np.errstate(invalid="ignore"):
                        y = belief * (wa / self.weight[b]) - self.forward_msg[a]
                    if np.isneginf(self.forward_msg[a]).any():
                        y[np.isnan(y)] = -np.inf
                    keep = set(mb.scope[a])
                    drop = tuple(i for i, v in enumerate(mb.scope[b]) if v not in keep)
                    msg = _wlse(y, drop, wa) if drop else y
                    top = np.max(msg)
                    if np.isfinite(top):
                        msg = msg - top
                    self.backward_msg[a] = _embed(msg, mb.scope[a][:-1], mb.scope[a])

    def _weighted_belief(self, c):
        """The normalised weighted belief of cluster c, ∝ exp(belief_c / w_c)."""
        b = self._belief(c) / self.weight[c]
        top = np.max(b)
        if not np.isfinite(top):
            return np.zeros_like(b)
        b = np.exp(b - top)
        return b / b.sum()

    def node_marginals(self):
        """{v: marginal}: the mean of v's mini-buckets' weighted marginals (equal after a
        full matching step)."""
        mb = self.mb
        out = {}
        for v, clusters in zip(mb.order, mb.bucket):
            p = sum(np.exp(self._node_log_marginal(c, self._belief(c))) for c in clusters)
            out[v] = p / p.sum()
        return out

    def factor_marginals(self, tables):
        """{k: marginal over tables[k]'s scope (in its order)} for each original factor
        of arity ≥ 2, from the weighted belief of the cluster that holds it."""
        mb = self.mb
        out = {}
        for c in range(mb.n_clusters):
            big = [k for k in mb.originals[c] if len(tables[k][0]) >= 2]
            if not big:
                continue
            b = self._weighted_belief(c)
            for k in big:
                s = tables[k][0]
                drop = tuple(i for i, v in enumerate(mb.scope[c]) if v not in s)
                m = b.sum(axis=drop) if drop else b
                kept = [v for v in mb.scope[c] if v in s]
                out[k] = np.transpose(m, [kept.index(v) for v in s])
        return out

    def decode(self):
        """A labelling: variables from the last eliminated, each at the argmax of its
        bucket's f (mini-buckets summed) given the variables already set (Merlin's MAP
        decoding on the current reparameterisation)."""
        mb = self.mb
        x = np.zeros(len(mb.card), dtype=np.int64)
        for v, clusters in zip(reversed(mb.order), reversed(mb.bucket)):
            score = np.zeros(int(mb.card[v]))
            for c in clusters:
                parts = [self.base[c], self.repar[c]] + \
                    [self.forward_msg[k] for k in mb.children[c]]
                for t in parts:
                    index = tuple(0 if n == 1 else x[u]
                                  for u, n in zip(mb.scope[c][:-1], t.shape[:-1]))
                    score = score + t[index]
            x[v] = int(np.argmax(score))
        return x


#: the first stage's mini-buckets hold at most this many entries; each next stage 4x more
_FIRST_ENTRIES, _GROWTH = 2**8, 4
#: a stage stalls when a pass tightens its bound by less than this share of all its passes did
_STALL = 0.05
#: a stage's memory: 8 bytes per entry of its cluster tables, and temporaries of
#: `_TEMPORARIES` tables of its largest cluster
_TEMPORARIES = 4
#: the share of ``max_time`` left to the mean-field lower bound after the passes
_MEAN_FIELD_SHARE = 0.05
#: the next stage starts only if this many of its passes fit in the time left (a pass's
#: time predicted from the last one's, in proportion to the entries); else the stage goes on
_STAGE_MARGIN = 1.1

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
    (module docstring; Liu & Ihler 2011), anytime.

    ibound : None (default): stages of growing mini-buckets (at most 2^8, 2^10, 2^12, ...
        table entries), each run while its iterations tighten the bound, the next
        started while ``memory_limit`` and ``max_time`` allow (then its first pass fits
        in the time left), the last one run while its passes tighten the bound by more
        than ``tol``. An int: one stage with mini-buckets of at most ``ibound`` + 1
        variables (Merlin's ``--ibound``).
    memory_limit : bytes for the cluster tables (8 per entry) and the temporaries.
    The bound is certified at every stop (``log_z_upper``, the least over all passes);
    ``log_z_lower`` is the best of the scores of the labellings decoded after each pass
    (log Z ≥ max_x score(x)) and the naive mean-field bound started from the best of them
    and from the marginals (`fwcore.marginals.mean_field`, in the last `_MEAN_FIELD_SHARE`
    of ``max_time``); ``gap`` = ``certified_gap`` = their difference, so the
    status is ``converged`` when it is at most ``tol`` (or the elimination is exact),
    ``stalled`` when no stage that fits tightens it further. Marginals are the weighted
    beliefs of the largest stage run (exact when its buckets are whole). Variables that
    evidence fixes (one finite unary state) are conditioned on first. A model with no
    feasible assignment raises ValueError: at the start when arc consistency finds it
    (`fwcore.checks.check_feasible`), at the end when the bound proves it."""
    t0 = time.perf_counter()
    pairwise = model.reduced if isinstance(model, FactorGraph) else check_model(model)
    check_feasible(pairwise)
    passes_time = None if max_time is None else (1 - _MEAN_FIELD_SHARE) * max_time
    run = _Run(model, ibound, memory_limit, tol, Deadline(passes_time), t0)
    outcome = run_loop(run.measure, run.step, Stopping(max_iter, tol, deadline=run.deadline),
                       Callbacks(callback, verbose=_line if verbose else None),
                       measure_start=run.finished)
    run.read()
    if outcome.status is not Status.INTERRUPTED:
        run.mean_field(None if max_time is None else t0 + max_time)
    check_bound_feasible(pairwise, run.upper)
    status = outcome.status
    if status is Status.CONVERGED and run.gap > tol:
        status = Status.STALLED
    return run.result(status, outcome, time.perf_counter() - t0)


def _line(record):
    return (f"pass {record.iteration:3d}  bound {record.bound:.6f}  lower {record.score:.6f}"
            f"  gap {record.gap:.4g}  {record.time:.1f} s")


class _Run:
    """The state of a `weighted_mini_bucket` run: the stages' trees, the current
    message passing, the best bounds and the marginals of the last pass."""

    def __init__(self, model, ibound, memory_limit, tol, deadline, t0):
        if not isinstance(model, (PairwiseMRF, FactorGraph)):
            check_model(model)
        self.model, self.ibound, self.tol, self.deadline, self.t0 = \
            model, ibound, tol, deadline, t0
        self.memory_limit = memory_limit
        self.card = card = np.asarray(model.card, dtype=np.int64)
        self.fixed = fixed_by_evidence(model)
        self.tables = _conditioned(card, factors_of(model), self.fixed)
        self.upper, self.lower, self.best_x = math.inf, -math.inf, None
        self.cap = _FIRST_ENTRIES if ibound is None else math.inf
        self.marginals, self.pairs, self.pass_time = None, None, 0.0
        self.n_passes, self.stage_passes, self.last, self.previous = 0, 0, math.inf, math.inf
        self.passed = False                         # the last pass ended (beliefs readable)
        self.finished = self.tables is None
        if self.finished:                           # some variable has no finite state
            self.upper = self.lower = -math.inf
            return
        scopes = [s for s, _ in self.tables]
        self.order = [v for v in _elimination_order(card, scopes) if v not in self.fixed]
        tree = self._tree(self.cap)
        if ibound is not None and tree.memory > memory_limit:
            raise ValueError(f"ibound={ibound} needs about {tree.memory:.3g} bytes, over "
                             f"memory_limit={memory_limit:.3g}: give a smaller ibound, a "
                             "larger memory_limit, or ibound=None (the largest that fits)")
        self._start(tree)

    @property
    def gap(self):
        return 0.0 if self.upper == self.lower else self.upper - self.lower

    def _tree(self, cap):
        return MiniBuckets(self.card, [s for s, _ in self.tables], self.order, cap,
                           self.ibound)

    def _start(self, tree):
        """A stage on ``tree``; its successor (`_next_tree`) is found now."""
        self.wmb, self.stage_passes = WeightedMiniBucket(tree, self.tables, self.deadline), 0
        self.upcoming = self._next_tree()

    def _next_tree(self):
        """The next stage's tree, or None when there is none that fits."""
        if self.ibound is not None or self.wmb.mb.exact:
            return None
        while True:
            self.cap *= _GROWTH
            tree = self._tree(self.cap)
            if tree.memory > self.memory_limit:
                return None
            if tree.entries > self.wmb.mb.entries:
                return tree

    def measure(self, k):
        record = Record(iteration=k, time=time.perf_counter() - self.t0,
                        primal=self.last, gap=self.gap, bound=self.upper, score=self.lower)
        return record, 0.0 if self.finished else self.gap

    def step(self, k):
        """One pass (forward with matching, backward, decoding). Once the stage stalls
        (its last pass tightened the bound by less than `_STALL` of the stage's total),
        the next stage if it fits in memory and its pass in the time left; with no next
        stage the run goes on while a pass tightens the bound by more than ``tol``, and
        is finished after (or at once when exact). The beliefs are read (`read`) before a
        pass that may not end in time, at stage changes and at the end."""
        mb = self.wmb.mb
        left = self.deadline.left()
        gain = self.previous - self.last
        if self.stage_passes and (mb.exact or gain <= max(
                self.tol, _STALL * (self.stage_first - self.last))):
            tree = self.upcoming
            if mb.exact or (tree is None and gain <= self.tol):
                self.finished = True
                return
            cost = math.inf if tree is None else self.pass_time * tree.entries / mb.entries
            if tree is not None and (left is None or left > _STAGE_MARGIN * cost):
                self.read()
                self.passed = False
                self._start(tree)
                self.pass_time = cost
        if left is not None and left < _STAGE_MARGIN * self.pass_time:
            self.read()
        self._pass()

    def _pass(self):
        w = self.wmb
        started = time.perf_counter()
        self.stage_passes += 1
        self.previous = self.last
        self.passed = False
        self.last = w.forward(1.0 / self.stage_passes)
        if self.stage_passes == 1:
            self.stage_first = self.last
        w.backward()
        self.passed = True
        self.pass_time = time.perf_counter() - started
        self.n_passes += 1
        self.upper = min(self.upper, self.last)
        if w.mb.exact:
            self.lower = self.upper = self.last
        x = w.decode()
        score = sum(float(t[tuple(x[list(s)])]) for s, t in self.tables)
        if score > self.lower:
            self.lower, self.best_x = score, x

    def read(self):
        """Keep the marginals of the last whole pass (none yet: nothing to read)."""
        if self.passed:
            self.marginals = self.wmb.node_marginals()
            self.pairs = self.wmb.factor_marginals(self.tables)

    def mean_field(self, until):
        """Raise the lower bound by naive mean field (`fwcore.marginals.mean_field`),
        started from the best labelling and from the marginals, until ``until`` (a
        `time.perf_counter` time; None: its own sweep limit)."""
        if self.tables is None or self.gap == 0.0:
            return
        n = len(self.card)
        starts = [] if self.marginals is None else [self.node_marginals()]
        if self.best_x is not None:
            starts.append([np.eye(int(self.card[v]))[self.best_x[v]] for v in range(n)])
        for start in starts:
            lower = mean_field_lower_bound(self.model, start=start, deadline=until).log_z_lower
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
            node_marginals=nodes, edge_marginals=edges, mu=mu, rho=None, primal=self.upper,
            gap=self.gap, certified_gap=self.gap, log_z_upper=self.upper, certified=True,
            delta=0.0, n_oracle_calls=0, n_icm_calls=0, status=status, n_iter=self.n_passes,
            n_rho_updates=0, time=seconds, method="wmb", trace=outcome.trace,
            log_z_lower=self.lower)


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
