"""Learning distributions over perfect matchings (issue 7; MLE-Struct Sec. 4.1-4.2, App. C-D):
exact MLE via Ryser's permanent, the eq. 12-13 sandwich, FW = BCFW, App. D.3 clamping,
SSVM against brute force, bad input."""
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy.optimize import minimize

from fwcore.matching.inference import (exact_matching_marginals, exact_perfect_matching_marginals,
                                      log_permanent, matching_marginals)
from fwcore.learn.base import LearnerModel
from fwcore.learn.datasets import noisy_point_matching
from fwcore.learn.matching_model import Matching, MatchingModel
from fwcore.learn.mle_struct import MLEStruct
from fwcore.learn.ssvm import SSVM
from fwcore.results import Status


def sample_permutation(W, rng):
    """Exact sample of p(pi) ∝ exp(Σ W[i, pi(i)]) by enumeration (small N)."""
    perms = np.array(list(itertools.permutations(range(W.shape[0]))))
    s = W[np.arange(W.shape[0]), perms].sum(axis=1)
    p = np.exp(s - s.max())
    return perms[rng.choice(len(perms), p=p / p.sum())]


def bipartite_data(M, N=5, F=2, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=F)
    X = [rng.normal(size=(N, N, F)) for _ in range(M)]
    return X, [sample_permutation(x @ w, rng) for x in X]


def loglik(X, Y, w):
    """Σ_m <w, φ(y_m)> − log Z_m(w) and its gradient, Z by Ryser (exact)."""
    val, grad = 0.0, np.zeros_like(w)
    for x, y in zip(X, Y):
        P, log_z = exact_matching_marginals(x @ w)
        rows = np.arange(len(y))
        val += (x[rows, y] @ w).sum() - log_z
        grad += x[rows, y].sum(axis=0) - np.einsum("ij,ijf->f", P, x)
    return val, grad


def approx_log_z(X, w, rho):
    """(lower, upper) certified bounds on Σ_m log Z_rho(W_m) by FW (matching_marginals)."""
    runs = [matching_marginals(x @ w, entropy="trw", rho=rho, tol=1e-9) for x in X]
    return sum(r.log_z for r in runs), sum(r.log_z_upper for r in runs)


def test_exact_mle_and_the_sandwich_of_eq_12_13():
    X, Y = bipartite_data(3, N=5, F=2, seed=1)
    lam = 0.5

    def neg(w):
        val, grad = loglik(X, Y, w)
        return -val + 0.5 * lam * w @ w, -grad + lam * w

    res = minimize(neg, np.zeros(2), jac=True, method="L-BFGS-B", options={"gtol": 1e-10})
    exact_opt = -res.fun  # max_w ℓ(w) − λ/2‖w‖²
    fits = {e: MLEStruct(reg=lam, entropy=e, model="bipartite", tol=1e-6, max_iter=1000,
                         averaging=False).fit(X, Y) for e in ("bethe", "trw")}
    b, rw = fits["bethe"], fits["trw"]
    # eq. 13 at the optima (strong duality: max ℓ_ρ − λ/2‖w‖² = L*, L(τ) − gap <= L* <= L(τ))
    assert rw.primal_ - rw.gap_ <= exact_opt + 1e-9
    assert exact_opt <= b.primal_ + 1e-9
    assert rw.primal_ < exact_opt < b.primal_  # strict on this data
    # eq. 12 at every fitted parameter: log Z_B <= log Z <= log Z_RW
    phi = lambda w: sum((x[np.arange(len(y)), y] @ w).sum() for x, y in zip(X, Y))  # noqa: E731
    for w in (res.x, b.coef_, rw.coef_):
        ll = loglik(X, Y, w)[0]
        assert phi(w) - approx_log_z(X, w, 0.5)[0] <= ll + 1e-9      # ℓ_RW <= ℓ
        assert ll <= phi(w) - approx_log_z(X, w, 1.0)[1] + 1e-9      # ℓ <= ℓ_B
    # each estimator is stationary for its own approximate likelihood: λ w = Σ Gᵀ(y − τ_ρ(w))
    for rho, m in ((1.0, b), (0.5, rw)):
        g = sum(x[np.arange(len(y)), y].sum(0) - np.einsum(
            "ij,ijf->f", matching_marginals(x @ m.coef_, entropy="trw", rho=rho,
                                            tol=1e-10).marginals, x)
            for x, y in zip(X, Y))
        np.testing.assert_allclose(lam * m.coef_, g, atol=0.02)  # 1000 passes: gap ~ 0.01
    # the exact MLE is the best in exact likelihood; Bethe close to it (Fig. 1)
    reg_ll = lambda w: loglik(X, Y, w)[0] - 0.5 * lam * w @ w  # noqa: E731
    assert reg_ll(b.coef_) <= exact_opt + 1e-7 and reg_ll(rw.coef_) <= exact_opt + 1e-7
    assert exact_opt - reg_ll(b.coef_) < 0.05 * abs(exact_opt)


