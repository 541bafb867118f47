"""The lower bounds of a weighted mini-bucket run on a model with zeros, against brute
force on random models with impossible entries and on the shared UAI models with
official answers: conditioning (`fwcore.marginals.wmb._Run.condition_lower`: log Z ≥ log
Σ_{c ∈ S} Z(x_C = c) over the cutset assignments the samples drew) and block mean field
whose q keeps to the possible pairs (`fwcore.marginals.wmb.BlockMeanField`)."""
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.marginals import wmb

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from test_factor_graph import random_factor_graph

INSTANCES = Path("/work/shared/instances")


def _scores(fg):
    """Every joint state (rows) and its score."""
    states = np.array(list(itertools.product(*[range(c) for c in fg.card])))
    score = np.zeros(len(states))
    for scope, table in fg.factors:
        score += table[tuple(states[:, list(scope)].T)] if scope else float(table)
    return states, score


def _spy(monkeypatch):
    """Records (branches, lower before, lower after) of each `condition_lower`."""
    seen, original = [], wmb._Run.condition_lower

    def spy(self, deadline):
        branches, before = self.branches, self.lower
        original(self, deadline)
        seen.append((branches, before, self.lower))
    monkeypatch.setattr(wmb._Run, "condition_lower", spy)
    return seen


@pytest.mark.parametrize("seed", range(24))
def test_the_bound_is_a_partial_sum_of_z(seed, monkeypatch):
    """The cutset's exact trees sum Z over a prefix of the ranked assignments: the lower
    bound is the best labelling's score or the brute-force sum of Z(x_C = c) over such a
    prefix, never above log Z (small exact trees: a cutset of several variables)."""
    monkeypatch.setattr(wmb, "_CONDITION_MAX_ENTRIES", 24.0)
    seen = _spy(monkeypatch)
    fg = random_factor_graph(seed, n=9, max_card=3, n_factors=14, zeros=0.3)
    states, score = _scores(fg)
    log_z = float(np.logaddexp.reduce(score))
    res = fwcore.weighted_mini_bucket(fg, ibound=1, max_time=0.6, seed=seed)
    assert res.log_z_lower <= log_z + 1e-9
    (branches, before, after), = seen
    if branches is None:                     # the bounds met (an exact pass)
        assert res.log_z_lower == pytest.approx(log_z, abs=1e-9)
        return
    assert len(branches.variables) > 0
    ranked = branches.ranked()
    assert len(np.unique(ranked, axis=0)) == len(ranked)
    per_branch = [np.logaddexp.reduce(score[(states[:, branches.variables] == c).all(axis=1)])
                  for c in ranked]
    prefix = np.logaddexp.accumulate(per_branch) if per_branch else np.zeros(0)
    assert after <= log_z + 1e-9
    assert after == pytest.approx(before, abs=1e-9) or np.isclose(prefix, after,
                                                                  atol=1e-9).any()


def test_the_branches_reach_log_z_on_small_models(monkeypatch):
    """With the samples' assignments of a small cutset summed, the bound is log Z (to
    1e-3) on most models where the bounds did not meet (the others: the branches' time
    taken by loopy BP on a loaded machine)."""
    monkeypatch.setattr(wmb, "_CONDITION_MAX_ENTRIES", 24.0)
    seen, reached = _spy(monkeypatch), []
    for seed in range(8):
        fg = random_factor_graph(seed, n=9, max_card=3, n_factors=14, zeros=0.3)
        log_z = float(np.logaddexp.reduce(_scores(fg)[1]))
        fwcore.weighted_mini_bucket(fg, ibound=1, max_time=1.0, seed=seed)
        branches, _, after = seen[-1]
        if branches is not None and len(branches.variables):
            reached.append(after >= log_z - 1e-3)
    assert len(reached) >= 6 and np.mean(reached) >= 0.5


def test_without_a_cutset_the_branch_is_the_whole_model(monkeypatch):
    """A model whose exact tree fits needs no cutset: its one branch is Z itself."""
    seen = _spy(monkeypatch)
    fg = random_factor_graph(3, n=9, max_card=3, n_factors=14, zeros=0.3)
    log_z = float(np.logaddexp.reduce(_scores(fg)[1]))
    res = fwcore.weighted_mini_bucket(fg, ibound=1, max_time=0.6, seed=0)
    (branches, _, after), = seen
    assert len(branches.variables) == 0
    assert after == pytest.approx(log_z, abs=1e-9) and res.log_z_lower == after


def test_finite_tables_keep_the_bound_of_mixed_signs(monkeypatch):
    seen = _spy(monkeypatch)
    fg = random_factor_graph(2, n=9, max_card=3, n_factors=14, zeros=0.0)
    fwcore.weighted_mini_bucket(fg, ibound=1, max_time=0.3, seed=0)
    assert seen == [(None, seen[0][1], seen[0][1])]


