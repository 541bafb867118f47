"""Approximate MAP oracles (icm, qpbo, trws, maxproduct; the anytime anneal, fusion moves,
expansion and portfolio of issue 14) against brute force, and the kernels of
fwcore._oracles and fwcore._kernels.anneal against plain-NumPy twins."""
import itertools
import math
import time

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

import fwcore
from fwcore import _kernels, _oracles
from fwcore.exact import exact_map
from fwcore.model import PairwiseMRF
from fwcore.oracles import anytime
from fwcore.oracles.anytime import ExpansionOracle, Fusion, temperature_scale
from fwcore.oracles.approximate import MaxProductOracle, QPBOOracle, TRWSOracle
from fwcore.oracles.base import resolve_oracle
from fwcore.results import Status

TOL = 1e-7
SEEDS = range(25)
MASK = 2**64 - 1


# -- random models ------------------------------------------------------------------------

def random_model(seed, n=7, max_card=3, p_edge=0.5, p_inf=0.1, tree=False, submodular=False):
    """A random pairwise model with a feasible assignment; -inf entries with prob p_inf."""
    rng = np.random.default_rng(seed)
    while True:
        card = rng.integers(2, max_card + 1, size=n)
        if tree:
            edges = [(int(rng.integers(0, j)), j) for j in range(1, n)]
        else:
            edges = [(i, j) for i, j in itertools.combinations(range(n), 2)
                     if rng.random() < p_edge]
        unary = [rng.normal(size=c) for c in card]
        pair = [rng.normal(scale=1.5, size=(card[i], card[j])) for i, j in edges]
        if submodular:  # attractive: score(0,0) + score(1,1) >= score(0,1) + score(1,0)
            pair = [np.array([[w, 0.0], [0.0, w]])
                    + np.add.outer(rng.normal(size=2), rng.normal(size=2))
                    for w in np.abs(rng.normal(scale=2.0, size=len(edges)))]
        for t in unary + pair:
            t[rng.random(t.shape) < p_inf] = -np.inf
        model = PairwiseMRF(card, unary, edges, pair)
        try:
            return model, exact_map(model, method="bruteforce")
        except ValueError:  # no feasible assignment: draw again
            continue


def is_local_optimum(model, x):
    base = model.score(x)
    for i in range(model.n_vars):
        for a in range(model.card[i]):
            y = x.copy()
            y[i] = a
            if model.score(y) > base + 1e-12 * max(1.0, abs(base)):
                return False
    return True


# -- oracles vs brute force ----------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["icm", "qpbo", "trws", "maxproduct"])
def test_scores_below_optimum_and_bounds_above(name, seed):
    model, opt = random_model(seed, max_card=2 if name == "qpbo" else 3)
    oracle = resolve_oracle(name, model)
    x = oracle.argmax(model.theta)
    assert x.dtype == np.int32 and x.shape == (model.n_vars,)
    assert model.score(x) <= opt.score + TOL
    bound = oracle.upper_bound()
    if name in ("qpbo", "trws"):
        assert bound >= opt.score - TOL
    else:
        assert bound is None


@pytest.mark.parametrize("seed", SEEDS)
def test_icm_returns_a_local_optimum_from_any_start(seed):
    model, _ = random_model(seed, p_inf=0.0)
    rng = np.random.default_rng(seed)
    init = np.array([rng.integers(c) for c in model.card])
    oracle = resolve_oracle("icm", model, seed=seed)
    x = oracle.argmax(model.theta, init=init)
    assert oracle.status == Status.STALLED
    assert is_local_optimum(model, x)
    assert model.score(x) >= model.score(init)


def test_icm_warm_start_at_local_optimum_stays():
    model, opt = random_model(3, p_inf=0.0)
    x = resolve_oracle("icm", model).argmax(model.theta, init=opt.assignment)
    np.testing.assert_array_equal(x, opt.assignment)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["qpbo", "expansion"])
def test_qpbo_and_expansion_exact_on_submodular_models(name, seed):
    model, opt = random_model(seed, n=9, max_card=2, submodular=True, p_inf=0.0)
    oracle = resolve_oracle(name, model)
    x = oracle.argmax(model.theta)
    assert model.score(x) == pytest.approx(opt.score, abs=TOL)
    if name == "qpbo":
        assert oracle.upper_bound() == pytest.approx(opt.score, abs=1e-6)
    else:  # α-expansion with two labels: optimal over y >= x and y <= x, so globally
        assert oracle.status is Status.STALLED


