"""Factor graphs (factors of any arity, BAYES networks, evidence) on every entry point,
against brute-force enumeration of the factor product."""
import functools
import itertools
import math

import numpy as np
import pytest

import fwcore
from fwcore import FactorGraph


def random_factor_graph(seed, n=6, max_card=3, n_factors=5, zeros=0.2):
    """Random factors of arity 1-4 with mixed cardinalities and impossible entries, and
    one feasible assignment kept feasible in every factor."""
    rng = np.random.default_rng(seed)
    card = rng.integers(2, max_card + 1, size=n)
    keep = rng.integers(0, card)
    factors = []
    for k in range(n_factors):
        arity = (1, 2, 3, 4)[k % 4]
        scope = tuple(rng.choice(n, size=arity, replace=False).tolist())
        table = rng.normal(scale=1.5, size=[card[v] for v in scope])
        table[rng.random(table.shape) < zeros] = -np.inf
        table[tuple(keep[list(scope)])] = 0.0
        factors.append((scope, table))
    return FactorGraph(card, factors)


def brute_force(fg):
    """(log Z, node marginals, MAP score) by enumerating the factor product."""
    states = np.array(list(itertools.product(*[range(c) for c in fg.card])))
    score = np.zeros(len(states))
    for scope, table in fg.factors:
        score += table[tuple(states[:, list(scope)].T)] if scope else float(table)
    log_z = np.logaddexp.reduce(score)
    p = np.exp(score - log_z)
    nodes = [np.bincount(states[:, i], weights=p, minlength=c) for i, c in enumerate(fg.card)]
    return log_z, nodes, score.max()


@pytest.mark.parametrize("seed", range(8))
def test_exact_inference_and_map_match_brute_force(seed):
    fg = random_factor_graph(seed)
    log_z, nodes, best = brute_force(fg)
    res = fwcore.exact_inference(fg, method="elimination")
    assert res.log_z == pytest.approx(log_z, abs=1e-9)
    assert len(res.node_marginals) == fg.n_vars
    for a, b in zip(res.node_marginals, nodes):
        np.testing.assert_allclose(a, b, atol=1e-9)
    m = fwcore.exact_map(fg)
    assert m.assignment.shape == (fg.n_vars,)
    assert m.score == pytest.approx(best, abs=1e-9)
    assert fg.score(m.assignment) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_certified_bounds_hold(seed):
    fg = random_factor_graph(seed, n=7, n_factors=7)
    log_z, nodes, best = brute_force(fg)
    res = fwcore.barrier_fw(fg, oracle="exact", max_time=30)
    assert res.certified and res.log_z_upper >= log_z - 1e-7
    assert len(res.node_marginals) == fg.n_vars and len(res.mu) == fg.skeleton.dim
    lp = fwcore.infer_lp(fg, max_iter=200)
    assert lp.upper_bound >= best - 1e-7 and lp.assignment.shape == (fg.n_vars,)
    for method in ("ilp", "trws"):
        m = fwcore.infer_map(fg, method=method)
        assert m.score == pytest.approx(fg.score(m.assignment))
        assert m.upper_bound is None or m.upper_bound >= best - 1e-7
        assert m.score <= best + 1e-9


def test_message_passing_is_exact_on_a_factor_tree():
    rng = np.random.default_rng(3)
    card = [2, 3, 2, 2, 3, 2]
    factors = [((0, 1, 2), rng.normal(size=(2, 3, 2))), ((2, 3, 4), rng.normal(size=(2, 2, 3))),
               ((4, 5), rng.normal(size=(3, 2))), ((1,), rng.normal(size=3))]
    fg = FactorGraph(card, factors)
    assert fg.reduced.is_forest()
    log_z, nodes, _ = brute_force(fg)
    for run in (fwcore.loopy_bp, fwcore.trbp):
        res = run(fg, damping=0.0, tol=1e-12)
        for a, b in zip(res.node_marginals, nodes):
            np.testing.assert_allclose(a, b, atol=1e-7)
    assert fwcore.trbp(fg, damping=0.0, tol=1e-12).log_z_upper == pytest.approx(log_z, abs=1e-7)


