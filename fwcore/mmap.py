"""Marginal MAP: the most likely joint state of some variables, the others summed out,

    q* = argmax_q Σ_r p(q, r | e)

(the UAI competitions' and Merlin's MMAP task: ``--query-file``).

Exact by constrained variable elimination (Dechter 1999, bucket elimination for MAP; Park
& Darwiche 2004): the summed variables are eliminated first, then the query variables by
max-product, whose maximisers are read back in reverse order
(`fwcore.queries.MessageTree`, `fwcore._query.up_pass` and ``backtrack``). The order is
the exact planner's with the query variables moved to the end, so its cliques can be
larger than plain elimination's (the constrained induced width).

Past exact reach (or past its share of ``max_time``), anytime best-first branch and bound
over the query variables (Park & Darwiche 2003; Marinescu, Dechter & Ihler 2014 search
the same space with mixed mini-bucket heuristics): a node assigns the first k query
variables; the model conditioned on them (`fwcore.clamp`, smaller and of lower width)
gives the node's certified upper bound on the best log-mass below it,

    max_{q_B} log Σ_r exp score(q_A, q_B, r) ≤ log Σ_{q_B, r} exp score(q_A, q_B, r),

the right side bounded by weighted mini-bucket (Liu & Ihler 2011) or computed exactly
where the conditioned model's constrained elimination fits (then the node is solved:
its best completion and log-mass are exact). The sum over the unassigned query
variables costs at most log |Q_B| nats over the max, so the bound tightens as the search
goes deeper. A leaf (all of Q assigned) has its log-mass bounded on both sides (weighted
mini-bucket's interval, exact where elimination fits) and estimated by importance
sampling. Nodes whose bound is at most the best certified log-mass found are pruned; the
global upper bound is the largest bound still open. The answer is the leaf of best
sampled estimate (its certified lower bound where there is no estimate), its ``score``
the certified lower bound on its log-mass; ``converged`` when that score is within
``tol`` of the global upper bound.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .checks import INFEASIBLE, MEMORY, SEED, TIME, Interval, Options, validate_params
from .factor_graph import FactorGraph
from .io.uai import apply_evidence
from .labelling import feasible_labelling, node_argmax
from .loop import Deadline
from .marginals.condition import clamp
from .marginals.wmb import weighted_mini_bucket
from .model import PairwiseMRF
from .queries import MEMORY_LIMIT, MessageTree, PastReach, pairwise_form, variables_of
from .results import MapResult, Record, Result, Status, Trace
from .views import fixed_by_evidence

__all__ = ["MMAPResult", "infer_mmap"]


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class MMAPResult(MapResult):
    """A marginal MAP answer: ``assignment`` (int64), the states of ``variables``
    (indices, in their order); ``score`` = log Σ_r exp(score(q*, r)) with the evidence,
    the log-mass of the answer (exact, or a certified lower bound on it past exact reach,
    its sampled estimate in ``info["score_estimate"]``); ``upper_bound`` the certified
    bound on the maximum of that (= score when exact); ``log_z`` (the log-mass of all
    states, so ``probability`` = P(q* | e); None past exact reach); ``names`` and
    ``states`` of the query variables when the model has them."""

    variables: tuple = ()
    log_z: float | None = None
    names: tuple | None = None
    states: tuple | None = None

    @property
    def message(self):
        """How it ended; past exact reach, what is certified (the answer's log-mass at
        least ``score``, the best one's at most ``upper_bound``) and what is sampled."""
        text = Result.message.fget(self)
        if self.method == "exact":
            return text
        estimate = self.info.get("score_estimate")
        return (f"{text}; the answer's log-mass >= {self.score:.10g} (certified)"
                + ("" if estimate is None else f", ~ {estimate:.10g} (sampled)")
                + f"; the best answer's <= {self.upper_bound:.10g} (certified)")

    @property
    def probability(self):
        """P(q* | e) = exp(score − log Z) (None without log Z)."""
        return None if self.log_z is None else math.exp(self.score - self.log_z)

    def named(self):
        """``{name: state}`` of the answer: names (or indices) of the query variables,
        states by name when the model has state names."""
        keys = self.names if self.names is not None else self.variables
        if self.states is None:
            return dict(zip(keys, self.assignment.tolist()))
        return {k: s[x] for k, s, x in zip(keys, self.states, self.assignment.tolist())}


#: method "auto" under ``max_time``: exact elimination gets this share of it, the search
#: the rest when it does not finish
EXACT_SHARE = 0.5
#: the search: each node's bound gets this share of the time left, at least `MIN_NODE_TIME`
#: seconds (weighted mini-bucket's first bound comes from its first pass); without max_time
#: `NODE_TIME` (weighted mini-bucket without a limit ran its lower bounds for 23 s a node
#: on a 14x14 grid at 4 MB)
NODE_SHARE, MIN_NODE_TIME, NODE_TIME = 0.1, 0.05, 1.0
#: the root's share of ``max_time`` (its order search and first pass are the longest:
#: Promedus_17's first pass took over 1 s; a node's bound is never looser than its
#: parent's)
ROOT_SHARE = 0.3
#: the least ``memory_limit`` weighted mini-bucket takes
WMB_MEMORY = 2**16
#: a leaf whose bound is the largest open one is bounded again with twice the time at most
#: this many times (weighted mini-bucket's bound keeps tightening by small amounts)
REFINES = 3


@validate_params({"method": Options("auto", "exact", "search"), "max_time": TIME,
                  "memory_limit": MEMORY, "tol": Interval(0.0), "seed": SEED},
                 unchecked=("model", "variables", "evidence"))
def infer_mmap(model: PairwiseMRF | FactorGraph, variables, evidence=None, *,
               method: str = "auto", max_time: float | None = None,
               memory_limit: float = MEMORY_LIMIT, tol: float = 1e-6,
               seed: int | None = None) -> MMAPResult:
    """Marginal MAP of the query ``variables`` (names or indices) given ``evidence``
    (`fwcore.apply_evidence`: hard or soft), the other variables summed out (the module
    docstring). ``method``: "exact" (constrained elimination; past exact reach a
    ValueError names the model's size), "search" (the anytime branch and bound),
    "auto" (exact where its elimination fits ``memory_limit``, in `EXACT_SHARE` of
    ``max_time``, else the search). ``max_time`` (seconds): the best answer so far
    (status ``max_time``; Ctrl-C: ``interrupted``), never an error; an exact elimination
    cut by it goes on as the search in the time left. ``tol``: the gap at which the
    search stops (``converged``). ``memory_limit`` (bytes) bounds the elimination and
    weighted mini-bucket's stages; ``seed`` its samples."""
    t0 = time.perf_counter()
    deadline = Deadline(max_time)
    if evidence:
        model = apply_evidence(model, evidence)
    q = variables_of(model, variables)
    names = tuple(model.names[v] for v in q) if model.names else None
    states = tuple(model.states[v] for v in q) if model.states else None
    tree = None
    if method != "search":
        try:
            tree = MessageTree(pairwise_form(model), q, n_max=len(q), memory_limit=memory_limit,
                               what="marginal MAP")
        except PastReach:
            if method == "exact":
                raise
    if tree is not None:
        share = deadline if method == "exact" else deadline.share(EXACT_SHARE)
        try:
            score = tree.up(share)
            if score == -np.inf:
                raise ValueError(INFEASIBLE)
            x = tree.backtrack()[list(q)]
            log_z = tree.up(share, maximise=False)
        except TimeoutError:
            pass
        else:
            seconds = time.perf_counter() - t0
            return MMAPResult(
                assignment=x, score=float(score), upper_bound=float(score),
                status=Status.CONVERGED, time=seconds, method="exact", n_oracle_calls=0,
                info=tree.info, variables=q, log_z=float(log_z), names=names, states=states,
                trace=Trace([Record(iteration=1, time=seconds, primal=float(score), gap=0.0,
                                    bound=float(score), score=float(score))]))
    search = _Search(model, q, deadline, memory_limit, tol, seed, t0)
    status = search.run()
    best, upper = search.best, search.upper()
    if upper == -math.inf:
        raise ValueError(INFEASIBLE)
    if best is None:                    # Ctrl-C before the first labelling
        raise KeyboardInterrupt
    seconds = time.perf_counter() - t0
    return MMAPResult(
        assignment=np.asarray(best.states, dtype=np.int64), score=best.lower,
        upper_bound=None if upper == math.inf else upper, status=status, time=seconds,
        method="search",
        n_iter=search.n_nodes, n_oracle_calls=0, variables=q, names=names, states=states,
        info=dict(score_estimate=best.estimate, nodes=search.n_nodes,
                  exact_nodes=search.n_exact),
        trace=Trace(search.records))


class _Node(NamedTuple):
    """A node of the search: the states of the first ``depth`` query variables
    (``states``, over all of Q once a leaf or solved), its certified ``upper`` bound on
    the best log-mass below it, and at a leaf (or a node solved exactly) the certified
    ``lower`` bound on its log-mass and its ``estimate``; ``exact`` when both are the
    value; ``time`` the seconds its bound was given, ``refined`` how many times a leaf's
    was given more (`_Search.refine`)."""

    upper: float
    depth: int
    states: tuple
    lower: float = -math.inf
    estimate: float | None = None
    exact: bool = False
    time: float = 0.0
    refined: int = 0

    @property
    def key(self):
        return self.estimate if self.estimate is not None else self.lower


class _Cut(Exception):
    """The deadline passed while a node's children were bounded."""


class _Search:
    """Best-first branch and bound over the query variables (module docstring)."""

    def __init__(self, model, q, deadline, memory_limit, tol, seed, t0):
        self.model, self.deadline, self.tol, self.seed, self.t0 = model, deadline, tol, seed, t0
        self.memory_limit = memory_limit
        self.hard = fixed_by_evidence(model)
        self.q = q
        self.free = [k for k, v in enumerate(q) if v not in self.hard]
        self.fixed_q = {k: self.hard[v] for k, v in enumerate(q) if v in self.hard}
        self.open, self.closed_upper = [], -math.inf
        self.best, self.best_lower = None, -math.inf
        self.n_nodes = self.n_exact = 0
        self.records, self.ticket, self.guess = [], itertools.count(), None
        self.rooted, self.cut = False, None         # the root bounded; a node Ctrl-C cut

    def upper(self):
        """The certified bound on the best log-mass: the largest still open, closed or
        found (inf before the root is bounded)."""
        if not self.rooted:
            return math.inf
        top = -self.open[0][0] if self.open else -math.inf
        return max(top, self.closed_upper, self.best_lower)

    def run(self):
        """The search until it converges, the deadline or Ctrl-C; returns the status. A
        first answer before any bound: each variable at its best unary state, repaired to
        a feasible labelling (`fwcore.labelling.feasible_labelling`), whose score is a
        certified lower bound on its query states' log-mass."""
        try:
            pm = pairwise_form(self.model)
            x = feasible_labelling(pm, pm.theta, node_argmax(pm, pm.theta))
            self.offer(_Node(math.inf, len(self.free), tuple(int(x[self.q[k]])
                                                             for k in self.free),
                             float(pm.score(x))))
            left = self.deadline.seconds_left()
            root = self.evaluate((), None if left is None else
                                 max(MIN_NODE_TIME, ROOT_SHARE * left))
            self.push(root)
            self.rooted = True
            if self.best is None and root.upper > -math.inf:
                self.dive(root)
            while self.open:
                if self.gap_closed():
                    return Status.CONVERGED
                if self.deadline.passed():
                    return Status.MAX_TIME
                _, _, node = heapq.heappop(self.open)
                if node.upper <= self.best_lower:
                    continue
                if node.depth == len(self.free):
                    self.refine(node)
                    continue
                self.expand(node)
        except KeyboardInterrupt:
            if self.cut is not None:               # the bounds of a node Ctrl-C cut short
                self.push(self.cut)
                self.rooted = self.rooted or self.cut.states == ()
            return Status.INTERRUPTED
        return Status.CONVERGED if self.gap_closed() else Status.STALLED

    def expand(self, node):
        """The children of ``node`` (the next free query variable's states), pushed once
        all are bounded: when the deadline or Ctrl-C cuts the expansion, ``node`` goes
        back (its bound covers the children not bounded)."""
        k = self.free[node.depth]
        children = []
        try:
            for s in range(int(self.model.card[self.q[k]])):
                if self.deadline.passed():
                    raise _Cut
                child = self.evaluate(node.states + (s,))
                children.append(child._replace(upper=min(child.upper, node.upper)))
        except (_Cut, KeyboardInterrupt) as cut:
            self.push(node)
            if isinstance(cut, KeyboardInterrupt):
                raise
            return
        for child in children:
            self.push(child)

    def gap_closed(self):
        return self.best is not None and self.best.lower >= self.upper() - self.tol

    def dive(self, root):
        """A first answer: each query variable at its most likely state under the root's
        marginals (kept in ``guess``), evaluated as a leaf."""
        if self.guess is not None:
            leaf = self.evaluate(tuple(self.guess))
            self.push(leaf._replace(upper=min(leaf.upper, root.upper)))

    def refine(self, leaf):
        """A leaf whose bound is still the largest: bounded again with twice its time (at
        most the time left); closed when that tightens it by at most ``tol``, or after
        `REFINES` times."""
        left = self.deadline.seconds_left()
        seconds = 2 * leaf.time if left is None else max(MIN_NODE_TIME, min(2 * leaf.time, left))
        again = None if leaf.refined >= REFINES else self.evaluate(leaf.states, seconds)
        if again is None or again.upper >= leaf.upper - self.tol:
            self.closed_upper = max(self.closed_upper, leaf.upper if again is None else
                                    min(leaf.upper, again.upper))
            return
        self.push(again._replace(upper=min(again.upper, leaf.upper),
                                 lower=max(again.lower, leaf.lower), refined=leaf.refined + 1))

    def push(self, node):
        """Open ``node`` (a leaf is offered as the answer first; an exact one is closed)."""
        if node.upper == -math.inf:
            return
        if node.depth == len(self.free):
            self.offer(node)
            if node.exact:
                self.closed_upper = max(self.closed_upper, node.upper)
                return
        heapq.heappush(self.open, (-node.upper, next(self.ticket), node))

    def offer(self, leaf):
        """A leaf's states as the answer when its estimate (else its lower bound) is the
        best; the best certified lower bound kept for pruning."""
        self.best_lower = max(self.best_lower, leaf.lower)
        key = leaf.key
        if self.best is None or (key is not None and (self.best.key is None or
                                                      key > self.best.key)):
            self.best = leaf._replace(states=self.full(leaf.states))
        if self.rooted:
            self.records.append(Record(iteration=self.n_nodes,
                                       time=time.perf_counter() - self.t0,
                                       primal=self.best.lower,
                                       gap=self.upper() - self.best.lower,
                                       bound=self.upper(), score=self.best.lower))

    def full(self, states):
        """The states of all of Q (in its order) from those of the free ones."""
        out = dict(self.fixed_q)
        out.update(zip(self.free, states))
        return tuple(out[k] for k in range(len(self.q)))

    def evaluate(self, states, seconds=None):
        """The `_Node` of the free query variables' first states ``states``: the model
        conditioned on them (and on the evidence), exact where its constrained
        elimination fits (the node is then solved: a leaf over all of Q), else weighted
        mini-bucket's bounds in ``seconds`` (None: `NODE_SHARE` of the time left, or
        `NODE_TIME`; an exact elimination it cuts gives way to weighted mini-bucket)."""
        self.n_nodes += 1
        assigned = dict(self.hard)
        assigned.update({self.q[k]: s for k, s in zip(self.free, states)})
        smaller, kept, constant = clamp(self.model, assigned)
        if constant == -math.inf:
            return _Node(-math.inf, len(states), states)
        rest = self.free[len(states):]
        where = {int(v): k for k, v in enumerate(kept)}
        rest_vars = [where[self.q[k]] for k in rest]
        left = self.deadline.seconds_left()
        if seconds is None:
            seconds = NODE_TIME if left is None else max(MIN_NODE_TIME, NODE_SHARE * left)
        if smaller.n_vars == 0:
            self.n_exact += 1
            return _Node(constant, len(self.free), states, constant, constant, True)
        pm = pairwise_form(smaller)
        try:
            tree = MessageTree(pm, rest_vars, n_max=len(rest_vars),
                               memory_limit=self.memory_limit, what="marginal MAP")
        except PastReach:
            tree = None
        if tree is not None:
            try:
                value = tree.up(Deadline(seconds))
            except TimeoutError:
                pass
            else:
                self.n_exact += 1
                value += constant
                done = states + tuple(int(x) for x in tree.backtrack()[rest_vars])
                return _Node(value, len(self.free), done, value, value, True)
        return self.bounded(smaller, constant, states, seconds, kept)

    def bounded(self, smaller, constant, states, seconds, kept):
        """Weighted mini-bucket's node: its upper bound; at a leaf its interval and
        estimate; at the root the guess of `dive` from its marginals."""
        try:
            res = weighted_mini_bucket(smaller, max_time=seconds,
                                       memory_limit=max(self.memory_limit, WMB_MEMORY),
                                       seed=self.seed)
        except ValueError as err:
            if INFEASIBLE not in str(err):
                raise
            return _Node(-math.inf, len(states), states)
        upper = constant + res.log_z_upper
        if res.status is Status.INTERRUPTED:      # its bound holds: kept by `run`
            self.cut = _Node(upper, len(states), states)
            raise KeyboardInterrupt
        if len(states) < len(self.free):
            if states == ():
                where = {int(v): k for k, v in enumerate(kept)}
                self.guess = [int(np.argmax(res.node_marginals[where[self.q[k]]]))
                              for k in self.free]
            return _Node(upper, len(states), states, time=seconds)
        estimate = None if res.log_z_estimate is None else constant + res.log_z_estimate
        exact = res.log_z_lower == res.log_z_upper
        if exact:
            self.n_exact += 1
        return _Node(upper, len(states), states, constant + res.log_z_lower, estimate, exact,
                     seconds)
