"""The ``aobb`` oracle (issue 37): mini-bucket bound and AND/OR branch and bound on the
factors of a model, against brute force on small random factor graphs of arity 1-4 with
-inf entries and evidence, each kernel of `fwcore._search` against a NumPy twin."""
import itertools
import logging

import numpy as np
import pytest

import fwcore
from fwcore import _search
from fwcore.io.uai import apply_evidence
from fwcore.oracles import resolve_oracle
from fwcore.oracles.search import FactorView, MiniBuckets
from fwcore.results import Status


def random_factor_graph(seed, n=None, n_factors=None, max_arity=4, p_inf=None):
    """A random factor graph: n variables of 1-3 states, a unary each, n_factors factors
    of arity 2..max_arity with a share p_inf of -inf entries."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10)) if n is None else n
    n_factors = int(rng.integers(2, 12)) if n_factors is None else n_factors
    p_inf = float(rng.choice([0.0, 0.1, 0.4])) if p_inf is None else p_inf
    card = rng.integers(1, 4, size=n)
    factors = [((v,), rng.normal(size=card[v])) for v in range(n)]
    for _ in range(n_factors):
        k = int(rng.integers(2, max_arity + 1))
        scope = tuple(int(v) for v in rng.choice(n, size=min(k, n), replace=False))
        table = 2 * rng.normal(size=[card[v] for v in scope])
        table[rng.random(table.shape) < p_inf] = -np.inf
        factors.append((scope, table))
    return fwcore.FactorGraph(card, factors)


def brute_force_max(fg):
    """max_x Σ_f θ_f(x) by enumeration (-inf when nothing is feasible)."""
    best = -np.inf
    for x in itertools.product(*[range(c) for c in fg.card]):
        best = max(best, fg.score(np.array(x)))
    return best


def view_functions(view):
    return view.card, view.start, view.var, view.stride, view.off


def function_table(card, start, var, stride, off, val, k):
    """Function k's table as an array over its scope (NumPy twin of the flat layout)."""
    scope = var[start[k]:start[k + 1]]
    shape = tuple(int(card[v]) for v in scope)
    idx = np.indices(shape).reshape(len(shape), -1) if shape else np.zeros((0, 1), int)
    flat = off[k] + (stride[start[k]:start[k + 1]][:, None] * idx).sum(axis=0)
    return val[flat].reshape(shape)


@pytest.mark.parametrize("seed", range(60))
def test_aobb_finds_the_maximum_and_its_bound_holds(seed):
    fg = random_factor_graph(seed)
    exact = brute_force_max(fg)
    for cap in (2, 16, None):
        if exact == -np.inf:
            with pytest.raises(ValueError):
                fwcore.infer_map(fg, "aobb", cap=cap)
            continue
        res = fwcore.infer_map(fg, "aobb", cap=cap)
        assert res.status is Status.CONVERGED
        assert res.score == pytest.approx(exact, abs=1e-9)
        assert res.upper_bound >= exact - 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_aobb_with_evidence(seed):
    fg = random_factor_graph(seed, n=8, n_factors=10, p_inf=0.1)
    rng = np.random.default_rng(seed)
    observed = {int(v): int(rng.integers(fg.card[v])) for v in rng.choice(8, 3, replace=False)}
    fg = apply_evidence(fg, observed)
    exact = brute_force_max(fg)
    if exact == -np.inf:
        return
    res = fwcore.infer_map(fg, "aobb", cap=4)
    assert res.score == pytest.approx(exact, abs=1e-9)
    assert all(res.assignment[v] == s for v, s in observed.items())


@pytest.mark.parametrize("seed", range(30))
def test_factor_view_scores_as_the_model(seed):
    fg = random_factor_graph(seed, p_inf=0.2)
    red = fg.reduced
    view = FactorView(red)
    assert view.aux.size == len(fg.aux_factors)   # every auxiliary variable maximised out
    val = view.tables(red.theta)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        x = np.array([rng.integers(c) for c in fg.card])
        xv = view.restrict(np.concatenate([x, np.zeros(red.n_vars - fg.n_vars, int)]))
        assert _search.score(*view_functions(view), val, view.n_factors, xv) == \
            pytest.approx(fg.score(x)) or fg.score(x) == -np.inf
        full = view.extend(xv, red.theta)
        assert red.score(full) == pytest.approx(fg.score(x)) or fg.score(x) == -np.inf


