"""The symbolic elimination kernels (fwcore/_symbolic.pyx) against their Python twins:
the elimination game on neighbour sets, scipy's reverse Cuthill-McKee on the canonical
CSR, and sorted rows; and elimination plans built with the twins equal the kernels'."""
import math

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

from fwcore import exact
from fwcore._symbolic import sorted_neighbours
from fwcore.exact import EliminationPlan
from fwcore.generators import grid_edges
from fwcore.model import PairwiseMRF


def eliminate_twin(model, order, cap=math.inf):
    """The twin of `exact._eliminate`: the elimination game on neighbour sets."""
    card = model.card.tolist()
    adj = exact._NeighbourSets(model)
    pos = np.zeros(model.n_vars, dtype=np.int64)
    pos[order] = np.arange(len(order))
    pos = pos.tolist()
    sep = [None] * model.n_vars
    sizes = []
    for v in order:
        sep[v] = tuple(sorted(adj[v], key=pos.__getitem__))
        sizes.append(card[v] * math.prod(card[u] for u in sep[v]))
        if sizes[-1] > cap:
            return None, sizes
        exact._eliminate_vertex(adj, v)
    return sep, sizes


def bandwidth_twin(model, first=()):
    """The twin of `exact._bandwidth_order`: scipy's reverse Cuthill-McKee on the CSR
    that scipy builds from the edge list."""
    n = model.n_vars
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    e = model.edges
    g = coo_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])),
                   shape=(n, n)).tocsr()
    rcm = reverse_cuthill_mckee(g, symmetric_mode=True)
    later = np.ones(n, dtype=bool)
    later[list(first)] = False
    return np.array(list(first) + rcm[later[rcm]].tolist(), dtype=np.int64)


def random_graph(seed):
    """A small model: mixed or equal cardinalities, often disconnected, sometimes with a
    few high-degree variables, edges in random order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    p = rng.choice([0.02, 0.08, 0.2, 0.5])
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    if n > 5 and seed % 5 == 0:  # hubs: blocks of new neighbours over 32 in the search
        hubs = rng.integers(0, n, 2)
        pairs = sorted(set(pairs) | {(min(h, j), max(h, j)) for h in hubs for j in range(n)
                                     if j != h})
    rng.shuffle(pairs)
    card = rng.integers(1, 5, size=n) if seed % 2 else np.full(n, 2)
    return PairwiseMRF(card, None, pairs)


def grid(rows, cols):
    return PairwiseMRF(np.full(rows * cols, 2), None, grid_edges(rows, cols))


def test_sorted_neighbours():
    for seed in range(50):
        m = random_graph(seed)
        rows = sorted_neighbours(m.adj_start, m.adj_var)
        for v in range(m.n_vars):
            a, b = m.adj_start[v], m.adj_start[v + 1]
            np.testing.assert_array_equal(rows[a:b], np.sort(m.adj_var[a:b]))


@pytest.mark.parametrize("seed", range(250))
def test_kernels_match_twins_on_random_graphs(seed):
    m = random_graph(seed)
    rng = np.random.default_rng(seed + 1000)
    first = rng.permutation(m.n_vars)[:int(rng.integers(0, 4))].tolist() if m.n_vars else []
    order = exact._bandwidth_order(m, first).tolist()
    assert order == bandwidth_twin(m, first).tolist()
    for order in (order, rng.permutation(m.n_vars).tolist()):
        sep, sizes = exact._eliminate(m, order)
        assert (sep, sizes) == eliminate_twin(m, order)
        for cap in (1, 7, 64, max(sizes, default=1) - 1):  # stopped early
            assert exact._eliminate(m, order, cap) == eliminate_twin(m, order, cap)


@pytest.mark.parametrize("shape", [(1, 1), (1, 30), (5, 5), (7, 13), (30, 30)])
def test_kernels_match_twins_on_grids(shape):
    m = grid(*shape)
    order = exact._bandwidth_order(m).tolist()
    assert order == bandwidth_twin(m).tolist()
    assert exact._eliminate(m, order) == eliminate_twin(m, order)
    assert exact._eliminate(m, order, 2**5) == eliminate_twin(m, order, 2**5)


def test_sizes_beyond_int64_are_exact():
    """A star's centre eliminated first has a 2**71-entry table: saturated in the kernel,
    recounted exactly, compared with caps below and above 2**63."""
    m = PairwiseMRF(np.full(71, 2), None, [(0, j) for j in range(1, 71)])
    order = list(range(71))
    for cap in (math.inf, 2**62, 2**64, 2**70, 2**72):
        assert exact._eliminate(m, order, cap) == eliminate_twin(m, order, cap)
    assert exact._eliminate(m, order)[1][0] == 2**71


@pytest.mark.parametrize("seed", range(0, 250, 5))
def test_plans_equal_the_twins_plans(seed, monkeypatch):
    """EliminationPlan (order, separators, tree, sizes) is the same with the twins, with
    and without a memory limit; a refusal has the same message."""
    models = [random_graph(seed), grid(4 + seed % 5, 9)]
    for m in models:
        for limit in (None, 2**12, 2**31):
            with monkeypatch.context() as mp:
                mp.setattr(exact, "_eliminate", eliminate_twin)
                mp.setattr(exact, "_bandwidth_order", bandwidth_twin)
                want = _plan(m, limit)
            assert _plan(m, limit) == want


def _plan(model, limit):
    try:
        p = EliminationPlan(model, limit)
    except ValueError as e:
        return str(e)
    return (p.order, p.sep, p.clique, p.parent, p.children, p.own_edges, p.local, p.width,
            p.max_table, p.work, p.bytes, p.info())