def cycle_data(graph, M, lam_seed):
    """Graphs whose perfect matchings are two edge-disjoint ones, where H_ρ is the exact
    entropy: a masked K_{3,3} (identity ∪ shift; H_ρ = 3(2 − 2ρ) h(p), exact at ρ = 5/6),
    a 4-cycle in K_4 (2(2 − 2ρ) h(p), ρ = 3/4) and the complete K_{2,2} (ρ = 3/4).
    Labels follow the features' sum, so a small λ pushes the optimum to the boundary."""
    rng = np.random.default_rng(lam_seed)
    if graph == "general":
        A, rho, mates = np.zeros((4, 4), dtype=bool), 0.75, ([1, 0, 3, 2], [3, 2, 1, 0])
        for i, j in [(0, 1), (1, 2), (2, 3), (3, 0)]:
            A[i, j] = A[j, i] = True
    elif graph == "masked":
        A, rho, mates = np.eye(3, dtype=bool) | np.eye(3, k=1, dtype=bool), 5 / 6, None
        A[2, 0] = True
        mates = ([0, 1, 2], [1, 2, 0])
    else:
        A, rho, mates = np.ones((2, 2), dtype=bool), 0.75, ([0, 1], [1, 0])
    n = A.shape[0]
    X, Y = [], []
    for _ in range(M):
        G = rng.normal(size=(n, n, 2))
        if graph == "general":
            G = G + G.transpose(1, 0, 2)
        X.append(G)
        Y.append(np.array(max(mates, key=lambda y: G[np.arange(n), y].sum())))
    return X, Y, A, rho


def exact_dual_optimum(X, Y, A, lam, graph):
    """max_w ℓ(w) − λ/2 ‖w‖² and its argmax, ℓ by Ryser's permanent (bipartite) or by
    enumeration (general) on the graph A; L-BFGS on the exact gradient."""
    def neg(w):
        val, grad = 0.0, np.zeros_like(w)
        for x, y in zip(X, Y):
            W = np.where(A, x @ w, -np.inf)
            if graph == "general":
                np.fill_diagonal(W, 0.0)
                P, log_z = exact_perfect_matching_marginals(W)
                half = 0.5  # each edge appears twice in the mate array and in P
            else:
                P, log_z = exact_matching_marginals(W)
                assert np.isclose(log_z, log_permanent(np.where(A, np.exp(x @ w), 0.0)))
                half = 1.0
            phi = half * x[np.arange(len(y)), y].sum(axis=0)
            val += phi @ w - log_z
            grad += phi - half * np.einsum("ij,ijf->f", P, x)
        return -val + 0.5 * lam * w @ w, -grad + lam * w
    res = minimize(neg, np.zeros(2), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15})
    return -res.fun, res.x


