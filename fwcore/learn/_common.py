"""Pieces shared by the learners: oracles as vertex decoders, executor fan-out, ρ choices,
parameter checks and the scikit-learn-style base class."""
import math
import numbers
import time

import numpy as np

from .. import _kernels
from ..oracles import make_oracle
from ..rho import matrix_tree_rho, uniform_rho
from .crf import CRFFeatures, check_examples, check_labels, check_nonempty, infer_n_labels

__all__ = ["Decoder", "run_tasks", "entropy_weights", "fw_marginals", "StructuredLearner"]


class Decoder:
    """A MAP oracle on one example's structure returning dense vertices: the LP optimum μ for
    oracles with ``argmax_marginals`` (the local polytope), else μ(argmax). Picklable, so it
    travels to process workers."""

    def __init__(self, mrf, oracle):
        self.mrf = mrf
        self.oracle = make_oracle(oracle, mrf)

    def vertex(self, scores):
        lp = getattr(self.oracle, "argmax_marginals", None)
        if callable(lp):
            return np.asarray(lp(scores), dtype=np.float64)
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


def entropy_weights(mrf, rho):
    """(c, ρ) of H_ρ = Σ_i c_i H(μ_i) + Σ_e ρ_e H(μ_e), c_i = 1 − Σ_{e∋i} ρ_e (MLE-Struct eq. 2;
    DESIGN.md TRW objective). ``rho``: 'bethe' (ρ = 1), 'trw' (uniform spanning trees,
    matrix-tree theorem), 'uniform' ((n−1)/E per component), a number in (0, 1], or a
    function mrf -> array of E values."""
    if isinstance(rho, str):
        r = {"bethe": lambda m: np.ones(m.n_edges), "trw": matrix_tree_rho,
             "uniform": uniform_rho}[rho](mrf)
    elif isinstance(rho, numbers.Real):
        r = np.full(mrf.n_edges, float(rho))
    else:
        r = np.asarray(rho(mrf), dtype=np.float64)
        if r.shape != (mrf.n_edges,) or not np.isfinite(r).all() or (r < 0).any() or (r > 1).any():
            raise ValueError(f"rho(mrf) must return {mrf.n_edges} values in [0, 1]; got {r!r}")
    r = np.ascontiguousarray(r, dtype=np.float64)
    load = np.bincount(mrf.edges[:, 0], r, mrf.n_vars) + np.bincount(mrf.edges[:, 1], r, mrf.n_vars)
    return np.ascontiguousarray(1.0 - load), r


def fw_marginals(mrf, theta, c, rho, decoder, tol=1e-4, max_iter=500):
    """Reweighted marginals argmin_μ −<θ, μ> − H_ρ(μ) by FW with MAP calls (MLE-Struct
    Sec. 3.2) and the kernel line search, from the uniform point; stops on the FW gap."""
    mu = mrf.uniform_marginals()
    g = np.empty_like(mu)
    for _ in range(max_iter):
        _kernels.trw_value_grad(theta, mu, c, rho, mrf.node_off, mrf.edge_off, g)
        d = decoder.vertex(-g) - mu
        if -float(g @ d) <= tol:
            break
        gamma = _kernels.trw_line_search(theta, mu, d, c, rho, mrf.node_off, mrf.edge_off, 1.0)[0]
        if gamma <= 0.0:
            break
        mu += gamma * d
    return mu


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
        """Learn ``coef_`` from inputs X and labellings Y (see `fwcore.learn.crf`)."""
        self._check_params()
        check_nonempty(X)
        n_labels = infer_n_labels(Y, self.n_labels)
        examples, dims = check_examples(X, n_labels)
        labels = check_labels(Y, examples, n_labels)
        self.n_labels_ = n_labels
        self.features_ = CRFFeatures(n_labels, *dims)
        self._t0 = time.perf_counter()
        decoders = [Decoder(ex.mrf, self.oracle) for ex in examples]
        self._fit(examples, labels, decoders)
        return self

    def _out_of_time(self):
        return self.max_time is not None and time.perf_counter() - self._t0 >= self.max_time

    def _check_fitted(self, X):
        if not hasattr(self, "coef_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(X, Y) first")
        f = self.features_
        return check_examples(X, self.n_labels_, (f.n_node, f.n_edge))[0]

    def decision_scores(self, X):
        """Flat log-potentials θ = Φ w of each input under ``coef_``."""
        return [self.features_.scores(ex, self.coef_) for ex in self._check_fitted(X)]

    def predict(self, X):
        """MAP labelling of each input under ``coef_`` with the learner's oracle."""
        examples = self._check_fitted(X)
        thetas = [self.features_.scores(ex, self.coef_) for ex in examples]
        decoders = [Decoder(ex.mrf, self.oracle) for ex in examples]
        return run_tasks(self.executor, _assignment, decoders, thetas)


def _assignment(decoder, scores):
    return decoder.assignment(scores)
