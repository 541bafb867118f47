"""The symbolic elimination kernels (fwcore/_symbolic.pyx) against their Python twins:
the elimination game and lazy weighted min-fill on neighbour sets, scipy's reverse
Cuthill-McKee, sorted rows, scipy's components and breadth-first depths; and elimination
plans built with the twins equal the kernels'."""
import math

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee, shortest_path

from fwcore import elimination
from fwcore._symbolic import bfs_forest, sorted_neighbours
from fwcore.elimination import EliminationPlan
from fwcore.generators import grid_edges
from fwcore.model import PairwiseMRF


class NeighbourSets(dict):
    """Neighbour sets of the model's variables, each built from the CSR on first use."""

    def __init__(self, model):
        super().__init__()
        self.start, self.var = model.adj_start, model.adj_var

    def __missing__(self, v):
        nb = self[v] = set(self.var[self.start[v]:self.start[v + 1]].tolist())
        return nb


def eliminate_vertex(adj, v):
    """Eliminate v from the graph ``adj``: its neighbours become a clique. Returns N(v)."""
    nb = adj.pop(v)
    for a in nb:
        adj[a].discard(v)
        adj[a] |= nb - {a}
    return nb


def eliminate_twin(model, order, cap=math.inf):
    """The twin of `elimination.separators_along`: the elimination game on neighbour sets."""
    card = model.card.tolist()
    adj = NeighbourSets(model)
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
        eliminate_vertex(adj, v)
    return sep, sizes


def elimination_game_twin(model, order, cap=math.inf, total_cap=math.inf, budget=math.inf,
                          deadline=None, separators=True):
    """The twin of `elimination._elimination_game`: `eliminate_twin`, complete when it
    returns separators; stopped by ``total_cap`` after the step whose table passes it
    (``budget`` and ``deadline``: no limit here)."""
    assert budget == math.inf and deadline is None
    sep, sizes = eliminate_twin(model, order, cap)
    total = 0
    for k, size in enumerate(sizes):
        total += size
        if total > total_cap:
            return None, sizes[:k + 1], False
    return (sep if separators else None), sizes, sep is not None


def min_fill_twin(model, cap=math.inf, budget=math.inf, first=(), rank=None, deadline=None):
    """The twin of `elimination.min_fill_order` (its docstring states the rule): lazy
    recounts on neighbour sets, a heap of (fill, size, rank[v], version, exact) tuples
    (``rank`` None: v's index; ``deadline``: none here)."""
    import heapq
    assert deadline is None
    n = model.n_vars
    rank = list(range(n)) if rank is None else [int(r) for r in rank]
    named = [0] * n
    for v, r in enumerate(rank):
        named[r] = v
    deg = np.diff(model.adj_start)
    work = int((deg * (deg + 8)).sum())  # the first fill counts
    if work > budget:
        return [], work
    card = model.card.tolist()
    card0 = card[0] if n else 1
    uniform = card.count(card0) == n
    adj = NeighbourSets(model)
    fill_lb = [0] * n

    def key(v):  # (fill, table size, v): the exact priority of v
        nonlocal work
        nb = adj[v]
        work += len(nb) * (len(nb) + 8)
        if uniform:  # every pair weighs card^2: count the pairs
            fill_lb[v] = sum(len(nb - adj[a]) - 1 for a in nb) // 2 * card0 ** 2
        else:
            fill_lb[v] = sum(card[a] * (sum(card[b] for b in nb - adj[a]) - card[a])
                             for a in nb) // 2
        return (fill_lb[v], card[v] * math.prod(card[u] for u in nb), rank[v])

    done = [False] * n
    order = []
    for v in first:
        if card[v] * math.prod(card[u] for u in adj[v]) > cap:
            return order, work
        done[v] = True
        order.append(v)
        work += 16 * len(adj[v]) ** 2
        eliminate_vertex(adj, v)
    version = [0] * n
    heap = [key(v) + (0, True) for v in range(n) if not done[v]]  # + (version, exact)
    heapq.heapify(heap)
    while heap and work <= budget:
        fill, size, r, ver, exact = heapq.heappop(heap)
        v = named[r]
        if done[v] or ver != version[v]:
            continue
        if not exact:
            heapq.heappush(heap, key(v) + (ver, True))
            continue
        if size > cap:
            break
        done[v] = True
        order.append(v)
        # the weight of the pairs (v, x) each neighbour loses
        lost = {a: card[v] * ((card0 * len(adj[a]) if uniform else sum(card[x] for x in adj[a]))
                              - card[v]) for a in adj[v]}
        nb = eliminate_vertex(adj, v)
        touched = set(nb).union(*(adj[a] for a in nb)) if nb else ()
        work += 16 * len(touched)
        for u in touched:  # fill counts change only around the new edges
            fill_lb[u] = max(0, fill_lb[u] - fill - lost.get(u, 0))
            version[u] += 1
            heapq.heappush(heap, (fill_lb[u], 0, rank[u], version[u], False))
    return order, work


