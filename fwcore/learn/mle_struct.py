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
from .learner import PARAMS, Callback, DualSolver, Family, StructuredLearner, model_family

__all__ = ["MLEStruct", "TrainingMarginals"]


def _started(shard, local):
    """[(example, its state, its entropy)], each state started: τ⁰, φ(y_m)."""
    f, rho = shard.model, shard.settings["rho"]
    out = []
    for ex, y, state in shard.blocks(local):
        if "tau" not in state:
            state["tau"] = state["measured"] = f.start(ex)
            state["phi"] = f.features(ex, f.truth(ex, y))
        out.append((ex, state, f.entropy(ex, rho)))
    return out


def _start(shard, local):
    """ψ_m = φ(y_m) − Φ_mᵀ τ_m⁰ of each example (eq. 4-5)."""
    return [state["phi"] - shard.model.features(ex, state["tau"])
            for ex, state, _ in _started(shard, local)]


def _measure(shard, local, w, deadline, keep):
    """(FW gap over M, f + <θ, τ>) of −<θ, τ> − H_ρ(τ) at θ = Φ w, per example, and with
    ``keep`` (batch FW) Φᵀd and <g, d> of the direction d = s − τ, kept for the step."""
    f, out = shard.model, []
    for ex, state, h in _started(shard, local):
        tau, theta = state["tau"], f.scores(ex, w)
        value, g = h.value_grad(theta, tau)
        v = f.decoder(ex).vertex(-g, deadline.left())
        gaps = h.fw_gaps(v, g, tau)
        s = h.fw_vertex(v if keep else None, gaps, state)
        value += float(theta @ tau)
        if keep:
            d = s - tau
            state["pending"] = d, 1.0
            out.append((gaps[0], value, f.features(ex, d), float(g @ d)))
        else:
            out.append((gaps[0], value))
    return out


def _line(shard, local, w, t):
    """(φ', φ'') of the entropy term −<θ, τ + t d> − H_ρ(τ + t d) along the kept d."""
    f = shard.model
    return [h.line_derivs(f.scores(ex, w), state["tau"], state["pending"][0], t)
            for ex, state, h in _started(shard, local)]


def _propose(shard, local, w, deadline, agnostic, reg):
    """A block step of each example from θ = Φ w (Alg. 1, BCFW): its FW vertex s, the
    step γ along d = s − τ (exact line search, App. D.2 / E.2.1, or ``agnostic[i]`` for
    example i), kept for `_apply`; returns (γ Φᵀd, H_ρ(τ) − H_ρ(τ + γ d))."""
    f, out = shard.model, []
    for (ex, state, h), i in zip(_started(shard, local), shard.index[list(local)]):
        tau, theta = state["tau"], f.scores(ex, w)
        _, g = h.value_grad(theta, tau)
        v = f.decoder(ex).vertex(-g, deadline.left())
        s = h.fw_vertex(v, h.fw_gaps(v, g, tau), state)
        d = s - tau
        q = f.features(ex, d)
        if agnostic is None:
            gamma = _exact_step(lambda t: h.line_derivs(theta, tau, d, t), float(q @ q),
                                float(g @ s) - float(g @ tau), reg)
        else:
            gamma = agnostic[int(i)]
        state["pending"] = d, gamma
        zero = np.zeros_like(tau)
        out.append((gamma * q, h.value_grad(zero, tau + gamma * d)[0]
                    - h.value_grad(zero, tau)[0]))
    return out


def _apply(shard, local, factor):
    """τ ← τ + factor · γ d of each example's kept step (a new array: `_snapshot`'s stays)."""
    for i in local:
        d, gamma = shard.state[i].pop("pending")
        shard.state[i]["tau"] = shard.state[i]["tau"] + (factor * gamma) * d
    return [None] * len(local)


def _snapshot(shard, local):
    """Keep each example's τ as the measured iterate's (the fitted ``marginals_``)."""
    for i in local:
        shard.state[i]["measured"] = shard.state[i]["tau"]
    return [None] * len(local)


def _measured(shard, local):
    return [shard.state[i]["measured"] for i in local]


def _exact_step(derivs, qq, slope, reg):
    """argmin over [0, 1] of L along d: φ'(γ) = γ ‖Φᵀd‖²/λ + the entropy terms'
    ``derivs(γ)`` (App. D.2 / E.2.1), from φ'(0) = ``slope``."""
    def dphi(t):
        a, b = derivs(t)
        return t * qq / reg + a, qq / reg + b
    return safeguarded_newton(dphi, slope, 1.0)


