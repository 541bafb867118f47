"""The twins of issue 36 (`wmb_lower_numpy`) against brute force: the mixed-sign weighted
mini-bucket bound is never above log Z, whatever its weights and reparameterisation, is
log Z on whole buckets, and its weights' gradient is what the step uses; the sampler's
proposal sums to one, its importance weights never exceed the upper bound it came from,
and its samples follow it."""
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from test_factor_graph import random_factor_graph
from wmb_lower_numpy import LowerTwin, log_proposal, log_score, sample
from wmb_numpy import WMBTwin, mini_buckets_twin


def twin_case(seed, ibound, cls=WMBTwin, zeros=0.2, n=7, n_factors=10, evidence=True, **kw):
    """A random factor graph (−inf entries with ``zeros``; a variable or two fixed by
    evidence), its log Z by brute force with the evidence, and a twin on its tree."""
    rng = np.random.default_rng(seed)
    fg = random_factor_graph(seed, n=n, n_factors=n_factors, zeros=zeros)
    card = [int(c) for c in fg.card]
    scopes = [tuple(int(v) for v in s) for s, _ in fg.factors]
    tables = [np.asarray(t, dtype=float) for _, t in fg.factors]
    fixed = np.full(n, -1, dtype=np.int32)
    if evidence:
        fixed[rng.permutation(n)[:seed % 3]] = 0
    order = [int(v) for v in rng.permutation(n) if fixed[v] < 0]
    tree = mini_buckets_twin(card, scopes, fixed, order,
                             math.inf if ibound is None else ibound + 1)
    twin = cls(card, scopes, tables, fixed, order, tree, **kw)
    return twin, _log_z(card, scopes, tables, fixed)


def _log_z(card, scopes, tables, fixed):
    states = np.array(list(itertools.product(*[range(c) if fixed[v] < 0 else [fixed[v]]
                                               for v, c in enumerate(card)])))
    score = np.zeros(len(states))
    for s, t in zip(scopes, tables):
        score += t[tuple(states[:, list(s)].T)]
    return float(np.logaddexp.reduce(score))


def _several(twin):
    return any(twin.b_start[p + 1] - twin.b_start[p] > 1 for p in range(len(twin.order)))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ibound", [1, 2])
@pytest.mark.parametrize("zeros", [0.0, 0.2])
def test_the_mixed_sign_bound_is_below_log_z_at_every_pass(seed, ibound, zeros):
    twin, log_z = twin_case(seed, ibound, LowerTwin, zeros=zeros)
    bounds = []
    for k in range(6):
        bounds.append(twin.forward(1.0 / (k + 1), 1.0, 1e-6))
        twin.backward()
        assert bounds[-1] <= log_z + 1e-9
    if zeros == 0.0:
        assert max(bounds) >= bounds[0] - 1e-12
        assert math.isfinite(bounds[0])


