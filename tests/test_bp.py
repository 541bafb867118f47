"""TRBP / loopy BP (fwcore.marginals.bp): the Cython sweeps against their plain-NumPy twin,
loopy BP on trees against exact marginals, and the entropy vocabulary of `trbp`."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from fwcore import _kernels
from fwcore.marginals.bp import _Flat, loopy_bp, trbp, trbp_beliefs
from fwcore.marginals.trw import TRWObjective
from fwcore.exact import exact_inference
from fwcore.generators import potts_grid, random_clique, random_grid
from fwcore.model import PairwiseMRF


def _logsumexp(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis=axis)


def _normalised(a):
    z = _logsumexp(a, 1)[:, None]
    return a - np.where(np.isfinite(z), z, 0.0)


def numpy_sweeps(model, rho, damping, n_sweeps):
    """Twin of `trbp_sweeps`: n_sweeps damped parallel TRBP sweeps on padded (2E, K)
    log-messages; returns them flat in the kernel's layout."""
    n, n_edges = model.n_vars, model.n_edges
    node, pair, _, _ = model.padded_tables()
    k = node.shape[1]
    src = np.concatenate([model.edges[:, 0], model.edges[:, 1]]).astype(np.int64)  # t
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]]).astype(np.int64)  # s
    scaled = pair / rho[:, None, None]
    table = np.concatenate([scaled, np.transpose(scaled, (0, 2, 1))])  # [m, x_t, x_s]
    reverse = np.concatenate([np.arange(n_edges, 2 * n_edges), np.arange(n_edges)])
    incoming = csr_matrix((np.concatenate([rho, rho]), (dst, np.arange(2 * n_edges))),
                          shape=(n, 2 * n_edges))
    valid = np.isfinite(node)
    logm = _normalised(np.where(valid[dst], 0.0, -np.inf))
    for _ in range(n_sweeps):
        pre = _without(node, incoming, logm, src, reverse)
        new = np.where(valid[dst], _logsumexp(table + pre[:, :, None], axis=1), -np.inf)
        new = _normalised(new)
        fin = np.isfinite(new)
        new = _normalised(np.where(fin, (1 - damping) * new + damping * np.where(fin, logm, 0.0),
                                   -np.inf))
        logm = new
    return logm[np.arange(k) < model.card[dst][:, None]]


def _log_sums(node, incoming, logm):
    """θ_t + Σ_v ρ_vt log m_vt as (its finite part, its number of -inf terms), padded (n, K)."""
    dead = np.isneginf(logm)
    valid = np.isfinite(node)
    n_inf = ~valid + (incoming > 0).astype(float) @ dead.astype(float)
    return np.where(valid, node, 0.0) + incoming @ np.where(dead, 0.0, logm), n_inf


def _without(node, incoming, logm, at, own):
    """The node sums at nodes ``at`` without the messages ``own``: -inf when any other term
    is -inf."""
    finite, n_inf = _log_sums(node, incoming, logm)
    dead = np.isneginf(logm[own])
    return np.where(n_inf[at] - dead > 0, -np.inf, finite[at] - np.where(dead, 0.0, logm[own]))


def numpy_beliefs(model, rho, logm, msg_off):
    """Twin of `_beliefs` on padded (n, K) and (E, K, K) tables."""
    n, n_edges = model.n_vars, model.n_edges
    node, pair, node_mask, pair_mask = model.padded_tables()
    k = node.shape[1]
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
    pad = np.full((2 * n_edges, k), -np.inf)
    pad[np.arange(k) < np.diff(msg_off)[:, None]] = logm
    incoming = csr_matrix((np.concatenate([rho, rho]), (dst, np.arange(2 * n_edges))),
                          shape=(n, 2 * n_edges))
    finite, n_inf = _log_sums(node, incoming, pad)
    node_sum = np.where(n_inf > 0, -np.inf, finite)
    b_node = node_sum - _logsumexp(node_sum, 1)[:, None]
    i, j = model.edges[:, 0], model.edges[:, 1]
    pre_i = _without(node, incoming, pad, i, np.arange(n_edges, 2 * n_edges))
    pre_j = _without(node, incoming, pad, j, np.arange(n_edges))
    b_edge = pair / rho[:, None, None] + pre_i[:, :, None] + pre_j[:, None, :]
    b_edge = b_edge - _logsumexp(b_edge.reshape(n_edges, k * k), 1)[:, None, None]
    return np.concatenate([np.exp(b_node[node_mask]), np.exp(b_edge[pair_mask])])


