"""Samples of a model, given evidence: `sample`, exact where elimination fits, else
weighted.

Two exact samplers (Koller & Friedman 2009, 12.1 and 9.x):

- forward (ancestral) sampling of a Bayesian network without evidence
  (`fwcore.bayes.bayes_form`, its CPT rows summing to 1 within 1e-9): each variable drawn
  from its CPT row given its parents, in topological order; linear in the network's size
  at any treewidth (`fwcore._query.forward_sample`);
- backward sampling through the clique tree of variable elimination: the messages of
  one upward pass are kept (`fwcore.queries.MessageTree`), then each variable, in reverse
  elimination order, is drawn from p(x_v | x_{S_v}) = exp(t_v − m_v), its separator
  already drawn (`fwcore._query.backward_sample`). Any model and evidence (hard or soft)
  whose elimination fits ``memory_limit``.

Both draw from NumPy's generator seeded by ``seed`` (uniforms handed to the kernels), so
a seed gives the same samples everywhere. Exact samples all have weight 1.

Past exact reach (``method`` "auto" or "wmb"): importance samples from weighted
mini-bucket's proposal (Liu, Fisher & Ihler 2015; `fwcore.queries.importance_answer`),
each with its weight W = p̃(x) / q(x), normalised to mean 1, so that E_p g(x) ≈ mean(W g(x))
/ mean(W); the answer is ``estimated``, its certified interval on log Z is weighted
mini-bucket's and its ``log_z`` the samples' estimate (`fwcore.queries.Answer`). Where
weighted mini-bucket's buckets are whole, its proposal is the model's distribution and
the samples are exact (weights 1).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import _query
from .bayes import BayesForm, bayes_form
from .checks import INFEASIBLE, MEMORY, SEED, TIME, Interval, Options, validate_params
from .factor_graph import FactorGraph
from .io.uai import apply_evidence
from .model import PairwiseMRF
from .queries import (CONFIDENCE_LEVEL, MEMORY_LIMIT, Answer, MessageTree, PastReach,
                      importance_answer, pairwise_form)
from .results import Record, Trace

__all__ = ["SampleResult", "sample"]

#: uniforms and states held per chunk of samples (about 50 MB)
_CHUNK_ENTRIES = 2**22


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class SampleResult(Answer):
    """Samples of a model: ``samples`` (int32, one row per sample, one column per
    variable, states by index), their importance ``weights`` (all 1 for exact samples;
    mean 1 for weighted ones), ``log_z`` (log of the model's mass with the evidence, a
    Bayesian network's log P(e): from the elimination; 0 for a network sampled forward,
    its CPT rows summing to 1 within 1e-9; the samples' estimate when ``estimated``), the
    sampler (``method``: "exact/forward", "exact/elimination" or "wmb/importance"), the
    model's ``names`` and ``states`` when it has them, wall ``time``. Exact: status
    converged, gap 0, certified (the samples are draws from the model's distribution
    itself; ``log_z_upper`` = ``log_z_lower`` = log_z). Weighted: `fwcore.queries.Answer`
    (``info``: ``n_samples``, ``ess``, ``log_z_proposal``)."""

    samples: np.ndarray
    weights: np.ndarray
    names: tuple | None = None
    states: tuple | None = None


#: the confidence of the sampled interval on log Z
CONFIDENCE = 0.95


@validate_params({"n": Interval(1, integer=True), "seed": SEED,
                  "method": Options("auto", "exact", "wmb"), "max_time": TIME,
                  "memory_limit": MEMORY, "confidence": CONFIDENCE_LEVEL},
                 unchecked=("model", "evidence"))
def sample(model: PairwiseMRF | FactorGraph, n: int, evidence=None, *, seed: int | None = None,
           method: str = "auto", max_time: float | None = None,
           memory_limit: float = MEMORY_LIMIT, confidence: float = CONFIDENCE) -> SampleResult:
    """``n`` samples of ``model`` given ``evidence`` (`fwcore.apply_evidence`: hard
    states or soft likelihood vectors, by name or index). ``method``: "exact" (forward
    sampling for a Bayesian network without evidence, else backward sampling through the
    elimination clique tree: the module docstring; past exact reach a ValueError names the
    model's size), "wmb" (importance samples from weighted mini-bucket's proposal with
    their weights, `fwcore.marginals.wmb.importance_samples`: ``estimated``, ``log_z``
    the samples' estimate of log Z within the certified bounds, its interval at
    ``confidence``), "auto" (exact where elimination fits ``memory_limit``, else "wmb").
    ``seed``: NumPy's generator seed (reproducible). ``max_time`` (seconds) bounds the
    weighted sampler (its passes take half, the draws the rest: fewer than ``n``
    samples then, status ``max_time``); exact samplers run to the end.
    ``memory_limit`` (bytes) bounds the elimination's messages (or weighted mini-bucket's
    stages) and the samples (4 bytes per state)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    if evidence:
        model = apply_evidence(model, evidence)
    if 4 * n * model.n_vars > memory_limit:
        raise ValueError(f"{n} samples of {model.n_vars} variables take {4 * n * model.n_vars} "
                         f"bytes, over memory_limit={memory_limit:.0f}: draw them in batches")
    form = None if evidence or method == "wmb" else bayes_form(model)
    info, log_z, fields = {}, 0.0, {}
    if form is not None:
        samples, how = _forward(model, form, n, rng), "exact/forward"
        weights = np.ones(n)
    else:
        try:
            if method == "wmb":
                raise PastReach("weighted samples asked for")
            samples, log_z, info = _backward(model, n, rng, memory_limit)
            how, weights = "exact/elimination", np.ones(n)
        except PastReach:
            if method == "exact":
                raise
            samples, weights, fields = importance_answer(model, n, seed, max_time,
                                                         memory_limit, confidence)
            how, log_z, info = "wmb/importance", fields.pop("log_z"), fields.pop("info")
    seconds = time.perf_counter() - t0
    upper = fields.get("log_z_upper", log_z)
    record = Record(iteration=1, time=seconds, primal=upper if log_z is None else log_z,
                    gap=fields.get("gap", 0.0), bound=upper,
                    score=fields.get("log_z_lower", log_z))
    return SampleResult(samples=samples, weights=weights, log_z=log_z, method=how,
                        time=seconds, names=model.names, states=model.states, info=info,
                        trace=Trace([record]), **fields)


