"""Structured SVM by Frank-Wolfe on its dual (FW variants review Alg. 2-3; Lacoste-Julien
et al. 2013, "Block-coordinate Frank-Wolfe optimization for structural SVMs").

    min_w λ/2 ‖w‖² + (1/M) Σ_m max_y [L_m(y) − <w, ψ_m(y)>],   ψ_m(y) = φ(x_m, y_m) − φ(x_m, y)

with the normalised Hamming loss L_m(y) = (1/n_m) Σ_i [y_i ≠ y_mi] (for matchings: the
fraction of vertices whose mate is wrong). The dual is kept as
(w_m, ℓ_m) per example, w = Σ w_m, ℓ = Σ ℓ_m. Loss-augmented decoding adds the loss to the
unary scores and calls the same MAP oracle; a fractional vertex μ (the 'lp' oracle) has
loss 1 − (1/n) Σ_i μ_i(y_mi) and ψ = φ(y_m) − Φᵀμ. The loss is linear in the vertex,
<a_m, μ(y)> (the model's ``hamming``), so matchings use the same Hungarian / blossom oracle.
"""
from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from .learner import Callback, DualSolver, Family, StructuredLearner

__all__ = ["SSVM"]


def _corners(shard, local, w, deadline):
    """(w_s, ℓ_s) of the loss-augmented vertex μ at w (Alg. 3, line 4) of each example:
    w_s = (φ(y) − Φᵀμ) / (λM), ℓ_s = <a, μ> / M with a the example's Hamming loss
    (kept: φ(y), the weights' size)."""
    f, (lam, M) = shard.model, shard.settings["reg_M"]
    out = []
    for ex, y, state in shard.blocks(local):
        if "phi" not in state:
            state["phi"] = f.features(ex, f.truth(ex, y))
        aug = f.hamming(ex, y)
        mu = f.decoder(ex).vertex(f.scores(ex, w) + aug, deadline.left())
        out.append(((state["phi"] - f.features(ex, mu)) / (lam * M), float(aug @ mu) / M))
    return out


class _Solver(DualSolver):
    """FW variants review Alg. 2-3 over the product of simplices, kept as (w_m, ℓ_m): the
    weights' size per example, all the learner's process holds besides the weights."""

    def __init__(self, model, where, exact, p):
        super().__init__(model, where, exact, p)
        where.each("configure", {"reg_M": (p["reg"], self.M)})
        self.w_i, self.l_i = np.zeros((self.M, model.dim)), np.zeros(self.M)
        self.w, self.l_sum = np.zeros(model.dim), 0.0
        self.w_avg, self.k = self.w.copy(), 0
        self.rng = np.random.default_rng(p["seed"])

    def dual_objective(self):
        return -0.5 * self.p["reg"] * float(self.w @ self.w) + self.l_sum

    def measure(self, deadline):
        """The gap Σ_m [λ <w_m − w_s, w> − ℓ_m + ℓ_s] = P(w) − D(w, ℓ); primal P(w)."""
        lam, w, gap = self.p["reg"], self.w, 0.0
        self.progress.start("gap pass", self.M, "gap so far")
        self.all = []  # batch FW's step takes every corner
        self.n_oracle_calls += self.M
        for rnd, pending in self.submitted(_corners, w, deadline):
            corners = pending.result()
            for m, (ws, ls) in zip(rnd, corners):
                gap += lam * float((self.w_i[m] - ws) @ w) - self.l_i[m] + ls
            if self.p["method"] == "fw":
                self.all += corners
            self.progress(rnd[-1] + 1, gap)
        self.gap = float(gap)
        return self.dual_objective() + self.gap, self.gap

    def step(self, k, deadline):
        lam, M = self.p["reg"], self.M
        if self.p["method"] == "fw":  # Alg. 2: all blocks move with one step size
            corners, self.all = self.all, None
            w_s = sum(c[0] for c in corners)
            l_s = sum(c[1] for c in corners)
            dw = self.w - w_s
            gamma = _clip(self.gap, lam * float(dw @ dw))
            self.w_i += gamma * (np.array([c[0] for c in corners]) - self.w_i)
            self.l_i += gamma * (np.array([c[1] for c in corners]) - self.l_i)
            self.w = (1 - gamma) * self.w + gamma * w_s
            self.l_sum = (1 - gamma) * self.l_sum + gamma * l_s
            return
        w, w_i, l_i, done = self.w, self.w_i, self.l_i, 0
        self.progress.start(f"pass {k}", M, "dual objective")
        # Alg. 3 in minibatches: the oracle calls of a batch at the iterate it starts
        # from, then each block's exact step at the current iterate, in the pass order
        for batch in self.rounds(self.rng.permutation(M), self.p["batch_size"]):
            self.n_oracle_calls += len(batch)
            for m, (ws, ls) in zip(batch, self.where.map(_corners, batch, w, deadline)):
                dw = w_i[m] - ws
                gamma = _clip(lam * float(dw @ w) - l_i[m] + ls, lam * float(dw @ dw))
                new_w = (1 - gamma) * w_i[m] + gamma * ws
                new_l = (1 - gamma) * l_i[m] + gamma * ls
                w += new_w - w_i[m]
                self.l_sum += new_l - l_i[m]
                w_i[m], l_i[m] = new_w, new_l
                self.k += 1
                self.w_avg *= self.k / (self.k + 2.0)
                self.w_avg += 2.0 / (self.k + 2.0) * w
            done += len(batch)
            self.progress(done, self.dual_objective())

    def result(self):
        use_avg = self.p["averaging"] and self.p["method"] == "bcfw" and self.k > 0
        return {"coef_": (self.w_avg if use_avg else self.w).copy(),
                "dual_objective_": self.dual_objective()}


