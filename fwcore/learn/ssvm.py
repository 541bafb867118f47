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

from .base import run_tasks
from .learner import Callback, DualSolver, Family, StructuredLearner

__all__ = ["SSVM"]


def _loss_augmented_vertex(decoder, scores, deadline):
    return decoder.vertex(scores, deadline.left())


class _Solver(DualSolver):
    """FW variants review Alg. 2-3 over the product of simplices, kept as (w_m, ℓ_m)."""

    def __init__(self, model, examples, labels, decoders, p):
        super().__init__()
        f, M = model, len(examples)
        self.f, self.examples, self.decoders, self.p = f, examples, decoders, p
        self.exact = all(d.exact for d in decoders)
        self.phi = [f.features(ex, f.truth(ex, y)) for ex, y in zip(examples, labels)]
        self.aug = [f.hamming(ex, y) for ex, y in zip(examples, labels)]  # loss-augmentation
        self.w_i, self.l_i = np.zeros((M, f.dim)), np.zeros(M)
        self.w, self.l_sum = np.zeros(f.dim), 0.0
        self.w_avg, self.k = self.w.copy(), 0
        self.rng = np.random.default_rng(p["seed"])

    def corner(self, m, mu):
        """(w_s, ℓ_s) of the vertex μ for example m (Alg. 3, line 4)."""
        lam_m = self.p["reg"] * len(self.examples)
        return ((self.phi[m] - self.f.features(self.examples[m], mu)) / lam_m,
                float(self.aug[m] @ mu) / len(self.examples))

    def dual_objective(self):
        return -0.5 * self.p["reg"] * float(self.w @ self.w) + self.l_sum

    def measure(self, deadline):
        """The gap Σ_m [λ <w_m − w_s, w> − ℓ_m + ℓ_s] = P(w) − D(w, ℓ); primal P(w)."""
        lam, w = self.p["reg"], self.w
        scores = [self.f.scores(ex, w) + a for ex, a in zip(self.examples, self.aug)]
        vertices = run_tasks(self.p["executor"], _loss_augmented_vertex, self.decoders, scores,
                             [deadline] * len(scores))
        self.n_oracle_calls += len(self.examples)
        self.corners = [self.corner(m, mu) for m, mu in enumerate(vertices)]
        self.gap = float(sum(lam * float((self.w_i[m] - ws) @ w) - self.l_i[m] + ls
                             for m, (ws, ls) in enumerate(self.corners)))
        return self.dual_objective() + self.gap, self.gap

    def step(self, k, deadline):
        lam, f, corners = self.p["reg"], self.f, self.corners
        if self.p["method"] == "fw":  # Alg. 2: all blocks move with one step size
            w_s = sum(c[0] for c in corners)
            l_s = sum(c[1] for c in corners)
            dw = self.w - w_s
            gamma = _clip(self.gap, lam * float(dw @ dw))
            self.w_i += gamma * (np.array([c[0] for c in corners]) - self.w_i)
            self.l_i += gamma * (np.array([c[1] for c in corners]) - self.l_i)
            self.w = (1 - gamma) * self.w + gamma * w_s
            self.l_sum = (1 - gamma) * self.l_sum + gamma * l_s
            return
        w, w_i, l_i = self.w, self.w_i, self.l_i
        for j, m in enumerate(self.rng.permutation(len(self.examples))):
            if j == 0:  # the gap pass already decoded this block at this w
                ws, ls = corners[m]
            else:
                mu = _loss_augmented_vertex(self.decoders[m],
                                            f.scores(self.examples[m], w) + self.aug[m], deadline)
                ws, ls = self.corner(m, mu)
                self.n_oracle_calls += 1
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

    def result(self):
        use_avg = self.p["averaging"] and self.p["method"] == "bcfw" and self.k > 0
        return {"coef_": (self.w_avg if use_avg else self.w).copy(),
                "dual_objective_": self.dual_objective()}


class SSVM(StructuredLearner):
    """Structured SVM learned by BCFW (FW variants review Alg. 3) or batch FW (Alg. 2).

    Parameters: ``reg`` λ > 0; ``method`` 'bcfw' or 'fw'; ``tol`` on the duality gap,
    recomputed fresh (one oracle call per example) before every stopping test;
    ``max_iter`` passes; ``max_time``; ``averaging`` (bcfw: ``coef_`` is the weighted
    average of the iterates, weights 2/(k+2)); ``seed``; ``executor`` for the per-example
    oracle calls of the gap pass and of the batch step; ``callback``
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
                 seed: int | None = 0, executor: Executor | None = None,
                 callback: Callback | None = None, model: Family = "crf",
                 verbose: bool = False) -> None:
        self.reg, self.method, self.tol, self.max_iter = reg, method, tol, max_iter
        self.max_time, self.averaging, self.seed = max_time, averaging, seed
        self.executor, self.callback, self.model = executor, callback, model
        self.verbose = verbose

    def _solver(self, model, examples, labels, decoders, p):
        return _Solver(model, examples, labels, decoders, p)


def _clip(num, den):
    """Optimal step num/den clipped to [0, 1] (Alg. 2-3, line 5)."""
    if den <= 0.0:
        return 0.0 if num <= 0.0 else 1.0
    return min(max(num / den, 0.0), 1.0)
