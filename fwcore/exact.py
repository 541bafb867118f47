"""Exact reference inference: log Z, node and edge marginals, and the MAP of a PairwiseMRF.

Two methods (DESIGN.md, "Exact reference"):

- ``bruteforce``: enumerate every joint state, in vectorised chunks.
- ``elimination``: variable elimination in log space run as a clique tree. Eliminating
  v creates the clique C_v = {v} ∪ N(v) with separator S_v = N(v); the parent of C_v is
  the clique of the first variable of S_v to be eliminated. The upward pass is plain
  variable elimination (message m_v = logsumexp over x_v, or max for MAP), the downward
  pass returns beliefs of every clique, and so node marginals (x_v lies in C_v) and edge
  marginals (an edge lies in the clique of whichever end is eliminated first). Only the
  separator messages are stored; clique tables are rebuilt when a pass needs them.

Log-potentials may be -inf; an all -inf slice reduces to -inf, never NaN.
"""
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .checks import Interval, Options, check_model, check_params
from .results import MapResult, Record, Status, Trace

__all__ = ["ExactResult", "exact_inference", "exact_map", "AUTO_BRUTEFORCE_STATES"]

#: "auto" here and the "exact" oracle choice enumerate state spaces up to this size
AUTO_BRUTEFORCE_STATES = 2**12
MAX_BRUTEFORCE_STATES = 2**40   # beyond this enumeration would run for days
_CHUNK_ENTRIES = 2**22          # flat indices held per brute-force chunk (32 MiB)
_PARAMS = {"method": Options("auto", "bruteforce", "elimination"),
           "memory_limit": Interval(0.0, lo_open=True)}


@dataclass(frozen=True)
class ExactResult:
    """Exact marginal inference: natural ``log_z``, ``node_marginals`` (1-D arrays),
    ``edge_marginals`` (card_i × card_j tables, edge order of the model), the same
    marginals as one flat vector ``mu`` in the model's layout, the method used, wall
    time in seconds, and ``info`` (elimination: induced width and table sizes). In the
    shared vocabulary: ``status`` converged, ``log_z_upper`` = log_z, ``gap`` 0,
    ``certified``, one pass (``n_iter``), no oracle calls, a one-record ``trace``."""

    log_z: float
    node_marginals: list
    edge_marginals: list
    mu: np.ndarray
    method: str
    time: float
    trace: Trace
    info: dict = field(default_factory=dict)
    status: Status = Status.CONVERGED
    gap: float = 0.0
    certified: bool = True
    n_iter: int = 1
    n_oracle_calls: int = 0

    @property
    def log_z_upper(self):
        return self.log_z


def exact_inference(model, method="auto", memory_limit=2**31):
    """Exact log Z and marginals of ``model``.

    ``method``: "bruteforce", "elimination", or "auto" (brute force up to
    ``AUTO_BRUTEFORCE_STATES`` joint states, elimination otherwise). ``memory_limit``
    (bytes) bounds elimination's largest clique table plus its stored messages; a larger
    need raises ValueError before any work. Raises ValueError when no assignment has a
    finite score (log Z = -inf).
    """
    method = _check_args(model, method, memory_limit)
    t0 = time.perf_counter()
    info = {}
    if method == "bruteforce":
        log_z, mu = _bruteforce_marginals(model)
    else:
        plan = EliminationPlan(model, memory_limit)
        info = plan.info()
        log_z, mu = _elimination_marginals(model, plan)
    nodes, edges = model.split_marginals(mu)
    mu.setflags(write=False)
    seconds = time.perf_counter() - t0
    return ExactResult(log_z=float(log_z), node_marginals=nodes, edge_marginals=edges, mu=mu,
                       method=method, time=seconds, info=info,
                       trace=Trace([Record(iteration=1, time=seconds, primal=float(log_z),
                                           gap=0.0, bound=float(log_z))]))


def exact_map(model, method="auto", memory_limit=2**31):
    """Exact MAP: argmax_x <θ, μ(x)> (first maximiser in enumeration order for brute
    force). Same methods and ``memory_limit`` as `exact_inference`; elimination runs
    max-product upward and backtracks in reverse elimination order. Raises ValueError
    when no assignment has a finite score."""
    method = _check_args(model, method, memory_limit)
    t0 = time.perf_counter()
    if method == "bruteforce":
        x = _bruteforce_map(model)
    else:
        x = _elimination_map(model, EliminationPlan(model, memory_limit))
    score = float(model.score(x))
    seconds = time.perf_counter() - t0
    return MapResult(assignment=x, score=score, upper_bound=score, status=Status.CONVERGED,
                     time=seconds, method=method, n_oracle_calls=0,
                     trace=Trace([Record(iteration=1, time=seconds, primal=score, gap=0.0,
                                         bound=score, score=score)]))


