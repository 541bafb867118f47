"""Queries: the joint distribution of a few variables given evidence, P(Q | e), hard and
soft evidence alike (`fwcore.apply_evidence`); exact where elimination fits, estimated
from weighted mini-bucket's importance samples past it.

The engine shared with `fwcore.sampling` and `fwcore.mmap` is `MessageTree`: variable
elimination on the clique tree of an order whose last variables are given (constrained
elimination: the query variables after all others), every message kept in one flat array
(`fwcore._query.up_pass`). The order is `fwcore.elimination.EliminationPlan`'s, its
variables of ``last`` moved to the end, or a greedy min-fill over the other variables
when that is better (`_constrained_order`); its memory (the messages, and the plan's own
check) is checked before anything is allocated; past it the tree raises `PastReach`,
naming the model's size.

Past exact reach (``method`` "auto" or "wmb"), `query` and `fwcore.sample` draw importance
samples from weighted mini-bucket's proposal (`importance_answer`; Liu, Fisher & Ihler
2015): what is certified is the interval on log Z with the evidence (log P(e) for a
Bayesian network) from weighted mini-bucket's bounds; what is estimated is the joint
table (the self-normalised weighted frequencies of Q), log Ẑ, and its interval that holds
with probability ``confidence`` (`fwcore.marginals.estimate`). Such answers say
``estimated``.

P(Q | e) is read off the messages: after the up pass over an order ending with Q, the
log-table over Q is Σ_{v ∈ Q} (θ_v, v's owned edges, the messages of v's children outside
Q), broadcast over the joint table (vectorised over whole tables), and normalised; log Z
is the roots' sum (the components without a query variable add their own).
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from . import _elim, _query
from .checks import (INFEASIBLE, MEMORY, SEED, TIME, Interval, Options, check_model,
                     validate_params)
from .elimination import EliminationPlan, separators_along, functional_vars
from .factor_graph import FactorGraph
from .io.uai import apply_evidence
from .marginals.estimate import Tally
from .marginals.wmb import importance_samples
from .model import PairwiseMRF
from .results import Record, Result, Status, Trace

__all__ = ["QueryResult", "query", "MessageTree", "Answer", "PastReach", "variables_of"]

MEMORY_LIMIT = 2**31
#: the constraint on a sampled interval's ``confidence``
CONFIDENCE_LEVEL = Interval(0.0, 1.0, lo_open=True, hi_open=True)


class MessageTree:
    """The clique tree of an elimination order of ``model`` (a PairwiseMRF; a
    FactorGraph's ``reduced``) whose last variables are ``last`` (in the order given),
    with room for every message; the last ``n_max`` variables of the order are maximised,
    the others summed (`fwcore._query.up_pass`). ``what`` names the task in refusals.

    Attributes: ``order`` (int64), ``sep`` (per variable its separator, in elimination
    order), the flat CSR arrays of the kernels, ``msg`` / ``msg_off`` (m_v =
    ``msg[msg_off[v]:msg_off[v + 1]]``, C order over ``sep[v]``), ``arg`` / ``arg_off``
    (the maximisers of the max variables), ``info`` (widths and bytes)."""

    def __init__(self, model: PairwiseMRF, last=(), n_max: int = 0,
                 memory_limit: float = MEMORY_LIMIT, what: str = "this query"):
        n = model.n_vars
        try:
            plan = EliminationPlan(model, memory_limit)
        except ValueError as err:
            # the planner's own alternatives (weighted mini-bucket for log Z, MAP oracles)
            # answer other questions than this one
            raise _past_reach(model, what, str(err).split(". Alternatives")[0]) from None
        order = np.asarray(plan.order, dtype=np.int64)
        if len(last):
            order = _constrained_order(model, order, last, memory_limit / 8)
        sep, sizes = separators_along(model, order, memory_limit / 8)
        if sep is None:
            raise _past_reach(model, what, f"with the query variables last, a clique table "
                              f"of {8 * sizes[-1]} bytes, over memory_limit={memory_limit:.0f}")
        card = model.card.astype(np.int64)
        sep_size = np.empty(n, dtype=np.int64)
        sep_size[order] = np.asarray(sizes, dtype=np.int64) // card[order]
        self.msg_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sep_size, out=self.msg_off[1:])
        max_vars = order[n - n_max:] if n_max else order[:0]
        arg_size = np.zeros(n, dtype=np.int64)
        arg_size[max_vars] = sep_size[max_vars]
        self.arg_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(arg_size, out=self.arg_off[1:])
        need = 8 * int(self.msg_off[-1]) + 4 * int(self.arg_off[-1])
        if need > memory_limit:
            raise _past_reach(model, what, f"its messages take {need} bytes, over "
                              f"memory_limit={memory_limit:.0f}")
        self.model, self.order, self.sep, self.n_max = model, order, sep, n_max
        self.info = {"induced_width": max((len(s) for s in sep), default=0),
                     "max_table_bytes": 8 * max(sizes, default=0), "message_bytes": need}
        lens = np.fromiter((len(s) + 1 for s in sep), np.int64, n)
        self.clq_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=self.clq_start[1:])
        self.clq_var = np.fromiter(chain.from_iterable((v, *s) for v, s in enumerate(sep)),
                                   np.int32, int(self.clq_start[-1]))
        parent = np.fromiter((s[0] if s else -1 for s in sep), np.int64, n)
        kids = np.flatnonzero(parent >= 0)
        kids = kids[np.argsort(parent[kids], kind="stable")]
        self.ch_start, self.ch_var = _csr(parent[kids], kids, n)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        i, j = model.edges[:, 0], model.edges[:, 1]
        owner = np.where(pos[i] < pos[j], i, j)
        owned = np.argsort(owner, kind="stable")
        self.own_start, self.own_edge = _csr(owner[owned], owned, n)
        self.parent = parent
        self.msg = np.empty(int(self.msg_off[-1]))
        self.arg = np.empty(int(self.arg_off[-1]), dtype=np.int32)
        self.tree = _elim.CliqueTree(model.card, model.edges, model.node_off, model.edge_off,
                                     order, self.clq_start, self.clq_var, self.ch_start,
                                     self.ch_var, self.own_start, self.own_edge)

    def up(self, deadline=None, maximise=True) -> float:
        """Every message (the first n − n_max variables summed, the rest maximised; all
        summed unless ``maximise``); the roots' sum: log Z, or with max variables
        log max_q Σ_rest exp(score). Ctrl-C: KeyboardInterrupt; a `fwcore.loop.Deadline`
        that passes: TimeoutError."""
        at = math.inf if deadline is None or deadline.at is None else deadline.at
        n_sum = self.model.n_vars - (self.n_max if maximise else 0)
        return _query.up_pass(self.tree, self.model.theta, self.msg_off, self.msg, n_sum,
                              self.arg, self.arg_off, at)

    def backtrack(self) -> np.ndarray:
        """After a maximising `up`: the max variables' maximisers (int64 over all
        variables; the summed ones left 0)."""
        x = np.zeros(self.model.n_vars, dtype=np.int64)
        _query.backtrack(self.order, self.clq_start, self.clq_var, self.model.card,
                         self.model.n_vars - self.n_max, self.arg, self.arg_off, x)
        return x

    def message(self, v):
        """m_v as a table over ``sep[v]``."""
        card = self.model.card
        return self.msg[self.msg_off[v]:self.msg_off[v + 1]].reshape(
            [int(card[u]) for u in self.sep[v]])


#: work (neighbour pairs examined) of the constrained min-fill before it gives up
CONSTRAINED_MIN_FILL_WORK = 2e7


def _constrained_order(model, order, last, cap):
    """An elimination order ending with ``last``: the better (smaller largest clique
    table, then smaller total) of ``order`` with ``last`` moved to the end, and the
    variables ``functional_vars`` first then a greedy weighted min-fill over the others
    (`_constrained_min_fill`); a candidate over ``cap`` entries loses."""
    n = model.n_vars
    is_last = np.zeros(n, dtype=bool)
    is_last[list(last)] = True
    tail = np.asarray(last, dtype=np.int64)
    candidates = [np.concatenate([order[~is_last[order]], tail])]
    first = [v for v in functional_vars(model) if not is_last[v]]
    greedy = _constrained_min_fill(model, first, is_last)
    if greedy is not None:
        candidates.append(np.concatenate([greedy, tail]))
    scored = []
    for k, candidate in enumerate(candidates):
        sep, sizes = separators_along(model, candidate, cap)
        scored.append(((sep is None, max(sizes, default=0), sum(sizes), k), candidate))
    return min(scored, key=lambda c: c[0])[1]


def _constrained_min_fill(model, first, is_last):
    """``first``, then the other variables not in ``is_last`` by greedy weighted min-fill
    (fill edges weigh card_a card_b, ties by clique table size, then index), the variables
    of ``is_last`` never eliminated but present in the graph; None once
    `CONSTRAINED_MIN_FILL_WORK` is spent. Python sets and a lazy heap: a query's order
    on models that elimination can answer (a kernel with a candidate mask in
    `fwcore._symbolic.min_fill` would serve here)."""
    n = model.n_vars
    start, adj = model.adj_start, model.adj_var.tolist()
    nbrs = [set(adj[start[v]:start[v + 1]]) for v in range(n)]
    w = model.card.astype(np.float64).tolist()
    work = 0

    def cost(v):
        nonlocal work
        ns = list(nbrs[v])
        work += len(ns) * len(ns)
        fill = sum(w[a] * w[b] for k, a in enumerate(ns) for b in ns[k + 1:]
                   if b not in nbrs[a])
        return (fill, w[v] * math.prod(w[u] for u in ns), v)

    def eliminate(v):
        ns = nbrs[v]
        for u in ns:
            nbrs[u].discard(v)
            nbrs[u] |= ns - {u}
        return ns

    done = np.zeros(n, dtype=bool)
    for v in first:
        eliminate(v)
        done[v] = True
    current = {v: cost(v) for v in range(n) if not done[v] and not is_last[v]}
    heap = list(current.values())
    heapq.heapify(heap)
    order = list(first)
    while heap:
        c = heapq.heappop(heap)
        v = c[2]
        if done[v] or current[v] != c:
            continue
        done[v] = True
        order.append(v)
        touched = set()
        for u in eliminate(v):
            touched |= nbrs[u] | {u}
        for u in touched:
            if not done[u] and not is_last[u]:
                current[u] = cost(u)
                heapq.heappush(heap, current[u])
        if work > CONSTRAINED_MIN_FILL_WORK:
            return None
    return np.asarray(order, dtype=np.int64)


def _csr(rows, values, n):
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=start[1:])
    return start, np.ascontiguousarray(values, dtype=np.int32)


class PastReach(ValueError):
    """Exact elimination does not fit the model within ``memory_limit`` (the ``auto``
    methods then sample)."""


def _past_reach(model, what, why):
    return PastReach(
        f"{what} needs exact elimination, which does not fit this model ({model.n_vars} "
        f"variables, {model.n_edges} edges in its pairwise form): {why}. method='auto' "
        "answers it from weighted mini-bucket's importance samples; a larger memory_limit "
        "helps if the machine has the memory")


def pairwise_form(model):
    """The PairwiseMRF the kernels run on: the model, or a FactorGraph's reduction (whose
    first ``n_vars`` variables are the user's); checked."""
    if isinstance(model, FactorGraph):
        return model.reduced
    return check_model(model)


