"""The variable elimination kernels (fwcore._elim, through fwcore.exact) against their NumPy
twin (tests/elim_numpy.py) on random models: mixed cardinalities, -inf entries and all
-inf slices, infeasible and disconnected models; and the anytime portfolio's exact first
step (fwcore.oracles.portfolio)."""
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore.elimination import EliminationPlan, elimination_map, elimination_marginals
from fwcore.model import PairwiseMRF
from fwcore.oracles import resolve_oracle
from fwcore.results import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from elim_numpy import numpy_map, numpy_marginals  # noqa: E402


def random_model(seed, n, max_card, p_edge, p_neg_inf, feasible=True):
    """A random model (cards 1..max_card); with ``feasible`` a random x0 keeps finite
    scores, so that some assignment is feasible."""
    rng = np.random.default_rng(seed)
    card = rng.integers(1, max_card + 1, size=n)
    edges = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < p_edge]
    e = np.array(edges, dtype=np.int64).reshape(-1, 2)
    dim = int(card.sum()) + int(sum(card[i] * card[j] for i, j in edges))
    skeleton = PairwiseMRF.from_flat(card, e, np.zeros(dim))
    theta = rng.normal(scale=3.0, size=dim)
    theta[rng.random(dim) < p_neg_inf] = -np.inf
    if feasible:
        x0 = rng.integers(0, card)
        theta[skeleton.flat_index(x0)] = rng.normal(size=n + len(edges))
    return skeleton.with_theta(theta)


def check_twin(model):
    plan = EliminationPlan(model)
    log_z, mu = numpy_marginals(model, plan)
    best, _ = numpy_map(model, plan)
    if log_z == -np.inf:
        with pytest.raises(ValueError, match="no feasible assignment"):
            elimination_marginals(model, plan)
        with pytest.raises(ValueError, match="no feasible assignment"):
            elimination_map(model, plan)
        return
    got_log_z, got_mu = elimination_marginals(model, plan)
    assert not np.isnan(got_mu).any()
    assert got_log_z == pytest.approx(log_z, abs=1e-10)
    np.testing.assert_allclose(got_mu, mu, atol=1e-10)
    x = elimination_map(model, plan)
    assert model.score(x) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(60))
def test_kernels_match_numpy_twin(seed):
    rng = np.random.default_rng(1000 + seed)
    model = random_model(seed, n=int(rng.integers(1, 11)), max_card=int(rng.integers(2, 5)),
                         p_edge=float(rng.uniform(0.1, 0.7)),
                         p_neg_inf=[0.0, 0.2, 0.5][seed % 3])
    check_twin(model)


@pytest.mark.parametrize("seed", range(10))
def test_infeasible_models_raise(seed):
    model = random_model(seed, n=6, max_card=3, p_edge=0.6, p_neg_inf=0.7, feasible=False)
    check_twin(model)
    theta = model.theta.copy()
    theta[model.node_off[0]:model.node_off[1]] = -np.inf  # certainly infeasible
    with pytest.raises(ValueError, match="no feasible assignment"):
        elimination_marginals(model.with_theta(theta), EliminationPlan(model))
    with pytest.raises(ValueError, match="no feasible assignment"):
        elimination_map(model.with_theta(theta), EliminationPlan(model))


def test_all_inf_slices_give_zeros_not_nan():
    # x_1 = 1 is impossible (an all -inf column of one edge table, an all -inf row of the
    # other), as is x_2 = 1
    model = PairwiseMRF.from_flat(np.array([2, 2, 3]), np.array([[0, 1], [1, 2]]),
                                  np.array([0.1, -0.2, 0.3, 0.0, 0.5, 1.0, -1.0,
                                            0.0, -np.inf, 0.2, -np.inf,
                                            0.0, -np.inf, 0.4, -np.inf, -np.inf, -np.inf]))
    check_twin(model)
    res = fwcore.exact_inference(model, method="elimination")
    assert res.node_marginals[1][1] == 0.0 and not np.isnan(res.mu).any()


def test_disconnected_models_and_wide_cliques():
    # two components (a dense one with many children per clique) and isolated variables
    dense = random_model(3, n=9, max_card=3, p_edge=0.8, p_neg_inf=0.1)
    sparse = random_model(4, n=7, max_card=4, p_edge=0.3, p_neg_inf=0.2)
    n1 = dense.n_vars
    card = np.r_[dense.card, sparse.card, [3, 1]]
    edges = np.r_[dense.edges, sparse.edges + n1].reshape(-1, 2)
    skeleton = PairwiseMRF.from_flat(card, edges, np.zeros(int(card.sum()) + int(sum(
        card[i] * card[j] for i, j in edges))))
    rng = np.random.default_rng(5)
    nodes = [dense.unary(i) for i in range(n1)] + [sparse.unary(i) for i in range(sparse.n_vars)]
    nodes += [rng.normal(size=3), np.zeros(1)]
    pairs = [dense.pairwise(e).ravel() for e in range(dense.n_edges)]
    pairs += [sparse.pairwise(e).ravel() for e in range(sparse.n_edges)]
    check_twin(skeleton.with_theta(np.concatenate(nodes + pairs)))


def test_binary_grid_fast_paths():
    # binary variables with one child clique take the kernels' fused paths
    check_twin(fwcore.random_grid(6, 7, coupling=3.0, seed=2))


def test_large_cardinalities_use_wide_argmax_tables():
    rng = np.random.default_rng(0)
    card = np.array([300, 2, 3])
    edges = np.array([[0, 1], [1, 2], [0, 2]])
    dim = int(card.sum()) + 300 * 2 + 2 * 3 + 300 * 3
    model = PairwiseMRF.from_flat(card, edges, rng.normal(size=dim))
    check_twin(model)


def test_anytime_portfolio_eliminates_when_cheap():
    model = fwcore.random_grid(10, coupling=3.0, seed=1)
    oracle = resolve_oracle("portfolio", model, anytime=True, seed=0)
    x = oracle.argmax(model.theta, time_limit=5.0)
    assert oracle.status is Status.CONVERGED and oracle.best == "elimination"
    assert model.score(x) == pytest.approx(fwcore.exact_map(model).score, abs=1e-9)
    assert oracle.upper_bound() == pytest.approx(model.score(x))
    assert len(oracle.progress) == 1
    res = fwcore.infer_map(model, method="portfolio", max_time=5.0, seed=0)
    assert res.status is Status.CONVERGED and res.upper_bound == res.score


def test_anytime_portfolio_keeps_anytime_rounds_when_elimination_is_too_slow():
    model = fwcore.random_grid(24, seed=0)  # 576 variables: no plan within 0.3 s
    oracle = resolve_oracle("portfolio", model, anytime=True, seed=0)
    oracle.argmax(model.theta, time_limit=0.3)
    assert oracle.best != "elimination"
    plain = resolve_oracle("portfolio", fwcore.random_grid(6, seed=0))  # no anytime
    plain.argmax(plain.model.theta, time_limit=5.0)
    assert plain.best != "elimination"


def test_anytime_portfolio_on_an_infeasible_model_raises():
    model = random_model(1, n=5, max_card=3, p_edge=0.5, p_neg_inf=0.0)
    theta = model.theta.copy()
    theta[model.node_off[0]:model.node_off[1]] = -np.inf
    with pytest.raises(ValueError, match="no feasible assignment"):
        fwcore.infer_map(model.with_theta(theta), method="portfolio", max_time=1.0)
