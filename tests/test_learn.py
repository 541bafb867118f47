"""MLE-Struct and SSVM learners (issue 7): the dual against direct computations, exact MLE on
trees, duality gaps against brute force, executors, bad input."""
import itertools
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
from scipy.optimize import minimize

from fwcore.exact import exact_inference
from fwcore.learn.base import LearnerModel, ModelFamily
from fwcore.learn.crf import (CRF, CRFExample, CRFFeatures, CRFModel, TRWEntropy,
                              check_examples)
from fwcore.learn.datasets import synthetic_segmentation
from fwcore.learn.mle_struct import MLEStruct
from fwcore.learn.ssvm import SSVM
from fwcore.oracles import resolve_oracle
from fwcore.results import Record, Status, Trace


def tree_data(M, n=6, F=3, G=2, L=2, seed=0):
    """Random trees with edges written (child, parent), i.e. partly flipped."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(M):
        edges = np.array([[i, rng.integers(0, i)] for i in range(1, n)])
        X.append((rng.normal(size=(n, F)), edges, rng.normal(size=(n - 1, G))))
        Y.append(rng.integers(0, L, size=n))
    return X, Y


def cycle_data(M, n=4, L=3, seed=1):
    rng = np.random.default_rng(seed)
    edges = np.array([[i, (i + 1) % n] for i in range(n)])
    X = [(rng.normal(size=(n, 2)), edges, rng.normal(size=(n, 2))) for _ in range(M)]
    Y = [rng.integers(0, L, size=n) for _ in range(M)]
    return X, Y


def direct_theta(x, w, L):
    """θ of one example by loops over App. E.1: θ_i(a) = W_node[a]·u_i, θ_ij(a, b) with
    (a, b) in the edge's given orientation."""
    u, edges, v = x
    F, G = u.shape[1], v.shape[1]
    wn, we = w[:L * F].reshape(L, F), w[L * F:].reshape(L, L, G)
    unary = [wn @ u[i] for i in range(len(u))]
    pair = [we @ v[e] for e in range(len(edges))]
    return unary, pair


def test_features_adjoint_and_scores_against_loops():
    X, Y = tree_data(3, L=3)
    ex, (F, G) = check_examples(X, 3)
    f = CRFFeatures(3, F, G)
    rng = np.random.default_rng(0)
    w = rng.normal(size=f.dim)
    for x, e in zip(X, ex):
        unary, pair = direct_theta(x, w, 3)
        theta = f.scores(e, w)
        for i in range(e.mrf.n_vars):
            np.testing.assert_allclose(e.mrf.unary(i, theta), unary[i])
        for k, (a, b) in enumerate(x[1]):
            table = e.mrf.pairwise(k, theta)  # canonical (min, max) orientation
            np.testing.assert_allclose(table, pair[k] if a < b else pair[k].T)
        mu = rng.random(e.mrf.dim)
        assert np.isclose(theta @ mu, w @ f.features(e, mu))  # Φᵀ is the adjoint of Φ


def entropy_direct(mrf, tau, rho):
    nodes, edges = mrf.split_marginals(tau)
    h = sum(-(p * np.log(p)).sum() for p in nodes)
    for e, (i, j) in enumerate(mrf.edges):
        t = edges[e]
        h -= rho[e] * (t * np.log(t / np.outer(nodes[i], nodes[j]))).sum()
    return h


@pytest.mark.parametrize("entropy, rho", [("bethe", None), ("trw", "matrix-tree"), ("trw", 0.5)])
def test_theta_star_and_dual_objective_against_direct_computation(entropy, rho):
    X, Y = cycle_data(3)
    m = MLEStruct(reg=0.7, entropy=entropy, rho=rho, model=CRF(oracle="bruteforce"),
                  max_iter=3, averaging=False).fit(X, Y)
    taus = list(m.marginals_)  # the measured iterate's, as coef_ and primal_ are
    # θ*(τ) (eq. 4-5) by explicit sums over examples, nodes, edges and labels
    L, f = 3, m.features_
    psi = np.zeros(f.dim)
    examples = check_examples(X, 3)[0]
    for x, y, e, t in zip(X, Y, examples, taus):
        u, edges, v = x
        wn, we = psi[:L * 2].reshape(L, 2), psi[L * 2:].reshape(L, L, 2)
        nodes, tables = e.mrf.split_marginals(t)
        for i in range(len(u)):
            wn[y[i]] += u[i]
            wn -= nodes[i][:, None] * u[i][None, :]
        for k, (a, b) in enumerate(edges):
            we[y[a], y[b]] += v[k]
            tab = tables[k] if a < b else tables[k].T
            we -= tab[:, :, None] * v[k][None, None, :]
    np.testing.assert_allclose(m.coef_, psi / 0.7, atol=1e-12)
    # L(τ) = max_θ [<θ, ψ> − λ/2‖θ‖²] − Σ H_ρ; θ* is the maximiser
    rhos = [TRWEntropy(e.mrf, m.rho_).rho for e in examples]
    neg_h = -sum(entropy_direct(e.mrf, t, r) for e, t, r in zip(examples, taus, rhos))
    saddle = lambda th: th @ psi - 0.35 * th @ th + neg_h  # noqa: E731
    th = m.coef_
    assert np.isclose(m.primal_, saddle(th))
    rng = np.random.default_rng(0)
    assert all(saddle(th + 1e-3 * rng.normal(size=th.shape)) < saddle(th) for _ in range(5))


