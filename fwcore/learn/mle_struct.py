"""MLE-Struct: approximate maximum likelihood through MAP decoding (MLE-Struct Sec. 3, Alg. 1).

With a convex reweighted entropy H_ρ the saddle point (eq. 3) is solved in θ in closed
form (eq. 4-5): for marginals τ^(1:M),

    ψ(τ) = Σ_m [φ(x_m, y_m) − Φ_mᵀ τ_m],     θ*(τ) = ψ(τ) / λ,

leaving the convex dual over the product of polytopes (eq. 6, App. D.1 / E.2)

    L(τ) = ‖ψ(τ)‖² / (2λ) − Σ_m H_ρ(τ_m).

(eq. 6 prints 1/(2λ)‖θ*‖²; App. D.1's ‖Gᵀ(y − τ)‖²/(2λ) = λ‖θ*‖²/2 is the right scaling.)
The block gradient is ∇_m L = −Φ_m θ* + ∇(−H_ρ)(τ_m): the TRW gradient of the example's
model with potentials Φ_m θ*, so each FW vertex is one MAP call. The iterate enters the
quadratic only through ψ, kept up to date by ψ ← ψ − γ Φ_mᵀ d_m (App. E.2.2); the line
search uses the precomputed ‖Φᵀ d‖² and the entropy derivatives from the TRW kernel
(App. D.2, E.2.1).
"""
import time

import numpy as np

from .. import _kernels
from ..fw.linesearch import safeguarded_newton
from ._common import (Decoder, StructuredLearner, _check_choice, entropy_weights, fw_marginals,
                      run_tasks)

__all__ = ["MLEStruct"]


def _block_oracle(decoder, theta, tau, c, rho):
    """(FW vertex s, gradient g, f) of −<θ, τ> − H_ρ(τ) at τ: s maximises <−g, ·>."""
    m = decoder.mrf
    g = np.empty_like(tau)
    f = _kernels.trw_value_grad(theta, tau, c, rho, m.node_off, m.edge_off, g)
    return decoder.vertex(-g), g, f


def _node_marginals(decoder, theta, c, rho, tol):
    mu = fw_marginals(decoder.mrf, theta, c, rho, decoder, tol=tol)
    return mu[:decoder.mrf.node_off[-1]].reshape(decoder.mrf.n_vars, -1)


class _Dual:
    """The dual (eq. 6) of one training set: features, entropy weights, empirical φ(y)."""

    def __init__(self, features, examples, labels, decoders, rho, reg):
        self.f, self.examples, self.decoders, self.reg = features, examples, decoders, reg
        weights = [entropy_weights(ex.mrf, rho) for ex in examples]
        self.c = [w[0] for w in weights]
        self.rho = [w[1] for w in weights]
        self.phi = [features.features(ex, ex.mrf.marginal_vector(y))
                    for ex, y in zip(examples, labels)]

    def psi(self, taus):
        """ψ(τ) = Σ_m φ(y_m) − Φ_mᵀ τ_m, so θ*(τ) = ψ / λ (eq. 4-5)."""
        return sum(p - self.f.features(ex, t) for p, ex, t in zip(self.phi, self.examples, taus))

    def theta_star(self, taus):
        return self.psi(taus) / self.reg

    def objective(self, taus):
        """L(τ) = ‖ψ‖²/(2λ) − Σ_m H_ρ(τ_m) (eq. 6)."""
        psi = self.psi(taus)
        neg_h = 0.0
        for ex, t, c, r in zip(self.examples, taus, self.c, self.rho):
            g = np.empty_like(t)
            neg_h += _kernels.trw_value_grad(np.zeros_like(t), t, c, r, ex.mrf.node_off,
                                             ex.mrf.edge_off, g)
        return float(psi @ psi) / (2.0 * self.reg) + neg_h

    def oracles(self, executor, thetas, taus, idx):
        d = self.decoders
        return run_tasks(executor, _block_oracle, [d[m] for m in idx], thetas, taus,
                         [self.c[m] for m in idx], [self.rho[m] for m in idx])

    def line_search(self, thetas, taus, dirs, idx, qq, slope0):
        """argmin over [0, 1] of L along d: φ'(γ) = Σ_m <∇(−<θ_m,·> − H)(τ_m + γ d_m), d_m>
        + γ ‖Φᵀd‖²/λ, with θ_m fixed at the current iterate (App. D.2 / E.2.1)."""
        def dphi(t):
            p1, p2 = t * qq / self.reg, qq / self.reg
            for th, tau, d, m in zip(thetas, taus, dirs, idx):
                mrf = self.examples[m].mrf
                a, b = _kernels.trw_line_derivs(th, tau, d, t, self.c[m], self.rho[m],
                                                mrf.node_off, mrf.edge_off)
                p1, p2 = p1 + a, p2 + b
            return p1, p2
        return safeguarded_newton(dphi, slope0, 1.0)


