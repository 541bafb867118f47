"""Weighted mini-bucket elimination (`fwcore.marginals.wmb`) against brute force: the
bound is never below log Z, is log Z when the buckets are whole, and so are the
marginals; the fused log-sum-exp kernel has a NumPy twin."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import logsumexp

import fwcore
from fwcore.views import flat_factors
from fwcore import _wmb
from fwcore._wmb import exp_nonpositive
from fwcore.io.uai import apply_evidence
from fwcore.marginals.wmb import weighted_mini_bucket
from fwcore.results import Status

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from test_factor_graph import brute_force, random_factor_graph


def _reference_wlse(x, axes, w):
    """w log Σ_axes exp(x / w) by scipy's logsumexp (−inf where every entry is −inf; for
    w < 0, where one is)."""
    with np.errstate(divide="ignore", over="ignore"):
        return w * logsumexp(x / w, axis=axes) if axes else x


def _extreme(rng, shape):
    x = rng.normal(scale=20, size=shape)
    x[rng.random(x.shape) < 0.3] = -np.inf
    x[1] = -np.inf
    x.reshape(-1)[-1] = 700.0
    return x


@pytest.mark.parametrize("w", [0.25, 1.0, 3.0, -0.25, -1.0, -3.0])
@pytest.mark.parametrize("shape, axes", [
    ((3, 4, 2, 5), (0, 1, 2)), ((3, 4, 2, 5), (0, 2)), ((3, 4, 2, 5), (1,)),
    ((3, 4, 2, 5), ()), ((5, 3, 17), (0,)), ((5, 3, 17), (0, 1)), ((5, 17, 3, 17), (1,)),
    ((5, 17, 3, 17), (0, 2, 3)), ((40, 2), (0,)), ((2, 3, 2), (0, 2)), ((2, 3, 2), (0, 1, 2))])
def test_weighted_logsumexp_matches_scipy(w, shape, axes):
    """The passes' marginalisation (summed ``axes``; the last one summed or kept whole)
    against scipy, on −inf rows and entries and large values."""
    x = _extreme(np.random.default_rng(1), shape)
    kept = [a for a in range(len(shape)) if a not in axes]
    stride = np.zeros(len(shape), dtype=np.int64)
    size = 1
    for a in reversed(kept):
        stride[a] = size
        size *= shape[a]
    out = np.empty(size)
    _wmb.weighted_logsumexp(x.reshape(-1), np.array(shape, dtype=np.int64), stride, w, out)
    np.testing.assert_allclose(out, _reference_wlse(x, axes, w).reshape(-1), rtol=1e-12)


@pytest.mark.parametrize("w", [0.0, 0.3, 1.0, 4.0, -0.25, -1.0, -3.0])
@pytest.mark.parametrize("inner", [1, 2, 3, 15, 16, 40])
def test_rows_and_conditional_entropy_match_numpy(w, inner):
    """A forward message's rows (w = 0: the max; w < 0, a lower bound's weight: −inf
    where a row has a −inf) and the weights' gradient, H(x_v | rest) under p ∝ exp(b /
    w) (finite b when w < 0), against NumPy."""
    rng = np.random.default_rng(inner)
    x = _extreme(rng, (7, inner))
    out = np.empty(7)
    _wmb.rows_wlse(x, w, out)
    with np.errstate(over="ignore"):
        want = x.max(axis=1) if w == 0 else _reference_wlse(x, (1,), w)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    if w == 0:
        return
    if w < 0:
        x[np.isneginf(x)] = -30.0
    b = x / w
    p = np.exp(b - b.max())
    p /= p.sum()

    def entropy(q):
        q = q[q > 0]
        return -(q * np.log(q)).sum()
    assert _wmb.conditional_entropy(x, w) == pytest.approx(entropy(p) - entropy(p.sum(axis=1)),
                                                           rel=1e-9, abs=1e-12)


def test_exp_matches_numpy():
    x = np.concatenate([-np.geomspace(1e-12, 800, 4000), [0.0, -0.0, -np.inf, -707.9, -708.1]])
    out = np.empty_like(x)
    exp_nonpositive(x, out)
    reference = np.exp(x)
    normal = x >= -708
    np.testing.assert_allclose(out[normal], reference[normal], rtol=4e-16, atol=0)
    assert (out[~normal] == 0).all()


def _pairwise(seed, n=3, scale=1.5, zeros=0.0):
    rng = np.random.default_rng(seed)
    card = rng.integers(2, 4, size=n * n)
    edges = ([(i * n + j, i * n + j + 1) for i in range(n) for j in range(n - 1)] +
             [(i * n + j, (i + 1) * n + j) for i in range(n - 1) for j in range(n)])
    pw = [rng.normal(scale=scale, size=(card[i], card[j])) for i, j in edges]
    for t in pw:
        t[rng.random(t.shape) < zeros] = -np.inf
        t[0, 0] = 0.0   # the all-zero labelling stays feasible
    return fwcore.PairwiseMRF(card, [rng.normal(size=c) for c in card], edges, pw)


def _node_error(a, b):
    return max(np.abs(p - q).max() for p, q in zip(a, b))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ibound", [1, 2, 3, None])
def test_bound_holds_on_factor_graphs(seed, ibound):
    fg = random_factor_graph(seed, n=7, n_factors=9)
    log_z, nodes, _ = brute_force(fg)
    res = weighted_mini_bucket(fg, ibound=ibound, max_iter=30)
    assert res.certified
    assert res.log_z_upper >= log_z - 1e-9
    assert res.log_z_lower <= log_z + 1e-9
    assert all(np.isfinite(p).all() and abs(p.sum() - 1) < 1e-9 for p in res.node_marginals)
    if ibound is None:    # memory is ample: the last stage is whole buckets
        assert res.status is Status.CONVERGED
        assert res.log_z_upper == pytest.approx(log_z, abs=1e-9)
        assert _node_error(res.node_marginals, nodes) < 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_pairwise_exact_edges_and_bound_with_small_buckets(seed):
    m = _pairwise(seed, zeros=0.2)
    ex = fwcore.exact_inference(m)
    whole = weighted_mini_bucket(m)
    assert whole.log_z_upper == pytest.approx(ex.log_z_upper, abs=1e-9)
    assert _node_error(whole.node_marginals, ex.node_marginals) < 1e-9
    for e, f in zip(whole.edge_marginals, ex.edge_marginals):
        np.testing.assert_allclose(e, f, atol=1e-9)
    small = weighted_mini_bucket(m, ibound=2, max_iter=50)
    assert small.log_z_upper >= ex.log_z_upper - 1e-9
    assert small.status is not Status.CONVERGED or small.gap <= 1e-6


def test_moment_matching_tightens_the_first_pass():
    m = _pairwise(0, n=5, scale=2.0)
    res = weighted_mini_bucket(m, ibound=2, max_iter=40)
    bounds = res.trace.columns()["bound"]
    assert bounds[-1] < bounds[0] - 0.1


def test_evidence_is_conditioned_on():
    m = _pairwise(3, zeros=0.1)
    given = apply_evidence(m, {0: 0, 4: 1})
    ex = fwcore.exact_inference(given)
    res = weighted_mini_bucket(given)
    assert res.log_z_upper == pytest.approx(ex.log_z_upper, abs=1e-9)
    assert _node_error(res.node_marginals, ex.node_marginals) < 1e-9
    np.testing.assert_array_equal(res.node_marginals[4], np.eye(m.card[4])[1])


def test_no_feasible_state():
    """A model with no feasible assignment is a ValueError, as from every entry point
    (it gave bounds of -inf with NaN marginals): found by arc consistency, or by the
    bound (two binary labels that must differ around a triangle)."""
    fg = fwcore.FactorGraph([2, 2], [((0,), np.array([-np.inf, -np.inf])),
                                     ((0, 1), np.zeros((2, 2)))])
    differ = [[-np.inf, 0.0], [0.0, -np.inf]]
    triangle = fwcore.PairwiseMRF([2, 2, 2], None, [(0, 1), (1, 2), (0, 2)], [differ] * 3)
    for model in (fg, triangle):
        with pytest.raises(ValueError, match="no feasible assignment"):
            weighted_mini_bucket(model)


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="ibound"):
        weighted_mini_bucket(_pairwise(0), ibound=0)
    with pytest.raises(ValueError, match="memory_limit"):
        weighted_mini_bucket(fwcore.random_grid(12, seed=0), ibound=30, memory_limit=2**16)
    with pytest.raises(TypeError, match="model"):
        weighted_mini_bucket("grid.uai")


@pytest.mark.parametrize("seed", range(4))
def test_infer_approximate_runs_it_on_the_factors(seed):
    fg = random_factor_graph(seed, n=7, n_factors=9)
    log_z, nodes, _ = brute_force(fg)
    res = fwcore.infer(fg, method="approximate")
    assert res.method == "wmb" and len(res.node_marginals) == fg.n_vars
    assert res.log_z_lower - 1e-9 <= log_z <= res.log_z_upper + 1e-9
    assert _node_error(res.node_marginals, nodes) < 1e-9      # small enough to be exact
    assert fwcore.infer(fg).method.startswith("exact/")        # auto: exact where it fits


def test_a_model_whose_variables_evidence_fixes_has_no_table_left():
    """Every variable fixed by evidence: no cluster is left; the answer is the product
    of the fixed states' scores, found at once, in a timed run too."""
    model = fwcore.PairwiseMRF([2, 3], [[0.5, -np.inf], [-np.inf, -np.inf, 1.0]], [(0, 1)],
                               [np.arange(6.0).reshape(2, 3)])
    for max_time in (None, 1.0):
        res = weighted_mini_bucket(model, max_time=max_time)
        assert res.log_z_upper == res.log_z_lower == pytest.approx(0.5 + 1.0 + 2.0)
        np.testing.assert_allclose(res.node_marginals[1], [0, 0, 1])


