"""The kernels of sampling, queries and marginal MAP (fwcore._query) against their NumPy
twins (tests/query_numpy.py) on random models: mixed cardinalities, -inf entries,
log-potentials of magnitude 300, disconnected variables; the same uniforms give the same
samples."""
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore
from fwcore import _query
from fwcore.bayes import bayes_form
from fwcore.model import PairwiseMRF
from fwcore.queries import MessageTree

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
import query_numpy as twin  # noqa: E402
from networks import random_network  # noqa: E402


def random_pairwise(seed, n=9, max_card=4, p_edge=0.35, p_neg_inf=0.1, scale=1.0):
    rng = np.random.default_rng(seed)
    card = rng.integers(1, max_card + 1, size=n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p_edge]
    unary = [scale * rng.normal(size=c) for c in card]
    tables = []
    for i, j in pairs:
        t = scale * rng.normal(size=(card[i], card[j]))
        t[rng.random(t.shape) < p_neg_inf] = -np.inf
        t[0, 0] = 0.0  # the all-zero state stays feasible
        tables.append(t)
    return PairwiseMRF(card, unary, pairs, tables)


MODELS = [(seed, scale) for seed in range(8) for scale in (1.0, 300.0)]


@pytest.mark.parametrize("seed", range(10))
def test_topological_order_matches_its_twin(seed):
    rng = np.random.default_rng(seed)
    n = 30
    parents = [sorted(rng.choice(v, size=min(v, int(rng.integers(0, 4))),
                                 replace=False).tolist()) if v else [] for v in range(n)]
    perm = rng.permutation(n)  # relabel: parents are no longer lower indices
    relabeled = [[] for _ in range(n)]
    for v, ps in enumerate(parents):
        relabeled[perm[v]] = [int(perm[p]) for p in ps]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(p) for p in relabeled], out=start[1:])
    flat = np.array([p for ps in relabeled for p in ps], dtype=np.int64)
    order = _query.topological_order(start, flat)
    np.testing.assert_array_equal(order, twin.topological_order(start, flat))
    position = np.empty(n, dtype=int)
    position[order] = np.arange(n)
    assert all(position[p] < position[v] for v in range(n) for p in relabeled[v])
    if flat.size:  # a cycle: a variable made a parent of one of its parents
        v = next(v for v in range(n) if relabeled[v])
        cyc = [list(ps) for ps in relabeled]
        cyc[relabeled[v][0]].append(v)
        start[1:] = np.cumsum([len(p) for p in cyc])
        flat = np.array([p for ps in cyc for p in ps], dtype=np.int64)
        assert _query.topological_order(start, flat).size < n


@pytest.mark.parametrize("seed", range(6))
def test_forward_sample_matches_its_twin(seed):
    model = random_network(10, seed)
    form = bayes_form(model)
    from fwcore.sampling import _forward
    rng = np.random.default_rng(seed)
    got = _forward(model, form, 500, np.random.default_rng(seed))
    # the twin, from the same uniforms and the same flat CPTs
    card = model.card.astype(np.int64)
    sizes = np.array([c.size for c in form.cpts])
    cpt_off = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    cpt = np.concatenate([c.ravel() for c in form.cpts])
    par_start = np.concatenate([[0], np.cumsum([len(p) for p in form.parents])])
    par_var = np.array([u for p in form.parents for u in p], dtype=np.int64)
    par_stride = np.array([int(np.prod(card[list(p[k + 1:])])) for p in form.parents
                           for k in range(len(p))], dtype=np.int64)
    u = rng.random((model.n_vars, 500))
    expected = twin.forward_sample(form.order, card, par_start, par_var, par_stride, cpt_off,
                                   cpt, u)
    np.testing.assert_array_equal(got, expected.T)


@pytest.mark.parametrize("seed, scale", MODELS)
@pytest.mark.parametrize("n_max", [0, 1, 3])
def test_up_pass_and_backtrack_match_their_twins(seed, scale, n_max):
    model = random_pairwise(seed, scale=scale)
    rng = np.random.default_rng(seed)
    last = tuple(int(v) for v in rng.choice(model.n_vars, size=n_max, replace=False))
    tree = MessageTree(model, last, n_max=n_max)
    value = tree.up()
    msgs, args, expected = twin.up_pass(tree, model, model.n_vars - n_max)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-9)
    for v in range(model.n_vars):
        np.testing.assert_allclose(tree.message(v), msgs[v], rtol=1e-12, atol=1e-9)
    if n_max:
        x = tree.backtrack()
        np.testing.assert_array_equal(x, twin.backtrack(tree, model, model.n_vars - n_max,
                                                        args))
    # an all-sum pass on the same tree is log Z
    assert tree.up(maximise=False) == pytest.approx(fwcore.exact_inference(model).log_z,
                                                    rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("seed, scale", MODELS)
def test_backward_sample_matches_its_twin(seed, scale):
    model = random_pairwise(seed, scale=scale)
    tree = MessageTree(model)
    tree.up()
    msgs, _, _ = twin.up_pass(tree, model, model.n_vars)
    u = np.random.default_rng(seed).random((model.n_vars, 400))
    x = np.empty(u.shape, dtype=np.int32)
    _query.backward_sample(tree.tree, model.theta, tree.msg_off, tree.msg, u, x)
    np.testing.assert_array_equal(x, twin.backward_sample(tree, model, msgs, u))
    assert np.isfinite([model.score(x[:, k]) for k in range(x.shape[1])]).all()