class MLEStruct(StructuredLearner):
    """Approximate MLE of a pairwise CRF by Frank-Wolfe on the dual (MLE-Struct Alg. 1).

    Parameters
    ----------
    reg : λ > 0 of the penalty λ/2 ‖w‖².
    rho : entropy reweighting: 'trw' (matrix-tree edge appearance probabilities; convex),
        'uniform', 'bethe' (ρ = 1: exact on trees, not convex on loopy graphs), a number
        in (0, 1] on every edge (the paper's 0.5 on grids) or a function mrf -> ρ.
    algorithm : 'bcfw' (block-coordinate over examples) or 'fw' (batch).
    oracle : MAP oracle by name (``fwcore.oracles.available_oracles()``; 'lp' = the local
        polytope, 'qpbo' for binary models), ``(name, options)``, an oracle object or a
        function. ``lp`` moves over the local polytope, assignment oracles over the
        marginal polytope.
    step : 'line-search' (App. D.2 / E.2.1) or 'agnostic' (2/(t+2) batch, 2M/(2M+t) block).
    tol : stop when the duality gap, computed fresh at the iterate, is <= tol × M.
    max_iter : passes (bcfw) or iterations (fw). max_time : seconds, or None.
    averaging : bcfw only — ``coef_`` from the weighted average of the iterates
        (weights 2/(k+2), Lacoste-Julien et al. 2013).
    n_labels : labels per node (default: inferred from Y). seed : block order.
    executor : a concurrent.futures.Executor for the per-example oracle calls of the
        batch step and of the gap pass; results equal the serial run.

    Attributes: ``coef_`` (w = θ*(τ), `CRFFeatures` layout), ``dual_gap_``, ``objective_``
    (L at the last iterate), ``n_iter_``, ``n_oracle_calls_``, ``trace_`` (seconds, gap,
    objective per iteration).
    """

    def __init__(self, reg=1.0, rho="trw", algorithm="bcfw", oracle="lp", step="line-search",
                 tol=1e-3, max_iter=100, max_time=None, averaging=True, n_labels=None, seed=0,
                 executor=None):
        self.reg, self.rho, self.algorithm, self.oracle, self.step = reg, rho, algorithm, oracle, step
        self.tol, self.max_iter, self.max_time, self.averaging = tol, max_iter, max_time, averaging
        self.n_labels, self.seed, self.executor = n_labels, seed, executor

    def _check_params(self):
        super()._check_params()
        _check_choice("step", self.step, ("line-search", "agnostic"))
        if isinstance(self.rho, str):
            _check_choice("rho", self.rho, ("trw", "uniform", "bethe"))
        elif not callable(self.rho) and not (isinstance(self.rho, (int, float)) and 0 < self.rho <= 1):
            raise ValueError(f"rho must be 'trw', 'uniform', 'bethe', a number in (0, 1] or a "
                             f"function mrf -> array; got {self.rho!r}")

    def _fit(self, examples, labels, decoders):
        dual = _Dual(self.features_, examples, labels, decoders, self.rho, float(self.reg))
        self.dual_ = dual
        M, lam = len(examples), float(self.reg)
        taus = [ex.mrf.uniform_marginals() for ex in examples]
        psi = dual.psi(taus)
        psi_avg, k = psi.copy(), 0
        rng = np.random.default_rng(self.seed)
        self.trace_, calls, it = [], 0, 0
        while True:
            idx = range(M)
            thetas = [self.features_.scores(ex, psi / lam) for ex in examples]
            res = dual.oracles(self.executor, thetas, taus, idx)
            calls += M
            dirs = [s - t for (s, _, _), t in zip(res, taus)]
            gap = -sum(float(g @ d) for (_, g, _), d in zip(res, dirs))
            obj = float(psi @ psi) / (2 * lam) + sum(f + float(th @ t) for (_, _, f), th, t
                                                     in zip(res, thetas, taus))
            self.trace_.append((time.perf_counter() - self._t0, gap, obj))
            if gap <= self.tol * M or it >= self.max_iter or self._out_of_time():
                break
            it += 1
            if self.algorithm == "fw":
                qs = [self.features_.features(ex, d) for ex, d in zip(examples, dirs)]
                q = sum(qs)
                gamma = (2.0 / (it + 1.0) if self.step == "agnostic" else
                         dual.line_search(thetas, taus, dirs, idx, float(q @ q), -gap))
                for t, d in zip(taus, dirs):
                    t += gamma * d
                psi -= gamma * q
                continue
            for j, m in enumerate(rng.permutation(M)):
                if j == 0:  # the gap pass already holds this block's vertex at this psi
                    theta, (s, g, _) = thetas[m], res[m]
                else:
                    theta = self.features_.scores(examples[m], psi / lam)
                    s, g, _ = _block_oracle(decoders[m], theta, taus[m], dual.c[m], dual.rho[m])
                    calls += 1
                d = s - taus[m]
                q = self.features_.features(examples[m], d)
                gamma = (2.0 * M / (2.0 * M + k) if self.step == "agnostic" else
                         dual.line_search([theta], [taus[m]], [d], [m], float(q @ q), float(g @ d)))
                taus[m] += gamma * d
                psi -= gamma * q  # App. E.2.2: only example m's rows change
                k += 1
                rho_k = 2.0 / (k + 2.0)
                psi_avg *= 1.0 - rho_k
                psi_avg += rho_k * psi
        use_avg = self.averaging and self.algorithm == "bcfw" and k > 0
        self.coef_ = (psi_avg if use_avg else psi) / lam
        self.dual_gap_, self.objective_, self.n_iter_, self.n_oracle_calls_ = gap, obj, it, calls
        self.marginals_ = taus

    def predict_marginals(self, X, tol=1e-4):
        """Node marginals [n, L] of each input: the reweighted free energy with the fitted
        ρ minimised by FW with MAP calls (MLE-Struct Sec. 3.2), gap <= ``tol``."""
        examples = self._check_fitted(X)
        thetas = [self.features_.scores(ex, self.coef_) for ex in examples]
        weights = [entropy_weights(ex.mrf, self.rho) for ex in examples]
        return run_tasks(self.executor, _node_marginals, [Decoder(ex.mrf, self.oracle) for ex in examples],
                         thetas, [w[0] for w in weights], [w[1] for w in weights],
                         [tol] * len(examples))
