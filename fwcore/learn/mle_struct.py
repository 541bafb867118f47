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
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any, Callable

import numpy as np

from ..checks import Options
from ..fw.linesearch import safeguarded_newton
from .base import run_tasks
from .learner import PARAMS, Callback, DualSolver, Family, StructuredLearner, model_family

__all__ = ["MLEStruct", "MLEDual"]


def _block_oracle(decoder, theta, tau, entropy, deadline):
    """(vertex v, gradient g, f) of −<θ, τ> − H_ρ(τ) at τ: v maximises <−g, ·>; the
    call gets the time left before ``deadline`` (`fwcore.loop.Deadline`)."""
    f, g = entropy.value_grad(theta, tau)
    return decoder.vertex(-g, deadline.left()), g, f


def _block_measure(decoder, theta, tau, entropy, deadline, keep):
    """((v, g) if ``keep`` else None, `BlockEntropy.fw_gaps`, f + <θ, τ>): what the gap
    pass needs of `_block_oracle`, without keeping a vertex per example."""
    v, g, f = _block_oracle(decoder, theta, tau, entropy, deadline)
    return ((v, g) if keep else None), entropy.fw_gaps(v, g, tau), f + float(theta @ tau)


class MLEDual:
    """The dual (eq. 6; App. D.1 for matchings) of one training set: the model, each
    example's entropy, empirical φ(y)."""

    def __init__(self, model, examples, labels, decoders, rho, reg):
        self.f, self.examples, self.decoders, self.reg = model, examples, decoders, reg
        self.entropy = [model.entropy(ex, rho) for ex in examples]
        self.rho = [h.rho for h in self.entropy]
        self.phi = [model.features(ex, model.truth(ex, y)) for ex, y in zip(examples, labels)]

    def psi(self, taus):
        """ψ(τ) = Σ_m φ(y_m) − Φ_mᵀ τ_m, so θ*(τ) = ψ / λ (eq. 4-5)."""
        return sum(p - self.f.features(ex, t) for p, ex, t in zip(self.phi, self.examples, taus))

    def theta_star(self, taus):
        return self.psi(taus) / self.reg

    def objective(self, taus):
        """L(τ) = ‖ψ‖²/(2λ) − Σ_m H_ρ(τ_m) (eq. 6)."""
        psi = self.psi(taus)
        neg_h = 0.0
        for t, h in zip(taus, self.entropy):
            neg_h += h.value_grad(np.zeros_like(t), t)[0]
        return float(psi @ psi) / (2.0 * self.reg) + neg_h

    def measure(self, executor, thetas, taus, deadline, keep):
        """`_block_measure` of every block (thetas may be a generator: a serial pass then
        holds one block's scores at a time)."""
        M = len(taus)
        return run_tasks(executor, _block_measure, self.decoders, thetas, taus, self.entropy,
                         [deadline] * M, keep)

    def line_search(self, thetas, taus, dirs, idx, qq, slope0):
        """argmin over [0, 1] of L along d: φ'(γ) = Σ_m <∇(−<θ_m,·> − H)(τ_m + γ d_m), d_m>
        + γ ‖Φᵀd‖²/λ, with θ_m fixed at the current iterate (App. D.2 / E.2.1)."""
        def dphi(t):
            p1, p2 = t * qq / self.reg, qq / self.reg
            for th, tau, d, m in zip(thetas, taus, dirs, idx):
                a, b = self.entropy[m].line_derivs(th, tau, d, t)
                p1, p2 = p1 + a, p2 + b
            return p1, p2
        return safeguarded_newton(dphi, slope0, 1.0)


