"""The local-polytope LP oracle (DESIGN.md "MAP oracles"; the L_δ variant of Barrier FW
Sec. 3 uses it as its linear oracle).

    max <θ, μ>  s.t.  μ ∈ L = {μ ≥ 0, Σ_x μ_i(x) = 1, Σ_x' μ_ij(x, x') = μ_i(x),
                              Σ_x μ_ij(x, x') = μ_j(x')}

solved by HiGHS through `scipy.optimize.linprog` on a sparse constraint matrix built once.
The optimum μ may be fractional on graphs with cycles; on forests L is the marginal
polytope and the dual simplex returns an integral vertex.
"""
import numpy as np

from .. import _kernels
from ..checks import (HIGHS_MEMORY_LIMIT, TIME, Options, check_lp_size, finite_penalty,
                      validate_params)
from ..results import Status
from .base import LPOracle, register_oracle
from ..labelling import node_argmax
from ._common import local_polytope_constraints, lp_objective, run_highs

__all__ = ["LocalPolytopeLP"]

_SOLVERS = ("highs-ds", "highs-ipm", "highs")
#: ICM sweeps that improve the rounded LP optimum
_REPAIR_SWEEPS = 100


#: LPs up to this many constraint nonzeros solve in milliseconds (the paper's models: a
#: 5x5 grid has 280): solved in place, a fork per call would cost more than the solve
_IN_PLACE_NONZEROS = 20_000


@register_oracle
class LocalPolytopeLP(LPOracle):
    """LP over the local polytope (HiGHS).

    Options: ``time_limit`` (seconds or None), ``solver`` — ``"highs-ds"`` (default: the
    dual simplex returns a basic solution, i.e. a vertex of L, which is integral on trees
    even with ties), ``"highs-ipm"`` or ``"highs"`` (HiGHS chooses), ``memory_limit``
    (bytes, default `fwcore.checks.HIGHS_MEMORY_LIMIT`: a larger estimate raises
    ValueError here, `fwcore.checks.check_lp_size`).

    `argmax_marginals` returns the LP optimum μ (flat layout) and sets `upper_bound` to the
    LP value, a bound on the MAP score. `argmax` rounds μ to the assignment of the largest
    node marginals, then improves it by ICM on the scores with -inf replaced by
    `fwcore.checks.finite_penalty`; a rounding still on a forbidden state (common where a
    fractional μ meets hard constraints) is repaired under arc consistency by
    `MapOracle.argmax`. Its bound is still the LP value. When L
    has no point of finite score (−inf everywhere on some block), μ is the uniform point
    and the bound −inf. When HiGHS stops at the time limit (status ``max_time``) there is
    no bound: `argmax_marginals` returns the uniform point and `argmax` the best node
    scores.
    """

    name = "lp"
    exact = False

    @validate_params({"time_limit": TIME, "solver": Options(*_SOLVERS)},
                     unchecked=("model", "memory_limit"))
    def __init__(self, model, time_limit=None, solver="highs-ds", memory_limit=HIGHS_MEMORY_LIMIT):
        super().__init__(model)
        check_lp_size(model, "lp", memory_limit)
        self.time_limit, self.solver = time_limit, solver
        self._a_eq, self._b_eq = local_polytope_constraints(model)

    def argmax_marginals(self, scores, time_limit=None):
        """The LP optimum μ ∈ L (flat, the model's layout); also sets `upper_bound`."""
        self.n_calls += 1
        mu, self._bound, self.status = self._solve(self.check_scores(scores),
                                                   self.call_limit(time_limit))
        return self.model.uniform_marginals() if mu is None else mu

    def _solve(self, scores, time_limit):
        """(μ, LP value, status); (None, None, MAX_TIME) when HiGHS stopped at the time limit;
        the model without variables has the empty μ of value 0 (HiGHS refuses no columns)."""
        from scipy.optimize import linprog
        if not self.model.dim:
            return np.zeros(0), 0.0, Status.CONVERGED
        cost, upper = lp_objective(scores)
        res = run_highs(lambda options: linprog(
            cost, A_eq=self._a_eq, b_eq=self._b_eq,
            bounds=np.stack([np.zeros_like(upper), upper], axis=1), method=self.solver,
            options=options), time_limit, {}, in_place=self._a_eq.nnz <= _IN_PLACE_NONZEROS)
        if res is None or res.status == 1:
            return None, None, Status.MAX_TIME
        if res.status == 2:
            # every state combination of some edge or node is forbidden: no finite score
            return self.model.uniform_marginals(), -np.inf, Status.CONVERGED
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed on the local-polytope LP (status {res.status}: "
                               f"{res.message})")
        return np.clip(res.x, 0.0, 1.0), float(-res.fun), Status.CONVERGED

    def _argmax(self, scores, init, time_limit):
        mu, bound, status = self._solve(scores, time_limit)
        if mu is None:  # stopped at the time limit: the best node scores, no bound
            return node_argmax(self.model, scores), None, status
        x = node_argmax(self.model, mu).astype(np.int32)
        _kernels.icm(finite_penalty(self.model, scores, 1.0), self.model.graph, x,
                     _REPAIR_SWEEPS)
        # the rounded point lies in L, so a bound below its score is solver round-off
        return x, max(bound, float(self.model.score(x, scores))), None
