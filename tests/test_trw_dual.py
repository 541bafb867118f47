"""The tree-decomposition TRW bound (`fwcore.marginals.trw_dual`) and its kernels against NumPy
twins and exact log Z."""
import itertools

import numpy as np
import pytest
from scipy.optimize import check_grad

import fwcore
from fwcore import _kernels as K
from fwcore.exact import exact_inference
from fwcore.model import PairwiseMRF
from fwcore.loop import Deadline
from fwcore.marginals.trw_dual import TreeDecomposition, trw_dual_bound
from fwcore.results import Status


def random_model(rng, neg_inf=True):
    """A small connected-or-not model with mixed cardinalities and some -inf entries, with
    at least one feasible assignment."""
    n = int(rng.integers(2, 6))
    card = rng.integers(1, 4, n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    sizes = np.concatenate([card, card[edges[:, 0]] * card[edges[:, 1]]]).astype(np.int64)
    theta = rng.uniform(-2.0, 2.0, int(sizes.sum()))
    if neg_inf:
        theta[rng.random(theta.size) < 0.1] = -np.inf
    model = PairwiseMRF.from_flat(card, edges, theta)
    x = [int(rng.integers(c)) for c in card]  # make one assignment feasible
    theta = model.theta.copy()
    for i in range(n):
        theta[model.node_off[i] + x[i]] = 0.0
    for e, (i, j) in enumerate(model.edges):
        theta[model.edge_off[e] + x[i] * card[j] + x[j]] = 0.0
    return model.with_theta(theta)


def forest_partition_twin(n, edges):
    """First-fit forests by plain union-find."""
    parents, out = [], []
    for i, j in edges:
        for k, up in enumerate(parents + [None]):
            if up is None:
                up = list(range(n))
                parents.append(up)

            def root(a):
                while up[a] != a:
                    a = up[a]
                return a
            a, b = root(i), root(j)
            if a != b:
                up[a] = b
                out.append(k)
                break
    return np.array(out, dtype=np.int32), max(len(parents), 1)


def bruteforce_forest(model, node, edge_tables):
    """log Z, node marginals (flat) and edge tables' marginals of the model whose edges
    are ``edge_tables`` {e: table} and unary log-potentials ``node`` (flat)."""
    states = list(itertools.product(*[range(c) for c in model.card]))
    scores = np.array([sum(node[model.node_off[i] + x[i]] for i in range(model.n_vars))
                       + sum(t[x[model.edges[e, 0]], x[model.edges[e, 1]]]
                             for e, t in edge_tables.items()) for x in states])
    top = scores.max()
    p = np.exp(scores - top)
    log_z = np.log(p.sum()) + top
    p /= p.sum()
    mu = np.zeros(int(model.node_off[-1]))
    pair = {e: np.zeros_like(t) for e, t in edge_tables.items()}
    for x, q in zip(states, p):
        for i in range(model.n_vars):
            mu[model.node_off[i] + x[i]] += q
        for e in pair:
            pair[e][x[model.edges[e, 0]], x[model.edges[e, 1]]] += q
    return log_z, mu, pair


@pytest.mark.parametrize("seed", range(40))
def test_forest_partition_matches_twin_and_makes_forests(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
    edges = np.array(rng.permutation(pairs) if pairs else [], dtype=np.int32).reshape(-1, 2)
    forest, m = K.forest_partition(n, edges)
    twin, m_twin = forest_partition_twin(n, edges.tolist())
    np.testing.assert_array_equal(forest, twin)
    assert m == (m_twin if len(edges) else 0)
    for t in range(m):  # acyclic: edges = variables - components
        sub = edges[forest == t]
        model = PairwiseMRF.from_flat(np.full(n, 2), sub, np.zeros(2 * n + 4 * len(sub)))
        assert model.is_forest()


@pytest.mark.parametrize("seed", range(30))
def test_forest_sum_product_matches_bruteforce(seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng)
    m = int(rng.integers(1, 4))
    forests = [np.zeros(model.n_edges, bool) for _ in range(m)]
    for e in range(model.n_edges):  # each edge into a random forest it keeps acyclic
        for t in rng.permutation(m):
            forests[t][e] = True
            trial = PairwiseMRF.from_flat(model.card, model.edges[forests[t]],
                                          np.zeros(int(model.node_off[-1]) + int(sum(
                                              np.diff(model.edge_off)[forests[t]]))))
            if trial.is_forest():
                break
            forests[t][e] = False
    dec = TreeDecomposition(model, forests, np.full(m, 1.0 / m))
    phi = dec.start() + rng.normal(size=dec.start().size)
    node, edge = dec._project(phi)
    value, _, mu, edge_mu = dec.value_grad(phi)
    total = 0.0
    for t in range(m):
        tables = {}
        for e in np.flatnonzero(forests[t]):
            rows = np.flatnonzero((dec.entry_forest == t) & (dec.entry >= model.edge_off[e])
                                  & (dec.entry < model.edge_off[e + 1]))
            tables[e] = (edge[rows].reshape(model.card[model.edges[e]]), rows)
        log_z, mu_t, pair = bruteforce_forest(model, node[t], {e: tb for e, (tb, _) in
                                                               tables.items()})
        total += log_z / m
        np.testing.assert_allclose(mu[t], mu_t, atol=1e-12)
        for e, (_, rows) in tables.items():
            np.testing.assert_allclose(edge_mu[rows], pair[e].ravel(), atol=1e-12)
    assert value == pytest.approx(total, rel=1e-12, abs=1e-12)


def test_value_grad_is_the_gradient():
    rng = np.random.default_rng(0)
    model = fwcore.random_grid(4, coupling=1.5, seed=0)
    forest, m = K.forest_partition(model.n_vars, model.edges)
    extra = fwcore.marginals.rho.max_spanning_forest(model.n_vars, model.edges,
                                           rng.random(model.n_edges)) > 0.5
    dec = TreeDecomposition(model, [forest == t for t in range(m)] + [extra], [0.3, 0.3, 0.4])
    x = dec.start() + rng.normal(size=dec.start().size)
    assert check_grad(lambda x: dec.value_grad(x)[0], lambda x: dec.value_grad(x)[1],
                      x) < 1e-5


@pytest.mark.parametrize("seed", range(25))
def test_bound_is_above_log_z(seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng)
    log_z = exact_inference(model).log_z
    bound, beliefs, n_eval, _ = trw_dual_bound(model, rho_updates=3, max_iter=30)
    assert np.isfinite(bound) and bound >= log_z - 1e-9 and n_eval > 0
    assert beliefs.shape == (model.dim,) and np.all(beliefs >= 0)


def test_bound_is_log_z_on_a_tree_and_tight_near_trbp_elsewhere():
    chain = fwcore.random_grid(1, 12, coupling=2.0, seed=1)
    assert trw_dual_bound(chain)[0] == pytest.approx(exact_inference(chain).log_z, abs=1e-8)
    model = fwcore.random_grid(6, coupling=1.0, seed=5)
    bp = fwcore.trbp(model)
    assert bp.converged
    bound = trw_dual_bound(model, rho_updates=20)[0]
    assert exact_inference(model).log_z <= bound <= bp.info["primal"] * 1.002


def test_a_passed_deadline_still_gives_a_bound():
    model = fwcore.random_grid(8, coupling=3.0, seed=2)
    bound, _, n_eval, status = trw_dual_bound(model, deadline=Deadline(0.0))
    assert n_eval == 1 and bound >= exact_inference(model).log_z
    assert status is Status.MAX_TIME