@pytest.mark.parametrize("seed", SEEDS)
def test_qpbo_persistencies_belong_to_an_optimum(seed):
    model, opt = random_model(seed, n=8, max_card=2, p_edge=0.6, p_inf=0.05)
    oracle = resolve_oracle("qpbo", model)
    oracle.argmax(model.theta)
    labels = oracle.partial_labelling
    theta = model.theta.copy()
    for i in np.flatnonzero(labels >= 0):  # fix the labelled variables
        theta[model.node_off[i] + 1 - labels[i]] = -np.inf
    fixed = exact_map(model.with_theta(theta), method="bruteforce")
    assert fixed.score == pytest.approx(opt.score, abs=TOL)


@pytest.mark.parametrize("seed", range(8))
def test_qpbo_bound_is_the_local_polytope_optimum(seed):
    model, _ = random_model(seed, n=8, max_card=2, p_edge=0.7, p_inf=0.0)
    qpbo, lp = resolve_oracle("qpbo", model), resolve_oracle("lp", model)
    qpbo.argmax(model.theta)
    lp.argmax(model.theta)
    assert qpbo.upper_bound() == pytest.approx(lp.upper_bound(), abs=1e-6)


def test_qpbo_bound_with_forbidden_states_on_a_frustrated_triangle():
    # x0 = 1 forced; all couplings repulsive: the optimum is (1, 0, 1) or (1, 1, 0)
    rep = np.array([[0.0, 1.0], [1.0, 0.0]])
    model = PairwiseMRF([2, 2, 2], [[-np.inf, 0.0], [0.0, 0.0], [0.0, 0.0]],
                        [(0, 1), (1, 2), (0, 2)], [rep, rep, rep])
    oracle = resolve_oracle("qpbo", model)
    x = oracle.argmax(model.theta)
    assert x[0] == 1 and model.score(x) == 2.0
    assert oracle.upper_bound() >= 2.0 - TOL


@pytest.mark.parametrize("seed", SEEDS)
def test_trws_bound_valid_and_nonincreasing(seed):
    model, opt = random_model(seed, max_card=3, p_edge=0.6)
    oracle = resolve_oracle("trws", model, max_iter=30, tol=1e-12)
    oracle.argmax(model.theta)
    bounds = np.array([b for b, _ in oracle.trace])
    assert (bounds >= opt.score - TOL).all()
    finite = bounds[np.isfinite(bounds)]
    assert (np.diff(finite) <= 1e-9 * np.maximum(1.0, np.abs(finite[1:]))).all()


@pytest.mark.parametrize("seed", range(8))
def test_trws_bound_not_below_the_local_polytope_optimum(seed):
    model, _ = random_model(seed, n=6, max_card=3, p_edge=0.7, p_inf=0.0)
    trws, lp = resolve_oracle("trws", model, max_iter=200), resolve_oracle("lp", model)
    trws.argmax(model.theta)
    lp.argmax(model.theta)
    assert trws.upper_bound() >= lp.upper_bound() - 1e-7


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["trws", "maxproduct"])
def test_exact_on_trees(name, seed):
    model, opt = random_model(seed, n=8, max_card=4, tree=True, p_inf=0.1)
    oracle = resolve_oracle(name, model, max_iter=200)
    x = oracle.argmax(model.theta)
    assert model.score(x) == pytest.approx(opt.score, abs=TOL)
    if name == "trws":
        assert oracle.upper_bound() == pytest.approx(opt.score, abs=1e-5)


def test_infeasible_model_gives_minus_inf_bound():
    model = PairwiseMRF([2, 2], [[0.0, 0.0], [0.0, 0.0]], [(0, 1)],
                        [np.full((2, 2), -np.inf)])
    oracle = resolve_oracle("trws", model)
    oracle.argmax(model.theta)
    assert oracle.upper_bound() == -np.inf


# -- bad input ---------------------------------------------------------------------------

