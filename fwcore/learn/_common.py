"""Pieces shared by the learners: the models they fit (`CRFModel` here, `MatchingModel` in
`fwcore.learn.matching_model`), oracles as vertex decoders, executor fan-out, ρ choices, parameter
checks and the scikit-learn-style base class.

A model gives the FW loops everything example-specific: ``scores(ex, w)`` (θ = Φ w),
``features(ex, μ)`` (Φᵀμ), ``truth(ex, y)`` (the vertex μ(y)), ``start(ex)`` (τ⁰),
``decoder(ex)`` (``vertex`` / ``assignment`` of a MAP oracle), ``entropy(ex, rho)``
(``value_grad`` and ``line_derivs`` of −<θ, τ> − H_ρ(τ)), ``hamming(ex, y)`` (a with
<a, μ(y')> the normalised Hamming loss), ``marginals`` and ``dim``."""
import math
import numbers
import time

import numpy as np

from .. import _kernels
from ..oracles import LPOracle, resolve_oracle
from ..rho import entropy_weights, matrix_tree_rho, uniform_rho
from .crf import CRFFeatures, check_examples, check_labels, check_nonempty, infer_n_labels
from .matching_model import GRAPHS, MatchingModel

__all__ = ["Decoder", "run_tasks", "learner_rho", "fw_marginals", "CRFModel", "TRWEntropy",
           "StructuredLearner"]


class Decoder:
    """A MAP oracle on one example's structure returning dense vertices: the LP optimum μ for
    oracles with ``argmax_marginals`` (the local polytope), else μ(argmax). Picklable, so it
    travels to process workers."""

    def __init__(self, mrf, oracle):
        self.mrf = mrf
        self.oracle = resolve_oracle(oracle, mrf)

    def vertex(self, scores):
        if isinstance(self.oracle, LPOracle):
            return np.asarray(self.oracle.argmax_marginals(scores), dtype=np.float64)
        return self.mrf.marginal_vector(self.oracle.argmax(scores))

    def assignment(self, scores):
        """A MAP assignment; an LP optimum is rounded by the oracle's own `argmax`."""
        return self.oracle.argmax(scores)


def _vertex(decoder, scores):
    return decoder.vertex(scores)


def run_tasks(executor, fn, *columns):
    """[fn(*row) for row in zip(*columns)], on ``executor`` when given (results in order)."""
    if executor is None:
        return [fn(*row) for row in zip(*columns)]
    return list(executor.map(fn, *columns))


def learner_rho(mrf, rho):
    """The edge weights ρ (float64[E]) of H_ρ = Σ_i c_i H(μ_i) + Σ_e ρ_e H(μ_e), c_i = 1 −
    Σ_{e∋i} ρ_e (MLE-Struct eq. 2; DESIGN.md TRW objective; `fwcore.rho.entropy_weights`
    makes the kernels' per-entry weights) for a learner's choice ``rho``: 'bethe' (ρ = 1),
    'trw' (uniform spanning trees, matrix-tree theorem), 'uniform' ((n−1)/E per component),
    a number in (0, 1], or a function mrf -> array of E values."""
    if isinstance(rho, str):
        r = {"bethe": lambda m: np.ones(m.n_edges), "trw": matrix_tree_rho,
             "uniform": uniform_rho}[rho](mrf)
    elif isinstance(rho, numbers.Real):
        r = np.full(mrf.n_edges, float(rho))
    else:
        r = np.asarray(rho(mrf), dtype=np.float64)
        if r.shape != (mrf.n_edges,) or not np.isfinite(r).all() or (r < 0).any() or (r > 1).any():
            raise ValueError(f"rho(mrf) must return {mrf.n_edges} values in [0, 1]; got {r!r}")
    return np.ascontiguousarray(r, dtype=np.float64)


def fw_marginals(mrf, theta, weight, decoder, tol=1e-4, max_iter=500):
    """Reweighted marginals argmin_μ −<θ, μ> − H_ρ(μ) by FW with MAP calls (MLE-Struct
    Sec. 3.2) and the kernel line search, from the uniform point; stops on the FW gap."""
    mu = mrf.uniform_marginals()
    g = np.empty_like(mu)
    for _ in range(max_iter):
        _kernels.trw_value_grad(theta, mu, weight, g)
        d = decoder.vertex(-g) - mu
        if -float(g @ d) <= tol:
            break
        gamma = _kernels.trw_line_search(theta, mu, d, weight, 1.0)[0]
        if gamma <= 0.0:
            break
        mu += gamma * d
    return mu


class TRWEntropy:
    """The block objective −<θ, μ> − H_ρ(μ) of one CRF example via the TRW kernels."""

    def __init__(self, mrf, rho):
        self.rho = learner_rho(mrf, rho)
        self.weight = entropy_weights(mrf, self.rho)

    def value_grad(self, theta, tau):
        g = np.empty_like(tau)
        return _kernels.trw_value_grad(theta, tau, self.weight, g), g

    def line_derivs(self, theta, tau, d, t):
        return _kernels.trw_line_derivs(theta, tau, d, t, self.weight)

    def fw_vertex(self, decoder, scores):
        return decoder.vertex(scores)


def _node_marginals(decoder, theta, weight, tol):
    mu = fw_marginals(decoder.mrf, theta, weight, decoder, tol=tol)
    return mu[:decoder.mrf.node_off[-1]].reshape(decoder.mrf.n_vars, -1)