@pytest.mark.parametrize("graph", ["complete", "masked", "general"])
def test_adaptive_delta_reaches_the_exact_mle_on_the_boundary(graph):
    """With ρ making H_ρ exact, MLE-Struct's optimum is the exact MLE (Ryser): the fit must
    reach it although the optimal τ lies far closer to the boundary than the start δ_init
    allows (τ_e >= δ_init τ⁰_e under a fixed δ), and gap_ must be the FW gap over M itself:
    primal_ − gap_ <= L* <= primal_ at every pass, and equal to the gap computed here by
    enumerating the matchings."""
    lam = 0.002
    X, Y, A, rho = cycle_data(graph, 4, 0)
    exact_opt, w_opt = exact_dual_optimum(X, Y, A, lam, graph)
    model = "general" if graph == "general" else "bipartite"
    Xm = [(x, A) for x in X] if graph != "complete" else X
    fit = lambda n: MLEStruct(reg=lam, rho=rho, model=model, tol=1e-9, max_iter=n,  # noqa
                              averaging=False).fit(Xm, Y)
    m = fit(3000)
    assert m.status_ is Status.CONVERGED and m.gap_ <= 4e-9
    assert m.primal_ - m.gap_ <= exact_opt + 1e-12 and exact_opt <= m.primal_ + 1e-12
    np.testing.assert_allclose(m.coef_, w_opt, rtol=1e-6)
    examples = m.features_.prepare(Xm, Y)[0]
    entropies = [m.features_.entropy(ex, m.rho_) for ex in examples]
    start = min(h.start[h.free].min() for h in entropies)
    tau_min = min(t[h.free].min() for t, h in zip(m.marginals_, entropies))
    # 100 times inside the fixed-δ_init floor: δ adapted (τ >= δ τ⁰ on the free edges)
    assert tau_min < 1e-3 * start * 1e-2
    early = fit(3)  # not converged: the gap is still a certificate over M
    assert early.gap_ > 1e-4 and early.primal_ - early.gap_ <= exact_opt <= early.primal_
    for fitted in (m, early):  # gap_ = max over the graph's matchings v of Σ <−∇L, v − τ>
        theta = fitted.coef_  # θ*(τ) at the measured iterate (no averaging)
        gap = 0.0
        for ex, tau, h in zip(examples, fitted.marginals_, entropies):
            g = h.value_grad(fitted.features_.scores(ex, theta), tau)[1]
            n = ex.n
            mates = brute_matchings(n, A) if graph == "general" else [
                p for p in itertools.permutations(range(n)) if A[np.arange(n), p].all()]
            gap += max(-g @ (fitted.features_.truth(ex, np.array(p)) - tau) for p in mates)
        assert np.isclose(gap, fitted.gap_, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("graph", ["bipartite", "general"])
def test_fw_and_bcfw_reach_the_same_optimum(graph):
    rng = np.random.default_rng(3)
    if graph == "bipartite":
        X, Y = bipartite_data(3, N=4, F=2, seed=3)
    else:
        X = [rng.normal(size=(6, 6, 2)) for _ in range(3)]
        X = [x + x.transpose(1, 0, 2) for x in X]
        Y = [rng.permutation(6).reshape(3, 2) for _ in range(3)]
        Y = [np.array([p[1] if i == p[0] else p[0] for i in range(6) for p in y if i in p])
             for y in Y]
    fw, bc = [MLEStruct(reg=1.0, entropy="bethe", model=graph, method=a, tol=1e-5, max_iter=n,
                        averaging=False).fit(X, Y) for a, n in (("fw", 1500), ("bcfw", 500))]
    assert abs(fw.primal_ - bc.primal_) <= max(fw.gap_, bc.gap_) + 1e-9
    assert max(fw.gap_, bc.gap_) < 0.01
    np.testing.assert_allclose(fw.coef_, bc.coef_, atol=0.02)


def brute_matchings(n, allowed):
    """Every perfect matching of the graph `allowed` on n vertices (mate arrays)."""
    out = []
    for p in itertools.permutations(range(n)):
        p = np.array(p)
        if ((p != np.arange(n)).all() and np.array_equal(p[p], np.arange(n))
                and allowed[np.arange(n), p].all()):
            out.append(p)
    return np.array(out)


def test_perfect_matching_clamping_and_averaged_start():
    """App. D.3: edges of the graph in no / every perfect matching are clamped; the start
    point averages matchings, inside (0, 1) on every other edge."""
    n, rng = 8, np.random.default_rng(4)
    A = np.zeros((n, n), dtype=bool)
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
                 (3, 4), (1, 5)]:  # two 4-cycles; the bridges are in no perfect matching
        A[i, j] = A[j, i] = True
    G = rng.normal(size=(n, n, 2))
    G = G + G.transpose(1, 0, 2)
    y = np.array([1, 0, 3, 2, 5, 4, 7, 6])
    model, (ex,), _ = MatchingModel.from_data([(G, A)], [y], "general")
    mates = brute_matchings(n, A)
    dom = ex.decoder.domain
    freq = np.mean([model.truth(ex, p) for p in mates], axis=0)
    on_graph = dom.edge_weights(A).astype(bool)
    np.testing.assert_array_equal(ex.free, on_graph & (freq > 0) & (freq < 1))
    assert (~ex.free & on_graph).sum() >= 2  # the bridges (3, 4), (1, 5) are clamped at 0
    assert ((ex.start > 0) & (ex.start < 1) == ex.free).all()
    np.testing.assert_allclose(dom.to_matrix(ex.start).sum(axis=1), 1.0)
    np.testing.assert_array_equal(ex.start[~on_graph], 0.0)
    m = (MLEStruct(reg=1.0, entropy="bethe", model="general", tol=1e-5, max_iter=500)
         .fit([(G, A)], [y]))
    assert m.gap_ <= 1e-5
    tau = m.marginals_[0]
    np.testing.assert_array_equal(tau[~ex.free], ex.start[~ex.free])  # clamped stay put
    pred = m.predict([(G, A)])[0]
    best = max(mates, key=lambda p: model.truth(ex, p) @ model.scores(ex, m.coef_))
    np.testing.assert_array_equal(pred, best)


