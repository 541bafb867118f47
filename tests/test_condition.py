"""Conditioning (`fwcore.marginals.condition`): clamping against brute force, the
conditioning bound against exact inference, and the choice of variables."""
import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

import fwcore
from fwcore import FactorGraph, PairwiseMRF
from fwcore.marginals.condition import (MAX_BRANCHES, choose_conditioning, clamp, conditioned,
                                        conditioned_anytime, factor_coupling, fixed_by_evidence)
from fwcore.results import Status


def random_pairwise(rng, n=6, max_card=3, density=0.6, impossible=0.15):
    """A random PairwiseMRF with about ``impossible`` of its entries −inf (feasible)."""
    while True:
        card = rng.integers(1, max_card + 1, n)
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
        unary = [rng.normal(0, 1, c) for c in card]
        pair = [rng.normal(0, 1.5, (card[i], card[j])) for i, j in edges]
        for t in unary + pair:
            t[rng.random(t.shape) < impossible] = -np.inf
        model = PairwiseMRF(card, unary, edges, pair)
        if np.isfinite(scores(model)).any():
            return model


def random_factor_graph(rng, n=6, max_card=3, n_factors=6, impossible=0.15):
    """A random FactorGraph with factors of arity 0-4 (feasible)."""
    while True:
        card = rng.integers(1, max_card + 1, n)
        factors = []
        for _ in range(n_factors):
            scope = tuple(rng.choice(n, rng.integers(0, 5), replace=False).tolist())
            table = rng.normal(0, 1.5, [card[v] for v in scope])
            table[rng.random(table.shape) < impossible] = -np.inf
            factors.append((scope, table))
        model = FactorGraph(card, factors)
        if np.isfinite(scores(model)).any():
            return model


def states(card):
    return np.array(list(itertools.product(*[range(int(c)) for c in card])),
                    dtype=np.int64).reshape(int(np.prod(card)), len(card))


def scores(model):
    """The score of every joint state, in C order (variable 0 most significant)."""
    return np.array([model.score(x) for x in states(model.card)])


def random_model(seed):
    rng = np.random.default_rng(seed)
    return random_pairwise(rng) if seed % 2 else random_factor_graph(rng)


def random_assignment(rng, card, size):
    variables = rng.choice(card.size, size, replace=False)
    return {int(v): int(rng.integers(card[v])) for v in variables}


@pytest.mark.parametrize("seed", range(40))
def test_clamp_preserves_every_score(seed):
    model = random_model(seed)
    rng = np.random.default_rng(100 + seed)
    for size in (0, 1, 3, model.card.size):
        assignment = random_assignment(rng, model.card, size)
        smaller, kept, constant = clamp(model, assignment)
        assert type(smaller) is type(model)
        assert kept.tolist() == sorted(set(range(model.card.size)) - set(assignment))
        assert smaller.card.tolist() == model.card[kept].tolist()
        for x in states(smaller.card):
            full = np.zeros(model.card.size, dtype=np.int64)
            full[kept] = x
            full[list(assignment)] = list(assignment.values())
            np.testing.assert_allclose(constant + smaller.score(x), model.score(full))


def test_clamping_everything_leaves_the_empty_model_and_the_score():
    for model in (random_pairwise(np.random.default_rng(0)),
                  random_factor_graph(np.random.default_rng(1))):
        x = states(model.card)[np.argmax(scores(model))]
        smaller, kept, constant = clamp(model, dict(enumerate(x.tolist())))
        assert smaller.card.size == 0 and kept.size == 0
        assert constant == pytest.approx(model.score(x))
        assert fwcore.exact_inference(smaller).log_z == 0.0


def test_clamp_slices_a_factor_to_lower_arity():
    table = np.arange(12.0).reshape(2, 3, 2)
    fg = FactorGraph([2, 3, 2], [((0, 1, 2), table), ((1,), [0.5, 1.0, 2.0])])
    smaller, kept, constant = clamp(fg, {1: 2})
    assert kept.tolist() == [0, 2] and constant == 2.0
    assert [s for s, _ in smaller.factors] == [(0, 1)]
    np.testing.assert_array_equal(smaller.factors[0][1], table[:, 2, :])


