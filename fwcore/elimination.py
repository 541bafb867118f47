"""Variable elimination in log space run as a clique tree (`fwcore.exact_inference`'s
"elimination"; the elimination oracle; the cost estimates of `fwcore.auto`).

Eliminating v creates the clique C_v = {v} ∪ N(v) with separator S_v = N(v); the parent of
C_v is the clique of the first variable of S_v to be eliminated. The upward pass is plain
variable elimination (message m_v = logsumexp over x_v, or max for MAP), the downward pass
returns beliefs of every clique, and so node marginals (x_v lies in C_v) and edge marginals
(an edge lies in the clique of whichever end is eliminated first). Both passes run in
`fwcore._elim` (sum- and max-product): clique tables are never stored, their entries are
computed block by block from v's own factors and its children's messages; the symbolic
work (orders, separators) runs in `fwcore._symbolic`. An all -inf slice reduces to -inf,
never NaN.
"""
import math
from collections import deque
from functools import cached_property
from itertools import chain
from typing import NamedTuple

import numpy as np

from . import _elim
from ._symbolic import cuthill_mckee, eliminate, min_fill, sorted_neighbours
from .checks import INFEASIBLE

__all__ = ["EliminationPlan", "choose_order", "order_search", "OrderChoice"]

_CORE_ROUNDS = 100              # k-core peeling rounds before the width proof gives up
_MIN_FILL_WORK = 5e6            # min-fill's work budget when no order fits the limit yet
_INT64_MAX = 2**63 - 1          # where the symbolic kernel's table sizes saturate


def functional_vars(model):
    """Variables of degree >= 3 whose edge tables but one have exactly one finite entry per
    state of theirs: each of their states fixes all neighbours but one, as the auxiliary
    variable of a factor in a `FactorGraph` reduction does. Eliminated first, they turn back into
    their factors (their clique table is states x scope), which is how a factor graph is
    eliminated; left to min-fill they would be joined into products of their states."""
    if not np.isneginf(model.theta[model.node_off[-1]:]).any():
        return []
    pos, k, a, b = model.edge_entries()
    finite = model.theta[pos] > -np.inf
    card = model.card.astype(np.int64)
    ci, cj = card[model.edges[:, 0]], card[model.edges[:, 1]]
    per_b = np.bincount((np.cumsum(cj) - cj)[k] + b, weights=finite, minlength=int(cj.sum()))
    per_a = np.bincount((np.cumsum(ci) - ci)[k] + a, weights=finite, minlength=int(ci.sum()))
    rows = np.repeat(np.arange(model.n_edges), cj)
    fixes_i = np.bincount(rows, weights=per_b != 1, minlength=model.n_edges) == 0
    fixes_j = np.bincount(np.repeat(np.arange(model.n_edges), ci), weights=per_a != 1,
                          minlength=model.n_edges) == 0
    # j fixes i when each state b of j allows one a; all edges but one (the factor's pivot,
    # which holds its table: `fwcore.factor_graph`)
    loose = (np.bincount(model.edges[~fixes_i, 1], minlength=model.n_vars) +
             np.bincount(model.edges[~fixes_j, 0], minlength=model.n_vars))
    ok = (loose <= 1) & (np.diff(model.adj_start) >= 3)
    return np.flatnonzero(ok).tolist()


def min_fill_order(model, cap=math.inf, budget=math.inf, first=(), rank=None, deadline=None):
    """Greedy weighted min-fill (the `min_fill` kernel): eliminate the variable whose
    elimination adds the least fill, each added edge (a, b) weighing card[a] * card[b] (the
    entries of the table it adds; plain min-fill when the cards are equal), ties broken by
    its clique table size (product of cards), then by index. On mixed cardinalities the
    weights matter: the UAI linkage_14 reduction needs a clique table of 3.8e8 entries
    with them, 5.3e10 without.

    Fills are recounted lazily: after an elimination with fill f, a variable around it
    is queued with a lower bound on its new fill (its old one minus f, minus for a
    neighbour the weight of its pairs with the eliminated variable, which go) and counted
    exactly only when that bound reaches the front of the queue, so a high-degree
    variable is not recounted at every touch; the order is that of eager recounting
    (fills and sizes are exact below 2**63, which any model whose tables fit stays under).

    Stops early, returning the order so far, when the next variable's clique table would
    exceed ``cap`` entries or when ``budget`` runs out (work counted as deg * (deg + 8) per
    fill count of a degree-deg variable, and 16 per queued variable).
    The variables ``first`` are eliminated before all others, in the order given; ties
    are broken by ``rank`` (a permutation of the variables; None: their indices), as on
    the graph relabelled by it. Stops too when ``deadline`` (a `fwcore.loop.Deadline`)
    passes. Returns the order (a full one has all ``model.n_vars`` variables) and the
    work done."""
    deg = np.diff(model.adj_start)
    work = int((deg * (deg + 8)).sum())  # the first fill counts
    if work > budget:
        return [], work
    rank = np.arange(model.n_vars, dtype=np.int64) if rank is None else rank
    order, work = min_fill(model.adj_start, model.adj_var, model.card,
                           np.asarray(first, dtype=np.int64), _int64_limit(cap),
                           _int64_limit(budget), work, rank, stop_at(deadline))
    return order.tolist(), work