def test_fw_and_bcfw_reach_the_same_optimum():
    X, Y = tree_data(3, n=5, seed=3)
    runs = [MLEStruct(reg=1.0, rho="matrix-tree", method=a, model=CRF(oracle="tree"), tol=1e-4,
                      max_iter=800,
                      averaging=False).fit(X, Y) for a in ("fw", "bcfw")]
    fw, bc = runs
    # weak duality: L* >= L(τ) − gap for both, so the objectives agree within the gaps
    assert abs(fw.primal_ - bc.primal_) <= max(fw.gap_, bc.gap_) + 1e-9
    assert max(fw.gap_, bc.gap_) < 0.05
    np.testing.assert_allclose(fw.coef_, bc.coef_, atol=0.05)


def test_bethe_on_a_tree_is_exact_mle():
    """Bethe is exact on trees, so MLE-Struct's dual optimum is the regularised exact MLE
    (found here by L-BFGS on the exact likelihood with fwcore.exact)."""
    X, Y = tree_data(3, n=5, F=2, G=1, seed=5)
    lam = 1.0
    m = MLEStruct(reg=lam, entropy="bethe", method="bcfw", model=CRF(oracle="tree"), tol=1e-5,
                  max_iter=3000,
                  averaging=False).fit(X, Y)
    ex, (F, G) = check_examples(X, 2)
    f = CRFFeatures(2, F, G)
    phi = sum(f.features(e, e.mrf.marginal_vector(y)) for e, y in zip(ex, Y))

    def neg_loglik(w):
        val, grad = -phi @ w + 0.5 * lam * w @ w, -phi + lam * w
        for e in ex:
            r = exact_inference(e.mrf.with_theta(f.scores(e, w)))
            val, grad = val + r.log_z, grad + f.features(e, r.mu)
        return val, grad

    res = minimize(neg_loglik, np.zeros(f.dim), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-14})
    assert m.gap_ <= 1e-5 * len(X) or m.n_iter_ == 3000
    # strong duality: min L = −max loglik, and θ*(τ) is the MLE
    assert abs(m.primal_ + res.fun) <= m.gap_ + 1e-6
    np.testing.assert_allclose(m.coef_, res.x, atol=5e-3)


def brute_primal(model, X, Y):
    f, w, lam = model.features_, model.coef_, model.reg
    ex, _ = check_examples(X, f.n_labels)
    total = 0.5 * lam * w @ w
    for e, y in zip(ex, Y):
        phi_y = f.features(e, e.mrf.marginal_vector(y))
        total += max(np.mean(np.array(z) != y)
                     - w @ (phi_y - f.features(e, e.mrf.marginal_vector(z)))
                     for z in itertools.product(range(f.n_labels), repeat=len(y))) / len(X)
    return total


@pytest.mark.parametrize("method", ["bcfw", "fw"])
def test_ssvm_gap_is_primal_minus_dual_and_reaches_tol(method):
    X, Y = tree_data(4, n=5, seed=2)
    s = SSVM(reg=1.0, method=method, model=CRF(oracle="bruteforce"), tol=0.0, max_iter=15,
             averaging=False).fit(X, Y)
    assert all(r.gap >= -1e-12 for r in s.trace_)
    assert np.isclose(brute_primal(s, X, Y) - s.dual_objective_, s.gap_)
    s = SSVM(reg=1.0, method=method, model=CRF(oracle="tree"), tol=0.02, max_iter=2000).fit(X, Y)
    assert 0.0 <= s.gap_ <= 0.02