def brute_ssvm_primal(s, X, Y):
    w, total = s.coef_, 0.5 * s.reg * s.coef_ @ s.coef_
    for x, y in zip(X, Y):
        rows = np.arange(len(y))
        total += max(np.mean(np.array(p) != y) - w @ (x[rows, y].sum(0) - x[rows, list(p)].sum(0))
                     for p in itertools.permutations(range(len(y)))) / len(X)
    return total


@pytest.mark.parametrize("method", ["bcfw", "fw"])
def test_ssvm_gap_is_primal_minus_dual(method):
    X, Y = bipartite_data(3, N=4, F=3, seed=5)
    s = SSVM(reg=1.0, model="bipartite", method=method, tol=0.0, max_iter=10,
             averaging=False).fit(X, Y)
    assert all(r.gap >= -1e-12 for r in s.trace_)
    assert np.isclose(brute_ssvm_primal(s, X, Y) - s.dual_objective_, s.gap_)


def test_ssvm_and_mle_learn_a_separable_problem():
    X, Y = noisy_point_matching(6, n_points=6, noise=0.01, seed=0)
    Xt, Yt = noisy_point_matching(6, n_points=6, noise=0.01, seed=1)
    for m in (SSVM(reg=0.01, model="bipartite", max_iter=50),
              MLEStruct(reg=0.01, entropy="bethe", model=Matching("bipartite"), max_iter=50)):
        m.fit(X, Y)
        assert isinstance(m.features_, LearnerModel) and isinstance(m.status_, Status)
        assert len(m.trace_) == m.n_iter_ + 1 and m.trace_[-1].gap == m.gap_
        assert m.n_oracle_calls_ == m.trace_.columns()["n_oracle_calls"][-1]
        assert (m.coef_ > 0).all()
        assert all(np.array_equal(p, y) for p, y in zip(m.predict(Xt), Yt))
    P = m.predict_marginals(Xt[:2])
    assert all(np.allclose(p.sum(0), 1, atol=1e-4) and np.allclose(p.sum(1), 1, atol=1e-4)
               for p in P)
    assert all((p.argmax(1) == y).all() for p, y in zip(P, Yt))