def test_reduction_folds_contained_factors_and_conditions_on_fixed_variables():
    card = [2, 2, 2, 3]
    t3 = np.log(np.arange(1, 9, dtype=float)).reshape(2, 2, 2)
    fg = FactorGraph(card, [((0, 1, 2), t3), ((2, 0), np.zeros((2, 2))),
                            ((2, 3), np.ones((2, 3))), ((3,), [0.0, -np.inf, -np.inf])])
    red = fg.reduced
    assert red.n_vars == 5 and red.card[4] == 4         # one auxiliary variable: x1, x2
    assert red.n_edges == 3                             # (0,1,2) tied to its scope only
    assert fg.skeleton.n_edges == 0                     # x3 is fixed: (2,3) became a unary
    assert fwcore.exact_inference(fg).log_z == pytest.approx(brute_force(fg)[0])


def test_a_constant_and_an_impossible_factor():
    fg = FactorGraph([2, 2], [((), np.float64(1.5)), ((0, 1), np.zeros((2, 2)))])
    assert fwcore.exact_inference(fg).log_z == pytest.approx(1.5 + math.log(4))
    bad = FactorGraph([2, 2, 2], [((0, 1, 2), np.full((2, 2, 2), -np.inf))])
    with pytest.raises(ValueError, match="no feasible assignment|infeasible"):
        fwcore.exact_inference(bad)


def test_evidence_conditions_the_factor_graph():
    fg = random_factor_graph(5)
    log_z, _, _ = brute_force(fg)
    x = fwcore.exact_map(fg).assignment
    ev = {0: int(x[0]), 3: int(x[3])}
    clamped = fwcore.apply_evidence(fg, ev)
    res = fwcore.exact_inference(clamped)
    assert res.log_z == pytest.approx(brute_force(clamped)[0])
    assert res.log_z < log_z
    for v, s in ev.items():
        assert res.node_marginals[v][s] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="state 9"):
        fwcore.apply_evidence(fg, {0: 9})


def test_bayes_network_file(tmp_path):
    """A BAYES file's CPTs multiply to the joint: log Z = 0, and evidence gives log P(e)."""
    p_a = np.array([0.3, 0.7])
    p_b = np.array([[0.9, 0.1], [0.2, 0.8]])                # P(b | a)
    p_c = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.4, 0.6], [0.0, 1.0]]])  # P(c | a, b)
    lines = ["BAYES", "3", "2 2 2", "3", "1 0", "2 0 1", "3 0 1 2"]
    for t in (p_a, p_b, p_c):
        lines += ["", str(t.size), " ".join(map(str, t.ravel()))]
    path = tmp_path / "bn.uai"
    path.write_text("\n".join(lines) + "\n")
    fg = fwcore.read_uai(path)
    assert isinstance(fg, FactorGraph) and fg.max_arity == 3
    joint = p_a[:, None, None] * p_b[:, :, None] * p_c
    res = fwcore.exact_inference(fg)
    assert res.log_z == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res.node_marginals[2], joint.sum(axis=(0, 1)), atol=1e-12)
    res = fwcore.exact_inference(fwcore.apply_evidence(fg, {2: 1}))
    assert res.log_z == pytest.approx(math.log(joint[:, :, 1].sum()))
    np.testing.assert_allclose(res.node_marginals[0], joint[:, :, 1].sum(axis=1) /
                               joint[:, :, 1].sum(), atol=1e-12)


def test_write_uai_round_trips_a_factor_graph(tmp_path):
    fg = random_factor_graph(2)
    path = tmp_path / "fg.uai"
    fwcore.write_uai(fg, path)
    back = fwcore.read_uai(path)
    assert len(back.factors) == len(fg.factors)
    for (s1, t1), (s2, t2) in zip(fg.factors, back.factors):
        assert s1 == s2
        np.testing.assert_allclose(t1, t2, rtol=1e-15)
    assert fwcore.exact_inference(back).log_z == pytest.approx(brute_force(fg)[0])


def test_extend_gives_the_reduction_the_same_score():
    fg = random_factor_graph(1)
    x = fwcore.exact_map(fg).assignment
    full = fg.extend(x)
    assert fg.reduced.score(full) == pytest.approx(fg.score(x))
    bad = x.copy()
    scope, table = next((s, t) for s, t in fg.factors if len(s) > 2)
    bad[list(scope)] = np.argwhere(np.isneginf(table))[0]
    if np.isneginf(fg.score(bad)):
        with pytest.raises(ValueError, match="score -inf"):
            fg.extend(bad)