def test_segmentation_learning_beats_thresholding():
    X, Y = synthetic_segmentation(6, size=8, noise=0.8, seed=0)
    Xt, Yt = synthetic_segmentation(6, size=8, noise=0.8, seed=1)
    err = lambda P: np.mean([np.mean(p != y) for p, y in zip(P, Yt)])  # noqa: E731
    base = err([(x.node_features[:, 1] > 0.5).astype(int) for x in Xt])
    for learner in (MLEStruct(reg=50.0, rho=0.5, model=CRF(oracle="qpbo"), max_iter=8),
                    MLEStruct(reg=50.0, rho="matrix-tree", model=CRF(oracle="lp"), max_iter=2),
                    SSVM(reg=0.01, model=CRF(oracle="qpbo"), max_iter=8)):
        assert err(learner.fit(X, Y).predict(Xt)) < base
    marg = (MLEStruct(reg=50.0, model=CRF(oracle="qpbo"), max_iter=3).fit(X, Y)
            .predict_marginals(Xt[:2]))
    assert all(m.shape == (64, 2) and np.allclose(m.sum(1), 1) and (m >= 0).all() for m in marg)


@pytest.mark.parametrize("make", [lambda: ThreadPoolExecutor(2), lambda: ProcessPoolExecutor(2)])
def test_executor_runs_equal_serial_runs(make):
    X, Y = cycle_data(4)
    for cls, kw in ((MLEStruct, {"method": "bcfw"}), (MLEStruct, {"method": "fw"}),
                    (SSVM, {"method": "bcfw"})):
        serial = cls(model=CRF(oracle="lp"), max_iter=3, **kw).fit(X, Y)
        with make() as pool:
            par = cls(model=CRF(oracle="lp"), max_iter=3, executor=pool, **kw).fit(X, Y)
            np.testing.assert_array_equal(serial.coef_, par.coef_)
            assert serial.gap_ == par.gap_
            for a, b in zip(serial.predict(X), par.predict(X)):
                np.testing.assert_array_equal(a, b)


LEARNERS = [(MLEStruct, {"method": "bcfw"}), (MLEStruct, {"method": "fw"}),
            (SSVM, {"method": "bcfw"}), (SSVM, {"method": "fw"})]


@pytest.mark.parametrize("cls, kw", LEARNERS)
def test_fitted_status_counters_and_trace(cls, kw):
    X, Y = cycle_data(3)
    m = cls(model=CRF(oracle="bruteforce"), tol=0.0, max_iter=4, **kw).fit(X, Y)
    assert m.status_ is Status.MAX_ITER and m.n_iter_ == 4
    assert isinstance(m.features_, LearnerModel)
    assert isinstance(m.trace_, Trace) and [r.iteration for r in m.trace_] == [0, 1, 2, 3, 4]
    cols = m.trace_.columns()
    assert np.all(np.diff(cols["time"]) >= 0) and np.all(np.diff(cols["n_oracle_calls"]) > 0)
    # one fresh gap pass (M calls) per record, and M more per BCFW pass
    per_pass = 3 if kw["method"] == "fw" else 6
    np.testing.assert_array_equal(cols["n_oracle_calls"], 3 + per_pass * np.arange(5))
    assert m.n_oracle_calls_ == cols["n_oracle_calls"][-1]
    assert m.gap_ == cols["gap"][-1] and m.primal_ == cols["primal"][-1]
    assert np.all(cols["gap"] >= -1e-12)
    loose = cls(model=CRF(oracle="bruteforce"), tol=1e3, max_iter=4, **kw).fit(X, Y)
    assert loose.status_ is Status.CONVERGED and loose.n_iter_ == 0


def test_a_small_gap_with_an_inexact_oracle_is_stalled_not_converged():
    X, Y = cycle_data(3)
    exact = resolve_oracle("bruteforce", check_examples(X, 3)[0][0].mrf)
    m = SSVM(model=CRF(oracle=exact.argmax), tol=1e3).fit(X, Y)  # a function: not declared exact
    assert m.status_ is Status.STALLED


