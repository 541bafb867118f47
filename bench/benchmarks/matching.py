"""Bipartite matching marginals (MLE-Struct App. F): FW on the Bethe free energy (Hungarian
oracle) vs Huang & Jebara BP. N = 8: accuracy against exact marginals (Ryser) and against
the Bethe optimum; N = 50, 100: time. W = beta * unif[0, 1] as in App. F."""
import numpy as np

from fwcore.matching_inference import bethe_bp, exact_matching_marginals, matching_marginals

from .common import QUICK


def _weights(n, beta, seed=0):
    return beta * np.random.default_rng(seed).random((n, n))


class MatchingSmall:
    """N = 8: mean |marginal - exact| and max |marginal - Bethe optimum|."""

    param_names = ["beta", "method", "tol"]
    params = [[1.0, 10.0], ["fw", "bp"], [1e-2, 1e-5]]

    def setup(self, beta, method, tol):
        self.W = _weights(8, beta)
        self.exact, _ = exact_matching_marginals(self.W)
        self.bethe = bethe_bp(self.W, tol=1e-13).marginals
        self.res = matching_marginals(self.W, method=method, tol=tol)

    def time_inference(self, beta, method, tol):
        matching_marginals(self.W, method=method, tol=tol)

    def track_mean_abs_error_exact(self, beta, method, tol):
        return float(np.abs(self.res.marginals - self.exact).mean())

    def track_max_error_bethe(self, beta, method, tol):
        return float(np.abs(self.res.marginals - self.bethe).max())

    def track_n_iter(self, beta, method, tol):
        return self.res.n_iter


class MatchingLarge:
    """N = 50, 100: time to a FW gap of 0.01 N (FW) or a message change of 1e-8 (BP)."""

    param_names = ["n", "method"]
    params = [[50] if QUICK else [50, 100], ["fw", "bp"]]

    def setup(self, n, method):
        self.W = _weights(n, 1.0)
        self.tol = 0.01 * n if method == "fw" else 1e-8
        self.bethe = bethe_bp(self.W, tol=1e-13).marginals
        self.res = matching_marginals(self.W, method=method, tol=self.tol, max_time=120)

    def time_inference(self, n, method):
        matching_marginals(self.W, method=method, tol=self.tol, max_time=120)

    def track_max_error_bethe(self, n, method):
        return float(np.abs(self.res.marginals - self.bethe).max())

    def track_gap(self, n, method):
        return float(self.res.gap)
