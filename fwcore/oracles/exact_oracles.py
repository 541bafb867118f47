"""Exact MAP oracles (DESIGN.md "MAP oracles"): brute force, max-product dynamic
programming on forests, enumeration over a binary vertex cover, an integer program over the
local polytope (HiGHS), toulbar2.

Each sets ``status`` after a call: ``Status.CONVERGED`` when the answer is proven optimal,
``Status.MAX_TIME`` when a time limit stopped the search first (best incumbent returned,
with the solver's bound when it has one).
"""
import importlib.util
import math
import re
import time

import numpy as np

from ..checks import (HIGHS_MEMORY_LIMIT, Interval, TIME, check_lp_size, validate_params,
                      finite_penalty)
from .. import _oracles
from ..elimination import EliminationPlan
from ..loop import PROGRESS_EVERY, Deadline
from ..exact import bruteforce_map
from ..model import binary_cover
from ..results import Record, Status
from .base import MapOracle, register_oracle
from ..labelling import node_argmax
from ._common import (Abandoned, call_interruptibly, grace, local_polytope_constraints,
                      lp_objective, run_highs)

__all__ = ["BruteForceOracle", "EliminationOracle", "TreeOracle", "CoverOracle", "ILPOracle",
           "Toulbar2Oracle"]

_INSTEAD = "use 'ilp' (HiGHS) or 'toulbar2' instead"


@register_oracle
class BruteForceOracle(MapOracle):
    """Enumerates all prod(card) assignments (`fwcore.exact`'s brute force; small models
    only: ``max_states``, default 2**20, caps the state space). A time limit stops the
    enumeration between chunks with the best state so far (status max_time)."""

    name = "bruteforce"
    exact = True

    @validate_params({"max_states": Interval(1)}, unchecked=("model",))
    def __init__(self, model, max_states=2**20):
        super().__init__(model)
        log2_states = float(np.log2(model.card.astype(np.float64)).sum())
        if log2_states > math.log2(max_states):
            raise ValueError(f"the bruteforce oracle would enumerate 2**{log2_states:.1f} "
                             f"assignments, more than max_states={max_states:.0f}; {_INSTEAD}, "
                             "'tree' on a forest, or raise max_states")

    def _argmax(self, scores, init, time_limit):
        model = self.model.with_theta(scores)
        try:
            x, complete = bruteforce_map(model, None if time_limit is None else
                                         Deadline(time_limit))
        except ValueError:                   # every assignment has score −inf
            return np.zeros(model.n_vars, dtype=np.int64), -np.inf, None
        if not complete:  # the best of the states enumerated before the time limit
            return x, None, Status.MAX_TIME
        return x, float(model.score(x)), None


@register_oracle
class EliminationOracle(MapOracle):
    """Max-product variable elimination (`fwcore.elimination`) on a clique tree built once for the
    model's graph: exact, and fast when the induced width is small. ``memory_limit``
    (bytes, default 2**28) caps its tables; a larger need raises ValueError at construction."""

    name = "elimination"
    exact = True

    @validate_params({"memory_limit": Interval(1)}, unchecked=("model",))
    def __init__(self, model, memory_limit=2**28):
        super().__init__(model)
        self.plan = EliminationPlan(model, memory_limit)

    def _argmax(self, scores, init, time_limit):
        model = self.model.with_theta(scores)
        try:
            x = self.plan.map(model)
        except ValueError:                   # every assignment has score −inf
            return np.zeros(model.n_vars, dtype=np.int64), -np.inf, None
        return x, float(model.score(x)), None