class _Solver(DualSolver):
    """MLE-Struct Alg. 1 over τ = (τ_1..τ_M): batch FW or BCFW, ψ kept up to date."""

    def __init__(self, model, examples, labels, decoders, p):
        super().__init__()
        self.dual = MLEDual(model, examples, labels, decoders, p["rho"], p["reg"])
        self.model, self.examples, self.decoders, self.p = model, examples, decoders, p
        self.exact = all(d.exact for d in decoders)
        self.tol_scale = len(examples)  # tol is per example
        self.taus = [model.start(ex) for ex in examples]
        self.psi = self.dual.psi(self.taus)
        self.psi_avg, self.k = self.psi.copy(), 0
        self.rng = np.random.default_rng(p["seed"])

    def measure(self, deadline):
        """The gap pass. Batch FW keeps every block's scores and direction for its step;
        BCFW draws the next pass's order and keeps only its first block's vertex."""
        model, lam, M = self.model, self.p["reg"], len(self.examples)
        w = self.psi / lam
        if self.p["method"] == "fw":
            self.thetas = [model.scores(ex, w) for ex in self.examples]
            thetas, keep = self.thetas, [True] * M
        else:
            self.order = self.rng.permutation(M)
            thetas = (model.scores(ex, w) for ex in self.examples)
            keep = np.arange(M) == self.order[0]
        res = self.dual.measure(self.p["executor"], thetas, self.taus, deadline, keep)
        self.n_oracle_calls += M
        self.steps = []  # (FW vertex s, gradient g) of the kept blocks
        for h, (kept, gaps, _) in zip(self.dual.entropy, res):
            s = h.fw_vertex(None if kept is None else kept[0], gaps)
            self.steps.append(None if kept is None else (s, kept[1]))
        self.gap = sum(gaps[0] for _, gaps, _ in res)
        obj = float(self.psi @ self.psi) / (2 * lam) + sum(value for _, _, value in res)
        return obj, self.gap

    def step(self, k, deadline):
        model, examples, taus, dual = self.model, self.examples, self.taus, self.dual
        lam, M, agnostic = self.p["reg"], len(examples), self.p["step"] == "agnostic"
        if self.p["method"] == "fw":
            dirs, slope = [], 0.0
            for m, t in enumerate(taus):  # each vertex dropped once its direction is made
                s, g = self.steps[m]
                dirs.append(s - t)
                slope += float(g @ dirs[-1])
                self.steps[m] = None
            q = sum(model.features(ex, d) for ex, d in zip(examples, dirs))
            gamma = (2.0 / (k + 1.0) if agnostic else
                     dual.line_search(self.thetas, taus, dirs, range(M), float(q @ q), slope))
            for t, d in zip(taus, dirs):
                t += gamma * d
            self.psi -= gamma * q
            self.thetas = self.steps = None
            return
        for j, m in enumerate(self.order):
            theta = model.scores(examples[m], self.psi / lam)
            if j == 0:  # the gap pass already holds this block's vertex at this psi
                s, g = self.steps[m]
                self.steps = None
            else:
                h = dual.entropy[m]
                v, g, _ = _block_oracle(self.decoders[m], theta, taus[m], h, deadline)
                s = h.fw_vertex(v, h.fw_gaps(v, g, taus[m]))
                self.n_oracle_calls += 1
            slope = float(g @ s) - float(g @ taus[m])
            d = s - taus[m]
            q = model.features(examples[m], d)
            gamma = (2.0 * M / (2.0 * M + self.k) if agnostic else
                     dual.line_search([theta], [taus[m]], [d], [m], float(q @ q), slope))
            taus[m] += gamma * d
            self.psi -= gamma * q  # App. E.2.2: only example m's rows change
            self.k += 1
            rho_k = 2.0 / (self.k + 2.0)
            self.psi_avg *= 1.0 - rho_k
            self.psi_avg += rho_k * self.psi

    def result(self):
        use_avg = self.p["averaging"] and self.p["method"] == "bcfw" and self.k > 0
        return {"coef_": (self.psi_avg if use_avg else self.psi) / self.p["reg"],
                "marginals_": [t.copy() for t in self.taus], "dual_": self.dual,
                "rho_": self.p["rho"]}