@pytest.mark.parametrize("cls, kw", LEARNERS)
def test_callback_false_interrupts_and_ctrl_c_keeps_the_last_measured_iterate(cls, kw):
    X, Y = cycle_data(3)
    seen = []

    def stop_at_two(record):
        seen.append((record, m.coef_.copy() if record.iteration else None))
        return record.iteration < 2

    m = cls(model=CRF(oracle="bruteforce"), tol=0.0, max_iter=10, callback=stop_at_two, **kw)

    m.fit(X, Y)
    assert m.status_ is Status.INTERRUPTED and m.n_iter_ == 2
    assert tuple(r for r, _ in seen) == m.trace_ and all(isinstance(r, Record) for r, _ in seen)
    two = cls(model=CRF(oracle="bruteforce"), tol=0.0, max_iter=2, **kw).fit(X, Y)
    np.testing.assert_array_equal(m.coef_, two.coef_)
    one = cls(model=CRF(oracle="bruteforce"), tol=0.0, max_iter=1, **kw).fit(X, Y)
    # the callback saw each measured iterate's fit: pass 1's is the one-pass fit
    np.testing.assert_array_equal(seen[1][1], one.coef_)
    np.testing.assert_array_equal(seen[2][1], two.coef_)
    # Ctrl-C in the second pass (bcfw) or the gap pass after it (fw)
    exact = resolve_oracle("bruteforce", check_examples(X, 3)[0][0].mrf)
    calls = []

    def interrupted(scores):
        calls.append(1)
        if len(calls) == one.n_oracle_calls_ + 2:
            raise KeyboardInterrupt
        return exact.argmax(scores)

    m = cls(model=CRF(oracle=interrupted), tol=0.0, max_iter=10, **kw).fit(X, Y)
    assert m.status_ is Status.INTERRUPTED and m.n_iter_ == 1 and len(m.trace_) == 2
    np.testing.assert_array_equal(m.coef_, one.coef_)
    assert m.gap_ == one.gap_


@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_ctrl_c_in_the_set_up_returns_an_interrupted_unfitted_learner(cls, monkeypatch):
    import fwcore.learn.learner as learner

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(learner, "model_family", interrupted)
    m = cls(model=CRF(oracle="bruteforce")).fit(*cycle_data(2))
    assert m.status_ is Status.INTERRUPTED and m.n_iter_ == 0 and len(m.trace_) == 0
    with pytest.raises(ValueError, match="not fitted"):
        m.predict(cycle_data(2)[0])


@pytest.mark.parametrize("cls", [MLEStruct, SSVM])
def test_max_time_stops_with_max_time(cls):
    X, Y = cycle_data(2)
    m = (cls(model=CRF(oracle="bruteforce"), tol=0.0, max_iter=10**6, max_time=1e-9)
         .fit(X, Y))
    # out of time before the first gap pass ended: the start point, nothing measured
    assert m.status_ is Status.MAX_TIME and m.n_iter_ == 0 and len(m.trace_) == 0
    assert m.gap_ is None and m.primal_ is None and np.isfinite(m.coef_).all()
    assert len(m.predict(X)) == len(X)


BAD_PARAMS = [
    (MLEStruct, {"reg": 0.0}, ValueError, "reg must be a number > 0; got 0.0"),
    (SSVM, {"method": "sgd"}, ValueError, "method must be one of 'fw', 'bcfw'; got 'sgd'"),
    (MLEStruct, {"rho": "bethe"}, ValueError, "rho must be one of 'matrix-tree', 'uniform'"),
    (MLEStruct, {"rho": "coupling"}, ValueError, "rho must be one of 'matrix-tree', 'uniform'"),
    (MLEStruct, {"rho": 1.5}, ValueError, "rho must be .* <= 1"),
    (MLEStruct, {"rho": 0.0}, ValueError, "rho must be .* > 0"),
    (MLEStruct, {"rho": lambda mrf: np.full(mrf.n_edges, 2.0)}, ValueError,
     r"rho must lie in \[0, 1\]"),
    (MLEStruct, {"rho": [0.5] * 3}, ValueError, r"rho must have shape \(5,\)"),
    (MLEStruct, {"entropy": "rw"}, ValueError, "entropy must be one of 'trw', 'bethe'"),
    (MLEStruct, {"entropy": "bethe", "rho": 0.5}, ValueError, "entropy='bethe' has rho = 1"),
    (MLEStruct, {"step": "line-search"}, ValueError, "step must be one of 'exact', 'agnostic'"),
    (SSVM, {"tol": -1.0}, ValueError, "tol must be a number >= 0"),
    (SSVM, {"max_iter": 2.5}, ValueError, "max_iter must be an integer >= 0"),
    (MLEStruct, {"max_time": 0}, ValueError, "max_time must be a number > 0 or None"),
    (SSVM, {"averaging": "yes"}, TypeError, "averaging must be a bool"),
    (SSVM, {"seed": 1.5}, TypeError, "seed must be an int"),
    (MLEStruct, {"executor": 4}, TypeError, "executor must be a concurrent.futures.Executor"),
    (SSVM, {"callback": 3}, TypeError, "callback must be a callable"),
    (SSVM, {"model": "perfect"}, ValueError, "model must be one of 'crf', 'bipartite', 'general'"),
    (SSVM, {"model": CRFModel}, TypeError, "model must be .* or a fwcore.learn.ModelFamily"),
    (MLEStruct, {"model": CRF(n_labels=1)}, ValueError, "n_labels must be an integer >= 2"),
    (MLEStruct, {"model": CRF(oracle="nope")}, ValueError, "unknown oracle"),
]


