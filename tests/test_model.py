"""PairwiseMRF: flat layout, helpers, generators and input validation."""
import itertools

import numpy as np
import pytest

import fwcore
from fwcore import PairwiseMRF
from fwcore import generators as gen


def _dense_score(model, x):
    """Score from the per-block views (independent of flat_index)."""
    s = sum(model.unary(i)[x[i]] for i in range(model.n_vars))
    for e, (i, j) in enumerate(model.edges):
        s += model.pairwise(e)[x[i], x[j]]
    return s


def test_flat_layout_offsets_and_blocks():
    card = [2, 3, 1, 4]
    unary = [np.arange(c, dtype=float) for c in card]
    edges = [(0, 1), (1, 3), (2, 0)]
    tables = [np.arange(6.).reshape(2, 3), np.arange(12.).reshape(3, 4), np.array([[5., 7.]])]
    m = PairwiseMRF(card, unary, edges, tables)
    assert m.n_vars == 4 and m.n_edges == 3
    np.testing.assert_array_equal(m.node_off, [0, 2, 5, 6, 10])
    np.testing.assert_array_equal(m.edge_off, [10, 16, 28, 30])
    assert m.dim == 30
    # (2, 0) is stored as (0, 2) with the table transposed
    np.testing.assert_array_equal(m.edges[2], [0, 2])
    np.testing.assert_array_equal(m.pairwise(2), [[5.], [7.]])
    for name in ("card", "edges", "node_off", "edge_off", "theta", "adj_start"):
        assert not getattr(m, name).flags.writeable
        assert getattr(m, name).flags.c_contiguous


def test_csr_adjacency_lists_every_edge_from_both_ends():
    m = gen.random_grid(3, 4, seed=1)
    seen = set()
    for v in range(m.n_vars):
        for s in range(m.adj_start[v], m.adj_start[v + 1]):
            e, u = m.adj_edge[s], m.adj_var[s]
            i, j = m.edges[e]
            assert (v, u) == ((i, j) if m.adj_first[s] else (j, i))
            seen.add((e, v))
    assert len(seen) == 2 * m.n_edges


def test_score_marginal_vector_and_uniform():
    m = gen.potts_grid(2, 3, n_labels=3, seed=2)
    rng = np.random.default_rng(0)
    xs = rng.integers(0, 3, size=(5, m.n_vars))
    np.testing.assert_allclose(m.score(xs), [_dense_score(m, x) for x in xs])
    for x in xs:
        mu = m.marginal_vector(x)
        assert np.isclose(mu @ m.theta, _dense_score(m, x))
        nodes, edges = m.split_marginals(mu)
        for e, (i, j) in enumerate(m.edges):
            np.testing.assert_allclose(edges[e].sum(1), nodes[i])
            np.testing.assert_allclose(edges[e].sum(0), nodes[j])
    u0 = m.uniform_marginals()
    nodes, edges = m.split_marginals(u0)
    assert all(np.allclose(b.sum(), 1.0) for b in nodes + edges)


@pytest.mark.parametrize("h, labels", [(3, 2), (100, 8)])
def test_uniform_marginals_small_and_freshly_mapped(h, labels):
    """u0 = 1/card_i and 1/(card_i card_j) per entry, from np.empty below 4 MB and from a
    fresh mapping above (`fresh_array`; Potts-8 100x100: 10.8 MB)."""
    from fwcore.model import fresh_array
    m = gen.potts_grid(h, n_labels=labels, seed=0)
    u0 = m.uniform_marginals()
    sizes = np.diff(np.concatenate([m.node_off, m.edge_off[1:]]))
    np.testing.assert_array_equal(u0, np.repeat(1.0 / sizes, sizes))
    assert (u0.base is None) == (8 * m.dim < 2**22) and u0.flags.writeable
    assert fresh_array(0).shape == (0,)


def test_with_theta_shares_structure_and_from_flat_roundtrip():
    m = gen.random_clique(5, seed=3)
    m2 = PairwiseMRF.from_flat(m.card, m.edges, m.theta * 2)
    np.testing.assert_array_equal(m2.adj_var, m.adj_var)
    np.testing.assert_allclose(m.with_theta(m.theta * 2).theta, m2.theta)


