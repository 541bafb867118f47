"""Higher-order regions given by a maximisation routine (Smooth and Strong, Sec. 3 and 5).

A factor θ_c over the variables ``scope`` is known only through ``potential(x)`` and
``maximize(scores)`` = argmax_x θ_c(x) + Σ_i scores[i, x_i]; its states are never
enumerated. The global cardinality factor of Smooth and Strong Sec. 5 (Li and Zemel 2014)
maximises in O(m log m) by sorting.
"""
import abc

import numpy as np

__all__ = ["Factor", "CardinalityFactor"]


class Factor(abc.ABC):
    """A higher-order region over ``scope`` (distinct variable indices).

    Subclasses implement ``potential(x)`` (θ_c of a scope assignment) and
    ``maximize(scores)``: for ``scores`` of shape (m, K) (column k = state k, -inf where a
    variable has fewer states or a state is ruled out) the scope assignment maximising
    θ_c(x) + Σ_i scores[i, x_i]. ``max_marginals`` (used by MPLP) defaults to clamping
    each variable in turn (m·K calls of ``maximize``).
    """

    def __init__(self, scope):
        scope = np.asarray(scope)
        if scope.ndim != 1 or scope.size == 0 or scope.dtype.kind not in "iu":
            raise ValueError("scope must be a non-empty 1-D array of variable indices")
        if np.unique(scope).size != scope.size:
            raise ValueError("scope must not repeat a variable")
        self.scope = scope.astype(np.int64)

    @abc.abstractmethod
    def potential(self, x):
        """θ_c(x) for an assignment x of the scope."""

    @abc.abstractmethod
    def maximize(self, scores):
        """argmax_x θ_c(x) + Σ_j scores[j, x_j] over assignments x of the scope."""

    def max_marginals(self, scores):
        """out[i, k] = max over x with x_i = k of θ_c(x) + Σ_j scores[j, x_j]."""
        scores = np.asarray(scores, dtype=np.float64)
        out = np.full(scores.shape, -np.inf)
        rows = np.arange(scores.shape[0])
        for i in rows:
            for k in np.flatnonzero(np.isfinite(scores[i])):
                clamped = scores.copy()
                clamped[i] = -np.inf
                clamped[i, k] = scores[i, k]
                x = self.maximize(clamped)
                out[i, k] = self.potential(x) + scores[rows, x].sum()
        return out


class CardinalityFactor(Factor):
    """θ_c(x) = -weight · max{0, ``|Σ_i x_i - s0|`` - t}² over binary variables
    (Smooth and Strong, Sec. 5; t = s0/5 in the paper's segmentation experiment)."""

    def __init__(self, scope, s0, t=0.0, weight=1.0):
        super().__init__(scope)
        for name, v in (("s0", s0), ("t", t), ("weight", weight)):
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0; got {v!r}")
        self.s0, self.t, self.weight = float(s0), float(t), float(weight)
        s = np.arange(self.scope.size + 1)
        self.table = -self.weight * np.maximum(0.0, np.abs(s - self.s0) - self.t) ** 2

    def potential(self, x):
        return float(self.table[int(np.sum(x))])

    def _check(self, scores):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 2 or scores.shape[0] != self.scope.size or scores.shape[1] < 2:
            raise ValueError(f"scores must have shape ({self.scope.size}, 2)")
        if (scores[:, :2] == -np.inf).all(axis=1).any():
            raise ValueError("scores gives -inf to both states of a variable")
        return scores[:, :2]

    def maximize(self, scores):
        """Switch on the variables whose state 0 is -inf, then the s* - n_on highest gains
        w_i = scores[i,1] - scores[i,0] of the free ones, s* the best feasible count:
        O(m log m)."""
        scores = self._check(scores)
        on, off = scores[:, 0] == -np.inf, scores[:, 1] == -np.inf
        free = np.flatnonzero(~(on | off))
        w = scores[free, 1] - scores[free, 0]
        order = np.argsort(-w, kind="stable")
        prefix = np.concatenate([[0.0], np.cumsum(w[order])])
        n_on = int(on.sum())
        x = on.astype(np.int64)
        x[free[order[:int(np.argmax(self.table[n_on:n_on + free.size + 1] + prefix))]]] = 1
        return x

    def max_marginals(self, scores):
        """All 2m max-marginals in O(m log m) from prefix/suffix maxima over the count
        (by clamping, as in `Factor`, when a score is -inf)."""
        scores = self._check(scores)
        if not np.isfinite(scores).all():
            return super().max_marginals(scores)
        m = self.scope.size
        w = scores[:, 1] - scores[:, 0]
        order = np.argsort(-w, kind="stable")
        prefix = np.concatenate([[0.0], np.cumsum(w[order])])
        rank = np.empty(m, dtype=np.int64)
        rank[order] = np.arange(m)
        th = self.table
        a = th + prefix                                       # A(s) = θ(s) + P(s), s = 0..m
        b = np.concatenate([[-np.inf], th[1:] + prefix[:-1]])  # B(s) = θ(s) + P(s-1)
        c = np.concatenate([th[:-1] + prefix[1:], [-np.inf]])  # C(s) = θ(s) + P(s+1)
        pre_a, pre_b = np.maximum.accumulate(a), np.maximum.accumulate(b)
        suf_a = np.concatenate([np.maximum.accumulate(a[::-1])[::-1], [-np.inf, -np.inf]])
        suf_c = np.concatenate([np.maximum.accumulate(c[::-1])[::-1], [-np.inf]])
        # x_i = 1: the other top s-1 are P(s-1) while s <= rank+1, else P(s) - w_i
        mm1 = np.maximum(w + pre_b[rank + 1], suf_a[rank + 2])
        # x_i = 0: the top s among the others are P(s) while s <= rank, else P(s+1) - w_i
        mm0 = np.maximum(pre_a[rank], suf_c[rank + 1] - w)
        return scores[:, 0].sum() + np.stack([mm0, mm1], axis=1)
