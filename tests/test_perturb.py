"""fwcore.perturb_and_map (Barrier FW App. G; Hazan & Jaakkola 2012) against exact answers."""
import itertools
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import fwcore
from fwcore import Status, perturb_and_map
from fwcore.loop import Deadline
from fwcore.marginals.perturb import _Inflated


def _model(card, edges, seed, coupling=1.0):
    rng = np.random.default_rng(seed)
    return fwcore.PairwiseMRF(card, [rng.normal(size=k) for k in card], edges,
                              [coupling * rng.normal(size=(card[i], card[j])) for i, j in edges])


def _impossible(model, position):
    theta = model.theta.copy()
    theta[position] = -np.inf
    return model.with_theta(theta)


def _inflated_max(model, m, noise, scores=None):
    """NumPy twin: the maximum over every assignment of the n*m copies of the inflated
    model (H&J Sec. 4.1): θ_i/m + γ_ik/m per copy, θ_ij/m² per pair of copies."""
    best = -np.inf
    for flat in itertools.product(*[range(k) for k in model.card for _ in range(m)]):
        X = np.array(flat).reshape(model.n_vars, m)
        v = sum((model.unary(i)[X[i, k]] + noise[i][k, X[i, k]]) / m
                for i in range(model.n_vars) for k in range(m))
        v += sum(model.pairwise(e)[X[i, k], X[j, k2]] / m**2
                 for e, (i, j) in enumerate(model.edges) for k in range(m) for k2 in range(m))
        best = max(best, v)
    return best


@pytest.mark.parametrize("m", [1, 2, 3])
def test_count_model_maximum_is_the_inflated_graphs(m):
    model = _model([2, 3, 2], [(0, 1), (1, 2), (0, 2)], seed=m, coupling=2.0)
    model = _impossible(model, model.edge_off[1])  # an impossible pair of states
    inflated = _Inflated(model, m, Deadline())
    rng = np.random.default_rng(0)
    for _ in range(3):
        noise = [rng.gumbel(size=(m, k)) for k in model.card]
        scores = inflated.perturbed(inflated.graph.theta, noise)
        best = max(inflated.graph.score(np.array(x), scores)
                   for x in itertools.product(*[range(len(c)) for c in inflated.C]))
        assert best == pytest.approx(_inflated_max(model, m, noise), abs=1e-12)


@pytest.mark.parametrize("m", [1, 3])
def test_mean_is_log_z_without_edges(m):
    # no edges: the maximum splits over variables and E[max θ_i + γ_i] = log Z_i exactly
    model = _model([2, 3, 4], [], seed=1)
    res = perturb_and_map(model, n_samples=400, inflation=m, marginals=None, seed=0)
    exact = fwcore.exact_inference(model).log_z
    assert abs(res.log_z - exact) < 4 * res.log_z_stderr
    assert res.samples.size == 400 and res.n_oracle_calls == 400


@pytest.mark.parametrize("coupling", [0.5, 2.0])
def test_mean_is_not_below_log_z_on_a_tree(coupling):
    # H&J Cor. 1 (m = 1, exact MAP): an upper bound in expectation (close on this tree)
    model = _model([2, 3, 2, 2], [(0, 1), (1, 2), (1, 3)], seed=2, coupling=coupling)
    res = perturb_and_map(model, n_samples=400, inflation=1, marginals=None, seed=0)
    exact = fwcore.exact_inference(model).log_z
    assert exact - 3 * res.log_z_stderr < res.log_z < exact + 0.5


def test_sample_frequencies_are_the_marginals_without_edges():
    # Gumbel-max (Papandreou & Yuille): with m = 1 each state is drawn with probability p_i
    model = _model([2, 3], [], seed=3)
    res = perturb_and_map(model, n_samples=3000, inflation=1, marginals="samples", seed=0)
    exact = fwcore.exact_inference(model)
    for a, b in zip(res.node_marginals, exact.node_marginals):
        assert np.abs(a - b).max() < 0.04
    assert res.edge_marginals == []


