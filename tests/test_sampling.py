"""Exact samples (fwcore.sample): their frequencies against exact marginals and joint
tables by chi-square tests at a fixed seed, on Bayesian networks (forward sampling; with
evidence, backward sampling through the clique tree) and Markov networks with hard and
soft evidence; reproducibility, results and refusals."""
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

import fwcore
from fwcore.results import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from networks import random_factor_graph, random_network  # noqa: E402

ASIA = Path(__file__).parent / "data" / "asia.bif"
N = 20000
#: no chi-square test of these may fall below it (about 60 tests per run: a correct
#: sampler fails one with probability ~6e-4; seeds are fixed, so a run is reproducible)
P_MIN = 1e-5


def assert_fits(counts, probs):
    """Chi-square goodness of fit of ``counts`` to ``probs``; no count where p = 0."""
    counts, probs = np.ravel(counts), np.ravel(probs)
    assert counts[probs == 0].sum() == 0, "a sample took an impossible state"
    keep = probs > 0
    if keep.sum() < 2:
        return
    expected = counts.sum() * probs[keep] / probs[keep].sum()
    assert chisquare(counts[keep], expected).pvalue > P_MIN


def check_samples(model, evidence, res, pairs=((0, 1),)):
    """Node frequencies against exact marginals, pair frequencies against `fwcore.query`."""
    assert res.samples.shape == (N, model.n_vars) and res.samples.dtype == np.int32
    np.testing.assert_array_equal(res.weights, np.ones(N))
    clamped = fwcore.apply_evidence(model, evidence) if evidence else model
    exact = fwcore.exact_inference(clamped)
    for v in range(model.n_vars):
        assert_fits(np.bincount(res.samples[:, v], minlength=model.card[v]),
                    exact.node_marginals[v])
    for a, b in pairs:
        joint = fwcore.query(model, [a, b], evidence).table
        counts = np.zeros(joint.shape)
        np.add.at(counts, (res.samples[:, a], res.samples[:, b]), 1)
        assert_fits(counts, joint)


def test_bayesian_network_forward_sampling():
    asia = fwcore.read_model(ASIA)
    res = fwcore.sample(asia, N, seed=0)
    assert res.method == "exact/forward" and res.status is Status.CONVERGED
    assert res.names == asia.names and res.certified and res.gap == 0.0
    check_samples(asia, None, res, pairs=((3, 5), (4, 7), (0, 1)))
    for seed in range(3):
        net = random_network(10, seed)
        check_samples(net, None, fwcore.sample(net, N, seed=seed), pairs=((0, 9), (4, 5)))


def test_bayesian_network_with_evidence_samples_the_posterior():
    asia = fwcore.read_model(ASIA)
    evidence = {"xray": "yes", "dysp": "yes"}
    res = fwcore.sample(asia, N, evidence, seed=1)
    assert res.method == "exact/elimination"
    assert res.log_z == pytest.approx(fwcore.query(asia, ["lung"], evidence).log_z)
    assert (res.samples[:, 6] == 0).all() and (res.samples[:, 7] == 0).all()
    check_samples(asia, evidence, res, pairs=((3, 4), (1, 5)))
    soft = {"xray": [0.9, 0.2], "smoke": "no"}  # soft and hard evidence together
    check_samples(asia, soft, fwcore.sample(asia, N, soft, seed=2), pairs=((3, 6),))


@pytest.mark.parametrize("make, evidence", [
    (lambda: fwcore.random_grid(4, 4, coupling=1.0, seed=3), lambda m: {0: 1, 10: 0}),
    (lambda: fwcore.potts_grid(3, 3, n_labels=3, seed=4),
     lambda m: {4: [0.1, 0.5, 0.4], 8: 2}),
    (lambda: random_factor_graph(5),
     lambda m: {1: 0, 2: np.linspace(0.2, 0.8, m.card[2])}),
    (lambda: random_factor_graph(6, scale=2.0), lambda m: None),
], ids=["grid-hard", "potts-soft", "factor-graph-soft", "factor-graph"])
def test_markov_networks_with_evidence(make, evidence):
    model = make()
    evidence = evidence(model)
    res = fwcore.sample(model, N, evidence, seed=5)
    assert res.method == "exact/elimination"
    check_samples(model, evidence, res, pairs=((0, 1), (1, model.n_vars - 1)))


def test_samples_are_reproducible():
    asia = fwcore.read_model(ASIA)
    grid = fwcore.random_grid(3, 3, seed=0)
    for model in (asia, grid):
        a = fwcore.sample(model, 300, seed=7).samples
        np.testing.assert_array_equal(a, fwcore.sample(model, 300, seed=7).samples)
        assert (a != fwcore.sample(model, 300, seed=8).samples).any()


