"""The TRW objective (Barrier FW eq. 1-2; DESIGN.md "TRW objective") for the engine.

    TRW(mu; theta, rho) = <theta, mu> + sum_i c_i H(mu_i) + sum_e rho_e H(mu_e)

minimised as f = -TRW, with value, gradient and exact line search by the `_kernels` TRW
kernels.
"""
import numpy as np

from .. import _kernels
from ..fw import Objective
from .rho import entropy_weights

__all__ = ["TRWObjective"]


class TRWObjective(Objective):
    """f(mu) = -TRW(mu; theta, rho) (Barrier FW eq. 1-2)."""

    def __init__(self, model, rho):
        self.model = model
        self.set_rho(rho)

    def set_rho(self, rho):
        self.rho = np.ascontiguousarray(rho, dtype=np.float64)
        self.weight = entropy_weights(self.model, self.rho)  # c_i on node blocks, rho_e on edges

    def value_grad(self, x):
        g = np.empty_like(x)
        f = _kernels.trw_value_grad(self.model.theta, x, self.weight, g)
        return f, g

    def trw(self, x):
        """TRW(x) = -f(x)."""
        return -self.value_grad(x)[0]

    def line_search(self, x, d, gamma_max):
        return _kernels.trw_line_search(self.model.theta, x, d, self.weight, gamma_max)[0]

    def correction(self, x, atoms, weights, u0, delta, tol, max_steps, drop_tol, time_limit):
        """Barrier FW Alg. 5 over assignments of the model (rows of ``atoms``; -1 rows are
        u0) in one `_kernels.mfw_correction` call: the kernel of `fwcore.fw.MFWCorrection`
        (steps, pFW gap, f and grad f at the last x)."""
        grad = np.empty_like(x)
        steps, gap, f = _kernels.mfw_correction(
            self.model.theta, self.model.graph, self.weight, atoms, weights, x, u0, delta, tol,
            max_steps, drop_tol, time_limit, grad, np.empty_like(x), np.empty(atoms.shape[0]))
        return steps, gap, f, grad