def test_conditioned_marginals_on_a_clique():
    model = fwcore.random_clique(5, coupling=1.0, seed=0)
    res = perturb_and_map(model, n_samples=20, seed=0)
    exact = fwcore.exact_inference(model)
    err = np.mean([abs(a[1] - b[1]) for a, b in zip(res.node_marginals, exact.node_marginals)])
    assert err < 0.1
    assert all(abs(q.sum() - 1) < 1e-12 for q in res.node_marginals)
    assert res.edge_marginals is None
    assert res.n_oracle_calls == 20 * (1 + 2 * 5)
    assert res.status is Status.MAX_ITER and not res.certified


def test_an_impossible_state_has_marginal_zero():
    model = _impossible(_model([3, 2], [(0, 1)], seed=4), 1)
    res = perturb_and_map(model, n_samples=5, inflation=2, seed=0)
    assert res.node_marginals[0][1] == 0.0 and np.isfinite(res.log_z)


def test_reproducible_from_seed_and_trace():
    model = fwcore.random_grid(3, seed=1)
    runs = [perturb_and_map(model, n_samples=6, marginals="samples", seed=s) for s in (5, 5, 6)]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
    np.testing.assert_array_equal(runs[0].node_marginals[2], runs[1].node_marginals[2])
    assert not np.array_equal(runs[0].samples, runs[2].samples)
    t = runs[0].trace.columns()
    assert len(t["primal"]) == 6 and t["primal"][-1] == pytest.approx(runs[0].log_z)


@pytest.mark.parametrize("pool", [ThreadPoolExecutor, ProcessPoolExecutor])
def test_executor_runs_equal_serial_runs(pool):
    model = fwcore.random_clique(4, coupling=2.0, seed=3)
    kwargs = dict(n_samples=4, inflation=2, oracle=("icm", {}), seed=7)
    serial = perturb_and_map(model, **kwargs)
    with pool(max_workers=2) as ex:
        parallel = perturb_and_map(model, executor=ex, **kwargs)
    np.testing.assert_array_equal(serial.samples, parallel.samples)
    for a, b in zip(serial.node_marginals, parallel.node_marginals):
        np.testing.assert_array_equal(a, b)
    assert serial.n_oracle_calls == parallel.n_oracle_calls


def test_max_time_returns_the_samples_so_far():
    model = fwcore.random_grid(4, seed=0)
    res = perturb_and_map(model, n_samples=10**6, inflation=1, max_time=0.3, seed=0)
    assert res.status is Status.MAX_TIME
    assert 0 < res.samples.size < 10**6 and np.isfinite(res.log_z)


def test_ctrl_c_returns_the_samples_so_far():
    model = fwcore.random_grid(3, seed=0)
    exact = fwcore.oracles.resolve_oracle("exact", model)
    calls = []

    def oracle(scores):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return exact.argmax(scores)

    res = perturb_and_map(model, oracle=oracle, inflation=1, n_samples=10, seed=0)
    assert res.status is Status.INTERRUPTED and res.samples.size == 3
    assert res.node_marginals is None  # the conditioned estimates never ran: absent, not NaN
    assert res.log_z_stderr is not None and np.isfinite(res.log_z)


