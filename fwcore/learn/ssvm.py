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
import time

import numpy as np

from ._common import StructuredLearner, run_tasks

__all__ = ["SSVM"]


def _loss_augmented_vertex(decoder, scores):
    return decoder.vertex(scores)


class SSVM(StructuredLearner):
    """Structured SVM learned by BCFW (FW variants review Alg. 3) or batch FW (Alg. 2).

    Parameters: ``reg`` λ > 0; ``algorithm`` 'bcfw' or 'fw'; ``oracle`` as in `MLEStruct`;
    ``tol`` on the duality gap, recomputed fresh (one oracle call per example) before every
    stopping test; ``max_iter`` passes; ``max_time``; ``averaging`` (bcfw: ``coef_`` is the
    weighted average of the iterates, weights 2/(k+2)); ``n_labels``; ``seed``; ``executor``
    for the per-example oracle calls of the gap pass and of the batch step; ``model``
    'crf', 'bipartite' or 'perfect' (as in `MLEStruct`).

    Attributes: ``coef_``, ``dual_gap_`` (primal − dual with an exact oracle, >= 0),
    ``n_iter_``, ``n_oracle_calls_``, ``trace_`` (seconds, gap per pass).
    """

    def __init__(self, reg=1.0, algorithm="bcfw", oracle=None, tol=1e-3, max_iter=100,
                 max_time=None, averaging=True, n_labels=None, seed=0, executor=None,
                 model="crf"):
        self.reg, self.algorithm, self.oracle, self.tol = reg, algorithm, oracle, tol
        self.max_iter, self.max_time, self.averaging = max_iter, max_time, averaging
        self.n_labels, self.seed, self.executor, self.model = n_labels, seed, executor, model

    def _fit(self, f, examples, labels, decoders):
        M, lam = len(examples), float(self.reg)
        phi = [f.features(ex, f.truth(ex, y)) for ex, y in zip(examples, labels)]
        aug = [f.hamming(ex, y) for ex, y in zip(examples, labels)]  # loss-augmentation

        def corner(m, mu):
            """(w_s, ℓ_s) of the vertex μ for example m (Alg. 3, line 4)."""
            return (phi[m] - f.features(examples[m], mu)) / (lam * M), float(aug[m] @ mu) / M

        w_i, l_i = np.zeros((M, f.dim)), np.zeros(M)
        w, l_sum = np.zeros(f.dim), 0.0
        w_avg, k = w.copy(), 0
        rng = np.random.default_rng(self.seed)
        self.trace_, calls, it = [], 0, 0
        while True:
            scores = [f.scores(ex, w) + a for ex, a in zip(examples, aug)]
            corners = [corner(m, mu) for m, mu in
                       enumerate(run_tasks(self.executor, _loss_augmented_vertex, decoders, scores))]
            calls += M
            gaps = [lam * float((w_i[m] - ws) @ w) - l_i[m] + ls for m, (ws, ls) in enumerate(corners)]
            gap = float(sum(gaps))
            self.trace_.append((time.perf_counter() - self._t0, gap))
            if gap <= self.tol or it >= self.max_iter or self._out_of_time():
                break
            it += 1
            if self.algorithm == "fw":  # Alg. 2: all blocks move with one step size
                w_s = sum(c[0] for c in corners)
                l_s = sum(c[1] for c in corners)
                dw = w - w_s
                gamma = _clip(gap, lam * float(dw @ dw))
                w_i += gamma * (np.array([c[0] for c in corners]) - w_i)
                l_i += gamma * (np.array([c[1] for c in corners]) - l_i)
                w, l_sum = (1 - gamma) * w + gamma * w_s, (1 - gamma) * l_sum + gamma * l_s
                continue
            for j, m in enumerate(rng.permutation(M)):
                if j == 0:  # the gap pass already decoded this block at this w
                    ws, ls = corners[m]
                else:
                    mu = decoders[m].vertex(f.scores(examples[m], w) + aug[m])
                    ws, ls = corner(m, mu)
                    calls += 1
                dw = w_i[m] - ws
                gamma = _clip(lam * float(dw @ w) - l_i[m] + ls, lam * float(dw @ dw))
                new_w = (1 - gamma) * w_i[m] + gamma * ws
                new_l = (1 - gamma) * l_i[m] + gamma * ls
                w += new_w - w_i[m]
                l_sum += new_l - l_i[m]
                w_i[m], l_i[m] = new_w, new_l
                k += 1
                w_avg *= k / (k + 2.0)
                w_avg += 2.0 / (k + 2.0) * w
        use_avg = self.averaging and self.algorithm == "bcfw" and k > 0
        self.coef_ = w_avg if use_avg else w
        self.dual_gap_, self.n_iter_, self.n_oracle_calls_ = gap, it, calls
        self.dual_objective_ = -0.5 * lam * float(w @ w) + l_sum


def _clip(num, den):
    """Optimal step num/den clipped to [0, 1] (Alg. 2-3, line 5)."""
    if den <= 0.0:
        return 0.0 if num <= 0.0 else 1.0
    return min(max(num / den, 0.0), 1.0)
