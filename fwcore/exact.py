"""Exact reference inference: log Z, node and edge marginals, and the MAP of a PairwiseMRF.

Three methods (DESIGN.md, "Exact reference"):

- ``bruteforce``: enumerate every joint state, in vectorised chunks.
- ``tree`` (marginals on a forest): two-pass sum-product, leaves to roots then back
  (`ForestLayout`, the `fwcore._kernels.forest_sum_product` kernel).
- ``elimination``: variable elimination in log space run as a clique tree
  (`fwcore.elimination`).

Log-potentials may be -inf; an all -inf slice reduces to -inf, never NaN.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ._kernels import forest_sum_product
from .auto import exact_method
from .checks import INFEASIBLE, Interval, Options, check_model, validate_params
from .elimination import EliminationPlan, elimination_map, elimination_marginals
from .results import MapResult, Record, Result, Status, Trace
from .factor_graph import FactorGraph, solves_factor_graphs
from .model import PairwiseMRF, concat_ranges

__all__ = ["ExactResult", "exact_inference", "exact_map", "ForestLayout"]

MAX_BRUTEFORCE_STATES = 2**40   # beyond this enumeration would run for days
# flat indices held per brute-force chunk (2 MiB: twice as fast as 32 MiB's, in cache;
# ~10 ms of work between two reads of a deadline)
_CHUNK_ENTRIES = 2**18
_PARAMS = {"method": Options("auto", "bruteforce", "tree", "elimination"),
           "memory_limit": Interval(0.0, lo_open=True)}
_MAP_PARAMS = {"method": Options("auto", "bruteforce", "elimination"),
               "memory_limit": _PARAMS["memory_limit"]}


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class ExactResult(Result):
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

    @property
    def log_z_lower(self):
        return self.log_z


@validate_params(_PARAMS, unchecked=("model",))
@solves_factor_graphs
def exact_inference(model: PairwiseMRF | FactorGraph, method: str = "auto",
                    memory_limit: float = 2**31) -> ExactResult:
    """Exact log Z and marginals of ``model``.

    ``method``: "bruteforce", "tree" (a forest only: two-pass sum-product, linear in the
    model's size), "elimination", or "auto" (`fwcore.auto.exact_method`: brute force on
    small state spaces, else tree on a forest, else elimination). ``memory_limit``
    (bytes) bounds elimination's largest clique table plus its stored messages; a larger
    need raises ValueError before any work. Raises ValueError when no assignment has a
    finite score (log Z = -inf). Ctrl-C raises KeyboardInterrupt at once (elimination
    checks for it every few milliseconds): an exact answer has no partial form.
    """
    check_model(model)
    return exact_result(model, method, memory_limit)


def exact_result(model, method, memory_limit):
    """`exact_inference` on the checked pairwise ``model``."""
    method = _check_method(model, method, marginals=True)
    t0 = time.perf_counter()
    info = {}
    if method == "bruteforce":
        log_z, mu = _bruteforce_marginals(model)
    elif method == "tree":
        log_z, mu = _tree_marginals(model)
    else:
        plan = EliminationPlan(model, memory_limit)
        info = plan.info()
        log_z, mu = elimination_marginals(model, plan)
    nodes, edges = model.split_marginals(mu)
    mu.setflags(write=False)
    seconds = time.perf_counter() - t0
    return ExactResult(log_z=float(log_z), node_marginals=nodes, edge_marginals=edges, mu=mu,
                       method=method, time=seconds, info=info,
                       trace=Trace([Record(iteration=1, time=seconds, primal=float(log_z),
                                           gap=0.0, bound=float(log_z))]))


@validate_params(_MAP_PARAMS, unchecked=("model",))
@solves_factor_graphs
def exact_map(model: PairwiseMRF | FactorGraph, method: str = "auto",
              memory_limit: float = 2**31) -> MapResult:
    """Exact MAP: argmax_x <θ, μ(x)> (first maximiser in enumeration order for brute
    force). The methods and ``memory_limit`` of `exact_inference` but "tree" (on a forest
    the "tree" oracle is max-product, `fwcore.infer_map`); elimination runs max-product
    upward and backtracks in reverse elimination order. Raises ValueError when no
    assignment has a finite score; Ctrl-C, KeyboardInterrupt at once (as
    `exact_inference`)."""
    check_model(model)
    method = _check_method(model, method, marginals=False)
    t0 = time.perf_counter()
    if method == "bruteforce":
        x = bruteforce_map(model)[0]
    else:
        x = elimination_map(model, EliminationPlan(model, memory_limit))
    score = float(model.score(x))
    seconds = time.perf_counter() - t0
    return MapResult(assignment=x, score=score, upper_bound=score, status=Status.CONVERGED,
                     time=seconds, method=method, n_oracle_calls=0,
                     trace=Trace([Record(iteration=1, time=seconds, primal=score, gap=0.0,
                                         bound=score, score=score)]))


def _check_method(model, method, marginals):
    """Check the method's fit to the checked ``model`` for `exact_inference`
    (``marginals``) or `exact_map`; return the concrete method."""
    if method == "auto":
        return exact_method(model, tree=marginals)
    if method == "tree" and not model.is_forest():
        raise ValueError(f"method='tree' needs a forest, but this graph has a cycle "
                         f"({model.n_edges} edges on {model.n_vars} variables in "
                         f"{model.n_components()} components); use method='elimination'")
    log2_states = float(np.log2(model.card.astype(np.float64)).sum())
    if method == "bruteforce" and log2_states > math.log2(MAX_BRUTEFORCE_STATES):
        raise ValueError(f"method='bruteforce' would enumerate 2**{log2_states:.1f} joint states "
                         f"(over fwcore.exact.MAX_BRUTEFORCE_STATES = {MAX_BRUTEFORCE_STATES}); "
                         "use method='elimination'")
    return method


def _infeasible():
    return ValueError(INFEASIBLE)


# -- brute force ------------------------------------------------------------------------


def _chunks(model):
    """Yield (flat indices (m, n + E), scores (m,)) for all joint states, in C order of
    the state tuple (variable 0 most significant)."""
    card = model.card.astype(np.int64)
    n_states = math.prod(int(c) for c in card)
    step = max(1, _CHUNK_ENTRIES // max(1, model.n_vars + model.n_edges))
    for start in range(0, n_states, step):
        idx = np.arange(start, min(start + step, n_states), dtype=np.int64)
        x = (np.stack(np.unravel_index(idx, card), axis=1) if model.n_vars else
             np.zeros((idx.size, 0), dtype=np.int64))
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


def bruteforce_map(model, deadline=None):
    """The first highest-scoring state in enumeration order. With a ``deadline`` (a
    `fwcore.loop.Deadline`) the enumeration stops between chunks once it has passed: then
    (the best state of those enumerated, False), else (the maximiser, True)."""
    best, best_x = -np.inf, np.zeros(model.n_vars, dtype=np.int64)
    card = model.card.astype(np.int64)
    offset = 0
    for _flat, s in _chunks(model):
        k = int(np.argmax(s))
        if s[k] > best:
            best = s[k]
            best_x = np.array(np.unravel_index(offset + k, card), dtype=np.int64).reshape(-1)
        offset += s.size
        if deadline is not None and deadline.passed():
            return best_x, False
    if best == -np.inf:
        raise _infeasible()
    return best_x, True


# -- sum-product on forests -----------------------------------------------------------


class ForestLayout:
    """Forests over the model's variables laid out for exact two-pass sum-product
    (`fwcore._kernels.forest_sum_product`): ``forests`` are edge masks, each acyclic; copy
    t n + v is variable v in forest t, and held edge k is edge ``edge_of[k]`` of forest
    ``forest_of[k]``. The edge part of log-potentials and marginals holds, copy by copy,
    the table of the copy's edge to its parent: its entry k is θ's entry ``entry[k]``, in
    forest ``entry_forest[k]``."""

    def __init__(self, model, forests):
        from scipy.sparse import coo_matrix, csgraph
        n, m = model.n_vars, len(forests)
        self.model = model
        self.forest_of, self.edge_of = t_of, e_of = np.nonzero(
            np.asarray(forests, dtype=bool).reshape(m, model.n_edges))
        a = t_of * n + model.edges[e_of, 0]
        b = t_of * n + model.edges[e_of, 1]
        # one breadth-first search over all forests from a virtual root joined to one
        # copy in each tree
        size = m * n
        _, label = csgraph.connected_components(
            coo_matrix((np.ones(len(a)), (a, b)), shape=(size, size)), directed=False)
        _, heads = np.unique(label, return_index=True)
        rows = np.concatenate([a, b, np.full(len(heads), size)])
        cols = np.concatenate([b, a, heads])
        g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(size + 1, size + 1)).tocsr()
        order, pred = csgraph.breadth_first_order(g, size, directed=True, return_predecessors=True)
        self.order = order[1:].astype(np.int64)
        child = np.where(pred[b] == a, b, a)
        self.parent_edge = np.full(size, -1, dtype=np.int32)
        self.parent_edge[child] = e_of
        parent = a + b - child
        self.up_off = np.zeros(size + 1, dtype=np.int64)
        up_size = np.zeros(size, dtype=np.int64)
        up_size[child] = model.card[parent % n]
        np.cumsum(up_size, out=self.up_off[1:])
        # edge tables: copy child[k] holds edge e_of[k] of forest t_of[k]
        sizes = np.zeros(size, dtype=np.int64)
        sizes[child] = np.diff(model.edge_off)[e_of]
        self.edge_pos = np.zeros(size, dtype=np.int64)
        self.edge_pos[1:] = np.cumsum(sizes)[:-1]
        ent = np.argsort(child, kind="stable")  # tables in copy order
        self.entry = concat_ranges(model.edge_off[e_of[ent]], sizes[child[ent]])
        self.entry_forest = np.repeat(t_of[ent], sizes[child[ent]])
        dim = int(model.node_off[-1])
        self.n_forests, self.dim = m, dim
        self._mu = np.empty(m * dim)
        self._edge_mu = np.empty(self.entry.size)
        self._up = np.empty(int(self.up_off[-1]))
        self._log_z = np.empty(m)
        self._work = np.empty(int(model.card.max()) if n else 0)

    def sum_product(self, node_theta, edge_theta):
        """(the forests' node marginals (m, D), their edge marginals in the edge part's
        layout, log Z of each forest) for the node log-potentials ``node_theta`` (flat, m
        D: forest t's at t D) and the edge part ``edge_theta``; -inf entries give zero
        marginals, never NaN. The arrays returned are overwritten by the next call."""
        forest_sum_product(self.model.graph, node_theta, edge_theta, self.edge_pos,
                           self.order, self.parent_edge, self.up_off, self._mu,
                           self._edge_mu, self._up, self._log_z, self._work)
        return self._mu.reshape(self.n_forests, -1), self._edge_mu, self._log_z


def _tree_marginals(model):
    """log Z and the flat marginals of a forest by two-pass sum-product (one
    `ForestLayout`): exact, O(Σ_(i,j) card_i card_j)."""
    forest = ForestLayout(model, [np.ones(model.n_edges, dtype=bool)])
    nodes, edges, log_z = forest.sum_product(model.theta[:forest.dim],
                                             model.theta[forest.entry])
    if log_z[0] == -np.inf:
        raise _infeasible()
    mu = np.empty(model.dim)
    mu[:forest.dim] = nodes[0]
    mu[forest.entry] = edges
    return float(log_z[0]), mu
