"""Perturb-and-MAP: log Z and marginals from MAP calls on randomly perturbed models, the
baseline of Barrier FW Fig. 1(e, f) and App. G (Hazan & Jaakkola 2012, Sec. 4.1;
Papandreou & Yuille 2011 for marginals from sample frequencies)."""
from __future__ import annotations

import itertools
import math
import os
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..checks import (EXECUTOR, SEED, TIME, Interval, Options, check_feasible, check_model,
                      checked_inside, validate_params)
from ..factor_graph import FactorGraph
from ..loop import (Callbacks, Deadline, Guard, Stopping, TimeUp, budget_status,
                    run_loop)
from ..model import PairwiseMRF, concat_ranges
from ..oracles.base import build_oracle
from .batch import DASK_CLIENT, dask_client
from ..results import Record, Result, Status, Trace
from .registry import register_method
from .result import MarginalResult

__all__ = ["PerturbResult", "perturb_and_map"]

_PARAMS = {
    "n_samples": Interval(1, integer=True),
    "inflation": Interval(1, integer=True),
    "marginals": [Options("condition", "samples"), None],
    "seed": SEED,
    "executor": [EXECUTOR, DASK_CLIENT, None],
    "max_time": TIME,
}


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class PerturbResult(Result):
    """A Perturb-and-MAP estimate (`perturb_and_map`).

    ``log_z`` = mean of the ``samples`` (perturbed MAP values of the inflated model, one
    per MAP call; None when none finished), ``log_z_stderr`` their standard error (None
    below two samples), ``node_marginals`` / ``edge_marginals`` (lists as in
    `MarginalResult`; None when not asked for, edge marginals only with
    ``marginals="samples"``; None too when the time or Ctrl-C stopped the run before the
    samples, or every conditioned estimate, had one value), ``certified`` (always False:
    the value is a random estimate) and
    ``gap`` (None: no certificate), ``status`` (never ``converged``: ``max_iter`` when
    every sample was drawn, ``max_time`` or ``interrupted`` for the best so far),
    ``n_iter`` (the samples of the log Z estimate), ``n_oracle_calls`` (all MAP calls),
    ``inflation``, ``time`` (s), ``method`` and ``trace`` (one `Record` per sample of the
    log Z estimate; ``primal`` is the running mean)."""

    log_z: float | None
    log_z_stderr: float | None
    samples: np.ndarray
    node_marginals: list | None
    edge_marginals: list | None
    status: Status
    n_iter: int
    n_oracle_calls: int
    inflation: int
    time: float
    method: str
    trace: Trace = Trace()
    certified: bool = False
    gap: float | None = None


#: tasks per core of this machine the estimates are split into on an executor
TASKS_PER_CORE = 4
#: the largest count model (`_Inflated`: its count vectors and tables) built, in entries
MAX_INFLATED_ENTRIES = 2**26
#: the entries (work) of a block of `_Inflated`'s tables between two reads of the deadline
_BLOCK_ENTRIES = 2**20
#: `_best_assignment`: the most orders of the copies tried for every count vector at once
#: (m <= 6), and the count vectors solved one by one between two reads of the deadline
_MAX_ORDERS = 720
_ROWS_PER_READ = 256