@register_oracle
class TreeOracle(MapOracle):
    """Max-product dynamic programming on a forest: O(Σ_(i,j) card_i card_j) per call.

    Leaves-to-root messages m_c→p(x_p) = max_x_c [θ_pc(x_p, x_c) + θ_c(x_c) + Σ m_→c(x_c)],
    then backtracking from each root. −inf entries propagate as −inf (never NaN).
    """

    name = "tree"
    exact = True

    def __init__(self, model):
        super().__init__(model)
        if not model.is_forest():
            raise ValueError(f"the tree oracle needs a forest, but this graph has a cycle "
                             f"({model.n_edges} edges on {model.n_vars} variables in "
                             f"{model.n_components()} components); {_INSTEAD}, or "
                             f"'bruteforce' on tiny models")
        # breadth-first order from a root per component; parents come before children
        n = model.n_vars
        parent = np.full(n, -1, dtype=np.int64)
        pedge = np.full(n, -1, dtype=np.int64)
        seen = np.zeros(n, dtype=bool)
        order = []
        start, nbr, eid = model.adj_start, model.adj_var, model.adj_edge
        for root in range(n):
            if seen[root]:
                continue
            seen[root] = True
            queue = [root]
            while queue:
                v = queue.pop()
                order.append(v)
                for k in range(start[v], start[v + 1]):
                    u = nbr[k]
                    if not seen[u]:
                        seen[u] = True
                        parent[u], pedge[u] = v, eid[k]
                        queue.append(u)
        self._order = np.array(order, dtype=np.int64)
        self._parent, self._pedge = parent, pedge

    def _argmax(self, scores, init, time_limit):
        model = self.model
        belief = [model.unary(i, scores).copy() for i in range(model.n_vars)]
        best_child = {}
        for c in self._order[::-1]:
            p = self._parent[c]
            if p < 0:
                continue
            e = self._pedge[c]
            table = model.pairwise(e, scores)
            if model.edges[e, 0] != p:
                table = table.T                      # orient as [x_p, x_c]
            m = table + belief[c][None, :]
            arg = np.argmax(m, axis=1)
            best_child[c] = arg
            belief[p] += m[np.arange(m.shape[0]), arg]
        x = np.zeros(model.n_vars, dtype=np.int64)
        value = 0.0
        for c in self._order:
            p = self._parent[c]
            if p < 0:
                x[c] = int(np.argmax(belief[c]))
                value += belief[c][x[c]]
            else:
                x[c] = best_child[c][x[p]]
        return x, float(value), None


@register_oracle
class CoverOracle(MapOracle):
    """Exact MAP by enumerating the 2^k states of a binary vertex cover
    (`fwcore.model.binary_cover`)
    in Gray code order: given the cover's states the other variables are independent and
    each takes its best state (`fwcore._oracles.cover_enumerate`, O(2^k (degree + free
    variables · card))). Fast on dense bipartite models with one small side, such as
    RBMs (k = the smaller layer). ``max_cover`` (default 26) caps k; a model whose cover
    is larger, or needs a non-binary variable, raises ValueError. −inf scores get the
    finite penalty of `fwcore.checks.finite_penalty` (same maximisers)."""

    name = "cover"
    exact = True

    @validate_params({"max_cover": Interval(0, 62, integer=True)}, unchecked=("model",))
    def __init__(self, model, max_cover=26):
        super().__init__(model)
        found = binary_cover(model)
        if found is None or found[0].size > max_cover:
            size = ("needs a non-binary variable" if found is None else
                    f"has {found[0].size} variables")
            raise ValueError(f"the cover oracle's vertex cover {size}; it needs at most "
                             f"max_cover={max_cover} binary ones: use 'elimination' or "
                             f"{_INSTEAD}")
        self.cover, self.free = found
        self._in_cover = np.zeros(model.n_vars, dtype=np.int8)
        self._in_cover[self.cover] = 1
        self._field = np.empty(int(model.node_off[-1]))
        per_slot = model.card[model.adj_var].astype(np.int64)
        sizes = [int(per_slot[model.adj_start[v]:model.adj_start[v + 1]].sum())
                 for v in self.cover]
        self._diff_start = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self._diff = np.empty(int(self._diff_start[-1]))

    def _argmax(self, scores, init, time_limit):
        m = self.model
        x = np.zeros(m.n_vars, dtype=np.int32)
        _, finished = _oracles.cover_enumerate(
            finite_penalty(m, scores, margin=1.0), m.graph, self.cover, self._in_cover,
            self.free, x, 0.0 if time_limit is None else time_limit, self._diff_start,
            self._field, self._diff)
        score = float(m.score(x, scores))
        if not finished:
            return x, None, Status.MAX_TIME
        return x, score, None