def test_refusals():
    big = fwcore.random_grid(40, 40, seed=0)
    with pytest.raises(ValueError, match=r"exact sampling needs exact elimination.*1600 "
                                         r"variables.*method='auto' answers it"):
        fwcore.sample(big, 10, method="exact", memory_limit=2**20)
    with pytest.raises(ValueError, match="samples of 9 variables take .* draw them in batches"):
        fwcore.sample(fwcore.random_grid(3, 3, seed=0), 10**6, memory_limit=2**20)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        fwcore.sample(big, 0)
    with pytest.raises(ValueError, match="method must be one of 'auto', 'exact', 'wmb'"):
        fwcore.sample(big, 5, method="gibbs")
    with pytest.raises(ValueError, match="soft evidence on variable 0 must be 2 finite"):
        fwcore.sample(fwcore.random_grid(2, 2, seed=0), 5, {0: [0.5, -1.0]})
    infeasible = fwcore.PairwiseMRF([2, 2], None, [(0, 1)],
                                    [np.where(np.eye(2) > 0, 0.0, -np.inf)])
    with pytest.raises(ValueError, match="no feasible assignment"):
        fwcore.sample(infeasible, 5, {0: 0, 1: 1})


# -- past exact reach: importance samples from weighted mini-bucket's proposal -------------

#: a 14x14 grid's elimination needs ~50 MB of messages: under this limit `sample` and
#: `query` go past exact reach, and weighted mini-bucket's stages are split
SMALL_MEMORY = 2**22
N_WEIGHTED = 4000


def weighted_frequencies(samples, weights, v, card):
    return np.bincount(samples[:, v], weights=weights, minlength=card) / weights.sum()


@pytest.mark.parametrize("evidence", [None, {3: 1, 40: [0.2, 0.9], 177: 0}])
def test_weighted_samples_past_exact_reach_estimate_the_marginals(evidence):
    grid = fwcore.random_grid(14, 14, coupling=1.0, seed=11)
    res = fwcore.sample(grid, N_WEIGHTED, evidence, seed=4, memory_limit=SMALL_MEMORY)
    assert res.method == "wmb/importance" and res.estimated
    assert res.samples.shape == (N_WEIGHTED, 196) and res.weights.mean() == pytest.approx(1.0)
    clamped = fwcore.apply_evidence(grid, evidence) if evidence else grid
    exact = fwcore.exact_inference(clamped)
    # the bounds are certified; the sampled interval holds log Z here (95%, seeded)
    assert res.log_z_lower <= exact.log_z <= res.log_z_upper
    assert res.log_z_upper - res.log_z_lower > 1.0       # the proposal is not exact
    assert res.log_z_estimate_lower <= exact.log_z <= res.log_z_estimate_upper
    assert abs(res.log_z - exact.log_z) < 0.05
    assert res.success and res.certified and res.status is Status.STALLED
    assert "certified, width" in res.message and "importance samples" in res.message
    # self-normalised frequencies: within a few standard errors of 1/sqrt(ESS)
    err = max(np.abs(weighted_frequencies(res.samples, res.weights, v, 2) -
                     exact.node_marginals[v]).max() for v in range(196))
    assert err < 5 / np.sqrt(res.info["ess"])
    if evidence:
        assert (res.samples[:, 3] == 1).all() and (res.samples[:, 177] == 0).all()


def test_weighted_samples_are_seeded_and_honour_max_time():
    grid = fwcore.random_grid(14, 14, coupling=1.0, seed=11)
    a = fwcore.sample(grid, 500, seed=1, method="wmb", memory_limit=SMALL_MEMORY)
    b = fwcore.sample(grid, 500, seed=1, method="wmb", memory_limit=SMALL_MEMORY)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.weights, b.weights)
    c = fwcore.sample(grid, 500, seed=2, method="wmb", memory_limit=SMALL_MEMORY)
    assert (a.samples != c.samples).any()
    big = fwcore.random_grid(60, 60, coupling=1.0, seed=0)
    t0 = time.perf_counter()
    res = fwcore.sample(big, 10**4, seed=0, max_time=1.0, memory_limit=2**28)
    assert time.perf_counter() - t0 < 3.0
    assert res.estimated and res.status is Status.MAX_TIME and res.success
    assert 0 < len(res.samples) < 10**4 and len(res.weights) == len(res.samples)
    assert res.log_z_lower <= res.log_z <= res.log_z_upper


def test_weighted_samples_of_an_exact_proposal_are_exact():
    """Where weighted mini-bucket's buckets are whole its proposal is the model's
    distribution: every weight 1, not estimated, converged."""
    grid = fwcore.random_grid(4, 4, coupling=1.0, seed=3)
    res = fwcore.sample(grid, 4000, {0: 1}, seed=0, method="wmb")
    assert not res.estimated and res.status is Status.CONVERGED and res.gap == 0.0
    np.testing.assert_allclose(res.weights, 1.0)
    exact = fwcore.exact_inference(fwcore.apply_evidence(grid, {0: 1}))
    assert res.log_z == pytest.approx(exact.log_z)
    for v in range(16):
        assert_fits(np.bincount(res.samples[:, v], minlength=2), exact.node_marginals[v])