class SSVM(StructuredLearner):
    """Structured SVM learned by BCFW (FW variants review Alg. 3) or batch FW (Alg. 2).

    Parameters: ``reg`` λ > 0; ``method`` 'bcfw' or 'fw'; ``tol`` on the duality gap,
    recomputed fresh (one oracle call per example) before every stopping test;
    ``max_iter`` passes; ``max_time``; ``averaging`` (bcfw: ``coef_`` is the weighted
    average of the iterates, weights 2/(k+2)); ``seed``; ``batch_size`` (bcfw: the
    oracle calls of ``batch_size`` blocks run together at the iterate their batch starts
    from, in parallel on the executor, then each block takes its exact step at the
    current iterate, in the pass order: 1 is BCFW itself, every step still raises the
    dual objective); ``executor`` for the per-example oracle calls (None, any
    `concurrent.futures.Executor`, or a ``distributed.Client``, which keeps the examples
    on its workers: `fwcore.learn.shards`); X may be a `fwcore.learn.data.Dataset`;
    ``callback``
    (``callback(record) -> bool``, False stops with INTERRUPTED); ``model`` the family and
    its oracle, as in `MLEStruct` (`fwcore.learn.CRF`, `fwcore.learn.Matching` or a string
    naming one); ``verbose`` a progress line per pass on stderr (the ``fwcore`` logger
    has them anyway, `fwcore.loop`).

    Attributes: ``coef_``, ``primal_`` (the SVM objective P(w) at the last measured
    iterate), ``gap_`` (P − D, >= 0 with an exact oracle), ``dual_objective_`` (D) and the
    shared ``status_``, ``n_iter_``, ``n_oracle_calls_``, ``trace_`` (see
    `fwcore.learn.learner.StructuredLearner`).
    """

    def __init__(self, reg: float = 1.0, method: str = "bcfw", tol: float = 1e-3,
                 max_iter: int = 100, max_time: float | None = None, averaging: bool = True,
                 seed: int | None = 0, batch_size: int = 1, executor: Executor | None = None,
                 callback: Callback | None = None, model: Family = "crf",
                 verbose: bool = False) -> None:
        self.reg, self.method, self.tol, self.max_iter = reg, method, tol, max_iter
        self.max_time, self.averaging, self.seed = max_time, averaging, seed
        self.batch_size, self.executor, self.callback = batch_size, executor, callback
        self.model, self.verbose = model, verbose

    def _solver(self, model, where, exact, p):
        return _Solver(model, where, exact, p)


def _clip(num, den):
    """Optimal step num/den clipped to [0, 1] (Alg. 2-3, line 5)."""
    if den <= 0.0:
        return 0.0 if num <= 0.0 else 1.0
    return min(max(num / den, 0.0), 1.0)