@register_oracle
class ILPOracle(MapOracle):
    """Integer program over the local polytope with binary node variables (μ_i ∈ {0, 1},
    μ_ij ∈ [0, 1] with the marginalisation constraints), solved by HiGHS through
    `scipy.optimize.milp`. Integral μ_i force μ_ij = μ_i μ_j, so the optimum is the MAP.

    Options: ``time_limit`` (seconds or None), ``mip_rel_gap`` (default 0: prove
    optimality; HiGHS's absolute gap tolerance 1e-6 still applies), ``memory_limit``
    (bytes, default `fwcore.checks.HIGHS_MEMORY_LIMIT`: a larger estimate raises
    ValueError here, `fwcore.checks.check_lp_size`). The bound is HiGHS's dual bound
    (−inf scores: those variables are fixed to 0).
    """

    name = "ilp"
    exact = True

    @validate_params({"time_limit": TIME, "mip_rel_gap": Interval(0.0, 1.0, hi_open=True)},
                     unchecked=("model", "memory_limit"))
    def __init__(self, model, time_limit=None, mip_rel_gap=0.0, memory_limit=HIGHS_MEMORY_LIMIT):
        from scipy.optimize import LinearConstraint
        super().__init__(model)
        check_lp_size(model, "ilp", memory_limit)
        self.time_limit, self.mip_rel_gap = time_limit, mip_rel_gap
        a_eq, b_eq = local_polytope_constraints(model)
        self._constraints = LinearConstraint(a_eq, b_eq, b_eq)
        n_node = int(model.node_off[-1])
        self._integrality = np.concatenate([np.ones(n_node), np.zeros(model.dim - n_node)])

    def _argmax(self, scores, init, time_limit):
        from scipy.optimize import Bounds, milp
        model = self.model
        if not model.n_vars:  # the empty assignment (HiGHS refuses a problem without columns)
            return np.zeros(0, dtype=np.int32), 0.0, None
        cost, upper = lp_objective(scores)
        self.progress = ()
        res = run_highs(lambda options: milp(
            cost, integrality=self._integrality, bounds=Bounds(0.0, upper),
            constraints=self._constraints, options=options),
            time_limit, {"mip_rel_gap": self.mip_rel_gap}, on_line=_HighsProgress(self))
        if res is None:   # abandoned past the time limit: the best node scores, no bound
            return node_argmax(model, scores), None, Status.MAX_TIME
        # without an incumbent (infeasible: all scores −inf; or timed out) the fallback
        # assignment takes the best node scores
        if res.status == 2:
            return node_argmax(model, scores), -np.inf, None
        if res.status not in (0, 1):
            raise RuntimeError(f"HiGHS failed on the MAP integer program (status {res.status}: "
                               f"{res.message})")
        status = None if res.status == 0 else Status.MAX_TIME
        x = node_argmax(model, scores) if res.x is None else node_argmax(model, res.x)
        dual = res.get("mip_dual_bound")  # an OptimizeResult is a dict
        if dual is None or not np.isfinite(dual):
            return x, (float(model.score(x, scores)) if res.status == 0 else None), status
        # a bound below an achieved score is a tolerance artefact: lift it to that score
        return x, max(float(-dual), float(model.score(x, scores))), status


#: a row of HiGHS's branch-and-bound log: its best bound and best solution (of the cost
#: it minimises: minus the score)
_HIGHS_ROW = re.compile(r"^\s*[A-Za-z]?\s+\d+\s+\d+\s+\d+\s+[\d.]+%\s+(\S+)\s+(\S+)\s")


class _HighsProgress:
    """Reads HiGHS's log lines for the ILP oracle: a progress record (time, best score,
    bound) when they change, and one a second anyway (`fwcore.loop.PROGRESS_EVERY`)."""

    def __init__(self, oracle):
        self.oracle, self.start = oracle, time.monotonic()
        self.score, self.bound, self.last = -np.inf, None, None

    def __call__(self, line):
        row = None if line is None else _HIGHS_ROW.match(line)
        changed = False
        if row is not None:
            bound, score = -float(row.group(1)), -float(row.group(2))
            changed = (score, bound) != (self.score, self.bound)
            self.score, self.bound = score, (bound if bound < np.inf else None)
        now = time.monotonic()
        if changed or self.last is None or now - self.last >= PROGRESS_EVERY:
            self.last = now
            self.oracle.add_progress(Record(iteration=len(self.oracle.progress) + 1,
                                            time=now - self.start, primal=self.score,
                                            bound=self.bound, score=self.score))


#: wall seconds toulbar2 takes per second of its time limit (measured on 100x100 and
#: 200x200 grids: 4.7 s for 3, 15.4 s for 10)
_TB2_WALL_PER_SECOND = 1.55