def _bounded_step(psi, Q, c, reg):
    """β in [0, 1] minimising U(β) = ‖ψ − β Q‖²/(2λ) + β c, an upper bound on L along the
    merged steps of a minibatch (c = Σ_m −H(τ_m + γ_m d_m) + H(τ_m): −H_ρ is convex), so
    that L never grows; U(0) = L."""
    qq = float(Q @ Q)
    if qq <= 0.0:
        return 1.0 if c <= 0.0 else 0.0
    return min(max((float(psi @ Q) - reg * c) / qq, 0.0), 1.0)


class TrainingMarginals(Sequence):
    """The marginals τ_m of the training examples at the last measured iterate, read from
    where they live (`fwcore.learn.shards`: this process, or a dask worker) one example at
    a time; pickled as a list."""

    def __init__(self, where):
        self.where = where

    def __len__(self):
        return self.where.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.where.map(_measured, range(self.where.n)[i], data=False)
        if not -self.where.n <= i < self.where.n:
            raise IndexError(f"example {i} of {self.where.n}")
        return self.where.map(_measured, [i % self.where.n], data=False)[0]

    def __iter__(self):
        for k in range(0, self.where.n, DualSolver.ROUND):
            yield from self[k:k + DualSolver.ROUND]  # a round at a time

    def __reduce__(self):
        return list, (list(self),)


