"""A sampled estimate of log Z with its confidence (Liu, Fisher & Ihler 2015, "Probabilistic
variational bounds for graphical models", Sec. 4).

Importance sampling draws x_1 ... x_n independently from a proposal q and weighs each by
W_k = f(x_k) / q(x_k), f(x) = exp(score(x)); Ẑ = (1/n) Σ_k W_k is unbiased: E Ẑ = Z. When the
proposal is weighted mini-bucket's (`fwcore.marginals.wmb`), every weight is at most the
proposal's own upper bound U (0 ≤ W ≤ U, Liu, Fisher & Ihler 2015, Sec. 3: the
arithmetic-geometric mean inequality at each bucket), so concentration inequalities for
bounded variables turn the sample into an interval that holds with a stated
probability. With δ = 1 − ``confidence``, the interval ``[lower, upper]`` of
`Tally.interval` holds with probability at least ``confidence``:

- upper: the empirical Bernstein bound (Maurer & Pontil 2009, "Empirical Bernstein bounds
  and sample variance penalization", Thm. 4, on W / U ∈ [0, 1]) at δ/2:
  Z ≤ Ẑ + sqrt(2 V̂ ln(4/δ) / n) + 7 U ln(4/δ) / (3 (n − 1)), V̂ the unbiased sample
  variance of the weights;
- lower: the better of the same bound on the other side for the weights clipped at c,
  min(W, c) (whose mean is at most Z), over the samples after the first `PILOT`, at δ/4:
  Z ≥ mean − sqrt(2 V̂_c ln(8/δ) / m) − 7 c ln(8/δ) / (3 (m − 1)), c = min(U, `CLIP` ×
  the first `PILOT` samples' mean), fixed before the m samples it clips are drawn (a
  loose U, tens of nats above log Z, then costs the lower side nothing); and Markov's
  inequality at δ/4 (Ẑ ≥ 0 with mean Z: P(Ẑ ≥ 4 Z / δ) ≤ δ / 4), Z ≥ Ẑ δ / 4;

by the union bound all three fail together with probability at most δ. The number of
samples n is fixed by the time budget, never by the weights seen, as the theorems assume.
The certified bounds hold with probability one, so the interval is intersected with them
(``certified_lower`` / ``certified_upper``).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["Tally", "bernstein_upper", "bernstein_lower", "PILOT", "CLIP"]

#: the lower side clips the weights at `CLIP` times the mean of the first `PILOT` samples
#: (at most U). Median 95% lower ends, nats below log Z, clipping at 2 / 8 / 32 / 128 x
#: (Markov's inequality alone: 4.4), 2000 and 20000 samples: weights U·Beta(0.05, 5) (U
#: 100x their mean) 1.55 / .85 / .73 / 3.9 and 1.38 / .56 / .17 / .17; lognormal weights
#: of σ = 2 (U = e^12 their mean) 1.03 / .68 / .77 / 4.4 and .89 / .46 / .26 / .24; σ = 3
#: 2.2 / 1.8 / 1.9 / 4.4 and 2.0 / 1.5 / .96 / .80; every interval held log Z
PILOT, CLIP = 256, 16.0


def _half_width(log_var, n, log_bound, delta):
    """log of sqrt(2 V̂ ln(2/δ) / n) + 7 B ln(2/δ) / (3 (n − 1)) (Maurer & Pontil 2009, Thm.
    4: one side, holding with probability 1 − δ), V̂ = e^log_var, B = e^log_bound."""
    term = math.log(2.0 / delta)
    return float(np.logaddexp(0.5 * (log_var + math.log(2.0 * term / n)),
                              log_bound + math.log(7.0 * term / (3.0 * (n - 1)))))


def bernstein_upper(log_mean, log_var, n, log_bound, delta):
    """log of the empirical Bernstein upper bound on E W at δ (n ≥ 2 weights in [0, B])."""
    return float(np.logaddexp(log_mean, _half_width(log_var, n, log_bound, delta)))


def bernstein_lower(log_mean, log_var, n, log_bound, delta):
    """log of the empirical Bernstein lower bound on E W at δ (−inf when it is ≤ 0)."""
    below = _half_width(log_var, n, log_bound, delta) - log_mean
    return log_mean + math.log(-math.expm1(below)) if below < 0 else -math.inf


class _Moments:
    """n, Σ W and Σ W² of weights given as logs, relative to the largest seen (``shift``),
    so that weights e^{±700} neither overflow nor vanish."""

    def __init__(self):
        self.n, self.shift, self.s1, self.s2 = 0, -math.inf, 0.0, 0.0

    def add(self, log_w):
        """Add the weights ``log_w``; returns (the factor the sums so far were scaled by,
        the new weights relative to the new shift) (None, None when every weight is 0)."""
        self.n += log_w.size
        top = max(self.shift, float(log_w.max(initial=-math.inf)))
        if top == -math.inf:
            return None, None
        scale = math.exp(self.shift - top) if self.shift > -math.inf else 0.0
        w = np.exp(log_w - top)
        self.s1 = self.s1 * scale + float(w.sum())
        self.s2 = self.s2 * scale * scale + float(np.dot(w, w))
        self.shift = top
        return scale, w

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


class Tally:
    """Running sums of importance weights given as logs: ``n``, ``log_mean`` (log Ẑ),
    ``log_var`` (log of the unbiased sample variance), ``ess`` (the effective sample size
    (Σ W)² / Σ W²), the clipped weights after the pilot (module docstring) and, when
    ``node_off`` (the flat offsets of the node marginals, int64[n_vars + 1]) is given, the
    self-normalised marginals Σ_k W_k 1[x_k,i = s] / Σ_k W_k (`marginals`) and their
    estimated error (`noise`). ``log_bound``: log U, the weights' bound."""

    def __init__(self, log_bound, node_off=None):
        self.log_bound = log_bound
        self.all, self.clipped, self.log_clip = _Moments(), _Moments(), None
        self.node_off = None if node_off is None else np.asarray(node_off, dtype=np.int64)
        self.node = None if node_off is None else np.zeros(int(self.node_off[-1]))
        self.node2 = None if node_off is None else np.zeros(int(self.node_off[-1]))

    def add(self, log_w, x=None):
        """Add the samples of log weights ``log_w`` (float64[k]) and, with ``node_off``,
        their labellings ``x`` (int[k, n_vars]); the first `PILOT` fix the clip."""
        log_w = np.asarray(log_w, dtype=np.float64)
        pilot = max(PILOT - self.all.n, 0)
        if 0 < pilot < log_w.size:            # the pilot's last samples, then the others
            self.add(log_w[:pilot], None if x is None else x[:pilot])
            self.add(log_w[pilot:], None if x is None else x[pilot:])
            return
        if log_w.size == 0:
            return
        scale, w = self.all.add(log_w)
        if self.log_clip is None and self.all.n >= PILOT:
            self.log_clip = min(self.log_bound, self.all.log_mean + math.log(CLIP))
        elif self.log_clip is not None:
            self.clipped.add(np.minimum(log_w, self.log_clip))
        if self.node is not None and w is not None:
            at = (np.asarray(x, dtype=np.int64) + self.node_off[:-1]).ravel()
            self.node *= scale
            self.node2 *= scale * scale
            self.node += np.bincount(at, weights=np.repeat(w, x.shape[1]),
                                     minlength=self.node.size)
            self.node2 += np.bincount(at, weights=np.repeat(w * w, x.shape[1]),
                                      minlength=self.node.size)

    @property
    def n(self):
        return self.all.n

    @property
    def log_mean(self):
        return self.all.log_mean

    @property
    def log_var(self):
        return self.all.log_var

    @property
    def ess(self):
        return self.all.s1 * self.all.s1 / self.all.s2 if self.all.s2 > 0.0 else 0.0

    def marginals(self):
        """The self-normalised marginals (flat, ``node_off``'s layout; None when no sample
        has weight)."""
        if self.node is None or self.all.s1 == 0.0:
            return None
        return self.node / self.all.s1

    def noise(self):
        """The expected ζ (mean over variables of ½‖μ̂_i − μ_i‖₁) of `marginals` from their
        delta-method variance, Var μ̂_s ≈ Σ_k W̄_k² (1[x_k = s] − μ̂_s)² (W̄ the normalised
        weights), each state's error taken as half-normal (E|e| = sqrt(2 Var / π)); None
        without marginals."""
        mu = self.marginals()
        if mu is None:
            return None
        var = np.maximum(self.node2 * (1.0 - 2.0 * mu) + mu * mu * self.all.s2,
                         0.0) / self.all.s1**2
        per_state = np.sqrt(2.0 * var / math.pi)
        return float(0.5 * np.add.reduceat(per_state, self.node_off[:-1]).mean())

    def interval(self, confidence, certified_lower=-math.inf, certified_upper=math.inf):
        """(lower, upper): the module docstring's interval from the samples so far,
        intersected with the certified bounds; the certified bounds alone under two
        samples."""
        if self.n < 2:
            return certified_lower, certified_upper
        delta = 1.0 - confidence
        upper = bernstein_upper(self.log_mean, self.log_var, self.n, self.log_bound,
                                delta / 2)
        lower = self.log_mean + math.log(delta / 4)
        if self.clipped.n >= 2 and self.clipped.s1 > 0.0:
            lower = max(lower, bernstein_lower(self.clipped.log_mean, self.clipped.log_var,
                                               self.clipped.n, self.log_clip, delta / 4))
        return max(lower, certified_lower), min(upper, certified_upper)