def mixed_model(n, p_edge, p_inf, seed):
    """Random graph, cardinalities 2..4, theta ~ N(0, 1.5), a fraction p_inf of -inf entries,
    and a planted assignment that stays possible (every node and edge entry it uses is
    finite: without it an edge could rule out every state its ends allow, and no
    assignment would have a finite score)."""
    rng = np.random.default_rng(seed)
    cards = rng.integers(2, 5, n)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p_edge]
    planted = rng.integers(cards)
    unary = []
    for c, x in zip(cards, planted):
        u = rng.normal(0, 1, c)
        u[rng.random(c) < p_inf] = -np.inf
        u[x] = rng.normal()
        unary.append(u)
    pair = []
    for i, j in edges:
        t = rng.normal(0, 1.5, (cards[i], cards[j]))
        t[rng.random(t.shape) < p_inf] = -np.inf
        t[planted[i], planted[j]] = rng.normal(0, 1.5)
        pair.append(t)
    return PairwiseMRF(cards, unary, edges, pair)


def random_tree(n, seed):
    rng = np.random.default_rng(seed)
    edges = [(int(rng.integers(0, j)), j) for j in range(1, n)]
    cards = rng.integers(2, 5, n)
    unary = [rng.normal(0, 1, c) for c in cards]
    pair = [rng.normal(0, 1.5, (cards[i], cards[j])) for i, j in edges]
    return PairwiseMRF(cards, unary, edges, pair)


models = st.one_of(
    st.builds(lambda s: random_grid(3, 4, seed=s), st.integers(0, 10**6)),
    st.builds(lambda s, c: random_grid(4, 3, coupling=c, field=c, seed=s), st.integers(0, 10**6),
              st.sampled_from([30.0, 1e3])),
    st.builds(lambda s: random_clique(5, seed=s), st.integers(0, 10**6)),
    st.builds(mixed_model, st.integers(2, 7), st.sampled_from([0.4, 0.8]),
              st.sampled_from([0.0, 0.3]), st.integers(0, 10**6)))


@settings(max_examples=25, deadline=None)
@given(model=models, damping=st.sampled_from([0.0, 0.5]), uniform=st.booleans(),
       n_sweeps=st.integers(1, 12), seed=st.integers(0, 10**6))