def test_read_only():
    m = gen.random_grid(2, seed=0)
    with pytest.raises(AttributeError, match="read-only"):
        m.theta = np.zeros(m.dim)
    with pytest.raises(ValueError):
        m.theta[0] = 1.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(card=[2, 0]), "card\\[1\\]"),
    (dict(card=[[2, 2]]), "1-D"),
    (dict(card=[2.5, 2]), "integers"),
    (dict(card=[2, 2], edges=[(0, 0)], pairwise=[np.zeros((2, 2))]), "self loop"),
    (dict(card=[2, 2], edges=[(0, 1), (1, 0)]), "more than once"),
    (dict(card=[2, 2], edges=[(0, 2)]), "index variables"),
    (dict(card=[2, 2], edges=[(0, 1, 1)]), "shape \\(E, 2\\)"),
    (dict(card=[2, 2], unary=[np.zeros(2), np.zeros(3)]), "unary\\[1\\] has shape"),
    (dict(card=[2, 2], unary=[np.zeros(2), [np.nan, 0]]), "NaN"),
    (dict(card=[2, 2], unary=[np.zeros(2), [np.inf, 0]]), "\\+inf"),
    (dict(card=[2, 3], edges=[(0, 1)], pairwise=[np.zeros((3, 2))]), "pairwise\\[0\\] has shape"),
    (dict(card=[2, 2], edges=[(0, 1)], pairwise=[]), "one table per edge"),
    (dict(card=[2, 2, 2], edges=[(0.5, 1.7), (1, 2)]), "edges must hold integers; got 0.5"),
    (dict(card=[2, 2], edges=[(0, np.nan)]), "edges must hold integers; got nan"),
    (dict(card=[2, 2], edges=[(0, 1e30)]), "too large"),
    (dict(card=[2, 2.5]), "card must hold integers; got 2.5"),
])
def test_bad_input_raises_clear_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        PairwiseMRF(**kwargs)


def test_whole_number_floats_are_taken_as_indices():
    m = PairwiseMRF([2.0, 3.0, 2.0], None, np.array([[0.0, 1.0], [2.0, 1.0]]))
    np.testing.assert_array_equal(m.card, [2, 3, 2])
    np.testing.assert_array_equal(m.edges, [[0, 1], [1, 2]])


def test_minus_inf_allowed_and_bad_assignments_rejected():
    m = PairwiseMRF([2, 2], [[0, -np.inf], None], [(0, 1)], [[[0, 1], [2, -np.inf]]])
    assert m.score([1, 0]) == -np.inf
    with pytest.raises(ValueError, match="outside"):
        m.score([0, 2])
    with pytest.raises(ValueError, match="shape"):
        m.score([0, 1, 0])
    with pytest.raises(TypeError, match="integer"):
        m.score(["a", "b"])


def test_generator_families_match_their_recipes():
    m = gen.random_grid(4, 5, coupling=4.0, field=1.0, seed=7)
    assert m.n_vars == 20 and m.n_edges == 4 * 4 + 3 * 5
    for i in range(m.n_vars):
        a, b = m.unary(i)
        assert a == -b and abs(a) <= 1.0
    for e in range(m.n_edges):
        t = m.pairwise(e)
        assert t[0, 0] == t[1, 1] == -t[0, 1] == -t[1, 0] and abs(t[0, 0]) <= 4.0
    c = gen.random_clique(10, coupling=8.0, seed=1)
    assert c.n_edges == 45
    r = gen.random_rbm(3, 4, seed=0)
    assert r.n_edges == 12 and all(i < 3 <= j for i, j in r.edges)
    p = gen.potts_grid(3, n_labels=4, seed=0)
    assert (p.card == 4).all()
    f = gen.frustrated_clique(6, seed=0)
    assert all(f.pairwise(e)[0, 0] <= 0 for e in range(f.n_edges))
    # same seed, same model; different seed, different model
    np.testing.assert_array_equal(gen.random_grid(3, seed=5).theta,
                                  gen.random_grid(3, seed=5).theta)
    assert not np.array_equal(gen.random_grid(3, seed=5).theta, gen.random_grid(3, seed=6).theta)


def test_structural_builders_accept_shared_tables():
    m = fwcore.grid(2, 2, unary=np.zeros((4, 3)), pairwise=np.eye(3), card=3)
    assert m.n_edges == 4 and np.allclose(m.pairwise(3), np.eye(3))
    assert len(list(itertools.combinations(range(5), 2))) == fwcore.complete(5).n_edges
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        fwcore.grid(0, 3)