@pytest.mark.parametrize("seed", range(10))
def test_fixed_by_evidence_finds_the_clamps_and_clamp_removes_them(seed):
    model = random_model(seed)
    rng = np.random.default_rng(200 + seed)
    free = [v for v in range(model.card.size) if model.card[v] > 1]
    evidence = {int(v): int(rng.integers(model.card[v]))
                for v in rng.choice(free, 2, replace=False)}
    observed = fwcore.apply_evidence(model, evidence)
    if not np.isfinite(scores(observed)).any():
        return
    fixed = fixed_by_evidence(observed)
    assert evidence.items() <= fixed.items()
    smaller, kept, constant = clamp(observed, fixed)
    full, part = fwcore.exact_inference(observed), fwcore.exact_inference(smaller)
    assert constant + part.log_z == pytest.approx(full.log_z)
    for k, v in enumerate(kept):
        np.testing.assert_allclose(part.node_marginals[k], full.node_marginals[v], atol=1e-12)


def exact(model, max_time=None):
    return fwcore.exact_inference(model)


def barrier_fw(model, max_time=None):
    return fwcore.barrier_fw(model, oracle="exact", max_time=max_time)


@pytest.mark.parametrize("seed", range(20))
def test_conditioning_on_the_exact_answer_is_exact(seed):
    model = random_model(seed)
    ref = fwcore.exact_inference(model)
    variables = choose_conditioning(model, 2)
    res = conditioned(model, exact, variables)
    assert res.log_z_upper == pytest.approx(ref.log_z)
    assert res.log_z_lower == pytest.approx(ref.log_z)
    assert res.status is Status.CONVERGED and res.certified
    for mine, true in zip(res.node_marginals, ref.node_marginals):
        np.testing.assert_allclose(mine, true, atol=1e-10)
    # the branches' exact values: log Z of the model with the variables clamped
    for a, z in zip(res.branch_states, res.branch_log_z_upper):
        clamped = scores(model)[(states(model.card)[:, variables] == a).all(axis=1)]
        assert z == pytest.approx(logsumexp(clamped)) or z == clamped.max() == -np.inf


def test_every_branch_impossible_is_no_feasible_assignment():
    model = PairwiseMRF([2, 2], [[0.0, -np.inf], [0.0, 0.0]], [(0, 1)],
                        [np.array([[0.0, -np.inf], [0.0, 0.0]])])
    res = conditioned(model, exact, [1])  # x0 = 0 forces x1 = 0: branch x1 = 1 is skipped
    assert res.branch_log_z_upper[1] == -np.inf
    assert res.log_z_upper == pytest.approx(0.0)
    bad = PairwiseMRF([2, 2], [[0.0, -np.inf], [-np.inf, 0.0]], [(0, 1)],
                      [np.array([[0.0, -np.inf], [0.0, 0.0]])])
    with pytest.raises(ValueError, match="no feasible assignment"):
        conditioned(bad, exact, [0])


@pytest.mark.parametrize("family", ["clique", "grid"])
def test_conditioning_barrier_fw_keeps_the_bound_and_tightens_it(family):
    tighter = 0
    for seed in range(6):
        model = (fwcore.random_clique(7, coupling=2.0, seed=seed) if family == "clique"
                 else fwcore.random_grid(3, coupling=2.0, seed=seed))
        log_z = fwcore.exact_inference(model).log_z
        plain = barrier_fw(model)
        res = conditioned(model, barrier_fw, choose_conditioning(model, 2))
        assert res.certified
        assert res.log_z_lower - 1e-9 <= log_z <= res.log_z_upper + 1e-9
        tighter += res.log_z_upper <= plain.log_z_upper + 1e-9
    assert tighter >= 5


def test_factor_graph_branches_stay_factor_graphs():
    model = random_factor_graph(np.random.default_rng(3))
    seen = []
    res = conditioned(model, lambda m: seen.append(type(m)) or fwcore.exact_inference(m), [0, 1])
    assert set(seen) <= {FactorGraph} and res.log_z_upper == pytest.approx(
        fwcore.exact_inference(model).log_z)


def test_anytime_branches_further_and_keeps_the_tightest_bound():
    model = fwcore.random_clique(8, coupling=2.0, seed=0)
    log_z = fwcore.exact_inference(model).log_z
    res = conditioned_anytime(model, barrier_fw, max_time=3.0, max_vars=3)
    levels = [r.outer for r in res.trace]
    assert levels == list(range(len(levels))) and len(levels) >= 2
    assert res.log_z_upper == min(r.bound for r in res.trace)
    assert res.log_z_lower == max(r.primal for r in res.trace)
    assert res.log_z_lower <= log_z <= res.log_z_upper
    assert res.variables == tuple(choose_conditioning(model, len(res.variables)).tolist())


def test_anytime_at_a_short_time_limit_says_max_time():
    model = fwcore.random_clique(8, coupling=2.0, seed=0)
    res = conditioned_anytime(model, barrier_fw, max_time=0.05)
    assert res.status is Status.MAX_TIME
    assert res.log_z_upper >= fwcore.exact_inference(model).log_z