def _twin_case(seed, ibound, twin_class=None, finite=False):
    """A random factor graph with −inf entries (none when ``finite``) and some variables
    fixed by evidence, its kernel tree and the twin's (a ``twin_class``, `WMBTwin` by
    default)."""
    from wmb_numpy import WMBTwin, mini_buckets_twin
    from fwcore.marginals import wmb
    rng = np.random.default_rng(seed)
    fg = random_factor_graph(seed, n=8, n_factors=11, zeros=0.0 if finite else 0.2)
    factors = [(s, t.copy()) for s, t in fg.factors]
    for _, t in factors:
        t[rng.random(t.shape) < (0.0 if finite else 0.15)] = -np.inf
        t.reshape(-1)[0] = 0.0
    fg = fwcore.FactorGraph(fg.card, factors)
    flat = flat_factors(fg)
    fixed = np.full(fg.n_vars, -1, dtype=np.int32)
    fixed[rng.permutation(fg.n_vars)[:seed % 3]] = 0
    order = np.array([v for v in rng.permutation(fg.n_vars) if fixed[v] < 0], dtype=np.int64)
    mb = wmb.MiniBuckets(flat, fixed, order, ibound=ibound)
    card = [int(c) for c in fg.card]
    scopes = [tuple(int(v) for v in s) for s, _ in fg.factors]
    tree = mini_buckets_twin(card, scopes, fixed, order.tolist(),
                             math.inf if ibound is None else ibound + 1)
    twin = (twin_class or WMBTwin)(card, scopes, [np.asarray(t, dtype=float)
                                                  for _, t in fg.factors],
                                   fixed, order.tolist(), tree)
    return fg, mb, twin


