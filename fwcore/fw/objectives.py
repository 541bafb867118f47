"""Objectives for the engine. An objective is any object with ``value(x)`` and ``grad(x)``
(or ``value_grad(x)``), optionally ``curvature(d)`` (quadratics), ``phi_derivatives(x, d,
gamma)`` or ``line_search(x, d, gamma_max)`` for exact line search (see linesearch.py)."""
import numpy as np

__all__ = ["Quadratic"]


class Quadratic:
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

    def value(self, x):
        return float(0.5 * x @ (self.Q @ x) + self.c @ x + self.const)

    def grad(self, x):
        return self.Q @ x + self.c

    def value_grad(self, x):
        Qx = self.Q @ x
        return float(0.5 * x @ Qx + self.c @ x + self.const), Qx + self.c

    def curvature(self, d):
        return float(d @ (self.Q @ d))