def _chunks(n, n_vars):
    """(start, stop) of the chunks of samples drawn at once."""
    step = max(1, _CHUNK_ENTRIES // max(n_vars, 1))
    return [(k, min(k + step, n)) for k in range(0, n, step)]


def _forward(model, form: BayesForm, n, rng):
    """Ancestral samples (n, n_vars) from the network's CPTs (flat, the child fastest)."""
    card = model.card.astype(np.int64)
    cpt = np.concatenate([c.ravel() for c in form.cpts])
    sizes = np.fromiter((c.size for c in form.cpts), np.int64, model.n_vars)
    cpt_off = np.zeros(model.n_vars, dtype=np.int64)
    np.cumsum(sizes[:-1], out=cpt_off[1:])
    par_start = np.zeros(model.n_vars + 1, dtype=np.int64)
    np.cumsum([len(p) for p in form.parents], out=par_start[1:])
    par_var = np.fromiter((u for p in form.parents for u in p), np.int64, int(par_start[-1]))
    # the stride of parent k of v in its CPT's row index: the product of the cards of
    # v's parents after k (a loop over the positions from the end, not the variables)
    later = np.repeat(par_start[1:], np.diff(par_start)) - 1 - np.arange(par_var.size)
    par_stride = np.ones(par_var.size, dtype=np.int64)
    for d in range(1, int(later.max(initial=0)) + 1):
        k = np.flatnonzero(later >= d)
        par_stride[k] *= card[par_var[k + d]]
    out = np.empty((n, model.n_vars), dtype=np.int32)
    card32 = model.card.astype(np.int32)
    for lo, hi in _chunks(n, model.n_vars):
        u = rng.random((model.n_vars, hi - lo))
        x = np.empty((model.n_vars, hi - lo), dtype=np.int32)
        _query.forward_sample(form.order, card32, par_start, par_var, par_stride, cpt_off,
                              cpt, u, x)
        out[lo:hi] = x.T
    return out


def _backward(model, n, rng, memory_limit):
    """Exact samples (n, n_vars) by backward sampling through the clique tree, log Z and
    the elimination's info."""
    pm = pairwise_form(model)
    tree = MessageTree(pm, memory_limit=memory_limit, what="exact sampling")
    log_z = tree.up()
    if log_z == -np.inf:
        raise ValueError(INFEASIBLE)
    out = np.empty((n, model.n_vars), dtype=np.int32)
    for lo, hi in _chunks(n, pm.n_vars):
        u = rng.random((pm.n_vars, hi - lo))
        x = np.empty((pm.n_vars, hi - lo), dtype=np.int32)
        _query.backward_sample(tree.tree, pm.theta, tree.msg_off, tree.msg, u, x)
        out[lo:hi] = x[:model.n_vars].T
    return out, float(log_z), tree.info