class _BruteForceCRF(ModelFamily):
    """A user's own family (brute-force MAP, rho = 0.5 by default): the learners ask it for
    its model and its rho, never which it is."""

    RHO, DEFAULT_RHO = CRF.RHO, 0.5

    def build(self, X, Y):
        return CRF(oracle="bruteforce").build(X, Y)


def test_a_model_object_a_shorthand_and_a_users_family_fit_the_same():
    X, Y = cycle_data(2)
    by_name = MLEStruct(max_iter=2).fit(X, Y)
    by_object = MLEStruct(max_iter=2, model=CRF(n_labels=3, oracle="lp")).fit(X, Y)
    np.testing.assert_array_equal(by_name.coef_, by_object.coef_)
    assert by_name.rho_ == "matrix-tree" and by_name.features_.n_labels == 3
    mine = MLEStruct(max_iter=2, model=_BruteForceCRF()).fit(X, Y)
    theirs = MLEStruct(max_iter=2, rho=0.5, model=CRF(oracle="bruteforce")).fit(X, Y)
    np.testing.assert_array_equal(mine.coef_, theirs.coef_)
    assert mine.rho_ == theirs.rho_ == 0.5
    bethe = MLEStruct(max_iter=2, entropy="bethe", model=CRF(oracle="bruteforce")).fit(X, Y)
    ones = MLEStruct(max_iter=2, rho=1.0, model=CRF(oracle="bruteforce")).fit(X, Y)
    np.testing.assert_array_equal(bethe.coef_, ones.coef_)
    assert bethe.rho_ == 1.0


@pytest.mark.parametrize("cls, kw, error, match", BAD_PARAMS)
def test_bad_parameters_name_the_argument(cls, kw, error, match):
    X, Y = tree_data(2)
    with pytest.raises(error, match=match):
        cls(**kw).fit(X, Y)


def test_bad_inputs_raise_clear_errors():
    X, Y = tree_data(2)
    with pytest.raises(ValueError, match="non-empty"):
        MLEStruct().fit([], [])
    with pytest.raises(ValueError, match="one label array per example"):
        MLEStruct().fit(X, Y[:1])
    with pytest.raises(ValueError, match=r"Y\[0\] must have shape"):
        MLEStruct().fit(X, [Y[0][:-1], Y[1]])
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        MLEStruct(model=CRF(n_labels=2)).fit(X, [Y[0] + 2, Y[1]])
    with pytest.raises(TypeError, match="integer array of labels"):
        MLEStruct().fit(X, [y.astype(float) for y in Y])
    u, e, v = X[0]
    with pytest.raises(ValueError, match="NaN"):
        MLEStruct().fit([(np.full_like(u, np.nan), e, v), X[1]], Y)
    with pytest.raises(ValueError, match="edge_features"):
        MLEStruct().fit([(u, e, v[:-1]), X[1]], Y)
    with pytest.raises(ValueError, match="expected 3 and 2"):
        MLEStruct().fit([X[0], (X[1][0][:, :2], X[1][1], X[1][2])], Y)
    with pytest.raises(ValueError, match="self loop"):
        MLEStruct().fit([(u, np.vstack([e[:-1], [[1, 1]]]), v), X[1]], Y)
    with pytest.raises(TypeError, match="CRFExample or a tuple"):
        MLEStruct().fit([X[0], "image"], Y)
    with pytest.raises(ValueError, match="not fitted"):
        SSVM().predict(X)
    m = MLEStruct(model=CRF(oracle="tree"), max_iter=1).fit([CRFExample(*x) for x in X], Y)
    with pytest.raises(ValueError, match="expected 3 and 2"):
        m.predict([(u[:, :1], e, v)])