@pytest.mark.parametrize("max_time", [1e-6, 0.002])
def test_max_time_before_the_samples_gives_no_estimate_rather_than_nan(max_time):
    """The certified sweep's model 0 (issue 41: a NaN log Z and NaN marginals when the time
    ran out before the first sample or the clamped estimates): absent values instead."""
    model = fwcore.random_grid(3, seed=0)
    res = perturb_and_map(model, inflation=1, max_time=max_time, seed=0)
    assert res.status is Status.MAX_TIME
    assert res.node_marginals is None
    for value in (res.log_z, res.log_z_stderr):
        assert value is None or np.isfinite(value)
    assert (res.log_z is None) == (res.samples.size == 0)
    assert (res.log_z_stderr is None) == (res.samples.size < 2)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(n_samples=0), ValueError, "n_samples"),
    (dict(inflation=1.5), ValueError, "inflation"),
    (dict(marginals="gibbs"), ValueError, "marginals"),
    (dict(executor="threads"), TypeError, "executor"),
    (dict(seed="0"), TypeError, "seed"),
    (dict(max_time=-1), ValueError, "max_time"),
    (dict(oracle="magic"), ValueError, "unknown oracle"),
    (dict(oracle=lambda s: None, inflation=2), ValueError, "inflation"),
])
def test_bad_arguments_name_themselves(kwargs, error, words):
    with pytest.raises(error, match=words):
        perturb_and_map(fwcore.random_grid(2, seed=0), **kwargs)


def test_model_must_be_an_mrf():
    with pytest.raises(TypeError, match="model must be a fwcore.PairwiseMRF"):
        perturb_and_map(np.zeros(3))


def test_an_inflation_too_large_for_the_labels_is_refused_before_allocating():
    star = fwcore.PairwiseMRF([5000, 2], None, [(0, 1)], [np.zeros((5000, 2))])
    with pytest.raises(ValueError, match="inflation=5 needs .* smaller inflation"):
        perturb_and_map(star, oracle="trws", inflation=5, seed=0)
    assert perturb_and_map(star, oracle="trws", inflation=1, n_samples=2, marginals=None,
                           seed=0).samples.size == 2


def test_binary_noise_terms_match_the_assignment_problem():
    from fwcore.marginals.perturb import _Inflated, _best_assignment
    model = fwcore.PairwiseMRF([2, 3, 2], None, [(0, 1), (1, 2)])
    inflated = _Inflated(model, 4, Deadline())
    rng = np.random.default_rng(0)
    noise = [rng.gumbel(size=(4, int(k))) for k in model.card]
    noise[2] = None
    out = inflated.perturbed(np.zeros(inflated.graph.dim), noise)
    g = inflated.graph
    for i in range(2):
        np.testing.assert_allclose(out[g.node_off[i]:g.node_off[i + 1]],
                                   _best_assignment(noise[i], inflated.C[i]) / 4, rtol=1e-12)
    assert not out[g.node_off[2]:g.node_off[3]].any()


@pytest.mark.parametrize("m, k", [(1, 3), (2, 2), (3, 4), (5, 16), (6, 3), (7, 3)])
def test_the_noise_terms_are_their_assignment_problems(m, k):
    """`_best_assignment` (every order of the copies at once for m <= 6, one assignment
    problem per count vector above) against its twin: scipy's assignment per count vector,
    the copies' noise spread over the slots of the counts' states."""
    from scipy.optimize import linear_sum_assignment
    from fwcore.marginals.perturb import _best_assignment, _compositions
    rng = np.random.default_rng(m * 100 + k)
    gamma = rng.gumbel(size=(m, k)) * rng.choice([1e-3, 1.0, 1e3])
    counts = _compositions(k, m)
    want = []
    for c in counts:
        sub = gamma[:, np.repeat(np.arange(k), c.astype(int))]
        rows, cols = linear_sum_assignment(sub, maximize=True)
        want.append(sub[rows, cols].sum())
    np.testing.assert_allclose(_best_assignment(gamma, counts), want, rtol=1e-12)


@pytest.mark.parametrize("k, m", [(1, 1), (1, 5), (2, 1), (2, 5), (3, 4), (7, 3), (24, 5)])
def test_the_count_vectors_are_itertools_compositions_in_order(k, m):
    from fwcore.marginals.perturb import _compositions
    want = [np.bincount(c, minlength=k)
            for c in itertools.combinations_with_replacement(range(k), m)]
    np.testing.assert_array_equal(_compositions(k, m), want)