def stop_at(deadline):
    """A `fwcore.loop.Deadline` as the kernels' ``stop_at``: its `time.monotonic` time, inf
    for none (or no deadline)."""
    return math.inf if deadline is None or deadline.at is None else deadline.at


def bandwidth_order(model, first=()):
    """Reverse Cuthill-McKee order (after the variables ``first``; int64 array): a
    low-bandwidth sweep that keeps the induced width of grid-like graphs near their
    treewidth, where greedy min-fill can do much worse. The `cuthill_mckee` kernel gives
    scipy.sparse.csgraph.reverse_cuthill_mckee's order on the canonical CSR."""
    degree = np.diff(model.adj_start).astype(np.int32)
    rcm = cuthill_mckee(model.adj_start, sorted_neighbours(model.adj_start, model.adj_var),
                        degree, np.argsort(degree).astype(np.int64))
    if not len(first):
        return rcm
    later = np.ones(model.n_vars, dtype=bool)
    later[first] = False
    return np.concatenate([np.asarray(first, dtype=np.int64), rcm[later[rcm]]])


def separators_along(model, order, cap=math.inf):
    """Symbolic elimination along ``order`` (the `eliminate` kernel): the separators
    (neighbours at elimination, in elimination order) of every variable and the clique
    table sizes card_v * prod(card of S_v), in elimination order. Stops after the first
    table over ``cap`` entries: ``sizes`` then ends with that table and the separators
    are None. Sizes the kernel saturates (at 2**63 - 1) are recounted exactly."""
    sep, sizes, _ = _elimination_game(model, order, cap)
    return sep, sizes


def _elimination_game(model, order, cap=math.inf, total_cap=math.inf, budget=math.inf,
                      deadline=None, separators=True):
    """`separators_along`, also stopping once the tables' total exceeds ``total_cap``, the
    work ``budget`` is spent or ``deadline`` (a `fwcore.loop.Deadline`) passes: ``(sep, sizes,
    complete)``, ``complete`` when every variable was eliminated within ``cap``; ``sep`` is
    None unless complete and ``separators`` (a large model's lists cost time)."""
    order = np.ascontiguousarray(order, dtype=np.int64)
    start, var, sizes, stopped = eliminate(model.adj_start, model.adj_var, model.card, order,
                                           _int64_limit(cap), total_cap, _int64_limit(budget),
                                           stop_at(deadline))
    saturated = np.flatnonzero(sizes == _INT64_MAX).tolist()
    sizes = sizes.tolist()
    for k in saturated:
        sizes[k] = math.prod(model.card[np.r_[order[k], var[start[k]:start[k + 1]]]].tolist())
        if sizes[k] > cap:  # the first table over a cap beyond 2**63 - 1
            return None, sizes[:k + 1], False
    complete = not stopped and len(sizes) == len(order) and not (sizes and sizes[-1] > cap)
    if not (complete and separators):
        return None, sizes, complete
    start, var = start.tolist(), var.tolist()
    sep = [None] * model.n_vars
    for k, v in enumerate(order.tolist()):
        sep[v] = tuple(var[start[k]:start[k + 1]])
    return sep, sizes, True


