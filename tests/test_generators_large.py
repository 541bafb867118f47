"""The paper-like large families: segmentation_crf (Horses) and skip_grid (Chinese
characters), Barrier FW Sec. 5; and the vectorised grid edges they are built on."""
import numpy as np
import pytest

import fwcore
from fwcore import generators as gen


def _loop_grid_edges(h, w):
    """The 4-connected grid edges by the loop `grid_edges` documents."""
    edges = []
    for r in range(h):
        for c in range(w):
            v = r * w + c
            if c + 1 < w:
                edges.append((v, v + 1))
            if r + 1 < h:
                edges.append((v, v + w))
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("h, w", [(1, 1), (1, 6), (6, 1), (3, 4), (7, 5)])
def test_grid_edges_keep_their_order(h, w):
    np.testing.assert_array_equal(gen.grid_edges(h, w), _loop_grid_edges(h, w))


def test_default_sizes_are_the_papers():
    seg = fwcore.segmentation_crf(seed=0)
    assert seg.n_vars == 12000 and seg.n_edges == 100 * 119 + 99 * 120
    skip = fwcore.skip_grid(seed=0)
    assert skip.n_vars == 6400 >= 5000
    assert skip.n_edges == sum(2 * 80 * (80 - d) for d in (1, 2, 4))
    assert (seg.card == 2).all() and (skip.card == 2).all()


@pytest.mark.parametrize("make", [lambda s: gen.segmentation_crf(12, 15, seed=s),
                                  lambda s: gen.skip_grid(9, 7, seed=s)])
def test_same_seed_same_model(make):
    np.testing.assert_array_equal(make(3).theta, make(3).theta)
    np.testing.assert_array_equal(make(3).edges, make(3).edges)
    assert not np.array_equal(make(3).theta, make(4).theta)


def test_segmentation_image_and_truth_are_reproducible():
    _, im1, t1 = gen.segmentation_crf(20, 30, seed=5, return_image=True)
    _, im2, t2 = gen.segmentation_crf(20, 30, seed=5, return_image=True)
    assert im1.shape == t1.shape == (20, 30) and t1.dtype == bool
    np.testing.assert_array_equal(im1, im2)
    np.testing.assert_array_equal(t1, t2)
    assert 0 < t1.mean() < 1


@pytest.mark.parametrize("repulsive", [0.0, 0.03, 0.2, 1.0])
def test_segmentation_repulsive_fraction(repulsive):
    m = gen.segmentation_crf(30, 40, repulsive=repulsive, seed=1)
    weight = m.theta[m.edge_off[:-1]]  # θ_ij(0, 0) = w_ij
    assert (weight < 0).sum() == round(repulsive * m.n_edges)


def test_segmentation_matches_its_formulas():
    """A 4 × 5 instance against a loop over pixels and neighbour pairs of the docstring's
    formulas, from the image the generator returns."""
    h, w, noise, lam = 4, 5, 0.3, 1.7
    m, image, truth = gen.segmentation_crf(h, w, n_shapes=2, noise=noise, lam=lam,
                                           repulsive=0.2, seed=2, return_image=True)
    bg, fg = gen.SEGMENTATION_MEANS
    pairs = [((r, c), (r, c + 1)) for r in range(h) for c in range(w - 1)]
    pairs += [((r, c), (r + 1, c)) for r in range(h - 1) for c in range(w)]
    beta = 1.0 / (2.0 * np.mean([(image[a] - image[b]) ** 2 for a, b in pairs]))
    for r in range(h):
        for c in range(w):
            i = m.unary(r * w + c)
            assert np.allclose(i, [-(image[r, c] - bg) ** 2 / (2 * noise ** 2),
                                   -(image[r, c] - fg) ** 2 / (2 * noise ** 2)])
    edge_id = {tuple(e): k for k, e in enumerate(m.edges.tolist())}
    assert len(edge_id) == len(pairs)
    n_repulsive = 0
    for a, b in pairs:
        t = m.pairwise(edge_id[(a[0] * w + a[1], b[0] * w + b[1])])
        expect = lam * np.exp(-beta * (image[a] - image[b]) ** 2)
        assert t[0, 1] == t[1, 0] == 0 and t[0, 0] == t[1, 1]
        assert np.isclose(abs(t[0, 0]), expect)
        n_repulsive += t[0, 0] < 0
    assert n_repulsive == round(0.2 * len(pairs))
    # the image is the truth's class means plus noise: residuals of the noise's size
    resid = image - np.where(truth, fg, bg)
    assert np.abs(resid).max() < 6 * noise