def test_padded_tables_match_a_loop():
    """padded_tables against the flat layout's views, one block at a time."""
    rng = np.random.default_rng(0)
    card = [2, 4, 1, 3]
    edges = [(0, 1), (1, 3), (2, 3), (0, 3)]
    model = PairwiseMRF(card, [rng.normal(size=c) for c in card], edges,
                        [rng.normal(size=(card[i], card[j])) for i, j in edges])
    scores = rng.normal(size=model.dim)
    scores[3] = -np.inf
    for vec in (None, scores):
        node, pair, node_mask, pair_mask = model.padded_tables(vec)
        flat = model.theta if vec is None else scores
        assert (node.shape == node_mask.shape == (4, 4)
                and pair.shape == pair_mask.shape == (4, 4, 4))
        for i, c in enumerate(card):
            np.testing.assert_array_equal(node[i, :c], model.unary(i, flat))
            assert np.isneginf(node[i, c:]).all() and node_mask[i].sum() == c
        for e, (i, j) in enumerate(model.edges):
            np.testing.assert_array_equal(pair[e, :card[i], :card[j]], model.pairwise(e, flat))
            assert pair_mask[e].sum() == card[i] * card[j]
            assert np.isneginf(pair[e][~pair_mask[e]]).all()
        np.testing.assert_array_equal(np.concatenate([node[node_mask], pair[pair_mask]]), flat)
    empty = PairwiseMRF([3, 2])
    node, pair, _, _ = empty.padded_tables()
    assert node.shape == (2, 3) and pair.shape == (0, 3, 3)


def test_names_and_states_are_checked_kept_and_read():
    m = PairwiseMRF([2, 3], edges=[(0, 1)], names=["rain", "grass"],
                    states=[["no", "yes"], ["dry", "damp", "wet"]])
    assert m.with_theta(m.theta).names == ("rain", "grass")
    assert ((m.var_index("grass"), m.var_index(0), m.state_index(1, "wet"), m.state_index(1, 1))
            == (1, 0, 2, 1))
    assert m.named(np.array([1, 2])) == {"rain": "yes", "grass": "wet"}
    assert list(m.named([np.ones(2), np.ones(3)])) == ["rain", "grass"]
    for kwargs, error in [({"names": ["a"]}, "names has 1 entries; the model has 2"),
                          ({"names": ["a", "a"]}, "names must be distinct; 'a' repeats"),
                          ({"states": [["x", "y"], ["z"]]}, r"states\[1\] names 1 states")]:
        with pytest.raises(ValueError, match=error):
            PairwiseMRF([2, 3], **kwargs)
    with pytest.raises(ValueError, match="variable 'snow' is not in the model: give one of "
                                         "'rain', 'grass', or an index 0..1"):
        m.var_index("snow")


@pytest.mark.parametrize("shape", [(2, 2), (2, 3)])
def test_tables_given_whole_equal_tables_given_one_by_one(shape):
    """The constructor's two ways in: arrays of equal blocks (written whole, flipped edges
    transposed as a block) and sequences of blocks (one at a time), with edges given both
    ways round; and a NaN or +inf named by its block either way."""
    rng = np.random.default_rng(4)
    a, b = shape
    n_left = 6
    card = [a] * n_left + [b] * n_left
    edges = np.array([(i, n_left + j) if rng.random() < 0.5 else (n_left + j, i)
                      for i in range(n_left) for j in range(n_left) if rng.random() < 0.6])
    left_first = edges[:, 0] < n_left
    tables = rng.normal(size=(len(edges), a, b))
    given = [t if f else t.T for t, f in zip(tables, left_first)]
    if a == b:
        whole = PairwiseMRF(card, None, edges, np.stack(given))
        np.testing.assert_array_equal(whole.theta, PairwiseMRF(card, None, edges, given).theta)
    one_by_one = PairwiseMRF(card, None, edges, given)
    for e, (i, j) in enumerate(one_by_one.edges):
        k = int(np.flatnonzero((np.sort(edges, axis=1) == (i, j)).all(axis=1))[0])
        np.testing.assert_array_equal(one_by_one.pairwise(e), tables[k])
    unary = rng.normal(size=(2 * n_left, a))
    if a == b:
        np.testing.assert_array_equal(PairwiseMRF(card, unary).theta, unary.ravel())
        unary[7, 1] = np.inf
        for form in (unary, list(unary)):
            with pytest.raises(ValueError, match=r"unary\[7\] contains \+inf"):
                PairwiseMRF(card, form)