class OrderChoice(NamedTuple):
    """What `choose_order` found: the chosen ``order`` (None: none fits), its separators
    ``sep`` (when asked and known) and clique table ``sizes`` (None when it was not
    eliminated to the end: the bandwidth order, taken unranked because nothing else was
    found in time), and, for a refusal's message, the bandwidth order's ``bandwidth_sizes``
    (up to where its elimination stopped) and min-fill's ``min_fill_steps`` (variables its
    last try ordered) and whether its ``budget`` ran out."""

    order: list | None
    sep: list | None
    sizes: list | None
    bandwidth_sizes: list
    min_fill_steps: int
    out_of_budget: bool


def choose_order(model, *, by="largest", cap=math.inf, tries=1, budget=math.inf,
                 deadline=None, first=(), separators=True, seed=0):
    """The elimination order of ``model``'s graph (``adj_start``, ``adj_var``, ``card``,
    ``n_vars``) that exact elimination (`EliminationPlan`) and weighted mini-bucket
    elimination (`fwcore.marginals.wmb`) use: the best of the bandwidth order
    (`bandwidth_order`, O(n + E): on grids and long strips the one that wins) and
    greedy weighted min-fill (`min_fill_order`), ``tries`` times, the first on the
    variables' own indices and each next one with ties broken by a random permutation
    (``seed``), after the variables ``first``: the last `OrderChoice` of `order_search`.

    Each candidate is eliminated symbolically (`_elimination_game`) and ranked ``by``
    "largest" (largest clique table, then their total; min-fill wins ties) or "total"
    (the total of its clique tables, in floats; min-fill wins ties). A candidate with a
    table over ``cap`` entries does not fit. Work is bounded: with "largest" a min-fill
    try stops once its next table exceeds the best candidate's largest (it would lose),
    and ``budget`` (`min_fill_order`'s work units) bounds it only while no candidate
    fits; with "total" the tries and their eliminations share ``budget``, an
    elimination stops once its total exceeds the best's, and the bandwidth order's is
    bounded by ``budget`` too (unfinished, it is kept unranked: any finished candidate
    beats it, and it is taken when none finishes; a finished min-fill order's elimination
    costs about as much as the try). No try starts after ``deadline`` (a
    `fwcore.loop.Deadline`, which also stops a running one); a try that does not order
    every variable ends the search. ``separators``: compute the winner's separators."""
    return deque(order_search(model, by=by, cap=cap, tries=tries, budget=budget,
                              deadline=deadline, first=first, separators=separators,
                              seed=seed), maxlen=1)[0]


def order_search(model, *, by="largest", cap=math.inf, tries=1, budget=math.inf,
                 deadline=None, first=(), separators=True, seed=0):
    """`choose_order`'s search a candidate at a time: yields the best `OrderChoice` so
    far after the bandwidth order, then after each min-fill try (and once more at the
    end), so that a caller can use an order found early while the search goes on.
    ``deadline`` is read before each try and polled in it: a caller may move its ``at``
    between yields."""
    n = model.n_vars
    bandwidth = bandwidth_order(model, first)
    shared = by == "total"
    sep, sizes, complete = _elimination_game(model, bandwidth, cap, budget=budget if shared
                                             else math.inf, deadline=deadline,
                                             separators=separators)
    bandwidth_sizes = sizes
    best = (_rank(sizes, by), bandwidth.tolist(), sep, sizes) if complete else None
    unranked = (bandwidth.tolist() if shared and not complete and not (sizes and sizes[-1] > cap)
                else None)
    rng, spent, steps, out = np.random.default_rng(seed), 0, 0, False

    def found():
        if best is None:
            return OrderChoice(unranked, None, None, bandwidth_sizes, steps, out)
        return OrderChoice(best[1], best[2], best[3], bandwidth_sizes, steps, out)

    yield found()
    for k in range(tries):
        if deadline is not None and deadline.passed():
            break
        rank = None if k == 0 else rng.permutation(n).astype(np.int64)
        limit = budget - spent if shared or best is None else math.inf
        mf_cap = cap if shared or best is None else best[0][0]
        order, work = min_fill_order(model, mf_cap, limit, first, rank, deadline)
        spent += work
        steps, out = len(order), work > limit
        if len(order) < n:
            break
        total_cap = sum(best[3]) if shared and best is not None else math.inf
        sep, sizes, complete = _elimination_game(
            model, order, cap, total_cap, budget - spent if shared else math.inf, deadline,
            separators)
        if complete and (best is None or _rank(sizes, by) <= best[0]):
            best = (_rank(sizes, by), order, sep, sizes)
        if k < tries - 1:
            yield found()
    yield found()


