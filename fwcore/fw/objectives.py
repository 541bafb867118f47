"""Objectives for the engine: subclasses of `Objective`, which declares everything the
engine may call (FrankWolfe.jl's habit: one declared interface, nothing probed)."""
import abc

import numpy as np

from .linesearch import safeguarded_newton

__all__ = ["Objective", "Quadratic"]


class Objective(abc.ABC):
    """A convex f to minimise. Subclasses implement `value_grad`; they may override
    `phi_derivatives` (φ'(γ), φ''(γ) of φ(γ) = f(x + γd), for the Newton line search) or
    `line_search` itself (a kernel, or a closed form)."""

    @abc.abstractmethod
    def value_grad(self, x):
        """(f(x), ∇f(x))."""

    def value(self, x):
        return self.value_grad(x)[0]

    def phi_derivatives(self, x, d, gamma):
        """(φ'(γ), φ''(γ) or None) along d; by default φ' from the gradient only."""
        return float(self.value_grad(x + gamma * d)[1] @ d), None

    def line_search(self, x, d, gamma_max):
        """argmin of φ over [0, gamma_max] by `safeguarded_newton` on `phi_derivatives`."""
        return safeguarded_newton(lambda t: self.phi_derivatives(x, d, t),
                                  self.phi_derivatives(x, d, 0.0)[0], gamma_max)


class Quadratic(Objective):
    """f(x) = 0.5 x'Qx + c'x + const, with Q symmetric positive semidefinite."""

    def __init__(self, Q, c, const=0.0):
        Q = np.ascontiguousarray(Q, dtype=np.float64)
        c = np.ascontiguousarray(c, dtype=np.float64)
        if Q.ndim != 2 or Q.shape[0] != Q.shape[1] or c.shape != (Q.shape[0],):
            raise ValueError(f"Quadratic needs Q of shape (n, n) and c of shape (n,); got "
                             f"{Q.shape} and {c.shape}")
        if not (np.isfinite(Q).all() and np.isfinite(c).all()):
            raise ValueError("Quadratic: Q and c must be finite")
        if not np.allclose(Q, Q.T, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(Q).max())):
            raise ValueError("Quadratic: Q must be symmetric; pass (Q + Q.T) / 2")
        self.Q, self.c, self.const = Q, c, float(const)

    @classmethod
    def least_squares(cls, A, b):
        """f(x) = 0.5 ||A x - b||^2."""
        A = np.asarray(A, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if A.ndim != 2 or b.shape != (A.shape[0],):
            raise ValueError(f"least_squares needs A of shape (m, n) and b of shape (m,); got "
                             f"{A.shape} and {b.shape}")
        return cls(A.T @ A, -(A.T @ b), 0.5 * float(b @ b))

    def value_grad(self, x):
        Qx = self.Q @ x
        return float(0.5 * x @ Qx + self.c @ x + self.const), Qx + self.c

    def curvature(self, d):
        return float(d @ (self.Q @ d))

    def line_search(self, x, d, gamma_max):
        """Closed form: γ = −<∇f(x), d> / <d, Q d>, clipped to [0, gamma_max]."""
        slope = float((self.Q @ x + self.c) @ d)
        if slope >= 0.0:
            return 0.0
        curv = self.curvature(d)
        return gamma_max if curv <= 0.0 else min(-slope / curv, gamma_max)