def test_factor_coupling_of_a_spin_coupling_and_of_main_effects():
    w = 0.7
    assert factor_coupling((0, 1), [[w, -w], [-w, w]]) == pytest.approx(2 * w)
    # a table that is a sum of one-variable parts ties nothing
    rng = np.random.default_rng(0)
    additive = rng.normal(size=(3, 1, 1)) + rng.normal(size=(1, 2, 1)) + rng.normal(size=(1, 1, 4))
    assert factor_coupling((0, 1, 2), additive) == pytest.approx(0.0, abs=1e-12)
    assert factor_coupling((0,), [1.0, 5.0]) == 0.0


def test_choose_conditioning_takes_the_hub_first():
    n = 6
    edges = [(0, j) for j in range(1, n)] + [(1, 2)]
    strength = [3.0] * (n - 1) + [0.1]
    model = PairwiseMRF([2] * n, None, edges,
                        [np.array([[s, -s], [-s, s]]) for s in strength])
    chosen = choose_conditioning(model, 2).tolist()
    assert chosen[0] == 0 and chosen[1] in (1, 2)
    assert choose_conditioning(model, 0).size == 0


@pytest.mark.parametrize("call, error, match", [
    (lambda m: clamp(m, [(0, 1)]), TypeError, "assignment must be a mapping"),
    (lambda m: clamp(m, {0: 1.5}), TypeError, "integer"),
    (lambda m: clamp(m, {9: 0}), ValueError, "variable 9"),
    (lambda m: clamp(m, {0: 2}), ValueError, "state 2"),
    (lambda m: conditioned(m, exact, [0, 0]), ValueError, "repeats"),
    (lambda m: conditioned(m, exact, [7]), ValueError, "variable 7"),
    (lambda m: conditioned(m, exact, "01"), TypeError, "variables"),
    (lambda m: conditioned(m, "exact", [0]), TypeError, "bound"),
    (lambda m: conditioned(m, exact, [0], max_time=0), ValueError, "max_time"),
    (lambda m: choose_conditioning(m, 4), ValueError, "k must be"),
    (lambda m: choose_conditioning(m, 1.0), TypeError, "k must be"),
])
def test_bad_arguments_name_the_argument(call, error, match):
    model = fwcore.random_clique(3, seed=0)
    with pytest.raises(error, match=match):
        call(model)


def test_too_many_branches_are_refused():
    model = fwcore.random_grid(5, seed=0)
    with pytest.raises(ValueError, match="MAX_BRANCHES"):
        conditioned(model, exact, list(range(int(math.log2(MAX_BRANCHES)) + 1)))


def test_without_mean_field_a_bound_without_lower_bound_gives_none():
    model = fwcore.random_clique(5, coupling=2.0, seed=1)
    log_z = fwcore.exact_inference(model).log_z
    def without_lower(m, max_time=None):   # Barrier FW's answer without its interval
        return dataclasses.replace(barrier_fw(m, max_time=max_time), log_z_lower=None)
    bare = conditioned(model, without_lower, [0], mean_field=False)
    assert bare.log_z_lower == -np.inf and bare.gap == np.inf
    assert -np.inf < conditioned(model, barrier_fw, [0], mean_field=False).log_z_lower
    res = conditioned(model, barrier_fw, [0])
    assert -np.inf < res.log_z_lower <= log_z <= res.log_z_upper


def test_a_branch_interrupted_before_any_bound_keeps_the_interval_certified():
    # Ctrl-C in a branch's bound before it proved anything (certified False, bound +inf):
    # the level ends there, that branch and those not reached count with the product
    # bound, so the answer is still a certified (loose) interval
    model = fwcore.random_grid(4, coupling=2.0, seed=1)
    log_z = fwcore.exact_inference(model).log_z

    def interrupted(branch, max_time=None):
        res = fwcore.infer(branch, method="exact")
        return dataclasses.replace(res, status=Status.INTERRUPTED, certified=False,
                                   log_z_upper=math.inf, log_z_lower=-math.inf)

    res = conditioned(model, interrupted, [0, 5])
    assert res.status is Status.INTERRUPTED and res.certified and res.n_iter == 1
    assert log_z <= res.log_z_upper < math.inf


def test_a_bound_that_returns_none_or_nan_is_refused():
    model = fwcore.random_grid(3, coupling=1.0, seed=0)
    with pytest.raises(TypeError, match="bound must return a result"):
        conditioned(model, lambda branch: None, [0])
    nan = dataclasses.replace(fwcore.infer(model), log_z_upper=math.nan)
    with pytest.raises(ValueError, match="log_z_upper = nan"):
        conditioned(model, lambda branch: nan, [0])
