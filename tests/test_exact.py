"""Exact inference (fwcore.exact): brute force against an itertools twin, variable
elimination against brute force on random models (multi-label, -inf entries, disconnected
graphs, isolated variables, card 1), the shared instances against their reference answers,
and the errors."""
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore.exact as exact
from fwcore.elimination import EliminationPlan, min_fill_order
from fwcore.exact import exact_inference, exact_map
from fwcore.generators import complete, grid, potts_grid
from fwcore.model import PairwiseMRF
from fwcore.results import MapResult, Status
from fwcore.io.uai import read_map, read_mar, read_pr, read_uai

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from forests import forbidden_column_chain, random_forest  # noqa: E402

UAI2014 = ["CSP_11", "DBN_14", "Grids_12", "Grids_15", "ObjectDetection_11", "Segmentation_11",
           "Segmentation_12", "pdb1akg"]
FW_FAMILIES = ["clique10", "grid5x5", "grid10x10", "rbm"]


def random_model(seed, n=None, max_card=3, p_edge=0.4, p_neg_inf=0.0):
    """A random pairwise model (any graph, cards 1..max_card) whose -inf entries leave at
    least one feasible assignment (a random x0 keeps finite scores)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8)) if n is None else n
    card = rng.integers(1, max_card + 1, size=n)
    edges = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < p_edge]
    skeleton = PairwiseMRF.from_flat(card, np.array(edges, dtype=np.int64).reshape(-1, 2),
                                     np.zeros(int(card.sum()) + sum(int(card[i] * card[j])
                                                                   for i, j in edges)))
    theta = rng.normal(scale=2.0, size=skeleton.dim)
    theta[rng.random(skeleton.dim) < p_neg_inf] = -np.inf
    x0 = rng.integers(0, card)
    theta[skeleton.flat_index(x0)] = rng.normal(size=n + len(edges))
    return skeleton.with_theta(theta)


def itertools_reference(model):
    """log Z, flat marginals and max score by a plain loop over all joint states."""
    states = np.array(list(itertools.product(*[range(int(c)) for c in model.card])))
    states = states.reshape(-1, model.n_vars)
    scores = np.array([model.score(x) for x in states])
    best = scores.max()
    w = np.exp(scores - best)
    log_z = best + math.log(w.sum())
    mu = sum(wk * model.marginal_vector(x) for wk, x in zip(w / w.sum(), states))
    return log_z, mu, best


def check_consistent(model, res):
    """Marginals are distributions and edge tables sum to their node marginals."""
    for p in res.node_marginals:
        assert p.min() >= 0 and abs(p.sum() - 1) < 1e-12
    for e, (i, j) in enumerate(model.edges):
        t = res.edge_marginals[e]
        assert t.shape == (model.card[i], model.card[j]) and t.min() >= 0
        np.testing.assert_allclose(t.sum(axis=1), res.node_marginals[i], atol=1e-12)
        np.testing.assert_allclose(t.sum(axis=0), res.node_marginals[j], atol=1e-12)
    nodes, edges = model.split_marginals(res.mu)
    for a, b in zip(nodes + edges, res.node_marginals + res.edge_marginals):
        np.testing.assert_array_equal(a, b)
    assert np.all(res.mu[model.theta == -np.inf] == 0)


# -- brute force --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_bruteforce_matches_itertools_twin(seed):
    m = random_model(seed, n=5, p_neg_inf=0.2)
    log_z, mu, best = itertools_reference(m)
    res = exact_inference(m, method="bruteforce")
    assert res.method == "bruteforce"
    assert abs(res.log_z - log_z) < 1e-10
    np.testing.assert_allclose(res.mu, mu, atol=1e-12)
    check_consistent(m, res)
    assert abs(exact_map(m, method="bruteforce").score - best) < 1e-12


def test_bruteforce_chunks_rescale(monkeypatch):
    """Many small chunks, some entirely -inf before the first feasible one, give the same
    answer as one chunk."""
    theta_model = random_model(3, n=6, max_card=3, p_edge=0.6, p_neg_inf=0.3)
    theta = theta_model.theta.copy()
    theta[theta_model.node_off[0]] = -np.inf  # x_0 = 0 impossible: the first chunks score -inf
    m = theta_model.with_theta(theta)
    whole = exact_inference(m, method="bruteforce")
    whole_map = exact_map(m, method="bruteforce")
    monkeypatch.setattr(exact, "_CHUNK_ENTRIES", 3 * (m.n_vars + m.n_edges))
    chunked = exact_inference(m, method="bruteforce")
    assert abs(chunked.log_z - whole.log_z) < 1e-12
    np.testing.assert_allclose(chunked.mu, whole.mu, atol=1e-14)
    np.testing.assert_array_equal(exact_map(m, method="bruteforce").assignment,
                                  whole_map.assignment)


# -- variable elimination vs brute force -----------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_elimination_matches_bruteforce(seed):
    rng = np.random.default_rng(1000 + seed)
    m = random_model(seed, n=int(rng.integers(1, 9)), max_card=int(rng.integers(2, 5)),
                     p_edge=float(rng.uniform(0.1, 0.9)), p_neg_inf=[0.0, 0.15, 0.4][seed % 3])
    bf = exact_inference(m, method="bruteforce")
    ve = exact_inference(m, method="elimination")
    assert ve.method == "elimination"
    assert abs(bf.log_z - ve.log_z) < 1e-10
    np.testing.assert_allclose(ve.mu, bf.mu, atol=1e-10)
    check_consistent(m, ve)
    map_bf = exact_map(m, method="bruteforce")
    map_ve = exact_map(m, method="elimination")
    assert abs(map_ve.score - map_bf.score) < 1e-10
    assert abs(m.score(map_ve.assignment) - map_ve.score) < 1e-12


def test_disconnected_isolated_and_card_one():
    """Two components, an isolated variable, and card-1 variables inside and outside edges."""
    rng = np.random.default_rng(7)
    card = [2, 3, 1, 2, 4, 1, 3, 2]
    edges = [(0, 1), (1, 2), (0, 3), (4, 5), (4, 6), (5, 6)]  # variable 7 is isolated
    unary = [rng.normal(size=c) for c in card]
    pairwise = [rng.normal(size=(card[i], card[j])) for i, j in edges]
    pairwise[4][1, 2] = -np.inf
    m = PairwiseMRF(card, unary, edges, pairwise)
    assert m.n_components() == 3
    bf = exact_inference(m, method="bruteforce")
    ve = exact_inference(m, method="elimination")
    assert abs(bf.log_z - ve.log_z) < 1e-10
    np.testing.assert_allclose(ve.mu, bf.mu, atol=1e-10)
    check_consistent(m, ve)
    np.testing.assert_allclose(ve.node_marginals[2], [1.0], atol=1e-12)
    assert ve.edge_marginals[4][1, 2] == 0
    assert abs(exact_map(m, method="elimination").score -
               exact_map(m, method="bruteforce").score) < 1e-10


def test_all_inf_rows_give_no_nan():
    """A chain whose pairwise tables forbid most pairs: many clique slices are all -inf."""
    n, k = 6, 3
    forbid = np.full((k, k), -np.inf)
    forbid[np.arange(k), (np.arange(k) + 1) % k] = 0.0  # x_{i+1} = x_i + 1 (mod k) only
    forbid[0, 0] = 0.5
    m = PairwiseMRF([k] * n, [np.arange(k, dtype=float)] * n,
                    [(i, i + 1) for i in range(n - 1)], [forbid] * (n - 1))
    bf = exact_inference(m, method="bruteforce")
    ve = exact_inference(m, method="elimination")
    assert np.isfinite(ve.mu).all()
    assert abs(bf.log_z - ve.log_z) < 1e-10
    np.testing.assert_allclose(ve.mu, bf.mu, atol=1e-10)


def test_auto_switches_on_state_space():
    assert exact_inference(grid(3, 3)).method == "bruteforce"
    chain = grid(1, 20)  # 2**20 states on a forest
    assert exact_inference(chain).method == "tree" and exact_map(chain).method == "elimination"
    big = potts_grid(4, 5, n_labels=3, seed=0)  # 3**20 states
    res = exact_inference(big)
    assert res.method == "elimination" and exact_map(big).method == "elimination"
    check_consistent(big, res)


def test_map_result_record():
    m = potts_grid(3, 3, n_labels=3, seed=4)
    for method in ("bruteforce", "elimination"):
        r = exact_map(m, method=method)
        assert isinstance(r, MapResult) and r.status is Status.CONVERGED and r.optimal
        assert r.upper_bound == r.score == m.score(r.assignment)
        assert r.assignment.dtype == np.int64 and r.method == method


def test_grid_order_keeps_width_near_treewidth():
    """On a long grid the chosen order's induced width stays near the short side (min-fill
    alone can do much worse on grids)."""
    plan = EliminationPlan(grid(8, 30), memory_limit=2**40)
    assert plan.width <= 9


# -- sum-product on forests -------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_tree_matches_bruteforce_and_elimination(seed):
    m = random_forest(seed, n=int(np.random.default_rng(seed).integers(1, 10)))
    assert m.is_forest()
    tree = exact_inference(m, method="tree")
    bf = exact_inference(m, method="bruteforce")
    ve = exact_inference(m, method="elimination")
    assert tree.method == "tree" and tree.status is Status.CONVERGED and tree.certified
    assert abs(tree.log_z - bf.log_z) < 1e-10 and abs(tree.log_z - ve.log_z) < 1e-10
    np.testing.assert_allclose(tree.mu, bf.mu, atol=1e-12)
    np.testing.assert_allclose(tree.mu, ve.mu, atol=1e-10)
    check_consistent(m, tree)


def test_tree_on_a_chain_with_a_forbidden_column():
    """Edge 3 forbids x_4 = 0 whatever x_3 is (loopy BP's fixed point misses log Z)."""
    m = forbidden_column_chain()
    tree, bf = exact_inference(m), exact_inference(m, method="bruteforce")
    assert tree.method == "tree"
    assert abs(tree.log_z - bf.log_z) < 1e-12
    np.testing.assert_allclose(tree.mu, bf.mu, atol=1e-12)
    assert tree.node_marginals[4][0] == 0.0
    assert abs(exact_inference(m, method="elimination").log_z - tree.log_z) < 1e-12


def test_tree_on_a_large_forest_matches_elimination():
    m = random_forest(3, n=2000, p_root=0.01)
    tree, ve = exact_inference(m), exact_inference(m, method="elimination")
    assert tree.method == "tree" and m.n_components() > 1
    assert abs(tree.log_z - ve.log_z) < 1e-8
    np.testing.assert_allclose(tree.mu, ve.mu, atol=1e-9)


def test_tree_edge_cases():
    empty = PairwiseMRF([], [], [], [])
    assert exact_inference(empty, method="tree").log_z == 0.0
    single = PairwiseMRF([1], [np.array([0.5])], [], [])
    assert exact_inference(single, method="tree").log_z == 0.5
    bad = PairwiseMRF([2, 2], [np.zeros(2)] * 2, [(0, 1)], [np.full((2, 2), -np.inf)])
    with pytest.raises(ValueError, match=r"log Z = -inf"):
        exact_inference(bad, method="tree")


# -- errors ----------------------------------------------------------------------------------

def test_memory_limit_error_names_size_width_and_argument():
    """The three refusals: a k-core proof, heuristic orders over the limit (said to be
    heuristic), and tables that fit with messages that do not; each names the size, the
    limit and the alternatives."""
    m = complete(14)
    with pytest.raises(ValueError, match=r"at least 1024 bytes.*memory_limit=1000 .*"
                                         r"6-core.*treewidth >= 6.*fwcore.infer"):
        exact_inference(m, method="elimination", memory_limit=1000)
    with pytest.raises(ValueError, match="memory_limit"):
        exact_map(m, method="elimination", memory_limit=1000)
    assert exact_inference(m, method="elimination", memory_limit=2**20).info["induced_width"] == 13
    with pytest.raises(ValueError, match=r"of 2048 bytes with the best order found, over "
                                         r"memory_limit=2000 .*heuristic.*fwcore.infer_map"):
        exact_inference(grid(12, 12), memory_limit=2000)  # 2-core only: no proof
    with pytest.raises(ValueError, match=r"about 34296 bytes with the best order found.*"
                                         r"induced width 5.*stored messages"):
        exact_inference(grid(5, 40), memory_limit=1000)


def test_limit_keeps_the_unlimited_order():
    """With a memory_limit, models that fit get the order chosen without one."""
    for m in (grid(8, 30), potts_grid(6, 7, n_labels=3, seed=1), complete(9),
              random_model(3, n=30, max_card=3, p_edge=0.1)):
        free = EliminationPlan(m)
        plan = EliminationPlan(m, memory_limit=free.bytes)
        assert plan.order == free.order and plan.sep == free.sep
        with pytest.raises(ValueError, match="over memory_limit"):
            EliminationPlan(m, memory_limit=free.bytes - 1)


@pytest.mark.parametrize("method", ["bruteforce", "elimination"])
def test_infeasible_model(method):
    m = random_model(5, n=4, max_card=2, p_edge=1.0)
    theta = m.theta.copy()
    theta[m.node_off[2]:m.node_off[3]] = -np.inf
    bad = m.with_theta(theta)
    with pytest.raises(ValueError, match=r"log Z = -inf"):
        exact_inference(bad, method=method)
    with pytest.raises(ValueError, match="no feasible assignment"):
        exact_map(bad, method=method)


def test_bad_arguments():
    m = grid(2, 2)
    with pytest.raises(ValueError, match="method must be one of"):
        exact_inference(m, method="junction")
    with pytest.raises(TypeError, match="PairwiseMRF"):
        exact_map(np.zeros(3))
    with pytest.raises(ValueError, match="memory_limit must be a number > 0"):
        exact_inference(m, memory_limit=0)
    with pytest.raises(TypeError, match="memory_limit"):
        exact_inference(m, memory_limit="2GB")
    with pytest.raises(ValueError, match="use method='elimination'"):
        exact_inference(grid(7, 7), method="bruteforce")
    with pytest.raises(ValueError, match=r"method='tree' needs a forest.*1 components"):
        exact_inference(grid(2, 2), method="tree")
    with pytest.raises(ValueError, match="method must be one of"):
        exact_map(grid(1, 3), method="tree")


# -- shared instances ------------------------------------------------------------------------

def check_instance(path, tol_log_z, tol_mar, method="auto"):
    m = read_uai(path)
    res = exact_inference(m, method=method)
    assert abs(res.log_z - read_pr(f"{path}.PR")) <= tol_log_z, path.name
    mar = read_mar(f"{path}.MAR")
    assert len(mar) == m.n_vars
    for i, (p, q) in enumerate(zip(res.node_marginals, mar)):
        np.testing.assert_allclose(p, q, atol=tol_mar, err_msg=f"{path.name} variable {i}")
    ref = next(p for p in (path.with_name(path.name + ext) for ext in (".MAP", ".MPE"))
               if p.exists())
    best = exact_map(m, method=method)
    assert abs(best.score - m.score(read_map(ref))) <= 1e-6, path.name


def test_every_instance_is_covered(instances):
    assert sorted(p.stem for p in instances.glob("uai2014/*.uai")) == sorted(UAI2014)
    assert sorted(p.name for p in instances.glob("fw-inference/*")) == sorted(FW_FAMILIES)


@pytest.mark.parametrize("family", FW_FAMILIES)
def test_fw_inference_instances(instances, family):
    paths = sorted(instances.glob(f"fw-inference/{family}/*.uai"))
    assert paths
    for path in paths:
        if family == "clique10":  # 12-digit brute-force answers; check both methods
            for method in ("bruteforce", "elimination"):
                check_instance(path, 1e-8, 1e-6, method)
        else:
            check_instance(path, 1e-3, 1e-4)


@pytest.mark.parametrize("name", UAI2014)
def test_uai2014_instances(instances, name):
    check_instance(instances / "uai2014" / f"{name}.uai", 1e-3, 1e-4)


def _eager_weighted_min_fill(model):
    """The twin of `min_fill_order`: recount every variable's weighted fill at every step."""
    card = model.card.tolist()
    adj = {v: set(model.adj_var[model.adj_start[v]:model.adj_start[v + 1]].tolist())
           for v in range(model.n_vars)}
    order = []
    while adj:
        def key(v):
            nb = adj[v]
            fill = sum(card[a] * card[b] for a in nb for b in nb if a < b and b not in adj[a])
            return (fill, card[v] * math.prod(card[u] for u in nb), v)
        v = min(adj, key=key)
        order.append(v)
        nb = adj.pop(v)
        for a in nb:
            adj[a].discard(v)
            adj[a] |= nb - {a}
    return order


@pytest.mark.parametrize("seed", range(6))
def test_lazy_weighted_min_fill_is_the_eager_order(seed):
    rng = np.random.default_rng(seed)
    n = 14
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]
    card = rng.integers(2, 6, size=n) if seed % 2 else np.full(n, 3)
    model = PairwiseMRF(card, None, pairs)
    order, _ = min_fill_order(model)
    assert order == _eager_weighted_min_fill(model)