def test_bad_input_raises_clear_errors():
    model, _ = random_model(0, max_card=3)
    with pytest.raises(ValueError, match="binary"):
        resolve_oracle("qpbo", model)
    with pytest.raises(ValueError, match="damping"):
        resolve_oracle("maxproduct", model, damping=1.0)
    with pytest.raises(ValueError, match="max_iter"):
        resolve_oracle("trws", model, max_iter=0)
    with pytest.raises(ValueError, match="max_sweeps"):
        resolve_oracle("icm", model, max_sweeps=-1)
    with pytest.raises(TypeError, match="seed"):
        resolve_oracle("icm", model, seed=1.5)
    with pytest.raises(TypeError, match="unknown option dampin for oracle 'trws'; its "
                                        "options: max_iter, tol, time_limit, warm_start"):
        resolve_oracle("trws", model, dampin=0.5)
    with pytest.raises(ValueError, match="scores"):
        resolve_oracle("trws", model).argmax(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        resolve_oracle("icm", model).argmax(np.full(model.dim, np.nan))
    with pytest.raises(ValueError, match="init"):
        resolve_oracle("icm", model).argmax(model.theta, init=np.full(model.n_vars, 9))


# -- kernels vs NumPy twins -------------------------------------------------------------

def np_qpbo_graph(model, energy):
    """Twin of qpbo_build: the doubled graph as a dense (2n+2)-node capacity matrix
    (source 2n, sink 2n+1) and the constant, straight from K&R 2007 eq. 4-5."""
    n = model.n_vars
    cap = np.zeros((2 * n + 2, 2 * n + 2))
    s, t = 2 * n, 2 * n + 1
    const = 0.0
    u = energy[1:2 * n:2] - energy[0:2 * n:2]
    const += energy[0:2 * n:2].sum()
    for e, (i, j) in enumerate(model.edges):
        a, b, c, d = energy[2 * n + 4 * e: 2 * n + 4 * e + 4]
        u[j] += d - c
        if a + d <= b + c:
            u[i] += c - a
            const += a
            cap[i, j] += b + c - a - d
            cap[n + j, n + i] += b + c - a - d
        else:
            u[i] += d - b
            const += b + c - d
            cap[i, n + j] += a + d - b - c
            cap[j, n + i] += a + d - b - c
    for i in range(n):
        if u[i] > 0:
            cap[s, i] += u[i]
            cap[n + i, t] += u[i]
        else:
            const += u[i]
            cap[i, t] -= u[i]
            cap[s, n + i] -= u[i]
    return cap, const


def run_kernel_qpbo(model, energy):
    oracle = QPBOOracle(model)
    const = _oracles.qpbo_build(energy, model.edges, oracle._arc_start, oracle._head,
                                oracle._sister, oracle._r_cap, oracle._tr_cap, oracle._sub_end,
                                oracle._back)
    cap0 = oracle._r_cap.copy(), oracle._tr_cap.copy()
    flow = _oracles.qpbo_maxflow(oracle._arc_start, oracle._sub_end, oracle._head,
                                 oracle._sister, oracle._r_cap, oracle._tr_cap,
                                 oracle._in_source, *oracle._work)
    return oracle, cap0, const, flow, oracle._in_source.astype(bool)


def np_reachable_from_source(arc_start, head, r_cap, tr_cap):
    """The nodes reachable from the source in a residual graph (breadth-first search)."""
    seen = tr_cap > 0
    frontier = list(np.flatnonzero(seen))
    while frontier:
        v = frontier.pop()
        for a in range(arc_start[v], arc_start[v + 1]):
            if r_cap[a] > 0 and not seen[head[a]]:
                seen[head[a]] = True
                frontier.append(head[a])
    return seen


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("submodular", [False, True])
def test_qpbo_kernels_match_twin(seed, submodular):
    rng = np.random.default_rng(seed)
    model, _ = random_model(seed, n=9, max_card=2, p_edge=0.5, p_inf=0.0)
    energy = rng.integers(-6, 7, size=model.dim).astype(np.float64)  # integral: scipy's flow
    if submodular:  # integral attractive terms: E(0,0) + E(1,1) <= E(0,1) + E(1,0)
        blocks = energy[2 * model.n_vars:].reshape(-1, 4)
        blocks[:, 1] += np.maximum(0, blocks[:, 0] + blocks[:, 3] - blocks[:, 1] - blocks[:, 2])
    oracle, (r_cap, tr_cap), const, flow, in_source = run_kernel_qpbo(model, energy)
    cap, const_twin = np_qpbo_graph(model, energy)
    assert const == pytest.approx(const_twin)
    n2 = 2 * model.n_vars
    kernel_cap = np.zeros_like(cap)  # the kernel's graph as a dense matrix
    tails = np.repeat(np.arange(n2), np.diff(oracle._arc_start))
    np.add.at(kernel_cap, (tails, oracle._head), r_cap)
    kernel_cap[n2, :n2] = np.maximum(tr_cap, 0)
    kernel_cap[:n2, n2 + 1] = np.maximum(-tr_cap, 0)
    np.testing.assert_allclose(kernel_cap, cap)
    # the first stage sees the submodular arcs of the first copy only: they come first
    n = model.n_vars
    for i in range(n):
        split = oracle._sub_end[i]
        assert (oracle._head[oracle._arc_start[i]:split] < n).all()
        assert (oracle._head[split:oracle._arc_start[i + 1]] >= n).all()
    assert submodular is False or (oracle._sub_end == oracle._arc_start[1:n + 1]).all()
    ref = maximum_flow(csr_matrix(cap.astype(np.int64)), n2, n2 + 1).flow_value
    assert flow == pytest.approx(ref)
    # the source side is the set reachable from the source in the final residual graph,
    # and a minimum cut: its capacity equals the flow
    reach = np_reachable_from_source(oracle._arc_start, oracle._head, oracle._r_cap,
                                     oracle._tr_cap)
    np.testing.assert_array_equal(in_source, reach)
    side = np.append(in_source, [True, False])
    assert cap[side][:, ~side].sum() == pytest.approx(flow)


@pytest.mark.parametrize("seed", range(5))
def test_qpbo_maxflow_on_frustrated_grids(seed):
    """The two-stage max-flow on 12x12 grids with mixed couplings (many trees reused in
    stage 2) vs scipy, and its source side vs the residual graph."""
    from fwcore.generators import random_grid
    model = random_grid(12, seed=seed)
    energy = np.rint(-10.0 * model.theta)
    oracle, _, _, flow, in_source = run_kernel_qpbo(model, energy)
    cap, _ = np_qpbo_graph(model, energy)
    n2 = 2 * model.n_vars
    ref = maximum_flow(csr_matrix(cap.astype(np.int64)), n2, n2 + 1).flow_value
    assert flow == pytest.approx(ref)
    reach = np_reachable_from_source(oracle._arc_start, oracle._head, oracle._r_cap,
                                     oracle._tr_cap)
    np.testing.assert_array_equal(in_source, reach)


@pytest.mark.parametrize("seed", range(10))
def test_bk_maxflow_on_random_graphs(seed):
    """bk_maxflow alone on random directed graphs (float capacities) vs scipy on scaled
    integer ones; the reported source side is a cut of capacity = flow."""
    rng = np.random.default_rng(seed)
    n = 30
    cap = np.where(rng.random((n, n)) < 0.15, rng.integers(1, 50, size=(n, n)), 0).astype(float)
    np.fill_diagonal(cap, 0)
    tr = np.where(rng.random(n) < 0.3, rng.integers(-40, 41, size=n), 0).astype(float)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if cap[i, j] or cap[j, i]]
    arcs = ([(i, j, k, 0) for k, (i, j) in enumerate(pairs)] +
            [(j, i, k, 1) for k, (i, j) in enumerate(pairs)])
    arcs.sort()
    index = {(a[2], a[3]): pos for pos, a in enumerate(arcs)}
    head = np.array([a[1] for a in arcs], dtype=np.int32)
    sister = np.array([index[a[2], 1 - a[3]] for a in arcs], dtype=np.int32)
    r_cap = np.array([cap[a[0], a[1]] for a in arcs])
    arc_start = np.searchsorted([a[0] for a in arcs], np.arange(n + 1)).astype(np.int32)
    in_source = np.empty(n, np.int8)
    work = (np.empty(n, np.int32), np.empty(n, np.int8), np.empty(n, np.int64),
            np.empty(n, np.int32), np.empty(n, np.int8), np.empty(n + 1, np.int32),
            np.empty(n + 1, np.int32))
    flow = _oracles.bk_maxflow(arc_start, head, sister, r_cap, tr.copy(), in_source, *work)
    full = np.zeros((n + 2, n + 2))
    full[:n, :n] = cap
    full[n, :n] = np.maximum(tr, 0)
    full[:n, n + 1] = np.maximum(-tr, 0)
    ref = maximum_flow(csr_matrix(full.astype(np.int64)), n, n + 1).flow_value
    assert flow == pytest.approx(ref)
    side = np.append(in_source.astype(bool), [True, False])
    assert full[side][:, ~side].sum() == pytest.approx(flow)