class CRFModel(CRFFeatures):
    """Pairwise CRFs with node and edge features (App. E.1) and a pairwise-MRF MAP oracle."""

    def __init__(self, n_labels, dims, oracle):
        super().__init__(n_labels, *dims)
        self.oracle = oracle

    @classmethod
    def from_data(cls, X, Y, n_labels, oracle):
        """(model, examples, labels) from training inputs and labellings, validated."""
        check_nonempty(X)
        n_labels = infer_n_labels(Y, n_labels)
        examples, dims = check_examples(X, n_labels)
        return cls(n_labels, dims, oracle), examples, check_labels(Y, examples, n_labels)

    def check(self, X):
        return check_examples(X, self.n_labels, (self.n_node, self.n_edge))[0]

    def truth(self, ex, y):
        return ex.mrf.marginal_vector(y)

    def start(self, ex):
        return ex.mrf.uniform_marginals()

    def decoder(self, ex):
        return Decoder(ex.mrf, self.oracle)

    def entropy(self, ex, rho):
        return TRWEntropy(ex.mrf, rho)

    def hamming(self, ex, y):
        """+1/n on every unary entry of a wrong label."""
        a = np.zeros(ex.mrf.dim)
        n, L = ex.mrf.n_vars, self.n_labels
        a[:n * L] = 1.0 / n
        a[np.arange(n) * L + y] = 0.0
        return a

    def marginals(self, examples, w, rho, tol, executor=None):
        """Node marginals [n, L]: the reweighted free energy minimised by FW with MAP calls
        (MLE-Struct Sec. 3.2), gap <= ``tol``."""
        thetas = [self.scores(ex, w) for ex in examples]
        weights = [TRWEntropy(ex.mrf, rho).weight for ex in examples]
        return run_tasks(executor, _node_marginals, [self.decoder(ex) for ex in examples],
                         thetas, weights, [tol] * len(examples))


def make_model(model, X, Y, n_labels, oracle):
    """(model, examples, labels) for the learners' ``model`` choice: 'crf' or a matching
    graph ('bipartite', 'perfect'; their oracle is Hungarian / blossom, ``oracle`` None)."""
    if model == "crf":
        return CRFModel.from_data(X, Y, n_labels, "lp" if oracle is None else oracle)
    if model in GRAPHS:
        if n_labels is not None:
            raise ValueError(f"n_labels applies to model='crf' only; got {n_labels!r}")
        if oracle is not None:
            raise ValueError(f"model={model!r} uses its exact matching oracle (Hungarian / "
                             f"blossom); leave oracle=None, got {oracle!r}")
        return MatchingModel.from_data(X, Y, model)
    raise ValueError(f"model must be one of 'crf', {', '.join(map(repr, GRAPHS))}; got {model!r}")


def _check_choice(name, value, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")


def _check_real(name, value, lo, lo_open=True, optional=False, integer=False):
    if optional and value is None:
        return
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if lo_open else value >= lo)
    if integer:
        ok = ok and int(value) == value
    if not ok:
        kind = "an integer" if integer else "a finite number"
        raise ValueError(f"{name} must be {kind} {'>' if lo_open else '>='} {lo}"
                         f"{' or None' if optional else ''}; got {value!r}")


class StructuredLearner:
    """scikit-learn conventions: ``__init__`` stores parameters, ``fit`` validates them and
    the data once. Subclasses implement ``_fit(examples, labels)`` setting ``coef_``."""

    def _check_params(self):
        _check_real("reg", self.reg, 0.0)
        _check_choice("algorithm", self.algorithm, ("fw", "bcfw"))
        _check_real("tol", self.tol, 0.0, lo_open=False)
        _check_real("max_iter", self.max_iter, 0, lo_open=False, integer=True)
        _check_real("max_time", self.max_time, 0.0, optional=True)
        if self.executor is not None and not callable(getattr(self.executor, "map", None)):
            raise TypeError("executor must be a concurrent.futures.Executor (or any object "
                            f"with map(fn, *iterables)); got {type(self.executor).__name__}")

    def fit(self, X, Y):
        """Learn ``coef_`` from inputs X and labellings Y (see `fwcore.learn.crf` and
        `fwcore.learn.matching_model` for their forms)."""
        self._check_params()
        model, examples, labels = make_model(self.model, X, Y, self.n_labels, self.oracle)
        self.features_ = model
        if self.model == "crf":
            self.n_labels_ = model.n_labels
        self._t0 = time.perf_counter()
        self._fit(model, examples, labels, [model.decoder(ex) for ex in examples])
        return self

    def _out_of_time(self):
        return self.max_time is not None and time.perf_counter() - self._t0 >= self.max_time

    def _check_fitted(self, X):
        if not hasattr(self, "coef_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(X, Y) first")
        return self.features_.check(X)

    def decision_scores(self, X):
        """Flat log-potentials θ = Φ w of each input under ``coef_``."""
        return [self.features_.scores(ex, self.coef_) for ex in self._check_fitted(X)]

    def predict(self, X):
        """MAP labelling (or matching) of each input under ``coef_`` with the model's oracle."""
        examples = self._check_fitted(X)
        thetas = [self.features_.scores(ex, self.coef_) for ex in examples]
        decoders = [self.features_.decoder(ex) for ex in examples]
        return run_tasks(self.executor, _assignment, decoders, thetas)


def _assignment(decoder, scores):
    return decoder.assignment(scores)
