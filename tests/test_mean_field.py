"""The naive mean-field lower bound (`fwcore.marginals.mean_field`) against brute force."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fwcore
from fwcore import FactorGraph, PairwiseMRF
from fwcore.marginals.mean_field import _Factor, mean_field_lower_bound
from fwcore.views import factors_of
from fwcore.loop import Deadline
from fwcore.results import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from test_condition import random_factor_graph, random_pairwise, scores, states  # noqa: E402


def brute_force_bound(model, q):
    """E_q[score] + Σ_i H(q_i) by enumerating every joint state (0·(−inf) = 0)."""
    x = states(model.card)
    weight = np.prod([q[i][x[:, i]] for i in range(model.card.size)], axis=0)
    s = scores(model)
    used = weight > 0
    expected = -np.inf if np.isneginf(s[used]).any() else float((weight[used] * s[used]).sum())
    entropy = sum(-(p[p > 0] * np.log(p[p > 0])).sum() for p in q)
    return expected + entropy


def random_model(seed):
    rng = np.random.default_rng(seed)
    return random_pairwise(rng) if seed % 2 else random_factor_graph(rng)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6))
def test_the_bound_is_at_most_log_z_and_is_computed_exactly(seed):
    model = random_model(seed)
    res = mean_field_lower_bound(model)
    log_z = fwcore.exact_inference(model).log_z
    assert res.log_z_lower <= log_z + 1e-9
    assert res.certified
    expected = brute_force_bound(model, res.node_marginals)
    assert (res.log_z_lower == pytest.approx(expected, abs=1e-9) or
            res.log_z_lower == expected == -np.inf)
    for p, c in zip(res.node_marginals, model.card):
        assert p.shape == (c,) and p.min() >= 0 and p.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(30))
def test_a_feasible_labelling_start_only_rises(seed):
    model = random_model(seed)
    s = scores(model)
    x = states(model.card)[np.flatnonzero(np.isfinite(s))[seed % np.isfinite(s).sum()]]
    start = [np.eye(c)[v] for c, v in zip(model.card, x)]
    res = mean_field_lower_bound(model, start=start)
    assert res.trace[0].primal == pytest.approx(model.score(x))
    bounds = [r.primal for r in res.trace]
    assert all(b >= a - 1e-9 for a, b in zip(bounds, bounds[1:]))
    assert model.score(x) - 1e-9 <= res.log_z_lower <= fwcore.exact_inference(model).log_z + 1e-9


def test_independent_variables_give_log_z_and_converge():
    model = PairwiseMRF([2, 3], [[0.5, -1.0], [0.0, 2.0, -np.inf]])
    res = mean_field_lower_bound(model)
    assert res.log_z_lower == pytest.approx(fwcore.exact_inference(model).log_z)
    assert res.status is Status.CONVERGED
    np.testing.assert_allclose(res.node_marginals[1][2], 0.0)


def test_a_coupled_model_stops_stalled_at_a_fixed_point():
    res = mean_field_lower_bound(fwcore.random_grid(4, coupling=1.0, seed=0), max_iter=1000)
    assert res.status is Status.STALLED and res.n_iter < 1000


def test_hard_constraints_are_repaired_from_the_uniform_start():
    # x0 = x1 = x2 (0 / -inf equality tables): any full-support product q is impossible
    eq = np.where(np.eye(3, dtype=bool), 0.0, -np.inf)
    model = FactorGraph([3, 3, 3], [((0, 1), eq), ((1, 2), eq), ((0,), [0.0, 1.0, 2.0])])
    res = mean_field_lower_bound(model)
    assert np.isfinite(res.log_z_lower)
    assert res.log_z_lower <= fwcore.exact_inference(model).log_z + 1e-9


def test_a_factor_graph_is_bounded_on_its_own_factors():
    model = random_factor_graph(np.random.default_rng(5))
    assert factors_of(model) is model.factors
    res = mean_field_lower_bound(model)
    assert len(res.node_marginals) == model.n_vars


@pytest.mark.parametrize("seed", range(20))
def test_factor_contraction_matches_einsum(seed):
    rng = np.random.default_rng(seed)
    arity = int(rng.integers(1, 5))
    card = rng.integers(1, 4, arity)
    table = rng.normal(size=card)
    table[rng.random(card) < 0.3] = -np.inf
    q = [rng.dirichlet(np.ones(c)) * (rng.random(c) > 0.3) for c in card]
    f = _Factor(tuple(range(arity)), table)
    letters = "abcd"[:arity]
    for axis in range(arity):
        value, bad = f.towards(q, axis)
        others = [k for k in range(arity) if k != axis]
        spec = ",".join([letters] + [letters[k] for k in others]) + f"->{letters[axis]}"
        finite = np.where(np.isneginf(table), 0.0, table)
        np.testing.assert_allclose(value, np.einsum(spec, finite, *[q[k] for k in others]))
        impossible = np.einsum(spec, np.isneginf(table) * 1.0, *[q[k] for k in others])
        np.testing.assert_allclose(np.zeros_like(impossible) if bad is None else bad, impossible)


def test_a_deadline_in_the_past_stops_at_once():
    res = mean_field_lower_bound(fwcore.random_grid(3, seed=0), max_time=1e-9)
    assert res.status is Status.MAX_TIME and res.n_iter == 0


@pytest.mark.parametrize("start, match", [
    ([[1.0, 0.0]], "one distribution per variable"),
    ([[1.0, 0.0], [-1.0, 2.0]], r"start\[1\]"),
    ([[1.0, 0.0], [0.0, 0.0]], r"start\[1\]"),
    ([[1.0, 0.0], [1.0, 0.0, 0.0]], r"start\[1\]"),
])
def test_bad_start_names_the_argument(start, match):
    with pytest.raises(ValueError, match=match):
        mean_field_lower_bound(fwcore.random_clique(2, seed=0), start=start)


def test_bad_options_name_the_argument():
    with pytest.raises(ValueError, match="tol"):
        mean_field_lower_bound(fwcore.random_clique(2, seed=0), tol=0)
    with pytest.raises(TypeError, match="model must be"):
        mean_field_lower_bound("model")


def test_no_feasible_support_found_stops_stalled_at_minus_inf():
    # x0 != x1, x1 != x2, x0 != x2 over two states: no feasible assignment at all
    ne = np.where(np.eye(2, dtype=bool), -np.inf, 0.0)
    model = FactorGraph([2, 2, 2], [((0, 1), ne), ((1, 2), ne), ((0, 2), ne)])
    res = mean_field_lower_bound(model, max_iter=50)
    assert res.log_z_lower == -np.inf and res.status is Status.STALLED and res.n_iter < 50


@pytest.mark.parametrize("seed", range(8))
def test_the_pairwise_kernels_are_the_factor_updates(seed):
    """`_PairwiseAscent` (the kernels) against its twin `_FactorAscent` on the same
    PairwiseMRF with -inf entries: the same q after each sweep, the same bound."""
    from fwcore.marginals.mean_field import _FactorAscent, _PairwiseAscent
    rng = np.random.default_rng(seed)
    model = fwcore.random_grid(3, 4, coupling=2.0, seed=seed)
    theta = model.theta.copy()
    theta[rng.random(theta.size) < 0.15] = -np.inf
    model = model.with_theta(theta)
    start = [rng.random(c) + 0.01 for c in model.card]
    start = [p / p.sum() for p in start]
    twin = _FactorAscent(model, [p.copy() for p in start])
    kernel = _PairwiseAscent(model, np.concatenate(start))
    assert kernel.bound() == pytest.approx(twin.bound(), rel=1e-12, abs=1e-12)
    for _ in range(4):
        assert kernel.sweep(Deadline())[0] == pytest.approx(twin.sweep(Deadline())[0], abs=1e-12)
        np.testing.assert_allclose(kernel.marginals(), twin.marginals(), rtol=1e-10,
                                   atol=1e-13)
        assert kernel.bound() == pytest.approx(twin.bound(), rel=1e-12, abs=1e-12)


def test_a_model_arc_consistency_proves_infeasible_is_a_value_error():
    """As from every entry point (a variable whose every state is impossible: log Z = -inf
    was returned as 'converged')."""
    model = fwcore.PairwiseMRF([2, 2], [[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match="no feasible assignment"):
        mean_field_lower_bound(model)


def test_a_start_near_the_largest_float_is_the_distribution_it_means():
    # weights of 1e308 overflowed their sum to inf, q became [0, 0] and L(q) = 0 was
    # returned as a certified bound on a model whose log Z is -399 (issue 41, case 8)
    model = fwcore.random_grid(3, coupling=1.0, seed=0).with_theta(
        fwcore.random_grid(3, coupling=1.0, seed=0).theta - 50.0)
    log_z = fwcore.exact_inference(model).log_z
    res = mean_field_lower_bound(model, start=[[1e308, 1e308]] * 9, max_iter=0)
    uniform = mean_field_lower_bound(model, max_iter=0)
    assert res.log_z_lower == pytest.approx(uniform.log_z_lower) and res.log_z_lower <= log_z


def test_a_sweep_stopped_by_its_time_limit_is_a_prefix_of_the_whole_sweep():
    """`mean_field_sweep` with a time limit already passed stops after the variables it
    updated (at least none, at most all), each updated as the whole sweep updates it: the
    stopped q agrees with the whole sweep's on a prefix of the variables and with the start
    on the rest; BP_TIME says so."""
    from fwcore._kernels import BP_TIME, mean_field_sweep
    model = fwcore.random_grid(300, 300, coupling=1.0, seed=0)
    start = np.repeat(1.0 / model.card, model.card)
    whole, stopped = start.copy(), start.copy()
    assert mean_field_sweep(model.theta, model.graph, whole)[1] == 0
    _, stop = mean_field_sweep(model.theta, model.graph, stopped, 1e-9, False)
    assert stop == BP_TIME
    changed = np.flatnonzero(stopped != start)
    done = changed[-1] + 1 if len(changed) else 0
    assert done < model.node_off[-1]
    np.testing.assert_array_equal(stopped[:done], whole[:done])
    np.testing.assert_array_equal(stopped[done:], start[done:])


@pytest.mark.parametrize("seed", range(4))
def test_product_marginals_are_the_outer_products_of_the_node_marginals(seed):
    """`fwcore._kernels.product_marginals` against its twin, np.outer edge by edge, on
    mixed cardinalities with zeros and the extremes of float64 in q."""
    from fwcore._kernels import product_marginals
    rng = np.random.default_rng(seed)
    model = fwcore.random_grid(4, 5, seed=seed)
    card = rng.integers(1, 5, model.n_vars)
    model = PairwiseMRF(card, [rng.normal(size=c) for c in card], model.edges,
                        [rng.normal(size=(card[i], card[j])) for i, j in model.edges])
    q = rng.random(model.node_off[-1])
    q[rng.random(q.size) < 0.2] = 0.0
    q[0], q[-1] = 5e-324, 1.0
    mu = np.full(model.dim, np.nan)
    product_marginals(model.graph, q, mu)
    nodes = [q[model.node_off[i]:model.node_off[i + 1]] for i in range(model.n_vars)]
    twin = np.concatenate([q] + [np.outer(nodes[i], nodes[j]).ravel() for i, j in model.edges])
    np.testing.assert_array_equal(mu, twin)


def test_infer_mean_field_gives_the_product_marginals_of_its_bound():
    """``infer(method="mean-field")``: node marginals those of `mean_field_lower_bound`,
    edge marginals their outer products, log_z_lower its bound."""
    model = fwcore.potts_grid(5, 4, n_labels=3, seed=3)
    res = fwcore.infer(model, method="mean-field")
    ref = mean_field_lower_bound(model)
    assert res.log_z_lower == ref.log_z_lower
    for got, want in zip(res.node_marginals, ref.node_marginals):
        np.testing.assert_array_equal(got, want)
    for (i, j), table in zip(model.edges, res.edge_marginals):
        np.testing.assert_array_equal(table, np.outer(ref.node_marginals[i],
                                                      ref.node_marginals[j]))