def variables_of(model, variables, name="variables"):
    """The indices of ``variables`` (names or indices, `fwcore.model.Named.var_index`),
    distinct, at least one; as a tuple."""
    if isinstance(variables, (str, bytes)) or not hasattr(variables, "__iter__"):
        raise TypeError(f"{name} must be a list of variables (names or indices); got "
                        f"{type(variables).__name__}")
    out = tuple(model.var_index(v) for v in variables)
    if not out:
        raise ValueError(f"{name} is empty: give at least one variable")
    if len(set(out)) < len(out):
        raise ValueError(f"{name} names a variable twice")
    return out


@dataclass(frozen=True, repr=False)
class Answer(Result):
    """The shared part of a query's or a sampler's answer (a frozen dataclass to
    subclass): ``log_z``, ``method``, ``time``, ``trace``. Exact by default: status
    converged, gap 0, certified, one pass, no oracle calls, ``log_z_upper`` =
    ``log_z_lower`` = ``log_z``. An answer from importance samples (``estimated``) has
    ``log_z`` the samples' estimate, ``log_z_lower`` ≤ log Z ≤ ``log_z_upper`` certified
    (weighted mini-bucket's bounds; ``gap`` their difference), the sampled interval
    ``log_z_estimate_lower`` to ``log_z_estimate_upper`` that holds with probability at
    least ``confidence`` (`fwcore.marginals.estimate`), and the status of the
    bounds' passes (``max_time`` when the time cut the samples short)."""

    log_z: float
    method: str
    time: float
    trace: Trace
    status: Status = field(default=Status.CONVERGED, kw_only=True)
    gap: float = field(default=0.0, kw_only=True)
    certified: bool = field(default=True, kw_only=True)
    n_iter: int = field(default=1, kw_only=True)
    estimated: bool = field(default=False, kw_only=True)
    log_z_upper: float | None = field(default=None, kw_only=True)
    log_z_lower: float | None = field(default=None, kw_only=True)
    log_z_estimate_lower: float | None = field(default=None, kw_only=True)
    log_z_estimate_upper: float | None = field(default=None, kw_only=True)
    confidence: float | None = field(default=None, kw_only=True)
    info: dict = field(default_factory=dict, kw_only=True)
    n_oracle_calls = 0

    def __post_init__(self):
        for bound in ("log_z_upper", "log_z_lower"):
            if getattr(self, bound) is None:
                object.__setattr__(self, bound, self.log_z)

    @property
    def log_z_estimate(self):
        """The sampled estimate of log Z (``log_z`` when ``estimated``; else None), as
        `fwcore.MarginalResult` names it."""
        return self.log_z if self.estimated else None

    def summary_rows(self):
        """The repr's rows, the sampled estimate and its interval on one, after log_z's."""
        folded = ("log_z_estimate_lower", "log_z_estimate_upper", "confidence")
        rows = [(name, text) for name, text in super().summary_rows() if name not in folded]
        estimate = "None"
        if self.log_z_estimate_lower is not None and self.log_z is not None:
            estimate = (f"{self.log_z:.10g}, in [{self.log_z_estimate_lower:.10g}, "
                        f"{self.log_z_estimate_upper:.10g}] with probability "
                        f"{self.confidence:g}")
        at = [name for name, _ in rows].index("log_z") + 1
        return rows[:at] + [("log_z_estimate", estimate)] + rows[at:]

    @property
    def message(self):
        """How it ended; for an ``estimated`` answer, what is certified (the interval on
        log Z) and what is estimated (log Ẑ, its sampled interval, the samples or table)."""
        if not self.estimated:
            return Result.message.fget(self)
        why = {Status.MAX_TIME: "the samples ran to the time limit",
               Status.INTERRUPTED: "Ctrl-C: the samples drawn so far"}.get(
                   self.status, "the bounds stopped tightening; every sample asked for drawn")
        certified = (f"{self.log_z_lower:.10g} <= log Z <= {self.log_z_upper:.10g} "
                     f"(certified, width {self.log_z_upper - self.log_z_lower:.3g})")
        n = self.info.get("n_samples", 0)
        if self.log_z is None:
            return f"{self.status.value}: no sample drawn; {certified}"
        return (f"{self.status.value}: {why}; {certified}; estimated from {n} importance "
                f"samples (effective {self.info.get('ess', 0):.3g}): log Z ~ "
                f"{self.log_z:.10g}, in [{self.log_z_estimate_lower:.10g}, "
                f"{self.log_z_estimate_upper:.10g}] with probability {self.confidence:g} "
                "(sampled)")


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class QueryResult(Answer):
    """The joint distribution of ``variables`` (indices) given the evidence:
    ``table[x_1, ..., x_k]`` = P(x_Q | e), axes in the order of ``variables`` (an
    estimate when ``estimated``: the weighted samples' frequencies; None when no sample
    was drawn within max_time); their
    ``names`` and ``states`` when the model has them; ``log_z``: log of the evidence's
    mass, log Σ_x p̃(x) λ(x) (a Bayesian network's log P(e)). Exact, or estimated from
    weighted samples (`Answer`)."""

    table: np.ndarray
    variables: tuple
    names: tuple | None = None
    states: tuple | None = None

    def p(self, **assignment: Any) -> float:
        """P(the query variables at these states | e), each variable by name (its state
        by name or index): ``res.p(Rain="yes", WetGrass=1)``."""
        if self.names is None:
            raise ValueError("the model has no names: index res.table by state instead")
        if set(assignment) != set(self.names):
            raise ValueError(f"give a state for each of {self.names}; got {sorted(assignment)}")
        index = []
        for k, v in enumerate(self.names):
            s = assignment[v]
            named = self.states[k] if self.states is not None else ()
            index.append(named.index(s) if s in named else int(s))
        return float(self.table[tuple(index)])