def np_message_sweeps(model, theta, msgs, gamma, weight, damping):
    """Twin of message_sweeps; msgs[(s, t)] is M_st, a vector over x_t."""
    def table(s, t):  # θ_st as a (card s, card t) array
        e = next(k for k, (i, j) in enumerate(model.edges) if {i, j} == {s, t})
        tab = model.pairwise(e, theta)
        return tab if model.edges[e, 0] == s else tab.T

    def hat(s):
        h = model.unary(s, theta).copy()
        for (_u, v), m in msgs.items():
            if v == s:
                h = h + m
        return h

    def send(s, t):
        h = hat(s)
        with np.errstate(invalid="ignore"):
            a = np.where(h > -np.inf, gamma[s] * h - msgs[t, s], -np.inf)
        new = (a[:, None] + table(s, t)).max(axis=0)
        top = new.max()
        new = new - top if top > -np.inf else new
        old = msgs[s, t]
        if damping > 0:
            both = (new > -np.inf) & (old > -np.inf)
            new = np.where(both, damping * old + (1 - damping) * new, np.where(both, 0, new))
        msgs[s, t] = new
        return top

    bound = 0.0
    nbrs = [sorted({int(j) for e in model.edges for j in e if i in e} - {i})
            for i in range(model.n_vars)]
    for s in range(model.n_vars):
        for t in nbrs[s]:
            if t > s:
                send(s, t)
    for s in reversed(range(model.n_vars)):
        if weight[s] > 0:
            bound += weight[s] * hat(s).max()
        for t in nbrs[s]:
            if t < s:
                bound += send(s, t)
    return bound


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("cls,damping", [(TRWSOracle, 0.0), (MaxProductOracle, 0.3)])
def test_message_sweeps_match_twin(cls, damping, seed):
    model, _ = random_model(seed, n=6, max_card=3, p_edge=0.6, p_inf=0.1)
    oracle = cls(model)
    if cls is TRWSOracle:
        gamma, weight = oracle._gamma, oracle._node_weight
    else:
        gamma, weight = np.ones(model.n_vars), np.zeros(model.n_vars)
    msgs = {}
    for i, j in model.edges:
        msgs[i, j], msgs[j, i] = np.zeros(model.card[j]), np.zeros(model.card[i])
    for _ in range(3):
        bound, _ = oracle._sweep(model.theta, gamma, weight, damping)
        bound_twin = np_message_sweeps(model, model.theta, msgs, gamma, weight, damping)
    if cls is TRWSOracle:
        assert bound == pytest.approx(bound_twin, abs=1e-9)
    for e, (i, j) in enumerate(model.edges):
        off, ci, cj = oracle._msg_off[e], model.card[i], model.card[j]
        np.testing.assert_allclose(oracle._msg[off:off + cj], msgs[i, j], atol=1e-9)
        np.testing.assert_allclose(oracle._msg[off + cj:off + cj + ci], msgs[j, i], atol=1e-9)
    # decode twins: sequential labelling and max-marginals
    for sequential in (True, False):
        x, _ = oracle._decode(model.theta, sequential)
        y = np.zeros(model.n_vars, dtype=np.int64)
        for s in range(model.n_vars):
            h = model.unary(s).copy()
            for (u, v), m in msgs.items():
                if v == s:
                    if sequential and u < s:
                        e = next(k for k, ed in enumerate(model.edges) if set(ed) == {u, s})
                        h = h + model.pairwise(e)[y[u]]
                    else:
                        h = h + m
            y[s] = int(np.argmax(h))
        np.testing.assert_array_equal(x, y)


