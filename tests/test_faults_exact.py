"""Fault tests for exact inference (issue 12): a model far too large for variable
elimination is refused quickly with a clear ValueError, from a k-core width proof or from
heuristic orders stopped at their first table over the limit. The time bound is generous
(the refusals take about 1 s); the point is that they no longer take minutes."""
import time

import numpy as np
import pytest

from fwcore.exact import exact_inference, exact_map
from fwcore.generators import grid_edges
from fwcore.model import PairwiseMRF
from fwcore.oracles import exact_choice
from fwcore.oracles.exact_oracles import EliminationOracle

SECONDS = 20


def zero_model(n, edges):
    """A binary model with zero potentials on ``edges`` (from flat arrays: fast at 10^6)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return PairwiseMRF.from_flat(np.full(n, 2), edges, np.zeros(2 * n + 4 * len(edges)))


def sparse_random(n, degree, seed=0):
    rng = np.random.default_rng(seed)
    e = np.sort(rng.integers(0, n, size=(n * degree // 2, 2)), axis=1)
    return zero_model(n, np.unique(e[e[:, 0] < e[:, 1]], axis=0))


def refused_quickly(call, model, match):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call(model)
    assert time.perf_counter() - t0 < SECONDS


HEURISTIC = r"best order found, over memory_limit=2147483648 bytes.*heuristic.*fwcore\.infer"


@pytest.mark.parametrize("side", [100, 300])
def test_large_grid_refused_quickly(side):
    m = zero_model(side * side, grid_edges(side, side))
    refused_quickly(exact_inference, m, HEURISTIC)
    refused_quickly(exact_map, m, HEURISTIC)
    refused_quickly(EliminationOracle, m, r"over memory_limit=268435456 .*fwcore\.infer")


def test_million_variable_model_refused_quickly():
    refused_quickly(exact_inference, sparse_random(10**6, 4), HEURISTIC)


def test_dense_model_refused_by_proof():
    n = 400
    i, j = np.triu_indices(n, 1)
    m = zero_model(n, np.c_[i, j][(i + j) % 3 == 0])  # every degree about n / 3
    refused_quickly(exact_inference, m, r"at least \d+ bytes.*-core is not empty")


def test_exact_choice_is_quick_on_grids():
    t0 = time.perf_counter()
    assert exact_choice(zero_model(900, grid_edges(30, 30))) in ("toulbar2", "ilp")
    assert exact_choice(zero_model(100, grid_edges(10, 10))) == "elimination"
    assert time.perf_counter() - t0 < SECONDS