#: samples of a query past exact reach without max_time
N_SAMPLES = 2**14


@validate_params({"method": Options("auto", "exact", "wmb"), "memory_limit": MEMORY,
                  "max_time": TIME, "n_samples": [Interval(1, integer=True), None],
                  "seed": SEED, "confidence": CONFIDENCE_LEVEL},
                 unchecked=("model", "variables", "evidence"))
def query(model: PairwiseMRF | FactorGraph, variables, evidence=None, *,
          method: str = "auto", max_time: float | None = None,
          memory_limit: float = MEMORY_LIMIT, n_samples: int | None = None,
          seed: int | None = None, confidence: float = 0.95) -> QueryResult:
    """The joint distribution P(Q | e) of the query ``variables`` (names or indices) given
    ``evidence`` (`fwcore.apply_evidence`: hard states, or likelihood vectors for soft
    evidence, by name or index). ``method``: "exact" (constrained variable elimination,
    the module docstring; past exact reach a ValueError names the model's size), "wmb"
    (estimated from weighted mini-bucket's importance samples: the table is the
    self-normalised weighted frequencies of Q, ``estimated``; log P(e) has certified
    bounds ``log_z_lower`` / ``log_z_upper``, the samples' estimate ``log_z`` and its
    interval at ``confidence``), "auto" (exact where elimination fits ``memory_limit``,
    else "wmb"). ``n_samples`` (None: `N_SAMPLES`, or as many as ``max_time`` allows)
    and ``seed`` (NumPy's generator) are the sampler's; ``max_time`` (seconds) bounds it
    (exact elimination runs to the end). ``memory_limit`` (bytes) bounds the elimination
    (or weighted mini-bucket's stages) and the joint table."""
    t0 = time.perf_counter()
    if evidence:
        model = apply_evidence(model, evidence)
    q = variables_of(model, variables)
    pm = pairwise_form(model)
    card = [int(model.card[v]) for v in q]
    if 8 * math.prod(card) > memory_limit:
        raise ValueError(f"the joint table of the {len(q)} query variables has "
                         f"{math.prod(card)} entries, over memory_limit={memory_limit:.0f} "
                         "bytes: ask for fewer variables at once")
    names = tuple(model.names[v] for v in q) if model.names else None
    states = tuple(model.states[v] for v in q) if model.states else None
    try:
        if method == "wmb":
            raise PastReach("weighted samples asked for")
        tree = MessageTree(pm, q, memory_limit=memory_limit, what="a joint query")
    except PastReach:
        if method == "exact":
            raise
        return _estimated_query(model, q, card, names, states, t0, max_time, memory_limit,
                                n_samples, seed, confidence)
    log_z = tree.up()
    if log_z == -np.inf:
        raise ValueError(INFEASIBLE if not evidence else
                         "the evidence has probability zero: " + INFEASIBLE)
    log_p = joint_log_table(tree, q)
    top = log_p.max()
    table = np.exp(log_p - top)
    table /= table.sum()
    seconds = time.perf_counter() - t0
    return QueryResult(table=table, variables=q, log_z=float(log_z), method="exact",
                       time=seconds, names=names, states=states, info=tree.info,
                       trace=Trace([Record(iteration=1, time=seconds, primal=float(log_z),
                                           gap=0.0, bound=float(log_z))]))