def test_skip_grid_matches_its_formulas():
    h, w, offsets = 4, 5, (1, 3)
    m = gen.skip_grid(h, w, offsets=offsets, coupling=2.0, field=0.5, seed=3)
    expect = [(r * w + c, r2 * w + c2) for d in offsets for r in range(h) for c in range(w)
              for r2, c2 in ((r, c + d), (r + d, c)) if r2 < h and c2 < w]
    np.testing.assert_array_equal(m.edges, expect)
    rng = np.random.default_rng(3)
    f = rng.uniform(-0.5, 0.5, h * w)
    c = rng.uniform(-2.0, 2.0, len(expect))
    for i in range(m.n_vars):
        np.testing.assert_allclose(m.unary(i), [-f[i], f[i]])
    for e in range(m.n_edges):
        np.testing.assert_allclose(m.pairwise(e), [[c[e], -c[e]], [-c[e], c[e]]])
    assert (c > 0).any() and (c < 0).any()
    # offsets=(1,) is the 4-connected grid
    np.testing.assert_array_equal(gen.skip_grid(3, 4, offsets=(1,)).edges, gen.grid_edges(3, 4))


def test_dense_fast_path_builds_what_the_constructor_builds():
    rng = np.random.default_rng(0)
    unary, pair = rng.normal(size=(12, 3)), rng.normal(size=(17, 3, 3))
    fast = gen.grid(3, 4, unary, pair, card=3)
    slow = fwcore.PairwiseMRF([3] * 12, list(unary), gen.grid_edges(3, 4), list(pair))
    np.testing.assert_array_equal(fast.theta, slow.theta)
    np.testing.assert_array_equal(fast.adj_var, slow.adj_var)


@pytest.mark.parametrize("call, error, match", [
    (lambda: gen.segmentation_crf(0, 5), ValueError, "h must be an integer >= 1"),
    (lambda: gen.segmentation_crf(4, 2.5), ValueError, "w must be an integer"),
    (lambda: gen.segmentation_crf(4, 5, noise=0.0), ValueError, "noise must be a number > 0"),
    (lambda: gen.segmentation_crf(4, 5, lam=-1.0), ValueError, "lam must be"),
    (lambda: gen.segmentation_crf(4, 5, repulsive=1.5), ValueError, "repulsive must be"),
    (lambda: gen.segmentation_crf(4, 5, n_shapes=-1), ValueError, "n_shapes must be"),
    (lambda: gen.segmentation_crf(4, 5, seed=1.5), TypeError, "seed must be an int"),
    (lambda: gen.segmentation_crf(4, 5, return_image="yes"), TypeError, "return_image"),
    (lambda: gen.segmentation_crf(4, "5"), TypeError, "w must be"),
    (lambda: gen.skip_grid(0), ValueError, "h must be an integer >= 1"),
    (lambda: gen.skip_grid(4, offsets=()), ValueError, "offsets must hold at least one"),
    (lambda: gen.skip_grid(4, offsets=3), TypeError, "offsets must be a tuple"),
    (lambda: gen.skip_grid(4, offsets=(1, 0)), ValueError, r"offsets\[1\] must be an integer >= 1"),
    (lambda: gen.skip_grid(4, offsets=(2, 2)), ValueError, "offsets must be distinct"),
    (lambda: gen.skip_grid(4, coupling=-1.0), ValueError, "coupling must be"),
    (lambda: gen.skip_grid(4, field=float("nan")), ValueError, "field must be"),
    (lambda: gen.skip_grid(4, seed="a"), TypeError, "seed must be an int"),
])
def test_bad_arguments_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