@pytest.mark.parametrize("seed", range(8))
def test_a_tree_over_its_memory_stops(seed):
    """`MiniBuckets` with ``max_memory``: the same tree when its two sets of messages fit,
    `TooLarge` as soon as they pass it by one entry."""
    from fwcore.marginals import wmb
    _, mb, _ = _twin_case(seed, None)
    need = 16 * mb.message_entries
    fits = wmb.MiniBuckets(mb.flat, mb.fixed, mb.order, max_memory=need)
    for name in ("c_var", "c_start", "c_scope", "c_parent", "b_start", "f_cluster"):
        np.testing.assert_array_equal(getattr(fits, name), getattr(mb, name))
    with pytest.raises(wmb.TooLarge):
        wmb.MiniBuckets(mb.flat, mb.fixed, mb.order, max_memory=need - 16)


def test_the_default_memory_is_in_proportion(monkeypatch):
    """2 GiB up to a thousand variables; from 10^4 up, with the call's fixed costs, at
    most 1.5 KB a variable (issue 39), unless an ibound chooses the tree: then a quarter
    of the memory available; never below 1 MiB."""
    from fwcore.marginals import wmb
    monkeypatch.setattr(wmb, "available_bytes", lambda: 2**40)
    assert wmb.default_memory_limit(60) == wmb.default_memory_limit(1000) == 2**31
    assert wmb.default_memory_limit(1500) == pytest.approx(2**31 * 1000 / 1500)
    for n in (10**4, 3 * 10**4, 10**5, 10**6, 10**7):
        assert 2**20 <= wmb.default_memory_limit(n) <= 1536 * n - wmb._CALL_BYTES
    assert wmb.default_memory_limit(10**4, ibound=10) == 2**38   # the user's tree
    monkeypatch.setattr(wmb, "available_bytes", lambda: 2**24)
    assert wmb.default_memory_limit(100) == 2**22


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("ibound", [1, 2, None])
def test_the_kernels_are_their_numpy_twins(seed, ibound):
    """The tree (`fwcore._wmb.mini_buckets`) and every pass (forward with the weights' step
    and moment matching, backward, decoding, the beliefs' read) against `wmb_numpy`'s
    twins, pass after pass, on factor graphs with −inf entries and evidence."""
    from fwcore.marginals import wmb
    fg, mb, twin = _twin_case(seed, ibound)
    assert mb.c_var.tolist() == twin.c_var and mb.c_parent.tolist() == twin.parent
    assert mb.b_start.tolist() == twin.b_start and mb.f_cluster.tolist() == tree_f(twin)
    assert [tuple(mb.c_scope[mb.c_start[c]:mb.c_start[c + 1]].tolist())
            for c in range(mb.n_clusters)] == twin.scope
    w = wmb.WeightedMiniBucket(mb)
    arrays = w.tree.arrays
    for k in range(4):
        step = 1.0 / (k + 1)
        bound = w.forward(step)
        want = twin.forward(step, w.eta, wmb._WEIGHT_FLOOR)
        assert bound == pytest.approx(want, rel=1e-9, abs=1e-9) or bound == want == -np.inf
        np.testing.assert_allclose(arrays["weight"], twin.weight, rtol=1e-9)
        np.testing.assert_allclose(arrays["repar"], np.concatenate(twin.repar + [[]]),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(arrays["fwd"], _flat_messages(twin.fwd), rtol=1e-9,
                                   atol=1e-9)
        w.backward()
        twin.backward()
        np.testing.assert_allclose(arrays["bwd"], _flat_messages(twin.bwd), rtol=1e-9,
                                   atol=1e-9)
        np.testing.assert_array_equal(w.decode(), twin.decode())
    flat = flat_factors(fg)
    node_off = np.concatenate([[0], np.cumsum(flat.card)])
    node, fac = np.zeros(node_off[-1]), np.zeros(len(flat.table))
    w.marginals(node, fac)
    nodes, factors = twin.read()
    for v in range(fg.n_vars):
        got = node[node_off[v]:node_off[v + 1]]
        want = (np.eye(fg.card[v])[mb.fixed[v]] if mb.fixed[v] >= 0 else
                nodes.get(v, np.full(fg.card[v], 1.0 / fg.card[v])))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    for f, want in factors.items():
        scope = flat.var[flat.start[f]:flat.start[f + 1]]
        got = fac[flat.off[f]:flat.off[f + 1]].reshape(flat.card[scope])
        got = got[tuple(mb.fixed[v] if mb.fixed[v] >= 0 else slice(None) for v in scope)]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def tree_f(twin):
    return [next((c for c in range(len(twin.own)) if f in twin.own[c]), -1)
            for f in range(len(twin.scopes))]


def _flat_messages(messages):
    return np.concatenate([m.reshape(-1) for m in messages] + [np.zeros(0)])


@pytest.mark.parametrize("mixed", [False, True])
def test_outer_products_are_the_node_marginals_outer_products(mixed):
    """`_outer_products` (in place over all edges, by index over some, by table shape with
    mixed cards) against np.outer edge by edge."""
    from fwcore.marginals.wmb import _outer_products
    rng = np.random.default_rng(0)
    grid = fwcore.potts_grid(4, n_labels=3, seed=0)
    card = rng.integers(1, 4, grid.n_vars) if mixed else grid.card
    model = fwcore.PairwiseMRF(card, [np.zeros(c) for c in card], grid.edges,
                               [np.zeros((card[i], card[j])) for i, j in grid.edges])
    for edges in (np.arange(model.n_edges), np.arange(0, model.n_edges, 2)):
        mu = np.zeros(model.dim)
        mu[:model.node_off[-1]] = rng.random(model.node_off[-1])
        want = mu.copy()
        for e in edges:
            i, j = model.edges[e]
            want[model.edge_off[e]:model.edge_off[e + 1]] = np.outer(
                mu[model.node_off[i]:model.node_off[i + 1]],
                mu[model.node_off[j]:model.node_off[j + 1]]).ravel()
        _outer_products(mu, model, edges)
        np.testing.assert_array_equal(mu, want)


def test_block_mean_field_plan_is_the_largest_k_that_fits():
    """The bisection of `_Run._plan_lower_bound` picks the k a scan of `_BLOCKS` picks: the
    largest whose trees fit in memory (the time left unbounded)."""
    from fwcore.marginals import wmb
    from fwcore.views import fixed_states
    model = fwcore.random_grid(24, coupling=1.0, seed=0)
    fixed = fixed_states(model)
    blocks = [wmb.BlockMeanField(model, fixed, k) for k in wmb._BLOCKS]
    for limit in [b.memory + 1.0 for b in blocks] + [1.0]:
        run = wmb._Run(model, None, limit, 1e-6, fwcore.loop.Deadline(None))
        run.start()
        run._pass()
        run._plan_lower_bound()
        want = next((k for k, b in zip(wmb._BLOCKS, blocks) if b.ok and b.memory <= limit),
                    None)
        got = None if run.blocks is None else next(
            k for k, b in zip(wmb._BLOCKS, blocks) if b.ok and b.entries == run.blocks.entries)
        assert got == want, limit


def test_the_beliefs_are_read_after_the_passes_deadline(monkeypatch):
    # one pass, then the passes' deadline passes (a 500x500 grid under load): the read
    # after the loop has the call's time, not the passes' (uniform marginals before)
    import time

    from fwcore.loop import TimeUp
    from fwcore.marginals import wmb
    step = wmb._Run.step

    def one_pass(self, k):
        if self.n_passes:
            self.deadline.at = time.monotonic()
            raise TimeUp
        step(self, k)
    monkeypatch.setattr(wmb._Run, "step", one_pass)
    model = fwcore.random_grid(60, coupling=1.0, seed=0)      # a read of over 2^18 entries
    res = weighted_mini_bucket(model, ibound=6, max_time=10, n_samples=0)
    assert res.n_iter == 1 and res.method == "wmb" and res.info["marginals"] == "beliefs"
    assert np.ptp(np.array(res.node_marginals)[:, 0]) > 0.1


def test_the_first_pass_runs_on_the_first_order_found():
    """The first pass runs on the first order the search finds (with an ibound, the better
    of the bandwidth order and the first min-fill try; without, the bandwidth order); the
    rest of the search runs after it and the stage starts again on the best order (a
    whole search's); with the search's share spent the first order stays."""
    from fwcore.loop import Deadline
    from fwcore.marginals import wmb
    from fwcore.views import fixed_states, flat_factors
    rng = np.random.default_rng(3)
    pairs = np.unique(np.sort(rng.integers(0, 60, (150, 2)), axis=1), axis=0)
    edges = [tuple(e) for e in pairs.tolist() if e[0] != e[1]]
    model = fwcore.PairwiseMRF(
        np.full(60, 2), [rng.normal(size=2) for _ in range(60)],
        edges, [rng.normal(size=(2, 2)) for _ in edges])
    flat, fixed = flat_factors(model), fixed_states(model)
    orders = [wmb._free_order(c, fixed)
              for c in wmb._order_search(model, flat, fixed, Deadline())]
    for ibound, first in ((3, orders[1]), (None, orders[0])):
        assert not np.array_equal(first, orders[-1])   # the search finds a better one
        run = wmb._Run(model, ibound, 2**30, 0.0, Deadline())
        run.start()
        np.testing.assert_array_equal(run.wmb.mb.order, first)
        run._pass()
        bound = run.upper
        run.step(1)
        np.testing.assert_array_equal(run.wmb.mb.order, orders[-1])
        assert run.stage_passes == 1 and run.n_passes == 2 and run.upper <= bound
        late = wmb._Run(model, ibound, 2**30, 0.0, Deadline())
        late.start()
        late._pass()
        late.search_left = 0.0
        late.step(1)
        np.testing.assert_array_equal(late.wmb.mb.order, first)


@pytest.mark.parametrize("seed", range(20))
def test_primal_graph_of_a_factor_graph_equals_its_twin(seed):
    """`_primal_graph` of a FactorGraph with evidence: the pairs of free variables that
    share a factor, as a per-factor loop lists them."""
    from fwcore.marginals import wmb
    from fwcore.views import fixed_states
    rng = np.random.default_rng(seed)
    card = rng.integers(2, 4, 12)
    scopes = [tuple(rng.choice(12, int(rng.integers(1, 5)), replace=False).tolist())
              for _ in range(15)]
    evidence = {int(v): 0 for v in rng.choice(12, 3, replace=False)}
    model = fwcore.FactorGraph(card, [(s, rng.normal(size=card[list(s)])) for s in scopes])
    model = apply_evidence(model, evidence)
    flat, fixed = flat_factors(model), fixed_states(model)
    graph = wmb._primal_graph(model, flat, fixed)
    want = {(min(a, b), max(a, b)) for f in range(len(flat.start) - 1)
            for s in [[int(v) for v in flat.var[flat.start[f]:flat.start[f + 1]]
                       if fixed[v] < 0]]
            for i, a in enumerate(s) for b in s[i + 1:]}
    got = {(v, int(u)) for v in range(len(card))
           for u in graph.adj_var[graph.adj_start[v]:graph.adj_start[v + 1]] if v < u}
    assert got == want
    assert (np.diff(graph.adj_start) == np.bincount(np.array(sorted(want)).reshape(-1),
                                                     minlength=len(card))).all()