def test_kernel_equals_numpy_twin(model, damping, uniform, n_sweeps, seed):
    rng = np.random.default_rng(seed)
    rho = np.full(model.n_edges, 0.5) if uniform else rng.uniform(0.05, 1.0, model.n_edges)
    mu, it, converged, change = trbp_beliefs(model, rho, damping, n_sweeps, tol=-1.0)
    assert it == n_sweeps and not converged and np.isfinite(change)
    twin = numpy_sweeps(model, rho, damping, n_sweeps)
    flat = _Flat(model)
    flat.run(rho, damping, n_sweeps, -1.0, None, None)
    np.testing.assert_array_equal(np.isfinite(flat.logm), np.isfinite(twin))
    fin = np.isfinite(twin)
    np.testing.assert_allclose(flat.logm[fin], twin[fin], rtol=0, atol=1e-10)
    np.testing.assert_allclose(mu, numpy_beliefs(model, rho, twin, flat.msg_off),
                               rtol=0, atol=1e-10)
    flat.logm[:] = twin   # the beliefs kernels on the twin's messages
    np.testing.assert_allclose(flat.beliefs(rho), numpy_beliefs(model, rho, twin, flat.msg_off),
                               rtol=0, atol=1e-10)
    assert not np.isnan(mu).any()
    # every block of the pseudo-marginals is a distribution, zero on impossible states
    assert np.all(mu[np.isneginf(model.theta)] == 0)
    # their TRW value against the objective's (its weights as a flat array), at rho and at
    # other weights
    np.testing.assert_allclose(flat.value, TRWObjective(model, rho).trw(flat.mu), rtol=1e-12,
                               atol=1e-12)
    weight = rng.uniform(0.0, 1.0, model.n_edges)
    flat.beliefs(rho, weight)
    np.testing.assert_allclose(flat.value, TRWObjective(model, weight).trw(flat.mu),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_loopy_bp_on_tree_is_exact(seed):
    model = random_tree(8, seed)
    mu, it, converged, change = trbp_beliefs(model, np.ones(model.n_edges), 0.5, 2000, 1e-12)
    assert converged and change < 1e-12
    np.testing.assert_allclose(mu, exact_inference(model).mu, atol=1e-9)


def test_binary_sweeps_on_threads_equal_one_thread():
    """n_jobs splits each sweep of a binary model with more than BP_BLOCK edges into
    parts: bit for bit the messages of one thread (and of -1, one thread per core)."""
    model = random_grid(50, 90, coupling=2.0, seed=3)  # 8860 edges: 4 blocks of messages
    rho = np.random.default_rng(3).uniform(0.2, 1.0, model.n_edges)
    one = _Flat(model)
    one.run(rho, 0.5, 23, -1.0, None, None)
    for n_jobs in (2, 3, 8):
        flat = _Flat(model, n_jobs)
        assert flat.run(rho, 0.5, 23, -1.0, None, None)[0] == 23
        np.testing.assert_array_equal(flat.logm, one.logm)
    np.testing.assert_array_equal(loopy_bp(model, max_iter=7, n_jobs=-1).mu,
                                  loopy_bp(model, max_iter=7).mu)
    with pytest.raises(ValueError, match="n_jobs must be an int >= 1 or -1"):
        trbp(model, n_jobs=0)


def test_stops_at_tolerance_and_max_iter():
    model = random_grid(3, 3, coupling=0.5, seed=1)
    rho = np.full(model.n_edges, 0.6)
    mu, it, converged, change = trbp_beliefs(model, rho, 0.5, 5, 1e-8)
    assert it == 5 and not converged and change >= 1e-8
    mu, it, converged, change = trbp_beliefs(model, rho, 0.5, 5000, 1e-8)
    assert converged and change < 1e-8 and it < 5000


def test_trbp_entropy_and_rho():
    """entropy="bethe" is loopy BP (rho = 1, no rho updates); with "trw" a number is rho on
    every edge, valid where it is a point of the spanning-tree polytope."""
    model = random_grid(3, 3, coupling=0.5, seed=1)  # 9 nodes, 12 edges
    bethe, loopy = trbp(model, entropy="bethe"), loopy_bp(model)
    np.testing.assert_array_equal(bethe.mu, loopy.mu)
    np.testing.assert_array_equal(bethe.info["rho"], 1.0)
    assert bethe.method == loopy.method == "loopy-bp" and bethe.info["n_rho_updates"] == 0
    uniform = trbp(model, rho="uniform", rho_updates=2)
    assert uniform.method == "trbp" and uniform.info["n_rho_updates"] == 2
    for rho in (8 / 12, lambda m: np.full(m.n_edges, 8 / 12), np.full(12, 8 / 12)):
        np.testing.assert_array_equal(trbp(model, rho=rho, rho_updates=2).mu, uniform.mu)
    with pytest.raises(ValueError, match="sum to n_c - 1"):
        trbp(model, rho=0.5)
    with pytest.raises(ValueError, match="entropy='bethe' has rho = 1 on every edge"):
        trbp(model, entropy="bethe", rho="uniform")
    with pytest.raises(ValueError, match="entropy must be one of 'trw', 'bethe'"):
        trbp(model, entropy="rw")
    with pytest.raises(TypeError, match="rho must be one of 'matrix-tree'"):
        trbp(model, rho={})


def numpy_initial_messages(model, msg_off):
    """Twin of `fwcore._bp.initial_messages`: uniform over each receiver's possible
    states, -inf on its impossible ones."""
    dst = np.concatenate([model.edges[:, 1], model.edges[:, 0]])
    sizes = np.diff(msg_off)
    owner = np.repeat(np.arange(dst.size), sizes)
    ok = np.isfinite(model.theta[model.node_off[dst][owner] + np.arange(msg_off[-1])
                                 - msg_off[owner]])
    count = np.bincount(owner, weights=ok, minlength=dst.size)
    return np.where(ok, -np.log(np.maximum(count, 1))[owner], -np.inf)


@pytest.mark.parametrize("seed", range(3))
def test_initial_messages_equal_their_twin(seed):
    model = mixed_model(7, 0.6, 0.3, seed)
    flat = _Flat(model)
    flat.run(np.ones(model.n_edges), 0.5, 0, 1e-8, None, None)   # no sweep: the start
    np.testing.assert_array_equal(flat.logm, numpy_initial_messages(model, flat.msg_off))


@pytest.mark.parametrize("model", [potts_grid(60, n_labels=4, seed=1), random_grid(60, seed=2)],
                         ids=["general", "binary"])
def test_a_sweep_cut_by_the_clock_leaves_the_messages_of_the_last_whole_one(model):
    """(The kernels read the clock every 2^16 table entries of work: a sweep of these
    models is longer.)"""
    flat = _Flat(model)
    rho = np.full(model.n_edges, 0.7)
    flat.run(rho, 0.5, 3, -1.0, None, None)
    before = flat.logm.copy()
    if flat.binary:
        got = _kernels.trbp_binary_sweeps(model.graph, model.theta[:model.node_off[-1]],
                                          flat.table, flat.sender, rho, 0.5, -1.0, 5,
                                          flat.logm, flat.new, flat.node_sum, 1e-9, True)
    else:
        got = _kernels.trbp_sweeps(model.theta, model.graph, flat.msg_off, rho, 0.5, -1.0, 5,
                                   flat.logm, flat.new, flat.node_sum, flat.work[0], flat.n_inf,
                                   1e-9, True)
    assert got[0] == 0 and got[2] == _kernels.BP_TIME
    np.testing.assert_array_equal(flat.logm, before)


def test_max_time_is_held_and_said():
    import time

    from fwcore.results import Status
    model = potts_grid(80, n_labels=6, seed=0)
    for run in (loopy_bp, trbp):
        t = time.monotonic()
        res = run(model, max_iter=10**6, tol=1e-15, max_time=0.5)
        assert time.monotonic() - t < 0.5 * 1.05 + 0.5
        assert res.status is Status.MAX_TIME and res.n_iter >= 1
        assert np.isfinite(res.mu).all() and np.allclose(res.node_marginals[5].sum(), 1.0)


def test_a_model_whose_arrays_do_not_fit_is_refused_before_any_sweep(monkeypatch):
    from fwcore.marginals import bp
    monkeypatch.setattr(bp, "available_bytes", lambda: 10_000)
    with pytest.raises(ValueError, match=r"needs .* GiB for its messages and beliefs"):
        loopy_bp(random_grid(30, seed=0))


def test_trbp_default_rho_is_matrix_tree_when_cheap_else_balanced_trees(monkeypatch):
    """The default rho of "trw": the matrix-tree rule when its LU (which Ctrl-C cannot
    stop) is predicted to take at most `_MATRIX_TREE_MOST` seconds and a tenth of
    max_time; else balanced spanning forests (a point of the spanning-tree polytope)."""
    from fwcore.marginals import bp
    from fwcore.marginals.rho import balanced_tree_rho, check_rho, matrix_tree_rho
    model = random_grid(12, 12, coupling=1.0, seed=0)
    res = trbp(model, rho_updates=0, max_iter=5)
    np.testing.assert_array_equal(res.info["rho"], matrix_tree_rho(model))
    monkeypatch.setattr(bp, "_MATRIX_TREE_COST", 1.0)
    for max_time in (None, 100.0):
        res = trbp(model, rho_updates=0, max_iter=5, max_time=max_time)
        np.testing.assert_array_equal(res.info["rho"], balanced_tree_rho(model))
        check_rho(model, res.info["rho"])