@register_oracle
class Toulbar2Oracle(MapOracle):
    """toulbar2 (optional extra ``fwcore[toulbar2]``) through pytoulbar2's in-memory API.

    Scores become non-negative integer costs, energy = scale · (max θ_f − θ_f(x)) per factor
    rounded to integers (toulbar2 minimises integer costs); −inf scores first get the
    finite penalty of `fwcore.checks.finite_penalty` (soft, not toulbar2's ``top``: a
    Solve that proves infeasibility against ``top`` leaves toulbar2's global options
    changed, and later searches crawl). Rounding moves each assignment's score by at most
    (n + E) / (2 scale), so the returned assignment is optimal to within (n + E) / scale,
    its score is recomputed exactly from θ, and the bound is the solver's dual bound widened
    by (n + E) / scale.
    ``scale`` defaults to 2**52 / ((n + E + 1) max(1, Σ_f range of θ_f)), so that no sum
    of costs, forbidden entries included, exceeds 2**52 (toulbar2's MAX_COST is ~2**58).
    Options: ``time_limit`` (seconds for the whole call; toulbar2 gets the whole seconds
    left after building its problem, scaled by its measured wall time per second, and
    none left gives the best node scores with status max_time), ``scale``.
    Each call runs in a forked process (`fwcore.oracles._common.call_interruptibly`): Ctrl-C
    and the time limit kill it; pytoulbar2's global state stays there.
    """

    name = "toulbar2"
    exact = True
    extra = "toulbar2"

    @validate_params({"time_limit": TIME, "scale": [Interval(0.0, lo_open=True), None]},
                     unchecked=("model",))
    def __init__(self, model, time_limit=None, scale=None):
        super().__init__(model)
        self.time_limit, self.scale = time_limit, scale

    @classmethod
    def is_available(cls):
        """Installed, found without importing it (``fwcore --help`` lists the oracles)."""
        return importlib.util.find_spec("pytoulbar2") is not None

    def _argmax(self, scores, init, time_limit):
        t0 = time.perf_counter()
        try:  # all of it in a forked process: its set-up counts towards the time limit
            return call_interruptibly(lambda: self._solve(scores, time_limit, t0),
                                      grace(time_limit))
        except Abandoned:
            return node_argmax(self.model, scores), None, Status.MAX_TIME

    def _solve(self, scores, time_limit, t0):
        import pytoulbar2
        model = self.model
        finite = finite_penalty(model, scores, margin=1.0)
        blocks = ([model.unary(i, finite) for i in range(model.n_vars)]
                  + [model.pairwise(e, finite).ravel() for e in range(model.n_edges)])
        scopes = [[i] for i in range(model.n_vars)] + [list(map(int, ij)) for ij in model.edges]
        tops = [b.max() if b.size else 0.0 for b in blocks]
        ranges = [b.max() - b.min() if b.size else 0.0 for b in blocks]
        scale = self.scale or 2.0**52 / ((len(blocks) + 1) * max(sum(ranges), 1.0))
        costs = [np.rint(scale * (t - b)) for t, b in zip(tops, blocks)]
        slack = len(blocks) / scale
        cfn = pytoulbar2.CFN(verbose=-1)
        for i, c in enumerate(model.card):
            cfn.AddVariable(f"x{i}", list(range(int(c))))
        for scope, c in zip(scopes, costs):
            cfn.AddFunction(scope, c.tolist())
        if time_limit is not None:  # whole seconds of the time left after the set-up
            left = (time_limit - (time.perf_counter() - t0)) / _TB2_WALL_PER_SECOND
            if left < 1.0:
                return node_argmax(model, scores), None, Status.MAX_TIME
        time_limit = 0 if time_limit is None else math.floor(left)
        start = time.process_time(), time.perf_counter()
        sol = cfn.Solve(timeLimit=time_limit)
        used = max(time.process_time() - start[0], time.perf_counter() - start[1])
        dual_cost = float(cfn.GetDDualBound())
        const = float(sum(tops))
        # Solve gives no flag for a time-out: a run that used (nearly) all its time is
        # treated as stopped early; any other run completed its search
        timed_out = time_limit > 0 and used >= 0.98 * time_limit
        status = Status.MAX_TIME if timed_out else None
        if sol is None:                         # stopped before any solution
            return node_argmax(model, scores), const - dual_cost / scale + slack, status
        x = np.asarray(sol[0], dtype=np.int64)
        if not timed_out:                       # x is optimal for the rounded costs
            dual_cost = float(np.concatenate(costs)[model.flat_index(x)].sum())
            if model.score(x, scores) == -np.inf:  # the optimum is forbidden: none is feasible
                return x, -np.inf, status
        return x, max(const - dual_cost / scale + slack, float(model.score(x, scores))), status