def test_executor_runs_equal_serial_runs():
    X, Y = bipartite_data(3, N=4, seed=6)
    for cls in (MLEStruct, SSVM):
        serial = cls(model="bipartite", max_iter=3, method="fw").fit(X, Y)
        with ThreadPoolExecutor(2) as pool:
            par = cls(model="bipartite", max_iter=3, method="fw", executor=pool).fit(X, Y)
        np.testing.assert_array_equal(serial.coef_, par.coef_)


def test_bad_inputs_raise_clear_errors():
    X, Y = bipartite_data(2, N=4)
    with pytest.raises(ValueError, match=r"shape \(n, n, F\)"):
        MLEStruct(model="bipartite").fit([X[0][:3], X[1]], Y)
    with pytest.raises(ValueError, match="permutation"):
        MLEStruct(model="bipartite").fit(X, [np.array([0, 0, 1, 2]), Y[1]])
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        SSVM(model="bipartite").fit(X, [Y[0][:3], Y[1]])
    with pytest.raises(TypeError, match="integer array"):
        MLEStruct(model="bipartite").fit(X, [y.astype(float) for y in Y])
    with pytest.raises(ValueError, match="NaN"):
        MLEStruct(model="bipartite").fit([np.full_like(X[0], np.nan), X[1]], Y)
    with pytest.raises(ValueError, match="expected 2"):
        MLEStruct(model="bipartite").fit([X[0], X[1][:, :, :1]], Y)
    with pytest.raises(ValueError, match="model must be one of"):
        MLEStruct(model="matching").fit(X, Y)
    with pytest.raises(ValueError, match="graph must be one of"):
        MLEStruct(model=Matching("perfect")).fit(X, Y)
    with pytest.raises(TypeError, match="oracle"):  # its oracle is Hungarian / blossom
        Matching("bipartite", oracle="lp")
    with pytest.raises(TypeError, match="rho must be a number >= 0 and <= 1 or None; got str"):
        MLEStruct(model="bipartite", rho="uniform").fit(X, Y)
    with pytest.raises(ValueError, match="rho must be a number >= 0 and <= 1 or None; got 1.5"):
        MLEStruct(model="bipartite", rho=1.5).fit(X, Y)
    with pytest.raises(ValueError, match="entropy='bethe' has rho = 1"):
        MLEStruct(model="bipartite", entropy="bethe", rho=1.0).fit(X, Y)
    with pytest.raises(ValueError, match="symmetric"):
        MLEStruct(model="general").fit([X[0]], [np.array([1, 0, 3, 2])])
    G = X[0] + X[0].transpose(1, 0, 2)
    with pytest.raises(ValueError, match="perfect matching"):
        MLEStruct(model="general").fit([G], [np.array([1, 2, 3, 0])])
    with pytest.raises(ValueError, match="even n"):
        MLEStruct(model="general").fit([G[:3, :3]], [np.array([1, 0, 2])])
    A = np.ones((4, 4), dtype=bool)
    A[0, 1] = A[1, 0] = False
    with pytest.raises(ValueError, match="outside the graph"):
        MLEStruct(model="general").fit([(G, A)], [np.array([1, 0, 3, 2])])
    m = MLEStruct(model="bipartite", max_iter=1).fit(X, Y)
    with pytest.raises(ValueError, match="expected 2"):
        m.predict([X[0][:, :, :1]])