def _rank(sizes, by):
    """A candidate's key (smaller is better) from its clique table sizes (exact ints)."""
    return (max(sizes, default=0), sum(sizes)) if by == "largest" else sum(sizes)


def _int64_limit(x):
    """A cap or budget for the kernels: floor(x), at most 2**63 - 1 (no limit)."""
    return _INT64_MAX if x >= _INT64_MAX else math.floor(x)


def _core_table(model, cap):
    """A proof that every elimination order needs a clique table over ``cap`` entries:
    ``(k, table)``, or None when this bound cannot show it.

    The k-core (the largest subgraph whose degrees are all >= k, found by peeling) bounds
    the treewidth from below: the first core variable any order eliminates still has its
    >= k core neighbours, so its clique holds >= k + 1 core variables and its table at
    least ``table`` = the product of the k + 1 smallest core cards. k is the smallest width
    whose k + 1 smallest cards exceed ``cap``; peeling stops, inconclusive, after
    _CORE_ROUNDS rounds."""
    n = model.n_vars
    log_card = np.cumsum(np.log2(np.sort(model.card).astype(np.float64)))
    k = int(np.searchsorted(log_card, math.log2(cap), side="right"))  # log_card[k] > log2 cap
    if k >= n:
        return None
    deg = np.diff(model.adj_start)
    src, dst = np.repeat(np.arange(n), deg), model.adj_var
    alive = np.ones(n, dtype=bool)
    for _ in range(_CORE_ROUNDS):
        drop = alive & (deg < k)
        if not drop.any():
            table = math.prod(sorted(model.card[alive].tolist())[:k + 1])
            return k, table
        alive &= ~drop
        if not alive.any():
            return None
        deg = deg - np.bincount(dst[drop[src]], minlength=n)
        keep = alive[src] & alive[dst]
        src, dst = src[keep], dst[keep]
    return None


def _too_large(need, memory_limit, why):
    """The refusal of a model whose elimination tables exceed ``memory_limit``."""
    return ValueError(
        f"exact inference by variable elimination needs {need}, over memory_limit="
        f"{memory_limit:.0f} bytes; {why}. Alternatives: fwcore.infer (past exact reach, "
        f"weighted mini-bucket elimination: a certified interval on log Z and approximate "
        f"marginals), fwcore.infer_map for MAP (oracle 'ilp' or "
        f"'toulbar2'), or a larger memory_limit if the machine has the memory")