# -- reference instances -------------------------------------------------------------------

@pytest.mark.parametrize("stem,name", [("Grids_12", "qpbo"), ("Grids_12", "trws"),
                                       ("DBN_14", "qpbo"), ("pdb1akg", "trws"),
                                       ("CSP_11", "trws")])
def test_bounds_on_reference_instances(instances, stem, name):
    from fwcore.io.uai import read_map, read_uai
    model = read_uai(instances / "uai2014" / f"{stem}.uai")
    opt = model.score(read_map(instances / "uai2014" / f"{stem}.uai.MAP"))
    oracle = resolve_oracle(name, model, **({"max_iter": 50} if name == "trws" else {}))
    x = oracle.argmax(model.theta)
    assert model.score(x) <= opt + 1e-6
    assert oracle.upper_bound() >= opt - 1e-6




# -- the annealing kernel vs its NumPy twin -------------------------------------------------

def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def local(model, theta, x, v, a):
    """(finite part, number of -inf terms) of the terms of <theta, mu(x)> that involve v,
    with x_v = a."""
    y = x.copy()
    y[v] = a
    terms = [theta[model.node_off[v] + a]]
    for e, (i, j) in enumerate(model.edges):
        if v in (i, j):
            terms.append(theta[model.edge_off[e] + y[i] * model.card[j] + y[j]])
    terms = np.array(terms)
    bad = np.isneginf(terms)
    return float(terms[~bad].sum()), int(bad.sum())