def _estimated_query(model, q, card, names, states, t0, max_time, memory_limit, n_samples,
                     seed, confidence):
    """`query`'s answer from importance samples (`importance_answer`): the weighted
    frequencies of the query's joint states, normalised (None when no sample was drawn
    within ``max_time``)."""
    if n_samples is None and max_time is None:
        n_samples = N_SAMPLES
    x, weights, fields = importance_answer(model, n_samples, seed, max_time, memory_limit,
                                           confidence, keep=list(q))
    table = None
    if len(weights):
        flat = np.ravel_multi_index(tuple(x.T), card)
        table = np.bincount(flat, weights=weights, minlength=math.prod(card)).reshape(card)
        table /= table.sum()
    log_z = fields.pop("log_z")
    seconds = time.perf_counter() - t0
    record = Record(iteration=1, time=seconds,
                    primal=fields["log_z_upper"] if log_z is None else log_z,
                    gap=fields["gap"], bound=fields["log_z_upper"], score=fields["log_z_lower"])
    return QueryResult(table=table, variables=q, log_z=log_z, method="wmb/importance",
                       time=seconds, names=names, states=states, trace=Trace([record]),
                       **fields)


def importance_answer(model, n, seed, max_time, memory_limit, confidence, keep=None):
    """Weighted mini-bucket's importance samples of ``model`` (evidence applied;
    `fwcore.marginals.wmb.importance_samples`; ``n`` None: until ``max_time``):
    (labellings int32[k, n_vars] on the user's variables, or of the variables ``keep``,
    weights W_k / Ẑ (mean 1: E_p g ≈ mean(weights · g(x))), the `Answer` fields:
    ``log_z`` = log Ẑ (None with no sample), the certified bounds, the sampled interval,
    ``estimated``, the status, ``info``)."""
    draws = importance_samples(model, n, max_time=max_time, memory_limit=memory_limit,
                               seed=seed, keep=keep)
    k = len(draws.log_w)
    status = draws.status
    if (n is None or k < n) and not draws.exact:      # the draws ran to the deadline
        status = Status.INTERRUPTED if status is Status.INTERRUPTED else Status.MAX_TIME
    elif status is Status.CONVERGED and not draws.exact:
        status = Status.STALLED      # the passes stopped tightening: nothing proves log Z
    fields = dict(status=status, gap=draws.log_z_upper - draws.log_z_lower,
                  log_z_upper=draws.log_z_upper, log_z_lower=draws.log_z_lower,
                  estimated=not draws.exact, confidence=confidence,
                  info=dict(n_samples=k, log_z_proposal=draws.log_z_proposal))
    if draws.exact:
        fields.update(gap=0.0, log_z=draws.log_z_upper)
    if k == 0:
        return draws.x.astype(np.int32), np.zeros(0), dict(fields, log_z=fields.get("log_z"))
    tally = Tally(draws.log_z_proposal)
    tally.add(draws.log_w)
    lower, upper = tally.interval(confidence, draws.log_z_lower, draws.log_z_upper)
    log_z = min(max(tally.log_mean, draws.log_z_lower), draws.log_z_upper)
    fields.setdefault("log_z", log_z)
    fields.update(log_z_estimate_lower=lower, log_z_estimate_upper=upper)
    fields["info"]["ess"] = tally.ess
    weights = np.exp(draws.log_w - tally.log_mean)
    return draws.x.astype(np.int32), weights, fields