@pytest.mark.parametrize("seed", range(12))
def test_any_mixed_weights_and_reparameterisation_bound_log_z_from_below(seed):
    """Reverse Hölder needs only one weight ≥ 1 per bucket, the others negative, summing
    to 1, and reparameterisations summing to zero in each bucket."""
    twin, log_z = twin_case(seed, 1, LowerTwin, zeros=0.0)
    rng = np.random.default_rng(seed)
    for p in range(len(twin.order)):
        clusters = list(range(twin.b_start[p], twin.b_start[p + 1]))
        if len(clusters) < 2:
            continue
        neg = [c for c in clusters if not twin.positive[c]]
        twin.weight[neg] = -rng.exponential(2.0, size=len(neg))
        twin.weight[[c for c in clusters if twin.positive[c]]] = 1.0 - twin.weight[neg].sum()
        moves = rng.normal(scale=2.0, size=(len(clusters), twin.card[twin.order[p]]))
        moves -= moves.mean(axis=0)
        for c, m in zip(clusters, moves):
            twin.repar[c] = m
    assert twin.forward(0.0, 0.0, 1e-6) <= log_z + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_whole_buckets_give_log_z(seed):
    twin, log_z = twin_case(seed, None, LowerTwin)
    assert not _several(twin)
    assert twin.forward(1.0, 1.0, 1e-6) == pytest.approx(log_z, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_the_weights_gradient_is_the_conditional_entropies(seed):
    """∂bound/∂w_r, the positive weight taking up the change, is H_r − H_+ under the
    beliefs of a forward and backward pass (finite differences, no matching)."""
    from wmb_lower_numpy import conditional_entropies
    twin, _ = twin_case(seed, 1, LowerTwin, zeros=0.0, evidence=False)
    if not _several(twin):
        pytest.skip("no bucket of several clusters")
    twin.forward(1.0, 0.0, 1e-6)
    twin.backward()
    base = twin.forward(0.0, 0.0, 1e-6)
    twin.backward()
    for p in range(len(twin.order)):
        clusters = list(range(twin.b_start[p], twin.b_start[p + 1]))
        if len(clusters) < 2:
            continue
        beliefs = [twin.table(c, backward=True) for c in clusters]
        h = conditional_entropies(beliefs, twin.weight[clusters])
        pos = next(i for i, c in enumerate(clusters) if twin.positive[c])
        for i, c in enumerate(clusters):
            if i == pos:
                continue
            eps = 1e-6
            twin.weight[c] -= eps
            twin.weight[clusters[pos]] += eps
            moved = twin.forward(0.0, 0.0, 1e-6)
            twin.weight[c] += eps
            twin.weight[clusters[pos]] -= eps
            assert (base - moved) / eps == pytest.approx(h[i] - h[pos], abs=1e-4)
        twin.forward(0.0, 0.0, 1e-6)


def _upper_after_passes(seed, ibound, zeros=0.2):
    twin, log_z = twin_case(seed, ibound, zeros=zeros)
    for k in range(3):
        bound = twin.forward(1.0 / (k + 1), 1.0, 1e-6)
        twin.backward()
    return twin, bound, log_z


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("ibound", [1, 2])
def test_the_proposal_sums_to_one_and_bounds_the_weights(seed, ibound):
    """Σ_x q(x) = 1, and f(x) / q(x) ≤ U (the last forward pass's bound) wherever f > 0:
    the importance weights lie in [0, U] (Liu, Fisher & Ihler 2015, Sec. 3)."""
    twin, bound, log_z = _upper_after_passes(seed, ibound)
    free = [v for v in range(len(twin.card)) if twin.fixed[v] < 0]
    log_q, log_w = [], []
    for states in itertools.product(*[range(twin.card[v]) for v in free]):
        x = np.where(np.asarray(twin.fixed) >= 0, twin.fixed, 0).astype(np.int64)
        x[free] = states
        log_q.append(log_proposal(twin, x))
        f = log_score(twin, x)
        if f > -math.inf:
            log_w.append(f - log_q[-1])
    assert np.logaddexp.reduce(log_q) == pytest.approx(0.0, abs=1e-9)
    if not log_w:                             # the evidence leaves no feasible labelling
        assert log_z == -math.inf
        return
    assert max(log_w) <= bound + 1e-9
    assert np.all(np.isfinite(log_w))         # q > 0 wherever f > 0: unbiased
    assert bound >= log_z - 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_samples_follow_the_proposal_and_estimate_z(seed):
    twin, bound, log_z = _upper_after_passes(seed, 1, zeros=0.1)
    rng = np.random.default_rng(seed)
    x, log_q = sample(twin, rng.random((4000, len(twin.order))))
    for xi, lq in zip(x[:50], log_q[:50]):
        assert lq == pytest.approx(log_proposal(twin, xi), abs=1e-12)
    codes, counts = np.unique(x, axis=0, return_counts=True)
    expected = np.exp([log_proposal(twin, c) for c in codes]) * len(x)
    assert np.abs(counts - expected).max() <= 5 * np.sqrt(expected).max() + 5
    log_w = np.array([log_score(twin, xi) for xi in x]) - log_q
    assert np.log(np.mean(np.exp(log_w - bound))) + bound == pytest.approx(log_z, abs=0.1)
