"""The Gibbs reference of the benchmarks (bench/benchmarks/reference.py) against exact
marginals on grids small enough to enumerate."""
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore

BENCH = Path(__file__).resolve().parents[1] / "bench"
if not (BENCH / "benchmarks" / "reference.py").exists():
    pytest.skip("the bench/ folder is not beside tests/ (installed package only)",
                allow_module_level=True)
sys.path.insert(0, str(BENCH))
from benchmarks.reference import gibbs_marginals, greedy_colouring  # noqa: E402

SWEEPS, CHAINS = 5000, 4


def test_agrees_with_exact_marginals_on_a_4x4_grid():
    """20,000 recorded sweeps in all: the standard error of an estimate is at most
    0.5 / sqrt(20,000) = 0.0035 for independent samples; allowing for autocorrelation (a
    few sweeps at coupling 1), the mean error must be under 0.015 and the largest under
    0.04 (measured over seeds 0-4: 0.002-0.008 and 0.005-0.020), and within the chains'
    own spread."""
    model = fwcore.random_grid(4, coupling=1.0, field=1.0, seed=1)
    exact = np.array(fwcore.exact_inference(model).node_marginals)
    ref = gibbs_marginals(model, n_sweeps=SWEEPS, n_chains=CHAINS, seed=0)
    err = np.abs(ref.node_marginals - exact)
    assert ref.n_colours == 2 and ref.node_marginals.shape == (16, 2)
    np.testing.assert_allclose(ref.node_marginals.sum(axis=1), 1.0)
    assert err.mean() < 0.015 and err.max() < 0.04
    assert err[:, 1].max() <= ref.max_spread


def test_multilabel_and_mixed_cardinalities():
    rng = np.random.default_rng(0)
    card = [3, 1, 2, 3, 2, 3]
    edges = [(0, 1), (1, 2), (0, 3), (1, 4), (2, 5), (3, 4), (4, 5), (0, 4)]
    model = fwcore.PairwiseMRF(card, [rng.uniform(-1, 1, c) for c in card], edges,
                               [rng.uniform(-1, 1, (card[i], card[j])) for i, j in edges])
    exact = fwcore.exact_inference(model).node_marginals
    ref = gibbs_marginals(model, n_sweeps=SWEEPS, seed=1)
    for i, p in enumerate(exact):
        np.testing.assert_allclose(ref.node_marginals[i, :card[i]], p, atol=0.03)
        assert (ref.node_marginals[i, card[i]:] == 0).all()


def test_chains_are_reproducible_for_a_seed():
    model = fwcore.random_grid(3, 4, coupling=1.0, seed=2)
    a = gibbs_marginals(model, n_sweeps=200, n_chains=3, seed=7)
    b = gibbs_marginals(model, n_sweeps=200, n_chains=3, seed=7)
    c = gibbs_marginals(model, n_sweeps=200, n_chains=3, seed=8)
    np.testing.assert_array_equal(a.chain_marginals, b.chain_marginals)
    assert not np.array_equal(a.chain_marginals, c.chain_marginals)
    assert a.chain_marginals.shape == (3, 12, 2) and a.burn_in == 20
    # the chains differ from one another, and the spread is their range
    spread = np.ptp(a.chain_marginals, axis=0).max(axis=1)
    np.testing.assert_allclose(a.spread, spread)
    assert a.max_spread == spread.max() > 0


def test_colouring_is_proper_and_a_checkerboard_on_grids():
    model = fwcore.skip_grid(6, 7, offsets=(1, 2), seed=0)
    colour = greedy_colouring(model)
    assert (colour[model.edges[:, 0]] != colour[model.edges[:, 1]]).all()
    grid = greedy_colouring(fwcore.random_grid(5, 6, seed=0)).reshape(5, 6)
    np.testing.assert_array_equal(grid, np.indices((5, 6)).sum(axis=0) % 2)


def test_bad_arguments():
    model = fwcore.random_grid(2, seed=0)
    with pytest.raises(ValueError, match="n_sweeps must be an integer >= 1"):
        gibbs_marginals(model, n_sweeps=0)
    with pytest.raises(TypeError, match="seed must be an int"):
        gibbs_marginals(model, seed=0.5)
    hard = model.with_theta(np.where(np.arange(model.dim) == 0, -np.inf, model.theta))
    with pytest.raises(ValueError, match="finite log-potentials"):
        gibbs_marginals(hard)