def bandwidth_twin(model, first=()):
    """The twin of `elimination.bandwidth_order`: scipy's reverse Cuthill-McKee on the CSR
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


@pytest.mark.parametrize("seed", range(50))
def test_bfs_forest_matches_scipy(seed):
    """Components numbered in the order of their roots, depths = hops from the root."""
    m = random_graph(seed)
    n = m.n_vars
    roots = np.random.default_rng(seed).permutation(n)
    label, depth = bfs_forest(m.adj_start, m.adj_var, roots)
    e = m.edges
    g = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)).tocsr()
    count, theirs = connected_components(g, directed=False)
    hops = shortest_path(g, directed=False, unweighted=True)
    assert m.n_components() == count
    firsts = roots[np.sort(np.unique(theirs[roots], return_index=True)[1])]
    for k, root in enumerate(firsts):
        members = theirs == theirs[root]
        assert (label[members] == k).all()
        np.testing.assert_array_equal(depth[members], hops[root, members])


@pytest.mark.parametrize("seed", range(250))
def test_kernels_match_twins_on_random_graphs(seed):
    m = random_graph(seed)
    rng = np.random.default_rng(seed + 1000)
    first = rng.permutation(m.n_vars)[:int(rng.integers(0, 4))].tolist() if m.n_vars else []
    order = elimination.bandwidth_order(m, first).tolist()
    assert order == bandwidth_twin(m, first).tolist()
    for ordering in (order, rng.permutation(m.n_vars).tolist()):
        sep, sizes = elimination.separators_along(m, ordering)
        assert (sep, sizes) == eliminate_twin(m, ordering)
        for cap in (1, 7, 64, max(sizes, default=1) - 1):  # stopped early
            stopped = elimination.separators_along(m, ordering, cap)
            assert stopped == eliminate_twin(m, ordering, cap)


@pytest.mark.parametrize("seed", range(250))
def test_min_fill_matches_twin_on_random_graphs(seed):
    """Full orders, and the stops: at a cap, at a work budget, during ``first``."""
    m = random_graph(seed)
    rng = np.random.default_rng(seed + 2000)
    first = rng.permutation(m.n_vars)[:int(rng.integers(0, 4))].tolist() if m.n_vars else []
    order, work = min_fill_twin(m, first=first)
    assert elimination.min_fill_order(m, first=first) == (order, work)
    for cap, budget in ((8, math.inf), (2**6, math.inf), (math.inf, work // 2),
                        (math.inf, work // 5), (1, math.inf)):
        assert elimination.min_fill_order(m, cap, budget, first) == min_fill_twin(m, cap, budget,
                                                                           first)
    rank = rng.permutation(m.n_vars).astype(np.int64)
    assert elimination.min_fill_order(m, first=first, rank=rank) == min_fill_twin(
        m, first=first, rank=rank)


@pytest.mark.parametrize("seed", range(0, 250, 5))
def test_a_rank_is_a_relabelling(seed):
    """min-fill with ties broken by a permutation gives the order of min-fill on the graph
    relabelled by it (how the searches of `choose_order` try other orders)."""
    m = random_graph(seed)
    label = np.random.default_rng(seed).permutation(m.n_vars)
    renamed = PairwiseMRF(np.asarray(m.card)[np.argsort(label)], None,
                          [tuple(sorted((int(label[i]), int(label[j])))) for i, j in m.edges])
    order, work = elimination.min_fill_order(renamed)
    assert elimination.min_fill_order(m, rank=label.astype(np.int64)) == (
        np.argsort(label)[order].tolist(), work)


@pytest.mark.parametrize("seed", range(0, 250, 7))
def test_elimination_game_stops(seed):
    """`_elimination_game` against its twin at a total cap; a work budget or a passed
    deadline stops it unfinished."""
    from fwcore.loop import Deadline
    m = random_graph(seed)
    order = np.random.default_rng(seed).permutation(m.n_vars).tolist()
    _, sizes = eliminate_twin(m, order)
    for total_cap in (math.inf, sum(sizes), sum(sizes) - 1, sum(sizes) // 3, 0):
        assert elimination._elimination_game(m, order, total_cap=total_cap) == (
            elimination_game_twin(m, order, total_cap=total_cap))
    if m.n_edges:
        assert not elimination._elimination_game(m, order, budget=0)[2]
        assert elimination._elimination_game(m, order, deadline=Deadline(-1.0))[1] == []


@pytest.mark.parametrize("seed", range(0, 250, 5))
def test_order_search_yields_the_best_so_far(seed):
    """`order_search` yields the bandwidth order (`choose_order` with no try), then after
    each try the best so far (`choose_order` with that many tries), totals never
    growing; a deadline passed between yields ends it."""
    from fwcore.loop import Deadline
    m = random_graph(seed)
    kw = dict(by="total", separators=False, budget=10**6)
    found = list(elimination.order_search(m, tries=6, **kw))
    assert found[-1] == elimination.choose_order(m, tries=6, **kw)
    for k, choice in enumerate(found[:-1]):
        assert choice == elimination.choose_order(m, tries=k, **kw)
    totals = [sum(c.sizes) for c in found if c.sizes is not None]
    assert totals == sorted(totals, reverse=True)
    assert len(found) == 7 or found[-1].min_fill_steps < m.n_vars or found[-1].out_of_budget
    deadline = Deadline()
    search = elimination.order_search(m, tries=6, deadline=deadline, **kw)
    first = next(search)
    deadline.at = 0.0
    assert list(search) in ([], [first])


@pytest.mark.parametrize("shape", [(1, 1), (1, 30), (5, 5), (7, 13), (30, 30)])
def test_kernels_match_twins_on_grids(shape):
    m = grid(*shape)
    order = elimination.bandwidth_order(m).tolist()
    assert order == bandwidth_twin(m).tolist()
    assert elimination.separators_along(m, order) == eliminate_twin(m, order)
    assert elimination.separators_along(m, order, 2**5) == eliminate_twin(m, order, 2**5)
    assert elimination.min_fill_order(m) == min_fill_twin(m)


def test_sizes_beyond_int64_are_exact():
    """A star's centre eliminated first has a 2**71-entry table: saturated in the kernel,
    recounted exactly, compared with caps below and above 2**63."""
    m = PairwiseMRF(np.full(71, 2), None, [(0, j) for j in range(1, 71)])
    order = list(range(71))
    for cap in (math.inf, 2**62, 2**64, 2**70, 2**72):
        assert elimination.separators_along(m, order, cap) == eliminate_twin(m, order, cap)
    assert elimination.separators_along(m, order)[1][0] == 2**71


@pytest.mark.parametrize("seed", range(0, 250, 5))
def test_plans_equal_the_twins_plans(seed, monkeypatch):
    """EliminationPlan (order, separators, tree, sizes) is the same with the twins, with
    and without a memory limit; a refusal has the same message."""
    models = [random_graph(seed), grid(4 + seed % 5, 9)]
    for m in models:
        for limit in (None, 2**12, 2**31):
            with monkeypatch.context() as mp:
                mp.setattr(elimination, "_elimination_game", elimination_game_twin)
                mp.setattr(elimination, "bandwidth_order", bandwidth_twin)
                mp.setattr(elimination, "min_fill_order", min_fill_twin)
                want = _plan(m, limit)
            assert _plan(m, limit) == want


def _plan(model, limit):
    try:
        p = EliminationPlan(model, limit)
    except ValueError as e:
        return str(e)
    return (p.order, p.sep, p.clique, p.parent, p.children, p.own_edges, p.local, p.width,
            p.max_table, p.work, p.bytes, p.info())