class _Solver(DualSolver):
    """MLE-Struct Alg. 1 over τ = (τ_1..τ_M): batch FW or BCFW, ψ kept up to date. Each
    τ_m lives with its example (`fwcore.learn.shards`); this process holds ψ (and its
    average), of the weights' size."""

    def __init__(self, model, where, exact, p):
        super().__init__(model, where, exact, p)
        where.each("configure", {"rho": p["rho"]})
        self.tol_scale = self.M  # tol is per example
        self.progress.start("start", self.M, "examples")
        parts = []
        for rnd, pending in self.submitted(_start):
            parts += pending.result()
            self.progress(rnd[-1] + 1, rnd[-1] + 1)
        self.psi = sum(parts)
        self.psi_avg, self.k = self.psi.copy(), 0
        self.rng = np.random.default_rng(p["seed"])

    def measure(self, deadline):
        """The gap pass, in rounds; batch FW keeps each block's direction for its step."""
        lam, M, keep = self.p["reg"], self.M, self.p["method"] == "fw"
        w = self.psi / lam
        gap, values, q, slope = 0, 0, 0, 0.0
        self.progress.start("gap pass", M, "gap so far")
        for rnd, pending in self.submitted(_measure, w, deadline, keep):
            for r in pending.result():
                gap, values = gap + r[0], values + r[1]
                if keep:
                    q, slope = q + r[2], slope + r[3]
            self.progress(rnd[-1] + 1, gap)
        self.n_oracle_calls += M
        self.where.map(_snapshot, np.arange(M), data=False)
        self.gap, self.direction = gap, (q, slope)
        self.objective = float(self.psi @ self.psi) / (2 * lam) + values
        return self.objective, self.gap

    def step(self, k, deadline):
        lam, M, agnostic = self.p["reg"], self.M, self.p["step"] == "agnostic"
        everyone = np.arange(M)
        if self.p["method"] == "fw":
            q, slope = self.direction
            w = self.psi / lam
            gamma = (2.0 / (k + 1.0) if agnostic else _exact_step(
                lambda t: tuple(map(sum, zip(*self.where.map(_line, everyone, w, t)))),
                float(q @ q), slope, lam))
            self.where.map(_apply, everyone, gamma, data=False)
            self.psi -= gamma * q
            return
        # Alg. 1 (BCFW) in minibatches: each block's step found at the iterate its batch
        # starts from, the batch's steps merged in the pass order and scaled by β
        bound, done = self.objective, 0
        self.progress.start(f"pass {k}", M, "objective at most")
        for batch in self.rounds(self.rng.permutation(M), self.p["batch_size"]):
            steps = (None if not agnostic else
                     {int(m): 2.0 * M / (2.0 * M + self.k + j) for j, m in enumerate(batch)})
            res = self.where.map(_propose, batch, self.psi / lam, deadline, steps, lam)
            self.n_oracle_calls += len(batch)
            Q, c = sum(r[0] for r in res), sum(r[1] for r in res)
            beta = 1.0 if len(batch) == 1 or agnostic else _bounded_step(self.psi, Q, c, lam)
            self.where.map(_apply, batch, beta, data=False)
            before = float(self.psi @ self.psi)
            self.psi -= beta * Q
            bound += (float(self.psi @ self.psi) - before) / (2 * lam) + beta * c
            for _ in batch:
                self.k += 1
                rho_k = 2.0 / (self.k + 2.0)
                self.psi_avg *= 1.0 - rho_k
                self.psi_avg += rho_k * self.psi
            done += len(batch)
            self.progress(done, bound)

    def result(self):
        use_avg = self.p["averaging"] and self.p["method"] == "bcfw" and self.k > 0
        return {"coef_": (self.psi_avg if use_avg else self.psi) / self.p["reg"],
                "marginals_": TrainingMarginals(self.where), "rho_": self.p["rho"]}


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
    batch_size : bcfw only — blocks whose steps are found together (their oracle calls in
        parallel on the executor) at the iterate their batch starts from; the batch's
        steps are merged in the pass order and scaled by the β in [0, 1] that minimises an
        upper bound on L (the entropies' convexity), so L never grows. 1 (the default)
        is BCFW itself.
    executor : where the per-example work runs: None (serially), a
        concurrent.futures.Executor (threads, processes: each task carries its examples
        and their τ), or a ``distributed.Client`` (or its ``get_executor()``), whose
        workers keep the examples and their τ, so a round sends only the weights
        (`fwcore.learn.shards`); the results equal the serial run's.
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
    ``gap_`` (its duality gap), ``marginals_`` (τ of each training example at that
    iterate, a `TrainingMarginals`), ``rho_`` (the ρ of the fit: ``rho`` or its default,
    1.0 for "bethe") and the shared ``status_``, ``n_iter_``, ``n_oracle_calls_``,
    ``trace_`` (see `StructuredLearner`). X may be a `fwcore.learn.data.Dataset`.

    Memory per example: τ_m (the example's flat layout: n L + E L² numbers for a CRF),
    where the example lives; while a pass runs, also the τ_m of the last measured iterate
    for the examples already stepped (then released), and one direction per example of a
    batch (batch FW: of every example).
    """

    def __init__(self, reg: float = 1.0, entropy: str = "trw",
                 rho: str | float | Callable[..., Any] | np.ndarray | None = None,
                 method: str = "bcfw", step: str = "exact", tol: float = 1e-3,
                 max_iter: int = 100, max_time: float | None = None, averaging: bool = True,
                 seed: int | None = 0, batch_size: int = 1, executor: Executor | None = None,
                 callback: Callback | None = None, model: Family = "crf",
                 verbose: bool = False) -> None:
        self.reg, self.entropy, self.rho, self.method, self.step = reg, entropy, rho, method, step
        self.tol, self.max_iter, self.max_time, self.averaging = tol, max_iter, max_time, averaging
        self.seed, self.batch_size, self.executor = seed, batch_size, executor
        self.callback, self.model, self.verbose = callback, model, verbose

    _param_table = {**PARAMS, "step": Options("exact", "agnostic")}
    rho_: Any  # fitted (`_Solver.result`): the ρ of the fit, as ``rho`` allows
    _unchecked = ("entropy", "rho")  # by the model family (`fwcore.learn.ModelFamily.rho`)

    def _check_params(self):
        p = super()._check_params()
        p["rho"] = model_family(p["model"]).rho(self.entropy, self.rho)
        return p

    def _solver(self, model, where, exact, p):
        return _Solver(model, where, exact, p)

    def predict_marginals(self, X: Sequence[Any], tol: float = 1e-4) -> list[np.ndarray]:
        """Marginals of each input under ``coef_`` with the fitted ρ (``rho_``): CRF node
        marginals [n, L] (FW with MAP calls, MLE-Struct Sec. 3.2) or matching edge marginals
        [n, n] (`fwcore.matching.inference.matching_marginals`), FW gap <= ``tol``."""
        examples = self._check_fitted(X)
        return self.features_.marginals(examples, self.coef_, self.rho_, tol, self.executor)
