"""NumPy twins of what issue 36 adds to weighted mini-bucket (`wmb_numpy` has the tree and
the upper bound's passes): the lower bound of weights of mixed sign, and importance
sampling from the upper bound's proposal. They define what the kernels compute, in the
form of the statements (Liu & Ihler 2011, Sec. 4, reverse Hölder; Liu, Fisher & Ihler
2015, Sec. 3), on one NumPy table a cluster."""
import math

import numpy as np

from wmb_numpy import WMBTwin, conditional_entropies


class LowerTwin(WMBTwin):
    """Weighted mini-bucket with weights of mixed sign: in a bucket of several clusters one
    (``positive``: the most entries, the first of equals) has w ≥ 1 and the others w < 0,
    Σ_r w_r = 1, so that each elimination Σ_{x_v} Π_r exp(f_r) ≥ Π_r (Σ_{x_v} exp(f_r /
    w_r))^{w_r} (reverse Hölder) and the sum of the last messages is a lower bound on log
    Z. The negative weights start at −``start`` / R (R clusters in the bucket). A forward
    pass moves them along the bound's gradient (∂/∂w_r = H_r − H_positive with the
    positive weight taking up the difference: |w_r| ← |w_r| exp(η w_r (H_r − H_+)),
    between ``floor`` and ``ceiling``), then matches moments as the upper bound does
    (the same move: for a bucket alone, it maximises this bound); a bucket where a
    cluster of negative weight has a −inf belief entry (its weighted belief ∝ exp(b / w)
    undefined) takes no step."""

    def __init__(self, *args, start=1.0):
        super().__init__(*args)
        self.positive = np.zeros(len(self.c_var), dtype=bool)
        for p in range(len(self.order)):
            c0, c1 = self.b_start[p], self.b_start[p + 1]
            if c1 - c0 == 0:
                continue
            entries = [math.prod(self.card[u] for u in self.scope[c]) for c in range(c0, c1)]
            pos = c0 + int(np.argmax(entries))
            self.positive[pos] = True
            r = c1 - c0
            self.weight[c0:c1] = -start / r
            self.weight[pos] = 1.0 + start * (r - 1) / r

    def _reweight(self, clusters, beliefs, eta, floor, ceiling):
        pos = next(c for c in clusters if self.positive[c])
        h = dict(zip(clusters, conditional_entropies([beliefs[c] for c in clusters],
                                                     self.weight[clusters])))
        negative = [c for c in clusters if c != pos]
        for c in negative:
            w = self.weight[c]
            self.weight[c] = -min(max(-w * math.exp(eta * w * (h[c] - h[pos])), floor), ceiling)
        self.weight[pos] = 1.0 - self.weight[negative].sum()


def proposal_rows(twin, x, p):
    """The proposal of the p-th variable eliminated given the later ones in ``x``:
    q(x_v | x_later) = Σ_r w_r q_r(x_v | x_{C_r \\ v}), q_r ∝ exp(f_r(x_{C_r \\ v}, ·) / w_r)
    the cluster's weighted conditional (Liu, Fisher & Ihler 2015, eq. 9), renormalised
    over the clusters whose row has a finite entry (where one has none, f(x) = 0 whatever
    the rest); uniform in a bucket without clusters or none finite. The forward messages
    are those of ``twin``'s last pass."""
    q = np.zeros(twin.card[twin.order[p]])
    c0, c1 = twin.b_start[p], twin.b_start[p + 1]
    for c in range(c0, c1):
        row = twin.table(c)[tuple(x[u] for u in twin.scope[c][:-1])]
        if np.isfinite(row.max()):
            e = np.exp((row - row.max()) / twin.weight[c])
            q += twin.weight[c] * e / e.sum()
    total = q.sum()
    return q / total if total > 0 else np.full(len(q), 1.0 / len(q))


def log_proposal(twin, x):
    """log q(x) of a labelling ``x`` (fixed variables at their states)."""
    q = [proposal_rows(twin, x, p)[x[twin.order[p]]] for p in range(len(twin.order))]
    return sum(math.log(v) if v > 0 else -math.inf for v in q)


def sample(twin, uniforms):
    """Labellings drawn from the proposal, one per row of ``uniforms`` (float[k, m], m the
    variables eliminated): the p-th variable of the order, from the last, takes the first
    state s whose cumulative q(x_v ≤ s | x_later) exceeds uniforms[k, p] times their total
    (the last state of positive q when rounding leaves none). Returns (x int64[k, n],
    log q(x) float64[k])."""
    k = len(uniforms)
    x = np.tile(np.where(np.asarray(twin.fixed) >= 0, twin.fixed, 0), (k, 1)).astype(np.int64)
    log_q = np.zeros(k)
    for i in range(k):
        for p in reversed(range(len(twin.order))):
            q = proposal_rows(twin, x[i], p)
            cdf = np.cumsum(q)
            s = int(np.searchsorted(cdf, uniforms[i, p] * cdf[-1], side="right"))
            s = min(s, int(np.flatnonzero(q > 0)[-1]))
            x[i, twin.order[p]] = s
            log_q[i] += math.log(q[s])
    return x, log_q


def log_score(twin, x):
    """log f(x): the sum of the model's factors at ``x``."""
    return sum(float(t[tuple(x[list(s)])]) for s, t in zip(twin.scopes, twin.tables))