class EliminationPlan:
    """The clique tree of an elimination order: for each variable v its clique C_v (a
    variable tuple), its separator S_v, its parent clique and children, and the factors it
    owns (θ_v and the edges whose first-eliminated end is v), whose joint scope is
    ``local[v]``. Chooses the better of min-fill and a bandwidth order (smaller largest
    table, then smaller total); ``work`` is the total entries of its clique tables (one
    pass of elimination's cost), ``bytes`` the memory its tables take, checked against
    ``memory_limit`` (None: not checked).

    With a ``memory_limit`` a model too large is refused (ValueError) quickly: at once
    when its k-core proves every order too large (`_core_table`); else the bandwidth
    order (O(n + E) to find) is eliminated symbolically up to its first table over the
    limit, and min-fill runs only until its tables exceed the limit or the bandwidth
    order's largest table (it would lose), within _MIN_FILL_WORK when no order fits yet
    (`choose_order`). Models that fit get the same order as with no limit."""

    def __init__(self, model, memory_limit=None):
        n = model.n_vars
        cap = math.inf if memory_limit is None else memory_limit / 8  # table entries
        if memory_limit is not None:
            proof = _core_table(model, cap)
            if proof is not None:
                k, table = proof
                raise _too_large(f"a clique table of at least {8 * table} bytes", memory_limit,
                                 f"every elimination order has a clique of >= {k + 1} "
                                 f"variables, since the graph's {k}-core is not empty "
                                 f"(treewidth >= {k})")
        choice = choose_order(model, cap=cap, first=functional_vars(model),
                              budget=math.inf if memory_limit is None else _MIN_FILL_WORK)
        if choice.order is None:
            rcm_sizes = choice.bandwidth_sizes
            raise _too_large(
                f"a clique table of {8 * rcm_sizes[-1]} bytes with the best order found",
                memory_limit,
                f"the bandwidth order reaches it after {len(rcm_sizes)} of {n} variables, and "
                f"greedy min-fill stopped after {choice.min_fill_steps} at "
                f"{'its work budget' if choice.out_of_budget else 'a table over the limit'} "
                f"(these are heuristic orders: a better one may exist, but none is known "
                f"cheaply)")
        self.order, self.sep = choice.order, choice.sep
        self.max_table, self.work = _rank(choice.sizes, "largest")
        pos = [0] * n
        for k, v in enumerate(self.order):
            pos[v] = k
        # every table's axes follow elimination order, so x_v is axis 0 of clique v and
        # messages broadcast into their parent's clique without transposes
        self.clique = [(v,) + self.sep[v] for v in range(n)]
        self.parent = [s[0] if s else -1 for s in self.sep]  # first of S_v eliminated
        self.children = [[] for _ in range(n)]
        for v in self.order:
            if self.parent[v] >= 0:
                self.children[self.parent[v]].append(v)
        self.edges = model.edges.tolist()
        self.own_edges = [[] for _ in range(n)]
        for e, (i, j) in enumerate(self.edges):
            self.own_edges[i if pos[i] < pos[j] else j].append(e)
        for v in range(n):  # owned edges in elimination order of their other end
            self.own_edges[v].sort(key=lambda e: pos[sum(self.edges[e]) - v])
        self.local = [(v,) + tuple(sum(self.edges[e]) - v for e in self.own_edges[v])
                      for v in range(n)]
        self.width = max((len(c) - 1 for c in self.clique), default=0)
        card = model.card.tolist()
        self.message_entries = sum(math.prod(card[u] for u in s) for s in self.sep)
        self.bytes = 8 * (self.max_table + self.message_entries)
        if memory_limit is not None and self.bytes > memory_limit:
            raise _too_large(
                f"about {self.bytes} bytes with the best order found", memory_limit,
                f"its largest clique table takes {8 * self.max_table} bytes (induced width "
                f"{self.width}) and the stored messages {8 * self.message_entries} bytes")

    def map(self, model):
        """A MAP assignment of ``model`` (same graph and cardinalities as the plan's)."""
        return elimination_map(model, self)

    def clique_tree(self, model):
        """The clique tree with ``model``'s layout (same graph as the plan's) for the
        `fwcore._elim` kernels."""
        return _elim.CliqueTree(model.card, model.edges, model.node_off, model.edge_off,
                                *self._arrays)

    @cached_property
    def _arrays(self):
        """The clique tree as flat arrays: the elimination order, then (starts int64[n+1],
        members int32) of the cliques (v, then S_v), the children and the owned edges."""
        def csr(lists):
            start = np.zeros(len(lists) + 1, dtype=np.int64)
            np.cumsum([len(a) for a in lists], out=start[1:])
            return start, np.fromiter(chain.from_iterable(lists), np.int32, int(start[-1]))
        return (np.asarray(self.order, dtype=np.int64), *csr(self.clique),
                *csr(self.children), *csr(self.own_edges))

    def info(self):
        return {"induced_width": self.width, "max_table_bytes": 8 * self.max_table,
                "message_bytes": 8 * self.message_entries, "table_entries": self.work}


def elimination_marginals(model, plan):
    """Sum-product on the elimination clique tree (`fwcore._elim.sum_product`): upward
    variable elimination gives log Z, the downward pass the marginals."""
    mu = np.zeros(model.dim)
    if model.n_vars == 0:
        return 0.0, mu
    log_z = _elim.sum_product(plan.clique_tree(model), model.theta, mu)
    if log_z == -np.inf:
        raise ValueError(INFEASIBLE)
    return log_z, mu


def elimination_map(model, plan):
    """Max-product variable elimination, then backtracking in reverse elimination order
    (`fwcore._elim.max_product`): each x_v maximises its clique table with the later
    variables already fixed."""
    x = np.zeros(model.n_vars, dtype=np.int64)
    if model.n_vars and _elim.max_product(plan.clique_tree(model), model.theta,
                                          x) == -np.inf:
        raise ValueError(INFEASIBLE)
    return x