class _Inflated:
    """Hazan & Jaakkola's inflated model (Sec. 4.1, as Barrier FW App. G and the paper's
    code build it): m copies of each variable i, each with θ_i/m plus its own Gumbel noise
    γ_ik/m, and every copy of i joined to every copy of j by θ_ij/m². Its score is
    Σ_i <θ_i, q_i> + Σ_ij q_iᵀ θ_ij q_j + (1/m) Σ_ik γ_ik(x_ik), q_i = c_i/m the states'
    frequencies among the copies of i. Only the noise term depends on which copies take
    which state, so the maximum is taken exactly over the counts: ``graph`` has one
    variable per variable of the model whose states are the count vectors c
    (C(m+k-1, k-1) of them for k states), unary <θ_i, c>/m + G_i(c)/m with G_i(c) the
    best assignment of the copies' noise to the counts
    (`scipy.optimize.linear_sum_assignment`), and pairwise c_iᵀ θ_ij c_j / m².
    That model has n variables where the inflated one has n m with m² times the edges
    (a clique at θ = 8, m = 5: toulbar2 took 47 s per call on the inflated graph).
    Built in blocks of at most `_BLOCK_ENTRIES` table entries, each after reading the
    ``deadline`` (`TimeUp` once it passed)."""

    def __init__(self, model, m, deadline):
        self.model, self.m = model, m
        card, edges = model.card, model.edges
        states = {k: math.comb(m + k - 1, k - 1) for k in set(card.tolist())}
        n_states = np.array([float(states[k]) for k in card.tolist()])  # float: no overflow
        sizes = np.concatenate([n_states, n_states[edges[:, 0]] * n_states[edges[:, 1]]])
        size = float(sizes.sum() + n_states @ card)  # tables and count vectors
        if size > MAX_INFLATED_ENTRIES:
            k = int(model.card.max())
            raise ValueError(
                f"inflation={m} needs {size:.3g} table entries (a {k}-label variable has "
                f"{states[k]:.3g} count vectors of its {m} copies), over "
                f"{MAX_INFLATED_ENTRIES:.3g}; use a smaller inflation (inflation=1 perturbs "
                f"the model itself)")
        counts = {k: _compositions(k, m) for k in states}
        self.C = [counts[k] for k in card.tolist()]
        off = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))])
        theta = np.empty(int(off[-1]))
        for k, c in counts.items():  # the tables of every variable with k states at once
            for idx in _blocks(np.flatnonzero(card == k), len(c) * k, deadline):
                rows = model.theta[model.node_off[idx][:, None] + np.arange(k)]
                theta[off[idx][:, None] + np.arange(len(c))] = (
                    _pairs(c, rows[:, :, None], np.ones((1, 1)))[:, :, 0] / m)
        pair_cards = np.stack([card[edges[:, 0]], card[edges[:, 1]]], axis=1)
        for a, b in np.unique(pair_cards, axis=0).tolist():
            same = np.flatnonzero((pair_cards[:, 0] == a) & (pair_cards[:, 1] == b))
            size = len(counts[a]) * len(counts[b])
            for es in _blocks(same, size * (1 + a * b), deadline):
                tables = model.theta[model.edge_off[es][:, None] + np.arange(a * b)]
                values = _pairs(counts[a], tables.reshape(-1, a, b), counts[b]) / (m * m)
                theta[off[model.n_vars + es][:, None] + np.arange(size)] = (
                    values.reshape(len(es), -1))
        self.graph = PairwiseMRF.from_flat(n_states.astype(np.int64), edges, theta)

    def perturbed(self, scores, noise, deadline=None):
        """``scores`` (the graph's layout) plus the noise terms G_i(c)/m for ``noise``, a
        list of (m, card_i) arrays (None: that variable is not perturbed), reading the
        ``deadline`` (`_best_assignment`)."""
        out = scores.copy()
        g = self.graph
        noisy = [i for i, gamma in enumerate(noise) if gamma is not None]
        binary = [i for i in noisy if self.model.card[i] == 2]
        if binary:  # G(c) = Σ_k γ_k0 + the c_1 largest gains γ_k1 − γ_k0, all at once
            gamma = np.stack([noise[i] for i in binary])
            gains = -np.sort(gamma[:, :, 0] - gamma[:, :, 1], axis=1)
            top = np.concatenate([np.zeros((len(binary), 1)), np.cumsum(gains, axis=1)], axis=1)
            ones = self.C[binary[0]][:, 1].astype(np.int64)  # c_1 of each count row
            best = gamma[:, :, 0].sum(axis=1)[:, None] + top[:, ones]
            out[g.node_off[binary][:, None] + np.arange(ones.size)] += best / self.m
        for i in noisy:
            if self.model.card[i] != 2:
                best = _best_assignment(noise[i], self.C[i], deadline)
                out[g.node_off[i]:g.node_off[i + 1]] += best / self.m
        return out

    def fold(self, x):
        """The point (q_i, q_i q_jᵀ) of the model's layout for counts ``x``."""
        q = [self.C[i][x[i]] / self.m for i in range(self.model.n_vars)]
        return np.concatenate([*q, *(np.outer(q[i], q[j]).ravel() for i, j in self.model.edges)])