@pytest.mark.parametrize("factors, error, msg", [
    ([((0, 0, 1), np.zeros((2, 2, 2)))], ValueError, "repeats a variable"),
    ([((0, 1, 5), np.zeros((2, 2, 2)))], ValueError, "0..2"),
    ([((0, 1, 2), np.zeros((2, 2)))], ValueError, "needs \\(2, 2, 2\\)"),
    ([((0, 1, 2), np.full((2, 2, 2), np.nan))], ValueError, "NaN"),
    ([((0.5, 1, 2), np.zeros((2, 2, 2)))], TypeError, "integer"),
    ([(0, 1, 2)], TypeError, "scope, table"),
])
def test_bad_factors(factors, error, msg):
    with pytest.raises(error, match=msg):
        FactorGraph([2, 2, 2], factors)


def test_solvers_outside_the_entry_points_say_what_to_pass():
    fg = random_factor_graph(0)
    with pytest.raises(TypeError, match="reduced"):
        fwcore.resolve_oracle("icm", fg)


def test_higher_order_instances_match_official_answers(instances):
    folder = instances / "uai2014-higher-order"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    for name in ("CSP_12", "Alchemy_11"):  # no evidence: the official answers apply as is
        fg = fwcore.read_uai(folder / f"{name}.uai")
        res = fwcore.exact_inference(fg)
        assert res.log_z == pytest.approx(fwcore.read_pr(folder / f"{name}.uai.PR"), abs=1e-3)
        for a, b in zip(res.node_marginals, fwcore.read_mar(folder / f"{name}.uai.MAR")):
            np.testing.assert_allclose(a, b, atol=1e-4)


def test_auto_map_takes_an_exact_oracle_where_tables_forbid_pairs(monkeypatch):
    """Local search cannot move between a reduction's feasible labellings: "auto" goes
    exact there even when elimination is not cheap, and stays approximate elsewhere."""
    import fwcore.auto as auto
    monkeypatch.setattr(auto, "AUTO_ELIMINATION_VARS", 0)
    monkeypatch.setattr(auto, "AUTO_COVER_VARS", 0)
    fg = random_factor_graph(4, n=9, n_factors=12)
    assert not fg.reduced.is_forest()
    assert fwcore.resolve_oracle("auto", fg.reduced).name in ("ilp", "toulbar2")
    soft = fwcore.random_grid(4, 4, coupling=1.0, seed=0)
    assert fwcore.resolve_oracle("auto", soft).name == "portfolio"
    res = fwcore.infer_map(fg)
    assert res.optimal and res.score == pytest.approx(brute_force(fg)[2])


def test_perturb_and_map_takes_a_factor_graph():
    fg = random_factor_graph(6, n=5, n_factors=4)
    res = fwcore.perturb_and_map(fg, oracle="bruteforce", n_samples=4, inflation=1,
                                 marginals="samples", seed=0)
    assert len(res.node_marginals) == fg.n_vars and np.isfinite(res.log_z)
    assert fwcore.perturb_and_map(fg, oracle="bruteforce", n_samples=2, inflation=1,
                                  marginals=None, seed=0).node_marginals is None


def test_perturb_and_map_conditions_on_the_user_variables():
    """The default marginals="condition" (it failed in restrict on every factor graph):
    one estimate per state of each of the user's variables, none for the auxiliary ones;
    impossible states get 0, and the m = 1 estimate is above log Z in expectation."""
    fg = random_factor_graph(1, n=5, zeros=0.3)
    log_z, nodes, _ = brute_force(fg)
    n = 20
    res = fwcore.perturb_and_map(fg, oracle="exact", n_samples=n, inflation=1, seed=0)
    assert res.n_oracle_calls <= n * (1 + int(fg.card.sum()))
    assert res.edge_marginals is None and len(res.node_marginals) == fg.n_vars
    for a, b in zip(res.node_marginals, nodes):
        assert a.sum() == pytest.approx(1.0) and (a[b == 0] == 0).all()
        np.testing.assert_allclose(a, b, atol=0.3)
    assert res.log_z >= log_z - 3 * res.log_z_stderr