def np_anneal(model, theta, x, t_start, t_end, n_moves, seed, start=0, stop=None):
    """Twin of `fwcore._kernels.anneal` (no time limit), moves start .. stop - 1 (None:
    n_moves): (x, best_x, best finite score, best -inf count, moves, accepted, state)."""
    x = x.copy()
    n = model.n_vars
    stop = n_moves if stop is None else stop
    flat = theta[model.flat_index(x)]
    bad, fin = int(np.isneginf(flat).sum()), float(flat[np.isfinite(flat)].sum())
    best_x, best = x.copy(), (bad, fin)
    cool = 1.0 if n_moves <= 1 or t_end >= t_start else (t_end / t_start) ** (4096.0 / n_moves)
    temp, state, move, accepted = t_start * cool ** float(start // 4096), seed, start, 0
    while move < stop:
        if move % 4096 == 0 and move != start:
            temp = t_start * cool ** float(move // 4096)
        v = move % n
        move += 1
        if model.card[v] < 2:
            continue
        state, r = splitmix64(state)
        a = ((r >> 32) * (int(model.card[v]) - 1)) >> 32
        if a >= x[v]:
            a += 1
        la, bad_a = local(model, theta, x, v, a)
        lc, bad_c = local(model, theta, x, v, x[v])
        if bad_a > bad_c:
            continue
        delta = la - lc
        if bad_a == bad_c and delta < 0.0:
            if delta < -40.0 * temp:
                continue
            state, r = splitmix64(state)
            if (r >> 11) * (1.0 / 9007199254740992.0) >= math.exp(delta / temp):
                continue
        x[v] = a
        fin += delta
        bad += bad_a - bad_c
        accepted += 1
        if bad < best[0] or (bad == best[0] and fin > best[1]):
            best, best_x = (bad, fin), x.copy()
    return x, best_x, best[1], best[0], move - start, accepted, state


@pytest.mark.parametrize("seed", range(12))
def test_anneal_kernel_matches_twin(seed):
    model, _ = random_model(seed, n=6, max_card=3, p_inf=0.15)
    rng = np.random.default_rng(seed)
    x0 = rng.integers(0, model.card).astype(np.int32)
    t_start, t_end = [(2.0, 0.05), (0.3, 0.3), (50.0, 1e-3)][seed % 3]
    n_moves = [500, 9000, 13000][seed % 3]
    x, best_x = x0.copy(), np.empty_like(x0)
    got = _kernels.anneal(model.theta, model.graph, x, best_x, t_start, t_end, n_moves, 0,
                          n_moves, 0.0, seed, np.empty_like(x0))
    tx, tbest, fin, bad, moves, accepted, state = np_anneal(model, model.theta, x0, t_start,
                                                            t_end, n_moves, seed)
    np.testing.assert_array_equal(x, tx)
    np.testing.assert_array_equal(best_x, tbest)
    assert got[1:] == (bad, moves, accepted, state)
    assert got[0] == pytest.approx(fin, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_anneal_kernel_cut_into_calls_walks_as_one_call(seed):
    """Each call goes on from the last one's move, labelling and generator state (cuts
    inside and at the ends of the 4096-move temperature blocks): the walk of one call,
    the twin's from the same start; the best of the calls is the one call's best."""
    model, _ = random_model(seed, n=6, max_card=3, p_inf=0.15)
    x0 = np.random.default_rng(seed).integers(0, model.card).astype(np.int32)
    n_moves, cuts = 13000, [0, 1000, 4096, 4097, 9000, 13000]
    x, best_x, state, best = x0.copy(), np.empty_like(x0), seed, None
    for start, stop in zip(cuts[:-1], cuts[1:]):
        x_start, state_start = x.copy(), state
        fin, bad, moves, _, state = _kernels.anneal(model.theta, model.graph, x, best_x, 2.0,
                                                    0.05, n_moves, start, stop, 0.0, state,
                                                    np.empty_like(x0))
        assert moves == stop - start
        tx, _, tfin, tbad, _, _, tstate = np_anneal(model, model.theta, x_start, 2.0, 0.05,
                                                    n_moves, state_start, start, stop)
        np.testing.assert_array_equal(x, tx)
        assert state == tstate
        assert bad == tbad and fin == pytest.approx(tfin, abs=1e-9)
        if best is None or bad < best[0] or (bad == best[0] and fin > best[1]):
            best = (bad, fin)
    whole = np_anneal(model, model.theta, x0, 2.0, 0.05, n_moves, seed)
    np.testing.assert_array_equal(x, whole[0])
    assert state == whole[6]
    assert best[0] == whole[3] and best[1] == pytest.approx(whole[2], abs=1e-9)


def test_anneal_kernel_best_copy_after_log_overflow():
    # more accepted moves than variables between two bests: best_x is a full copy
    model = fwcore.random_grid(3, seed=1)
    x0 = np.zeros(model.n_vars, dtype=np.int32)
    x, best_x = x0.copy(), np.empty_like(x0)
    res = _kernels.anneal(model.theta, model.graph, x, best_x, 5.0, 0.01, 20000, 0, 20000,
                          0.0, 7, np.empty_like(x0))
    _, tbest, fin, _, _, _, _ = np_anneal(model, model.theta, x0, 5.0, 0.01, 20000, 7)
    np.testing.assert_array_equal(best_x, tbest)
    assert model.score(best_x) == pytest.approx(res[0], abs=1e-9)


# -- every new solver vs brute force -----------------------------------------------------------

def _solvers(model):
    yield "anneal", resolve_oracle("anneal", model, sweeps=50, seed=0)
    yield "expansion", resolve_oracle("expansion", model)
    yield "swap", resolve_oracle("swap", model)
    yield "portfolio", resolve_oracle("portfolio", model, anytime=True, seed=0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_card", [2, 4])
def test_never_above_optimum_nor_below_init(seed, max_card):
    model, opt = random_model(seed, n=7, max_card=max_card, p_inf=0.1)
    feasible_init = opt.assignment.copy()
    rng = np.random.default_rng(seed)
    for i in rng.choice(model.n_vars, 2, replace=False):  # perturb: maybe infeasible
        feasible_init[i] = rng.integers(model.card[i])
    for name, oracle in _solvers(model):
        for init in (None, feasible_init):
            x = oracle.argmax(model.theta, init=init, time_limit=0.05)
            assert model.score(x) <= opt.score + TOL, name
            if init is not None:
                assert model.score(x) >= model.score(init) - TOL, name


@pytest.mark.parametrize("seed", SEEDS)
def test_anneal_never_leaves_the_feasible_set(seed):
    # hot (t_start far above the scores' spread): the walk's final state is still feasible
    model, opt = random_model(seed, n=8, max_card=3, p_inf=0.3)
    x = opt.assignment.astype(np.int32)
    best = np.empty_like(x)
    _kernels.anneal(model.theta, model.graph, x, best, 100.0, 50.0, 1600, 0, 1600, 0.0, seed,
                    np.empty_like(x))
    assert np.isfinite(model.score(x)) and model.score(best) == opt.score


@pytest.mark.parametrize("seed", SEEDS)
def test_anneal_finds_the_optimum_of_small_models(seed):
    model, opt = random_model(seed, n=7, max_card=3, p_inf=0.0)
    x = resolve_oracle("anneal", model, sweeps=3000, seed=seed).argmax(model.theta)
    assert model.score(x) == pytest.approx(opt.score, abs=TOL)


@pytest.mark.parametrize("seed", SEEDS)
def test_fusion_of_constant_labellings_is_exact_on_submodular_models(seed):
    model, opt = random_model(seed, n=9, max_card=2, submodular=True, p_inf=0.0)
    zeros, ones = (np.full(model.n_vars, k, dtype=np.int32) for k in (0, 1))
    x, score = Fusion(model).fuse(model.theta, zeros, ones)
    assert score == pytest.approx(opt.score, abs=TOL) == model.score(x)


@pytest.mark.parametrize("seed", SEEDS)
def test_fusion_never_worse_than_the_incumbent(seed):
    model, _ = random_model(seed, n=8, max_card=3, p_inf=0.2)
    rng = np.random.default_rng(seed)
    fusion = Fusion(model)
    for _ in range(5):
        x, y = (rng.integers(0, model.card).astype(np.int32) for _ in range(2))
        fused, score = fusion.fuse(model.theta, x, y)
        assert score == model.score(fused) and score >= model.score(x)
        assert np.all((fused == x) | (fused == y))


def test_fusion_starts_a_move_only_when_one_fits_before_the_deadline():
    model, _ = random_model(0, n=8, max_card=3, p_inf=0.0)
    fusion = Fusion(model)
    assert fusion.longest == anytime._MOVE_SECONDS * (model.n_vars + model.n_edges)
    x = np.zeros(model.n_vars, dtype=np.int32)
    fusion.fuse(model.theta, x, x + 1)
    need = anytime._MOVE_MARGIN * fusion.longest
    assert fusion.fits(time.perf_counter() + need + 1.0)
    assert not fusion.fits(time.perf_counter() + 0.5 * need)
    # an expansion call given less than a move's time returns its start, MAX_TIME
    expansion = ExpansionOracle(model)
    expansion.fusion.longest = 10.0
    assert np.array_equal(expansion.argmax(model.theta, init=x, time_limit=1.0), x)
    assert expansion.status is Status.MAX_TIME


@pytest.mark.parametrize("seed", SEEDS)
def test_swap_ends_where_no_swap_move_improves_on_attractive_potts(seed):
    # attractive Potts: every αβ-swap move is submodular, so QPBO solves each exactly and
    # a STALLED result has no improving swap move (checked by enumerating each move)
    model = fwcore.potts_grid(2, 3, n_labels=3, coupling=0.0, seed=seed)
    theta = model.theta.copy()
    theta[model.edge_off[0]:] = np.tile(np.eye(3).ravel() * 0.8, model.n_edges)
    model = model.with_theta(theta)
    oracle = resolve_oracle("swap", model)
    x = oracle.argmax(model.theta)
    assert oracle.status is Status.STALLED
    for a, b in itertools.combinations(range(3), 2):
        free = np.flatnonzero((x == a) | (x == b))
        for bits in itertools.product((a, b), repeat=free.size):
            y = x.copy()
            y[free] = bits
            assert model.score(y) <= model.score(x) + TOL


def test_expansion_on_a_metric_potts_chain_is_exact():
    # attractive Potts on a chain: each expansion move is submodular and QPBO solves it
    model = fwcore.potts_grid(1, 12, n_labels=4, coupling=0.0, seed=3)
    theta = model.theta.copy()
    theta[model.edge_off[0]:] = np.tile(np.eye(4).ravel() * 0.7, model.n_edges)
    model = model.with_theta(theta)
    opt = fwcore.infer_map(model, method="tree")
    x = resolve_oracle("expansion", model).argmax(model.theta)
    assert model.score(x) >= opt.score - 2 * 0.7 - TOL  # α-expansion's factor-2 bound
    assert model.score(x) <= opt.score + TOL


# -- time limits, warm starts, seeds ---------------------------------------------------------

def test_anneal_respects_time_limit_and_reports_it():
    model = fwcore.random_grid(30, seed=0)
    oracle = resolve_oracle("anneal", model, sweeps=10**6, seed=0)
    x = oracle.argmax(model.theta, time_limit=0.05)
    assert oracle.status is Status.MAX_TIME
    assert oracle.n_moves < 10**6 * model.n_vars
    assert np.isfinite(model.score(x))


def test_anytime_anneal_plans_a_schedule_for_its_time_limit():
    model = fwcore.random_grid(20, seed=0)
    oracle = resolve_oracle("anneal", model, sweeps=1, anytime=True, seed=0)
    oracle.argmax(model.theta, time_limit=0.2)
    assert oracle.status is Status.MAX_TIME
    assert oracle.n_moves > 20 * model.n_vars     # more than the probe and `sweeps`
    oracle.argmax(model.theta)                      # no time limit: the fixed effort
    assert oracle.status is Status.STALLED and oracle.n_moves == model.n_vars


def test_anneal_is_reproducible_from_seed_and_uses_init():
    model, _ = random_model(4, n=12, max_card=3, p_inf=0.1)
    a, b = (resolve_oracle("anneal", model, sweeps=20, seed=5) for _ in range(2))
    np.testing.assert_array_equal(a.argmax(model.theta), b.argmax(model.theta))
    init = a.argmax(model.theta)
    cold = resolve_oracle("anneal", model, sweeps=1, t_start=1e-3, t_end=1e-3, seed=5)
    warm = cold.argmax(model.theta, init=init)
    assert model.score(warm) >= model.score(init)


def test_infer_map_portfolio_spends_time_and_traces_progress():
    model = fwcore.random_grid(24, seed=0)  # too large to plan elimination within 0.5 s
    res = fwcore.infer_map(model, method="portfolio", max_time=0.5, seed=0)
    assert res.status in (Status.MAX_TIME, Status.CONVERGED)
    cols = res.trace.columns()
    assert len(res.trace) >= 2
    assert np.all(np.diff(cols["score"]) >= 0) and np.all(np.diff(cols["time"]) >= 0)
    assert np.all(np.diff(cols["bound"]) <= 0)
    assert cols["score"][-1] == res.score and cols["bound"][-1] == res.upper_bound
    fast = fwcore.infer_map(model, method="portfolio")    # no time limit: members only
    assert len(fast.trace) == 1 and res.score >= fast.score


def test_anytime_portfolio_stops_when_the_bound_proves_optimality():
    model, opt = random_model(2, n=9, max_card=2, submodular=True, p_inf=0.0)
    oracle = resolve_oracle("portfolio", model, anytime=True, seed=0)
    x = oracle.argmax(model.theta, time_limit=30.0)
    assert oracle.status is Status.CONVERGED
    assert model.score(x) == pytest.approx(opt.score, abs=TOL)
    assert len(oracle.progress) == 1


def test_anytime_portfolio_on_multi_label_models_with_impossible_states():
    model, opt = random_model(7, n=8, max_card=4, p_inf=0.2)
    res = fwcore.infer_map(model, method="portfolio", max_time=0.2, seed=1)
    assert res.score <= opt.score + TOL
    assert res.upper_bound >= opt.score - TOL


def test_temperature_scale():
    model = fwcore.random_grid(4, coupling=2.0, seed=0)
    blocks = model.theta[model.edge_off[0]:].reshape(-1, 4)
    assert temperature_scale(model, model.theta) == pytest.approx(
        np.mean(blocks.max(1) - blocks.min(1)))
    flat = np.zeros(model.dim)
    assert temperature_scale(model, flat) == 1.0


def test_bad_options_raise_clear_errors():
    model, _ = random_model(0, max_card=3)
    with pytest.raises(ValueError, match="t_end"):
        resolve_oracle("anneal", model, t_start=0.1, t_end=1.0)
    with pytest.raises(ValueError, match="sweeps"):
        resolve_oracle("anneal", model, sweeps=0)
    with pytest.raises(TypeError, match="anytime"):
        resolve_oracle("anneal", model, anytime="yes")
    with pytest.raises(TypeError, match="anytime"):
        resolve_oracle("portfolio", model, anytime=1)
    with pytest.raises(ValueError, match="max_cycles"):
        resolve_oracle("expansion", model, max_cycles=0)