def joint_log_table(tree: MessageTree, q) -> np.ndarray:
    """log p̃(x_Q) over the last variables ``q`` of ``tree``'s order (after its all-sum
    up pass), axes in the order of ``q``: Σ_{v ∈ Q} (θ_v, v's owned edges, the messages
    of v's children outside Q), each broadcast over the table."""
    model = tree.model
    axis = {v: k for k, v in enumerate(q)}
    shape = [int(model.card[v]) for v in q]
    out = np.zeros(shape)

    def add(table, scope):
        order = np.argsort([axis[u] for u in scope])
        view = np.transpose(table, order) if len(scope) > 1 else table
        sizes = [1] * len(q)
        for u in scope:
            sizes[axis[u]] = int(model.card[u])
        np.add(out, view.reshape(sizes), out=out)

    in_q = np.zeros(model.n_vars, dtype=bool)
    in_q[list(q)] = True
    for v in q:
        add(model.unary(v), (v,))
        for e in tree.own_edge[tree.own_start[v]:tree.own_start[v + 1]]:
            add(model.pairwise(e), tuple(map(int, model.edges[e])))
        for c in tree.ch_var[tree.ch_start[v]:tree.ch_start[v + 1]]:
            if not in_q[c]:
                add(tree.message(c), tree.sep[c])
    return out