class MLEStruct(StructuredLearner):
    """Approximate MLE of a pairwise CRF or a distribution over perfect matchings by
    Frank-Wolfe on the dual (MLE-Struct Alg. 1; App. D for matchings).

    Parameters
    ----------
    reg : λ > 0 of the penalty λ/2 ‖w‖².
    entropy, rho : the approximation of log Z, in the vocabulary of `fwcore.marginals.rho`:
        "trw" (the default; the reweighted entropy H_ρ, MLE-Struct eq. 2) or "bethe" (ρ = 1:
        exact on trees, not convex on loopy graphs; a ``rho`` given with it is an error).
        ``rho`` as the model's family allows (``model.RHO``): CRFs "matrix-tree" (None;
        edge appearance probabilities of uniform spanning trees; convex), "uniform", a
        number in (0, 1] on every edge (the paper's 0.5 on grids), a function mrf -> ρ or an
        array of one ρ per edge; matchings (App. C) a number in [0, 1] (None: 1/2, the RW
        entropy).
    method : 'bcfw' (block-coordinate over examples) or 'fw' (batch).
    step : 'exact' (line search, App. D.2 / E.2.1) or 'agnostic' (2/(t+2) batch,
        2M/(2M+t) block).
    tol : stop when the duality gap, computed fresh at the iterate, is <= tol × M.
    max_iter : passes (bcfw) or iterations (fw). max_time : seconds, or None.
    averaging : bcfw only — ``coef_`` from the weighted average of the iterates
        (weights 2/(k+2), Lacoste-Julien et al. 2013).
    seed : block order.
    executor : a concurrent.futures.Executor for the per-example oracle calls of the
        batch step and of the gap pass; results equal the serial run.
    callback : ``callback(record) -> bool`` after every pass (a `fwcore.results.Record`);
        False stops the fit with status INTERRUPTED.
    verbose : a progress line per pass on stderr (the ``fwcore`` logger has them anyway,
        `fwcore.loop`).
    model : the family, a `fwcore.learn.ModelFamily`: `fwcore.learn.CRF` (X: `CRFExample`
        objects, Y: labellings; its ``n_labels`` and MAP ``oracle``) or
        `fwcore.learn.Matching` (X: features [N, N, F], Y: permutations, Hungarian oracle;
        or ``graph="general"``: X symmetric [n, n, F], Y mate arrays, blossom oracle). The
        strings "crf", "bipartite" and "general" name ``CRF()``, ``Matching("bipartite")``
        and ``Matching("general")``.

    Notes
    -----
    Attributes: ``coef_`` (w = θ*(τ), `CRFFeatures` layout or the F edge-feature weights),
    ``primal_`` (the dual objective L(τ) that FW minimises, at the last measured iterate),
    ``gap_`` (its duality gap), ``marginals_`` (τ), ``dual_`` (`MLEDual`), ``rho_`` (the ρ
    of the fit: ``rho`` or its default, 1.0 for "bethe") and the shared ``status_``,
    ``n_iter_``, ``n_oracle_calls_``, ``trace_`` (see `StructuredLearner`).
    """

    def __init__(self, reg: float = 1.0, entropy: str = "trw",
                 rho: str | float | Callable[..., Any] | np.ndarray | None = None,
                 method: str = "bcfw", step: str = "exact", tol: float = 1e-3,
                 max_iter: int = 100, max_time: float | None = None, averaging: bool = True,
                 seed: int | None = 0, executor: Executor | None = None,
                 callback: Callback | None = None, model: Family = "crf",
                 verbose: bool = False) -> None:
        self.reg, self.entropy, self.rho, self.method, self.step = reg, entropy, rho, method, step
        self.tol, self.max_iter, self.max_time, self.averaging = tol, max_iter, max_time, averaging
        self.seed, self.executor, self.callback, self.model = seed, executor, callback, model
        self.verbose = verbose

    _param_table = {**PARAMS, "step": Options("exact", "agnostic")}
    _unchecked = ("entropy", "rho")  # by the model family (`fwcore.learn.ModelFamily.rho`)

    def _check_params(self):
        p = super()._check_params()
        p["rho"] = model_family(p["model"]).rho(self.entropy, self.rho)
        return p

    def _solver(self, model, examples, labels, decoders, p):
        return _Solver(model, examples, labels, decoders, p)

    def predict_marginals(self, X: Sequence[Any], tol: float = 1e-4) -> list[np.ndarray]:
        """Marginals of each input under ``coef_`` with the fitted ρ (``rho_``): CRF node
        marginals [n, L] (FW with MAP calls, MLE-Struct Sec. 3.2) or matching edge marginals
        [n, n] (`fwcore.matching.inference.matching_marginals`), FW gap <= ``tol``."""
        examples = self._check_fitted(X)
        return self.features_.marginals(examples, self.coef_, self.rho_, tol, self.executor)