def _blocks(items, cost, deadline):
    """``items`` in blocks of at most `_BLOCK_ENTRIES` / ``cost`` (at least one item), each
    given once the ``deadline`` is read (`TimeUp` once it passed)."""
    per = max(1, _BLOCK_ENTRIES // max(int(cost), 1))
    for start in range(0, len(items), per):
        deadline.left()
        yield items[start:start + per]


def _compositions(k, m):
    """Every count vector of m copies over k states, shape (C(m+k-1, k-1), k), in the
    order of ``itertools.combinations_with_replacement(range(k), m)`` (built a copy at a
    time: each sorted tuple extended by every state from its last one on)."""
    tuples = np.zeros((1, 0), dtype=np.int64)
    for _ in range(m):
        last = tuples[:, -1] if tuples.shape[1] else np.zeros(len(tuples), dtype=np.int64)
        tuples = np.concatenate([np.repeat(tuples, k - last, axis=0),
                                 concat_ranges(last, k - last)[:, None]], axis=1)
    rows = np.repeat(np.arange(len(tuples)), m) * k + tuples.ravel()
    return np.bincount(rows, minlength=len(tuples) * k).reshape(-1, k).astype(float)


def _pairs(ci, tables, cj):
    """ci @ t @ cjᵀ for each table t of ``tables`` (E, a, b), shape (E, S, T); -inf where a
    count pair uses a -inf entry (never 0 * -inf)."""
    bad = np.isneginf(tables)
    value = ci @ np.where(bad, 0.0, tables) @ cj.T
    forbidden = (ci > 0).astype(float) @ bad.astype(float) @ (cj > 0).T.astype(float)
    return np.where(forbidden > 0, -np.inf, value)


def _best_assignment(gamma, counts, deadline=None):
    """G(c) = max over assignments of the m copies to states with counts c of
    Σ_k gamma[k, x_k], for each row c of ``counts``: the best of the m! orders of the
    copies over each row's slots, vectorised in blocks of `_BLOCK_ENTRIES` when m! <=
    `_MAX_ORDERS`, else one `scipy.optimize.linear_sum_assignment` per row (about 90 us);
    the ``deadline`` (None: never) is read between blocks, or every `_ROWS_PER_READ` rows
    (`TimeUp` once it passed)."""
    m, k = gamma.shape
    slots = np.repeat(np.tile(np.arange(k), len(counts)), counts.astype(np.int64).ravel())
    slots = slots.reshape(len(counts), m)  # row r: the states of its m slots, in order
    out = np.empty(len(counts))
    if math.factorial(m) <= _MAX_ORDERS:
        orders = np.array(list(itertools.permutations(range(m))), dtype=np.int64)
        per = max(1, _BLOCK_ENTRIES // orders.size)
        for start in range(0, len(counts), per):
            if deadline is not None:
                deadline.left()
            block = slots[start:start + per]
            values = gamma[orders[None, :, :], block[:, None, :]].sum(axis=2)
            out[start:start + per] = values.max(axis=1)
        return out
    from scipy.optimize import linear_sum_assignment
    for r, row in enumerate(slots):
        if deadline is not None and r % _ROWS_PER_READ == 0:
            deadline.left()
        sub = gamma[:, row]
        rows, cols = linear_sum_assignment(sub, maximize=True)
        out[r] = sub[rows, cols].sum()
    return out


@validate_params(_PARAMS, unchecked=("model", "oracle"))
def perturb_and_map(model: PairwiseMRF | FactorGraph, *, oracle="exact", n_samples: int = 10,
                    inflation: int = 5, marginals: str | None = "condition",
                    seed: int | None = None, executor=None,
                    max_time: float | None = None) -> PerturbResult:
    """Estimate log Z (and marginals) of ``model`` by Perturb-and-MAP, Barrier FW App. G.

    Each of ``n_samples`` MAP calls maximises the inflated model (``inflation`` = m copies
    of every variable, see `_Inflated`) plus zero-mean Gumbel noise γ/m on every copy's
    unary potentials; ``log_z`` is the mean of the maxima (Hazan & Jaakkola 2012, Sec. 4.1;
    App. G: m = 5, 10 samples). Variables with a single feasible state are not perturbed.

    What is guaranteed: with m = 1 and an exact oracle the mean is an upper bound on log Z
    *in expectation* (H&J Cor. 1: log Z <= E[max_x θ(x) + Σ_i γ_i(x_i)]), equal to it for
    a model without edges (for any m); a finite sample can fall below. For m > 1 there is
    no bound either way: as m grows the noise term (1/m) G_i(c) tends to the entropy
    H(c/m), so the maximum tends to the naive mean-field value max_q Σ_i <θ_i, q_i> +
    H(q_i) + Σ_ij q_iᵀ θ_ij q_j, a lower bound. An approximate oracle only lowers each
    maximum. Nothing is certified, so ``certified`` is False and the status is never
    ``converged``.

    marginals : "condition" (App. G: clamp x_i = s, estimate log Z_{i,s} with ``n_samples``
        more MAP calls, μ_i(s) ∝ exp log Z_{i,s}: Σ_i (card_i) n_samples calls for the
        variables with card_i > 1), "samples" (no extra calls: the mean of the folded
        perturbed MAP vertices, i.e. the frequencies of the MAP states among the copies,
        node and edge marginals; for m = 1 Papandreou & Yuille's sample frequencies; it
        is the gradient of the estimate in θ), or None.
    oracle : any oracle `fwcore.oracles.resolve_oracle` accepts, called on the count model
        of `_Inflated` (for m = 1 the model itself); with ``inflation`` > 1 a name or
        (name, options), as the oracle is built for that model. ``method`` names it.
    seed : every Gumbel draw and seeded oracle (None: fresh entropy). executor : any
        `concurrent.futures.Executor` for the independent estimates (the log Z one and
        each clamped one); the result equals the serial run's for a fixed ``seed``.
        toulbar2 (what "exact" picks for dense models) needs processes: it fails in
        worker threads (`fwcore.oracles._common.call_interruptibly`).
    max_time : seconds; with it, or on Ctrl-C, the samples drawn so far make the result
        (status ``max_time`` / ``interrupted``); a MAP call stopped by the time limit is
        not used.

    A `FactorGraph` is solved through its reduction (`FactorGraph.restrict` gives the
    result), conditioning on its own variables only.
    """
    deadline = Deadline(max_time)
    graph = model if isinstance(model, FactorGraph) else None
    checked = check_model(model if graph is None else graph.reduced)
    result = _perturb_and_map(checked, oracle, n_samples, inflation, marginals, seed,
                              executor, deadline, model.n_vars)
    return result if graph is None else graph.restrict(result)


def _perturb_and_map(model, oracle, n_samples, inflation, marginals, seed, executor,
                     deadline, asked):
    """`perturb_and_map` on the checked pairwise ``model`` within ``deadline``, the
    marginals conditioned on its first ``asked`` variables (a factor graph's own)."""
    check_feasible(model)
    m = inflation
    if m > 1 and not isinstance(oracle, (str, tuple)):
        raise ValueError(f"oracle must be a name or a (name, options) pair when inflation > 1 "
                         f"(the MAP calls are on the inflated model, {m} copies of each "
                         "variable); use inflation=1 for an oracle object or function")
    guard = Guard()  # building the count model counts against max_time and Ctrl-C too
    try:
        inflated = guard(_Inflated, model, m, deadline)
    except TimeUp:
        inflated = None
    if inflated is None:  # stopped while it was built: no sample, no estimate
        return PerturbResult(
            log_z=None, log_z_stderr=None, samples=np.zeros(0), node_marginals=None,
            edge_marginals=None, n_iter=0, n_oracle_calls=0, inflation=m,
            status=Status.INTERRUPTED if guard.interrupted else Status.MAX_TIME,
            time=deadline.elapsed(), method="perturb-and-map")
    first = build_oracle(oracle, inflated.graph)  # checks the spec; resolves "exact"
    spec = first.name if oracle in ("exact", "auto") else oracle
    clamps = [None]
    if marginals == "condition":
        clamps += [(i, s) for i in range(asked) if model.card[i] > 1
                   for s in range(model.card[i])]
    seeds = np.random.SeedSequence(seed).spawn(len(clamps))
    fold = marginals == "samples"
    args = [(inflated, spec, c, n_samples, s, deadline, fold) for c, s in zip(clamps, seeds)]
    runs, interrupted = _run_all(args, executor, deadline)

    values = runs[0].values if runs[0] is not None else np.zeros(0)
    n = values.size
    log_z = float(values.mean()) if n else None
    stderr = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else None
    nodes = edges = None
    if marginals == "samples" and n:
        nodes, edges = model.split_marginals(runs[0].total / n)
    elif marginals == "condition":
        nodes = _conditioned_marginals(model.card[:asked], clamps, runs)
    done = [r for r in runs if r is not None]
    complete = len(done) == len(clamps) and all(r.values.size == n_samples for r in done)
    status = (Status.INTERRUPTED if interrupted or any(r.interrupted for r in done)
              else budget_status(out_of_time=not complete))
    return PerturbResult(log_z=log_z, log_z_stderr=stderr, samples=values,
                         node_marginals=nodes, edge_marginals=edges, status=status, n_iter=n,
                         n_oracle_calls=int(sum(r.calls for r in done)), inflation=m,
                         time=deadline.elapsed(), method=f"perturb-and-map/{first.name}",
                         trace=runs[0].trace if n else Trace())


def _run_all(args, executor, deadline):
    """`_estimate` on each argument tuple, serially (none starts past the ``deadline`` or
    after an interrupted one) or on ``executor``, in tasks of several estimates (each task
    carries the inflated model once; a dask client's workers get it once each); returns
    the `_Estimate`s (None for a task that did not run) and whether Ctrl-C stopped the
    run."""
    guard = Guard()
    if executor is None:
        runs = []
        for a in args:
            if runs and (runs[-1].interrupted or deadline.passed()):
                break
            run = guard(_estimate, *a)
            if guard.interrupted:
                break
            runs.append(run)
        return runs + [None] * (len(args) - len(runs)), guard.interrupted
    client = dask_client(executor)
    if client is not None:
        inflated = client.scatter(args[0][0], broadcast=True, hash=False)
        args = [(inflated, *a[1:]) for a in args]
        executor = client.get_executor()
    size = math.ceil(len(args) / (TASKS_PER_CORE * (os.cpu_count() or 1)))
    tasks = [args[k:k + size] for k in range(0, len(args), size)]
    futures = [executor.submit(_estimates, task) for task in tasks]
    runs = guard(lambda: [run for f in futures for run in f.result()])
    if guard.interrupted:
        for f in futures:
            f.cancel()
        runs = [run for f, task in zip(futures, tasks)
                for run in (_finished(f) or [None] * len(task))]
    return runs, guard.interrupted


def _estimates(task):
    """`_estimate` of each argument tuple of ``task`` in turn (None after an interrupted
    one)."""
    runs = []
    for a in task:
        runs.append(None if runs and (runs[-1] is None or runs[-1].interrupted)
                    else _estimate(*a))
    return runs


def _finished(future):
    try:
        return future.result(timeout=0) if future.done() else None
    except CancelledError:
        return None


class _Estimate(NamedTuple):
    """One estimate of `_estimate`: its perturbed MAP ``values``, its ``trace`` (a record
    per value), its MAP ``calls``, the sum of the folded vertices (``total``, or None) and
    whether Ctrl-C ``interrupted`` it."""

    values: np.ndarray
    trace: Trace
    calls: int
    total: np.ndarray | None
    interrupted: bool


def _estimate(inflated, spec, clamp, n_samples, seed, deadline, fold):
    """``n_samples`` perturbed MAP values of the inflated model, with variable i clamped to
    state s when ``clamp`` = (i, s), on `fwcore.loop.run_loop` (one step per sample, until
    the ``deadline``); an `_Estimate`, traced for the log Z estimate only (its record
    times count from the call's start, ``deadline.elapsed()``)."""
    rng = np.random.default_rng(seed)
    g = inflated.graph
    oracle = build_oracle(spec, g, seed=int(rng.integers(2**31 - 1)))
    scores = g.theta.copy()
    if clamp is not None:
        i, s = clamp
        scores[g.node_off[i]:g.node_off[i + 1]][inflated.C[i][:, s] < inflated.m] = -np.inf
    states = np.add.reduceat(np.isfinite(scores[:g.node_off[-1]]), g.node_off[:-1])
    if (states == 0).any():  # x_i = s is impossible: log Z_{i,s} = -inf
        return _Estimate(np.full(n_samples, -np.inf), Trace(), 0, None, False)
    sampler = _Sampler(inflated, oracle, scores, states > 1, rng, deadline, fold,
                       traced=clamp is None)
    outcome = run_loop(sampler.measure, sampler.draw,
                       Stopping(n_samples, deadline=deadline), Callbacks(), measure_start=False)
    return _Estimate(np.array(sampler.values), outcome.trace, sampler.calls, sampler.total,
                     outcome.status is Status.INTERRUPTED)


class _Sampler:
    """The samples of one estimate: each step draws zero-mean Gumbel noise (none on a
    variable with one feasible state, ``free`` False) and makes one MAP call on the
    perturbed scores; a call stopped by the time limit is not a sample (`TimeUp`). When
    ``traced`` each sample has a record, timed from the call's start."""

    def __init__(self, inflated, oracle, scores, free, rng, deadline, fold, traced):
        self.inflated, self.oracle, self.scores, self.free = inflated, oracle, scores, free
        self.rng, self.deadline, self.fold, self.traced = rng, deadline, fold, traced
        self.values, self.calls, self.total = [], 0, None

    def draw(self, k):
        inflated = self.inflated
        noise = [self.rng.gumbel(size=(inflated.m, c)) - np.euler_gamma if free else None
                 for c, free in zip(inflated.model.card, self.free)]
        left = self.deadline.left()
        perturbed = inflated.perturbed(self.scores, noise, self.deadline)
        x = self.oracle.argmax(perturbed, time_limit=left)
        self.calls += 1
        if self.oracle.status is Status.MAX_TIME:
            raise TimeUp
        self.values.append(float(inflated.graph.score(x, perturbed)))
        if self.fold:
            mu = inflated.fold(x)
            self.total = mu if self.total is None else self.total + mu

    def measure(self, k):
        """The record of sample k (the running mean); no stopping criterion."""
        if not self.traced:
            return None, math.inf
        return Record(iteration=k, time=self.deadline.elapsed(),
                      primal=float(np.mean(self.values)), n_oracle_calls=k), math.inf


def _conditioned_marginals(card, clamps, runs):
    """μ_i(s) ∝ exp(mean of the clamped estimate of log Z_{i,s}) (App. G) for the
    variables of ``card`` ([1] for a single-state variable); None when an estimate has no
    value (stopped before its first sample) or a variable has no finite one (an
    approximate oracle found no feasible labelling under any of its clamps)."""
    if any(r is None or not r.values.size for r in runs[1:]):
        return None
    logz = {c: r.values.mean() for c, r in zip(clamps[1:], runs[1:])}
    nodes = []
    for i, c in enumerate(card):
        v = np.array([logz.get((i, s), 0.0) for s in range(c)])
        if not np.isfinite(v).any():
            return None
        nodes.append(np.exp(v - np.logaddexp.reduce(v)))
    return nodes


def _run_perturb(model, budget, callbacks, *, oracle="exact", n_samples=10, inflation=5,
                 executor=None, seed=None):
    """`perturb_and_map` with the sample frequencies as marginals (``marginals="samples"``:
    no extra MAP call, node and edge marginals) as a `MarginalResult`: ``log_z_upper`` is
    the estimate (no bound: ``certified`` False), ``info`` has ``log_z_stderr``,
    ``samples`` and ``inflation``. ``max_iter`` caps the samples. Interrupted before its
    first sample: uniform marginals, no estimate (``log_z_upper`` inf)."""
    graph = model if isinstance(model, FactorGraph) else None
    pairwise = model if graph is None else model.reduced
    res = _perturb_and_map(pairwise, oracle, budget.iterations(n_samples), inflation,
                           "samples", seed, executor, budget.deadline, model.n_vars)
    for record in res.trace:
        callbacks(record)
    callbacks.close()
    sampled = res.n_iter > 0
    mu = (np.concatenate([np.concatenate(res.node_marginals)] +
                         [e.ravel() for e in res.edge_marginals])
          if sampled else pairwise.uniform_marginals())
    out = MarginalResult.from_mu(
        pairwise, mu, log_z_upper=res.log_z if sampled else math.inf, certified=False,
        gap=None, certified_gap=None, status=res.status, n_iter=res.n_iter,
        n_oracle_calls=res.n_oracle_calls, time=budget.deadline.elapsed(), method=res.method,
        trace=res.trace, info=dict(log_z_stderr=res.log_z_stderr, samples=res.samples,
                                   inflation=res.inflation))
    return out if graph is None else graph.restrict(out)


PERTURB_AND_MAP = register_method(
    "perturb-and-map", _run_perturb,
    {k: _PARAMS[k] for k in ("n_samples", "inflation", "executor", "seed")} |
    {"oracle": checked_inside("a MAP oracle (fwcore.resolve_oracle)")},
    iteration="samples", seeded=True,
    summary="Perturb-and-MAP (Hazan & Jaakkola 2012): an estimate of log Z, no bound, "
            "and the MAP states' frequencies")
