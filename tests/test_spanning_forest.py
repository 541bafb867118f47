"""`fwcore.marginals.rho.max_spanning_forest` (scipy's minimum spanning tree on ranks) against
its pure-Python twin, Kruskal's algorithm with a union-find (the former implementation)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fwcore.marginals.rho import max_spanning_forest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from bench_files import load  # noqa: E402

#: the twin: Kruskal with a union-find, the benchmark's reference
kruskal_forest = load("bench.benchmarks.startup").kruskal_forest


def random_graph(seed):
    """Random edges (some parallel, reversed or self-loops) on up to 40 nodes, several
    components, and weights with many ties (a few levels, zeros, negatives)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    m = int(rng.integers(0, 3 * n))
    edges = rng.integers(0, n, size=(m, 2))
    components = rng.integers(1, 4)           # keep the edges inside blocks of nodes
    edges = edges - edges % components + edges[:, :1] % components
    if rng.random() < 0.5:
        weights = rng.integers(-2, 3, size=m).astype(float)
    else:
        weights = rng.normal(size=m)
    return n, np.clip(edges, 0, n - 1), weights


@pytest.mark.parametrize("seed", range(300))
def test_same_forest_as_kruskal(seed):
    n, edges, weights = random_graph(seed)
    np.testing.assert_array_equal(max_spanning_forest(n, edges, weights),
                                  kruskal_forest(n, edges, weights))


def test_ties_go_to_the_first_edge():
    edges = np.array([(0, 1), (1, 2), (0, 2), (2, 0), (3, 3), (3, 4)])
    chosen = max_spanning_forest(5, edges, np.ones(6))
    np.testing.assert_array_equal(chosen, [1, 1, 0, 0, 0, 1])


def test_grid_forest_spans_each_component():
    side = 30
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)])
    weights = np.random.default_rng(0).integers(0, 3, size=len(edges)).astype(float)
    chosen = max_spanning_forest(side * side, edges, weights)
    assert chosen.sum() == side * side - 1
    np.testing.assert_array_equal(chosen, kruskal_forest(side * side, edges, weights))


def test_no_edges():
    assert max_spanning_forest(3, np.zeros((0, 2), dtype=int), np.zeros(0)).shape == (0,)