def test_row_major_twin():
    card = np.array([2, 3, 4, 5], dtype=np.int32)
    start = np.array([0, 3, 3, 5], dtype=np.int64)
    var = np.array([0, 2, 3, 3, 1], dtype=np.int32)
    stride, off = _search.row_major(card, start, var)
    for j in range(3):
        shape = card[var[start[j]:start[j + 1]]]
        assert np.array_equal(stride[start[j]:start[j + 1]],
                              np.array(np.zeros(shape).strides, dtype=np.int64) // 8)
        assert off[j + 1] - off[j] == np.prod(shape)


def test_crossings_twin():
    rng = np.random.default_rng(0)
    parent = np.array([-1, 0, 0, 1, 1, 2, 5, -1, 7], dtype=np.int64)
    src = rng.integers(0, 9, size=30).astype(np.int32)

    def ancestors(w):
        while w >= 0:
            yield w
            w = parent[w]
    target = np.array([rng.choice(list(ancestors(parent[s])) + [-1]) if parent[s] >= 0
                       else -1 for s in src], dtype=np.int32)
    start, ids = _search.crossings(parent, src, target)
    for w in range(9):
        expect = sorted(q for q in range(30) if w in list(ancestors(src[q]))
                        and (target[q] < 0 or w not in list(ancestors(target[q]))))
        assert sorted(ids[start[w]:start[w + 1]]) == expect


def _plan(fg, cap):
    view = FactorView(fg.reduced)
    mb = MiniBuckets(view, 2**26)
    return view, mb, mb.plan(cap)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("cap", [2, 8, 1000])
def test_minibucket_plan_properties(seed, cap):
    fg = random_factor_graph(seed)
    view, mb, plan = _plan(fg, cap)
    m, pos = view.n_factors, mb.pos
    f_start, f_var = plan["f_start"], plan["f_var"]
    scope = [set(f_var[f_start[k]:f_start[k + 1]].tolist()) for k in range(f_start.size - 1)]
    bucket = {}
    for q in range(plan["n_messages"]):
        v = int(plan["src"][q])
        members = plan["mm_fun"][plan["mm_start"][q]:plan["mm_start"][q + 1]]
        union = set().union(*[scope[k] for k in members])
        assert v in union and scope[m + q] == union - {v}
        # every member's bucket is v: v is its first-eliminated variable
        assert all(min(scope[k], key=lambda u: pos[u]) == v for k in members)
        sizes = np.prod(view.card[list(union)].astype(float))
        assert sizes <= cap or len(members) == 1 or max(
            np.prod(view.card[list(scope[k])].astype(float)) for k in members) == sizes
        tgt = plan["target"][q]
        assert tgt == (min(scope[m + q], key=lambda u: pos[u]) if scope[m + q] else -1)
        for k in members:
            bucket[int(k)] = bucket.get(int(k), 0) + 1
    # each function is a member once: originals with a scope, messages with a target
    expected = [k for k in range(m) if scope[k]] + [m + q for q in range(plan["n_messages"])
                                                     if plan["target"][q] >= 0]
    assert sorted(bucket) == expected and set(bucket.values()) == {1}


def minibucket_messages_twin(view, plan, val, moment_matching=True):
    """The messages of `minibucket_messages` by NumPy broadcasting (Flerova et al. 2011)."""
    card, m = view.card, view.n_factors
    f = (card, plan["f_start"], plan["f_var"], plan["f_stride"], plan["f_off"])
    val = val.copy()
    q0 = 0
    n_msg = plan["n_messages"]
    while q0 < n_msg:
        q1 = q0
        while q1 < n_msg and plan["src"][q1] == plan["src"][q0]:
            q1 += 1
        v = int(plan["src"][q0])
        sums = []
        for q in range(q0, q1):
            axes = [v] + plan["f_var"][plan["f_start"][m + q]:plan["f_start"][m + q + 1]].tolist()
            total = np.zeros([card[u] for u in axes])
            for k in plan["mm_fun"][plan["mm_start"][q]:plan["mm_start"][q + 1]]:
                sc = plan["f_var"][plan["f_start"][k]:plan["f_start"][k + 1]].tolist()
                t = function_table(*f, val, k)
                t = t.transpose(np.argsort([axes.index(u) for u in sc]))
                total = total + t.reshape([card[u] if u in sc else 1 for u in axes])
            sums.append(total)
        if moment_matching and len(sums) > 1:
            mu = np.array([s.reshape(s.shape[0], -1).max(axis=1) for s in sums])
            bad = np.isneginf(mu).any(axis=0)
            mean = np.where(bad, 0.0, mu).mean(axis=0)
            for k, s in enumerate(sums):
                shift = np.where(bad, -np.inf, mean - np.where(bad, 0.0, mu[k]))
                sums[k] = s + shift.reshape([-1] + [1] * (s.ndim - 1))
        for k, q in enumerate(range(q0, q1)):
            msg = sums[k].max(axis=0)
            val[plan["f_off"][m + q]:plan["f_off"][m + q + 1]] = msg.ravel()
        q0 = q1
    return val


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("cap", [2, 8])
def test_minibucket_messages_twin_and_bound(seed, cap):
    fg = random_factor_graph(seed, max_arity=4, p_inf=0.3 if seed % 2 else 0.0)
    view, mb, plan = _plan(fg, cap)
    rng = np.random.default_rng(seed)
    scores = fg.reduced.theta.copy()
    finite = np.isfinite(scores)
    scores[finite] += 1e3 * rng.normal(size=finite.sum()) * (seed % 5 == 0)  # extreme values
    val = np.concatenate([view.tables(scores), np.zeros(plan["entries"])])
    for mm in (True, False):
        twin = minibucket_messages_twin(view, plan, val, mm)
        got = val.copy()
        assert _search.minibucket_messages(
            view.card, plan["f_start"], plan["f_var"], plan["f_stride"], plan["f_off"], got,
            view.n_factors, plan["src"], plan["mm_start"], plan["mm_fun"], mm, 0.0,
            np.zeros(1, np.uint8))
        np.testing.assert_allclose(got, twin, rtol=1e-12, atol=1e-9)
        bound = got[plan["f_off"][plan["constants"]]].sum() + \
            got[view.off[plan["const_originals"]]].sum()
        exact = brute_force_max(fwcore.FactorGraph(
            fg.card, [((v,), scores[fg.reduced.node_off[v]:fg.reduced.node_off[v + 1]])
                      for v in range(fg.n_vars)] + [(s, t) for s, t in _aux_factors(fg, scores)]))
        assert bound >= exact - 1e-6 * max(1.0, abs(exact))


def _aux_factors(fg, scores):
    """The factor graph's factors (arity >= 2) under reduced-model ``scores``, by
    maximising each auxiliary variable out of its edges (FactorView's definition)."""
    red = fg.reduced
    view = FactorView(red)
    val = view.tables(scores)
    f = view_functions(view)
    for k in range(view.card.size, view.n_factors):
        sc = view.var[view.start[k]:view.start[k + 1]]
        yield tuple(view.keep[sc].tolist()), function_table(*f, val, k)


def test_icm_twin():
    fg = random_factor_graph(3, n=9, n_factors=10, p_inf=0.0)
    view = FactorView(fg.reduced)
    mb = MiniBuckets(view, 2**26)
    val = view.tables(fg.reduced.theta)
    x = np.zeros(view.card.size, dtype=np.int32)
    twin = x.copy()
    _search.icm(*view_functions(view), val, mb.inc_start, mb.inc_fun, x, 100)
    while True:  # the twin: each variable to its best state, index order, strict gains only
        moved = False
        for v in range(twin.size):
            local = []
            for a in range(view.card[v]):
                y = twin.copy()
                y[v] = a
                local.append(_search.score(*view_functions(view), val, view.n_factors, y))
            best = int(np.argmax(local))
            if local[best] > local[twin[v]]:
                twin[v], moved = best, True
        if not moved:
            break
    assert np.array_equal(x, twin)


def test_aobb_time_limit_returns_best_so_far_with_bound():
    fg = fwcore.random_grid(12, 12, coupling=3, seed=1)
    res = fwcore.infer_map(fg, "aobb", max_time=0.3, cap=4)
    assert res.status in (Status.MAX_TIME, Status.CONVERGED)
    assert res.upper_bound is not None and res.upper_bound >= res.score
    assert res.time < 1.5


def test_aobb_logs_progress(caplog):
    fg = fwcore.random_grid(12, 12, coupling=3, seed=1)
    with caplog.at_level(logging.INFO, logger="fwcore"):
        fwcore.infer_map(fg, "aobb", max_time=1.5, cap=4)
    lines = [r.getMessage() for r in caplog.records if "score" in r.getMessage()]
    assert len(lines) >= 2 and "bound" in lines[0]


def test_aobb_declares_its_contract():
    m = fwcore.random_grid(3, 3, seed=0)
    oracle = resolve_oracle("aobb", m)
    assert oracle.exact and not oracle.takes_seed
    with pytest.raises(TypeError, match="cap"):
        resolve_oracle("aobb", m, caps=3)


def test_infer_map_time_limit_is_a_deprecated_alias_of_max_time():
    m = fwcore.random_grid(5, 5, coupling=2, seed=0)
    with pytest.warns(DeprecationWarning, match="max_time"):
        res = fwcore.infer_map(m, "anneal", time_limit=0.2, seed=0)
    assert res.status is Status.MAX_TIME and res.time < 1.0
    with pytest.raises(TypeError, match="one of them"):
        fwcore.infer_map(m, "anneal", max_time=0.2, time_limit=0.2)


@pytest.mark.parametrize("seed", range(8))
def test_neighbourhood_search_only_improves(seed):
    fg = random_factor_graph(seed, n=9, n_factors=12, p_inf=0.1)
    exact = brute_force_max(fg)
    if exact == -np.inf:
        return
    view, mb, plan = _plan(fg, 4)
    val = np.concatenate([view.tables(fg.reduced.theta), np.zeros(plan["entries"])])
    assert _search.minibucket_messages(
        view.card, plan["f_start"], plan["f_var"], plan["f_stride"], plan["f_off"], val,
        view.n_factors, plan["src"], plan["mm_start"], plan["mm_fun"], True, 0.0,
        np.zeros(1, np.uint8))
    f = view_functions(view)
    x = np.zeros(view.card.size, dtype=np.int32)
    plan["search"].greedy(val, mb.preorder, x)
    start = _search.score(*f, val, view.n_factors, x)
    if start == -np.inf:
        return
    best_x, info = x.copy(), np.zeros(2)
    code, best, size = plan["search"].lns(val, x, best_x, start, 0.05, np.zeros(1, np.uint8),
                                          info, 3.0, 1000, seed)
    assert code == 1 and start <= best <= exact + 1e-9
    assert _search.score(*f, val, view.n_factors, best_x) == pytest.approx(best)