def test_ranking_sums_the_weights_of_each_assignment():
    branches = wmb._Branches(np.array([1, 2]), None)
    x = np.array([[0, 1, 0], [5, 1, 0], [0, 0, 1], [0, 2, 2]])
    branches.add(x, np.log([1.0, 1.0, 3.0, 0.5]))
    branches.add(x[:1], np.array([-math.inf]))           # an impossible sample: none
    branches.add(x[3:], np.array([-math.inf]))
    np.testing.assert_array_equal(branches.ranked(), [[0, 1], [1, 0], [2, 2]])


def _zero_grid(seed, side=3, n_labels=3, zeros=0.3):
    """A Potts grid with impossible pairs (−inf edge entries), one labelling kept
    possible: (model, that labelling)."""
    rng = np.random.default_rng(seed)
    grid = fwcore.potts_grid(side, n_labels=n_labels, seed=seed)
    keep = rng.integers(0, n_labels, grid.n_vars)
    theta = grid.theta.copy()
    for e, (i, j) in enumerate(grid.edges):
        table = theta[grid.edge_off[e]:grid.edge_off[e + 1]].reshape(n_labels, n_labels)
        table[rng.random(table.shape) < zeros] = -np.inf
        table[keep[i], keep[j]] = rng.normal()
    return fwcore.PairwiseMRF.from_flat(grid.card, grid.edges, theta), keep


def _pairwise_log_z(model):
    states = np.array(list(itertools.product(*[range(c) for c in model.card])))
    return float(np.logaddexp.reduce([model.score(x) for x in states]))


def _groups_twin(model, edges, q):
    """`_EdgeGroups`' fields and expectation edge by edge, 0 · (−inf) = 0."""
    off = model.node_off
    h, total = np.zeros(off[-1]), 0.0
    for e in edges:
        i, j = model.edges[e]
        table = model.theta[model.edge_off[e]:model.edge_off[e + 1]].reshape(
            model.card[i], model.card[j])
        qi, qj = q[off[i]:off[i + 1]], q[off[j]:off[j + 1]]
        for a in range(model.card[i]):
            for b in range(model.card[j]):
                if qi[a] > 0 and qj[b] > 0:
                    total += qi[a] * table[a, b] * qj[b]
                if qj[b] > 0:
                    h[off[i] + a] += qj[b] * table[a, b]
                if qi[a] > 0:
                    h[off[j] + b] += qi[a] * table[a, b]
    return h, total


@pytest.mark.parametrize("seed", range(12))
def test_edge_groups_are_their_twin_with_impossible_pairs(seed):
    model, keep = _zero_grid(seed, side=4)
    rng = np.random.default_rng(seed)
    q = rng.random(model.node_off[-1]) * (rng.random(model.node_off[-1]) < 0.6)
    edges = np.arange(0, model.n_edges, 2)
    groups = wmb._EdgeGroups(model, edges)
    h, total = _groups_twin(model, edges, q)
    np.testing.assert_allclose(groups.fields(q), h, rtol=1e-12, atol=1e-12)
    assert groups.expectation(q) == pytest.approx(total, rel=1e-12, abs=1e-12)
    point = np.zeros(model.node_off[-1])
    point[model.node_off[:-1] + keep] = 1.0
    h, total = _groups_twin(model, edges, point)
    np.testing.assert_allclose(groups.fields(point), h, rtol=1e-12, atol=1e-12)
    assert groups.expectation(point) == pytest.approx(total, rel=1e-12)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("k", [1, 2])
def test_block_mean_field_with_impossible_pairs_is_certified(seed, k):
    """From a possible labelling, block coordinate ascent stays on possible pairs: the
    bound is at least the labelling's score and at most log Z."""
    from fwcore.views import fixed_states
    model, keep = _zero_grid(seed)
    blocks = wmb.BlockMeanField(model, fixed_states(model), k)
    assert blocks.ok
    q = np.zeros(model.node_off[-1])
    q[model.node_off[:-1] + keep] = 1.0
    bound, _ = blocks.run(q)
    assert model.score(keep) - 1e-9 <= bound <= _pairwise_log_z(model) + 1e-9


@pytest.mark.parametrize("name", ["uai2014-higher-order/linkage_14",
                                  "uai2014-beyond/ObjectDetection_16"])
def test_shared_models_stay_below_log_z(name):
    path = INSTANCES / f"{name}.uai"
    if not path.exists():
        pytest.skip(f"{path} absent (the shared instances are not on this machine)")
    from fwcore.io.uai import apply_evidence, read_evid, read_pr
    model = fwcore.read_uai(path)
    model = apply_evidence(model, read_evid(f"{path}.evid"))
    res = fwcore.infer(model, max_time=10, seed=0)
    assert res.log_z_lower <= read_pr(f"{path}.PR") + 1e-6
