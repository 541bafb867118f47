"""A sampled estimate of log Z with its confidence (Liu, Fisher & Ihler 2015, "Probabilistic
variational bounds for graphical models", Sec. 4).

Importance sampling draws x_1 ... x_n independently from a proposal q and weighs each by
W_k = f(x_k) / q(x_k), f(x) = exp(score(x)); Ẑ = (1/n) Σ_k W_k is unbiased: E Ẑ = Z. When the
proposal is weighted mini-bucket's (`fwcore.marginals.wmb`), every weight is at most the
proposal's own upper bound U (0 ≤ W ≤ U, Liu, Fisher & Ihler 2015, Sec. 3: the
arithmetic-geometric mean inequality at each bucket), so X_k = W_k / U lies in [0, 1] and
concentration inequalities for bounded variables turn the sample into an interval that
holds with a stated probability. With δ = 1 − ``confidence``, the interval
``[lower, upper]`` of `Tally.interval` holds with probability at least ``confidence``:

- upper: the empirical Bernstein bound (Maurer & Pontil 2009, "Empirical Bernstein bounds
  and sample variance penalization", Thm. 4) at δ/2:
  Z ≤ Ẑ + sqrt(2 V̂ ln(4/δ) / n) + 7 U ln(4/δ) / (3 (n − 1)), V̂ the unbiased sample
  variance of the weights;
- lower: the better of the same bound on the other side at δ/4,
  Z ≥ Ẑ − sqrt(2 V̂ ln(8/δ) / n) − 7 U ln(8/δ) / (3 (n − 1)), and Markov's inequality at
  δ/4 (Ẑ ≥ 0 with mean Z: P(Ẑ ≥ 4 Z / δ) ≤ δ / 4), Z ≥ Ẑ δ / 4;

by the union bound all three fail together with probability at most δ. The number of
samples n is fixed by the time budget, never by the weights seen, as the theorem assumes.
The certified bounds hold with probability one, so the interval is intersected with them
(``certified_lower`` / ``certified_upper``).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["Tally", "bernstein_interval"]


def bernstein_interval(log_mean, log_var, n, log_bound, confidence):
    """(lower, upper): the log Z interval of the module docstring from the sample's
    ``log_mean`` (log Ẑ), ``log_var`` (log of the unbiased sample variance of the weights),
    its size ``n`` (≥ 2) and the weights' bound ``log_bound`` (log U), at ``confidence``."""
    delta = 1.0 - confidence

    def half_width(log_term):   # log of sqrt(2 V̂ ln(1/δ') / n) + 7 U ln(1/δ') / (3 (n − 1))
        return np.logaddexp(0.5 * (log_var + math.log(2.0 * log_term / n)),
                            log_bound + math.log(7.0 * log_term / (3.0 * (n - 1))))

    upper = float(np.logaddexp(log_mean, half_width(math.log(4.0 / delta))))
    below = half_width(math.log(8.0 / delta)) - log_mean
    bernstein = log_mean + math.log(-math.expm1(below)) if below < 0 else -math.inf
    markov = log_mean + math.log(delta / 4.0)
    return max(bernstein, markov), upper


class Tally:
    """Running sums of importance weights given as logs (so that weights e^{±700} neither
    overflow nor vanish): ``n``, ``log_mean`` (log Ẑ), ``log_var`` (log of the unbiased
    sample variance), ``ess`` (the effective sample size (Σ W)² / Σ W²), and, when
    ``node_off`` (the flat offsets of the node marginals, int64[n_vars + 1]) is given, the
    self-normalised marginals Σ_k W_k 1[x_k,i = s] / Σ_k W_k (`marginals`) and their
    estimated error (`noise`)."""

    def __init__(self, node_off=None):
        self.n, self.shift, self.s1, self.s2 = 0, -math.inf, 0.0, 0.0
        self.node_off = None if node_off is None else np.asarray(node_off, dtype=np.int64)
        self.node = None if node_off is None else np.zeros(int(self.node_off[-1]))
        self.node2 = None if node_off is None else np.zeros(int(self.node_off[-1]))

    def add(self, log_w, x=None):
        """Add the samples of log weights ``log_w`` (float64[k]) and, with ``node_off``,
        their labellings ``x`` (int[k, n_vars])."""
        log_w = np.asarray(log_w, dtype=np.float64)
        if log_w.size == 0:
            return
        top = max(self.shift, float(log_w.max()))
        if top == -math.inf:                   # every weight so far is 0
            self.n += log_w.size
            return
        scale = math.exp(self.shift - top) if self.shift > -math.inf else 0.0
        w = np.exp(log_w - top)
        self.s1 = self.s1 * scale + float(w.sum())
        self.s2 = self.s2 * scale * scale + float(np.dot(w, w))
        if self.node is not None:
            at = (np.asarray(x, dtype=np.int64) + self.node_off[:-1]).ravel()
            self.node *= scale
            self.node2 *= scale * scale
            self.node += np.bincount(at, weights=np.repeat(w, x.shape[1]),
                                     minlength=self.node.size)
            self.node2 += np.bincount(at, weights=np.repeat(w * w, x.shape[1]),
                                      minlength=self.node.size)
        self.n += log_w.size
        self.shift = top

    @property
    def log_mean(self):
        if self.n == 0 or self.s1 == 0.0:
            return -math.inf
        return self.shift + math.log(self.s1 / self.n)

    @property
    def log_var(self):
        """log of Σ (W − Ẑ)² / (n − 1) (−inf when every weight is equal or n < 2)."""
        if self.n < 2 or self.s1 == 0.0:
            return -math.inf
        mean = self.s1 / self.n
        var = max(self.s2 - self.n * mean * mean, 0.0) / (self.n - 1)
        return self.shift * 2.0 + math.log(var) if var > 0.0 else -math.inf

    @property
    def ess(self):
        return self.s1 * self.s1 / self.s2 if self.s2 > 0.0 else 0.0

    def marginals(self):
        """The self-normalised marginals (flat, ``node_off``'s layout; None when no sample
        has weight)."""
        if self.node is None or self.s1 == 0.0:
            return None
        return self.node / self.s1

    def noise(self):
        """The expected ζ (mean over variables of ½‖μ̂_i − μ_i‖₁) of `marginals` from their
        delta-method variance, Var μ̂_s ≈ Σ_k W̄_k² (1[x_k = s] − μ̂_s)² (W̄ the normalised
        weights), each state's error taken as half-normal (E|e| = sqrt(2 Var / π)); None
        without marginals."""
        mu = self.marginals()
        if mu is None:
            return None
        var = np.maximum(self.node2 * (1.0 - 2.0 * mu) + mu * mu * self.s2, 0.0) / self.s1**2
        per_state = np.sqrt(2.0 * var / math.pi)
        return float(0.5 * np.add.reduceat(per_state, self.node_off[:-1]).mean())

    def interval(self, log_bound, confidence, certified_lower=-math.inf,
                 certified_upper=math.inf):
        """(lower, upper): `bernstein_interval` of the samples so far, weights bounded by
        ``log_bound``, intersected with the certified bounds; the certified bounds alone
        under two samples."""
        if self.n < 2:
            return certified_lower, certified_upper
        if self.s1 == 0.0:                     # every weight 0: Z ≤ U ln(4/δ)·7/(3(n − 1))
            lower, upper = bernstein_interval(-math.inf, -math.inf, self.n, log_bound,
                                              confidence)
        else:
            lower, upper = bernstein_interval(self.log_mean, self.log_var, self.n, log_bound,
                                              confidence)
        return max(lower, certified_lower), min(upper, certified_upper)