def _check_args(model, method, memory_limit):
    """Validate the public arguments; return the concrete method."""
    check_model(model)
    check_params(_PARAMS, method=method, memory_limit=memory_limit)
    n_states = math.prod(int(c) for c in model.card)
    if method == "auto":
        return "bruteforce" if n_states <= AUTO_BRUTEFORCE_STATES else "elimination"
    if method == "bruteforce" and n_states > MAX_BRUTEFORCE_STATES:
        raise ValueError(f"method='bruteforce' would enumerate {n_states} joint states (over "
                         f"fwcore.exact.MAX_BRUTEFORCE_STATES = {MAX_BRUTEFORCE_STATES}); use "
                         "method='elimination'")
    return method


def _infeasible():
    return ValueError("the model has no feasible assignment: every joint state scores -inf "
                      "(log Z = -inf); check the -inf entries of theta")


# -- brute force ------------------------------------------------------------------------


def _chunks(model):
    """Yield (flat indices (m, n + E), scores (m,)) for all joint states, in C order of
    the state tuple (variable 0 most significant)."""
    card = model.card.astype(np.int64)
    n_states = math.prod(int(c) for c in card)
    step = max(1, _CHUNK_ENTRIES // max(1, model.n_vars + model.n_edges))
    for start in range(0, n_states, step):
        idx = np.arange(start, min(start + step, n_states), dtype=np.int64)
        x = np.stack(np.unravel_index(idx, card), axis=1) if model.n_vars else \
            np.zeros((idx.size, 0), dtype=np.int64)
        flat = model.flat_index(x)
        yield flat, model.theta[flat].sum(axis=1)


def _bruteforce_marginals(model):
    """Σ_x exp(score(x)) and Σ_x p(x) μ(x) in one pass, rescaling the running sums
    whenever the running maximum score grows."""
    best = -np.inf
    total = 0.0
    acc = np.zeros(model.dim)
    for flat, s in _chunks(model):
        m = s.max()
        if m > best:
            scale = math.exp(best - m)
            total *= scale
            acc *= scale
            best = m
        if best == -np.inf:
            continue
        w = np.exp(s - best)
        total += w.sum()
        acc += np.bincount(flat.ravel(), weights=np.repeat(w, flat.shape[1]),
                           minlength=model.dim)
    if best == -np.inf:
        raise _infeasible()
    return best + math.log(total), acc / total


def _bruteforce_map(model):
    """The first highest-scoring state in enumeration order."""
    best, best_x = -np.inf, None
    card = model.card.astype(np.int64)
    offset = 0
    for flat, s in _chunks(model):
        k = int(np.argmax(s))
        if s[k] > best:
            best = s[k]
            best_x = np.array(np.unravel_index(offset + k, card), dtype=np.int64).reshape(-1)
        offset += s.size
    if best == -np.inf:
        raise _infeasible()
    return best_x


# -- elimination order and clique tree --------------------------------------------------


def _neighbour_sets(model):
    adj = [set() for _ in range(model.n_vars)]
    for i, j in model.edges.tolist():
        adj[i].add(j)
        adj[j].add(i)
    return adj


def _min_fill_order(model):
    """Greedy min-fill: eliminate the variable whose elimination adds the fewest edges,
    ties broken by its clique table size (product of cards), then by index."""
    import heapq
    card = model.card.tolist()
    adj = _neighbour_sets(model)

    def key(v):
        nb = adj[v]
        fill = sum(len(nb - adj[a]) - 1 for a in nb) // 2
        return (fill, card[v] * math.prod(card[u] for u in nb), v)

    version = [0] * model.n_vars
    heap = [key(v) + (0,) for v in range(model.n_vars)]
    heapq.heapify(heap)
    done = [False] * model.n_vars
    order = []
    while heap:
        *_, v, ver = heapq.heappop(heap)
        if done[v] or ver != version[v]:
            continue
        done[v] = True
        order.append(v)
        nb = adj[v]
        for a in nb:
            adj[a].discard(v)
            adj[a] |= nb - {a}
        touched = set(nb).union(*(adj[a] for a in nb)) if nb else ()
        for u in touched:  # fill counts change only around the new edges
            version[u] += 1
            heapq.heappush(heap, key(u) + (version[u],))
    return order


def _bandwidth_order(model):
    """Reverse Cuthill-McKee order: a low-bandwidth sweep that keeps the induced width of
    grid-like graphs near their treewidth, where greedy min-fill can do much worse."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import reverse_cuthill_mckee
    n = model.n_vars
    if n == 0:
        return []
    e = model.edges
    g = coo_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])),
                   shape=(n, n)).tocsr()
    return reverse_cuthill_mckee(g, symmetric_mode=True).tolist()


def _eliminate(model, order):
    """Symbolic elimination: the separator (neighbours at elimination) of every variable,
    in elimination order."""
    adj = _neighbour_sets(model)
    pos = {v: k for k, v in enumerate(order)}
    sep = [None] * model.n_vars
    for v in order:
        nb = adj[v]
        sep[v] = tuple(sorted(nb, key=pos.__getitem__))
        for a in nb:
            adj[a].discard(v)
            adj[a] |= nb - {a}
    return sep


class EliminationPlan:
    """The clique tree of an elimination order: for each variable v its clique C_v (a
    variable tuple), its separator S_v, its parent clique and children, and the factors it
    owns (θ_v and the edges whose first-eliminated end is v), whose joint scope is
    ``local[v]``. Chooses the better of min-fill and a bandwidth order (smaller largest
    table, then smaller total); ``bytes`` is the memory its tables take, checked against
    ``memory_limit`` (None: not checked)."""

    def __init__(self, model, memory_limit=None):
        card = model.card.tolist()
        best = None
        for order in (_min_fill_order(model), _bandwidth_order(model)):
            sep = _eliminate(model, order)
            sizes = [card[v] * math.prod(card[u] for u in sep[v]) for v in order]
            cost = (max(sizes, default=0), sum(sizes))
            if best is None or cost < best[0]:
                best = (cost, order, sep)
        (self.max_table, _), self.order, self.sep = best
        n = model.n_vars
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
        self.message_entries = sum(math.prod(card[u] for u in s) for s in self.sep)
        self.bytes = 8 * (self.max_table + self.message_entries)
        if memory_limit is not None and self.bytes > memory_limit:
            raise ValueError(
                f"variable elimination needs about {self.bytes} bytes: its largest clique table "
                f"takes {8 * self.max_table} bytes (induced width {self.width}) and the stored "
                f"messages {8 * self.message_entries} bytes, over memory_limit={memory_limit}; "
                f"raise memory_limit if the machine has the memory")

    def map(self, model):
        """A MAP assignment of ``model`` (same graph and cardinalities as the plan's)."""
        return _elimination_map(model, self)

    def info(self):
        return {"induced_width": self.width, "max_table_bytes": 8 * self.max_table,
                "message_bytes": 8 * self.message_entries}


def _expand(table, scope, target):
    """View of ``table`` (axes = variables ``scope``) transposed to the order of
    ``target`` with singleton axes for the variables it lacks, so it broadcasts against
    a ``target`` table."""
    where = {u: k for k, u in enumerate(target)}
    perm = sorted(range(len(scope)), key=lambda a: where[scope[a]])
    present = {where[u] for u in scope}
    missing = tuple(k for k in range(len(target)) if k not in present)
    return np.expand_dims(table.transpose(perm), missing)


def _local_table(model, plan, v):
    """θ_v plus the edges owned by v, over ``plan.local[v]`` = (v, u_1, ..., u_k): grown
    one axis at a time from u_k back to u_1 (each step adds along long contiguous rows),
    so building it costs about twice its final size."""
    t = model.unary(v)
    for e in reversed(plan.own_edges[v]):
        tab = model.pairwise(e) if plan.edges[e][0] == v else model.pairwise(e).T
        t = t[:, None] + tab.reshape(tab.shape + (1,) * (t.ndim - 1))
    return t


def _clique_table(model, plan, v, messages):
    """log ψ over C_v: owned factors plus the children's upward messages."""
    clique = plan.clique[v]
    t = np.empty([model.card[u] for u in clique])
    t[...] = _expand(_local_table(model, plan, v), plan.local[v], clique)
    for c in plan.children[v]:
        t += _expand(messages[c], plan.sep[c], clique)
    return t


def _logsumexp_consume(t):
    """log Σ exp over axis 0, overwriting ``t``; shifted by the slice maximum, with an
    all -inf slice giving -inf (shift 0, log 0) instead of NaN."""
    mx = t.max(axis=0, keepdims=True)
    mx[mx == -np.inf] = 0.0
    np.subtract(t, mx, out=t)
    np.exp(t, out=t)
    with np.errstate(divide="ignore"):
        return np.log(t.sum(axis=0)) + mx[0]


def _elimination_marginals(model, plan):
    """Sum-product on the elimination clique tree: upward = variable elimination, then
    downward messages δ_c(S_c) = log Σ_{C_v \\ S_c} p_v + log Z - m_c, with p_v the
    normalised belief of the parent clique."""
    messages = [None] * model.n_vars
    for v in plan.order:
        messages[v] = _logsumexp_consume(_clique_table(model, plan, v, messages))
    roots = [v for v in plan.order if plan.parent[v] < 0]
    log_z = sum(float(messages[r]) for r in roots)
    if log_z == -np.inf:
        raise _infeasible()
    comp_log_z = [0.0] * model.n_vars  # log Z of each variable's connected component
    down = [None] * model.n_vars
    mu = np.zeros(model.dim)
    for v in reversed(plan.order):
        clique = plan.clique[v]
        t = _clique_table(model, plan, v, messages)
        p = plan.parent[v]
        if p >= 0:
            comp_log_z[v] = comp_log_z[p]
            t += _expand(down[v], plan.sep[v], clique)
            down[v] = None
        else:
            comp_log_z[v] = float(messages[v])
        t -= comp_log_z[v]  # entries are log-probabilities: <= 0 up to rounding
        prob = np.exp(t, out=t)
        local = _marginal(prob, clique, plan.local[v])  # node v and its owned edges
        pairs = _pair_marginals(local)
        mu[model.node_off[v]:model.node_off[v + 1]] = pairs[0].sum(axis=1) if pairs else local
        for e, pair in zip(plan.own_edges[v], pairs):
            mu[model.edge_off[e]:model.edge_off[e + 1]] = \
                (pair if plan.edges[e][0] == v else pair.T).ravel()
        for c in plan.children[v]:
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.log(_marginal(prob, clique, plan.sep[c])) + comp_log_z[v] - messages[c]
            # m_c = -inf: the child's subtree is infeasible there, its beliefs are 0 anyway
            d[np.isnan(d)] = -np.inf
            down[c] = d
            messages[c] = None
    return log_z, mu


def _marginal(prob, clique, keep):
    """Sum a clique table over the variables not in ``keep``; axes in ``keep`` order.
    Runs of neighbouring axes are merged first: numpy reduces few long axes much faster
    than many short ones."""
    kept = [u in keep for u in clique]
    shape, flags = [], []
    for size, flag in zip(prob.shape, kept):
        if flags and flags[-1] == flag:
            shape[-1] *= size
        else:
            shape.append(size)
            flags.append(flag)
    out = prob.reshape(shape).sum(axis=tuple(k for k, f in enumerate(flags) if not f))
    order = [u for u in clique if u in keep]
    out = out.reshape([prob.shape[k] for k, f in enumerate(kept) if f])
    return out.transpose([order.index(u) for u in keep])


def _pair_marginals(t):
    """The (axis 0, axis k) marginals of a table for k = 1, 2, ...: halve the other axes
    recursively, each half by one reduction over merged axes (about 2x the table size)."""
    if t.ndim <= 2:
        return [t] if t.ndim == 2 else []
    h = 1 + (t.ndim - 1) // 2
    size = math.prod(t.shape[1:h])
    left = t.reshape(t.shape[0] * size, -1).sum(axis=1).reshape(t.shape[:h])
    right = t.reshape(t.shape[0], size, -1).sum(axis=1).reshape(t.shape[:1] + t.shape[h:])
    return _pair_marginals(left) + _pair_marginals(right)


def _elimination_map(model, plan):
    """Max-product variable elimination, then backtracking in reverse elimination order:
    each x_v maximises its clique table with the later variables already fixed."""
    messages = [None] * model.n_vars
    for v in plan.order:
        messages[v] = _clique_table(model, plan, v, messages).max(axis=0)
    if sum(float(messages[v]) for v in plan.order if plan.parent[v] < 0) == -np.inf:
        raise _infeasible()
    x = np.zeros(model.n_vars, dtype=np.int64)
    for v in reversed(plan.order):
        r = _local_table(model, plan, v)[_slice(plan.local[v], v, x)].copy()
        for c in plan.children[v]:
            r += messages[c][_slice(plan.sep[c], v, x)]
        x[v] = int(np.argmax(r))
    return x


def _slice(scope, v, x):
    """Index a table over ``scope`` at the fixed states ``x`` of every variable but v."""
    return tuple(slice(None) if u == v else int(x[u]) for u in scope)