def plaquette_graph(k, seed, zeros=0.2):
    """A k x k binary grid with a random factor on every 2 x 2 plaquette."""
    rng = np.random.default_rng(seed)
    factors = [((i,), rng.normal(size=2)) for i in range(k * k)]
    for r, c in itertools.product(range(k - 1), repeat=2):
        table = rng.normal(size=(2, 2, 2, 2))
        table[rng.random(table.shape) < zeros] = -np.inf
        v = r * k + c
        factors.append(((v, v + 1, v + k, v + k + 1), table))
    return FactorGraph([2] * (k * k), factors)


def test_scores_are_those_of_the_user_variables():
    """A decoded labelling of the reduction may put an auxiliary variable in a state its
    scope does not take: the reduction scores it -inf (infer_lp and maxproduct reported
    that), the user's variables score it finite."""
    lp, bp = plaquette_graph(4, 4), plaquette_graph(4, 5)
    runs = [(lp, fwcore.infer_lp(lp, method=m, max_iter=50)) for m in ("mplp", "subgradient")]
    runs.append((bp, fwcore.infer_map(bp, "maxproduct")))
    for fg, res in runs:
        assert np.isfinite(res.score) and res.score == fg.score(res.assignment)
        assert res.gap is None or res.gap == res.upper_bound - res.score


def test_decoded_labellings_are_feasible_and_traces_score_the_user_variables():
    """Single-variable moves (ICM, annealing) and node-wise decodings (message passing,
    the LP duals) put the auxiliary variables of a plaquette graph in states their
    scopes do not take: every method but mplp and TRW-S scored -inf on 12x12 (ICM and
    annealing also on 6x6), and the per-pass records of infer_lp carried the reduced
    model's -inf. Decoded labellings are now repaired under arc consistency, so every
    score is finite, and a trace's last score is the result's, on the user's variables."""
    for k in (6, 12):
        fg = plaquette_graph(k, 0)
        for method in ("icm", "anneal", "maxproduct", "trws"):
            res = fwcore.infer_map(fg, method, seed=0)
            assert np.isfinite(res.score) and res.score == fg.score(res.assignment), method
        runs = [fwcore.infer_lp(fg, method=m, max_iter=30) for m in ("mplp", "subgradient")]
        runs.append(fwcore.infer_map(fg, "portfolio", time_limit=0.5, seed=0))
        for res in runs:
            assert np.isfinite(res.score) and res.trace[-1].score == pytest.approx(res.score)


ENTRY_POINTS = {
    "infer": lambda fg: fwcore.infer(fg, seed=0),
    "infer/trws": lambda fg: fwcore.barrier_fw(fg, oracle="trws", seed=0, max_iter=30),
    "exact_inference": fwcore.exact_inference,
    "exact_map": fwcore.exact_map,
    **{f"infer_map/{m}": functools.partial(fwcore.infer_map, method=m)
       for m in ("ilp", "trws", "maxproduct", "icm", "portfolio")},
    **{f"infer_lp/{m}": functools.partial(fwcore.infer_lp, method=m, max_iter=100)
       for m in ("mplp", "subgradient")},
    "trbp": fwcore.trbp,
    "loopy_bp": fwcore.loopy_bp,
    "perturb_and_map": lambda fg: fwcore.perturb_and_map(fg, inflation=1, n_samples=3, seed=0),
}


@pytest.mark.parametrize("seed", range(12))
def test_every_entry_point_answers_on_the_user_variables(seed):
    """Random factor graphs with -inf entries, against brute force: assignments and their
    scores on the user's variables, certified bounds never below the exact value,
    marginals of the user's variables."""
    fg = random_factor_graph(seed, n=5, zeros=0.3)
    log_z, nodes, best = brute_force(fg)
    for name, run in ENTRY_POINTS.items():
        res = run(fg)
        if hasattr(res, "assignment"):
            assert res.assignment.shape == (fg.n_vars,), name
            assert res.score == pytest.approx(fg.score(res.assignment), abs=1e-9), name
            assert res.score <= best + 1e-9, name
            if res.upper_bound is not None:
                assert res.upper_bound >= best - 1e-7, name
        if hasattr(res, "log_z_upper") and res.certified:
            assert res.log_z_upper >= log_z - 1e-7, name
        if hasattr(res, "log_z") and res.certified:
            assert res.log_z == pytest.approx(log_z, abs=1e-8), name
        if getattr(res, "node_marginals", None) is not None:
            assert len(res.node_marginals) == fg.n_vars, name
            for a in res.node_marginals:
                assert a.sum() == pytest.approx(1.0), name
