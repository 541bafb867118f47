"""The segmentation scale benchmark's data and features (issue 18), and bench/learn_scale.py
run at a smoke size."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fwcore.learn import CRF, SSVM
from fwcore.learn.datasets import segmentation_images
from fwcore.learn.features import (SEGMENTATION_EDGE_FEATURES, SEGMENTATION_NODE_FEATURES,
                                   segmentation_features)
from fwcore.generators import grid_edges

RUNNER = Path(__file__).resolve().parents[1] / "bench" / "learn_scale.py"


def test_segmentation_images_are_reproducible_figure_ground_scenes():
    images, masks = segmentation_images(3, size=24, seed=5)
    assert images.shape == (3, 24, 24, 3) and masks.shape == (3, 24, 24)
    assert images.min() >= 0.0 and images.max() <= 1.0
    assert set(np.unique(masks)) <= {0, 1} and 0 < masks.mean() < 0.7
    again, same = segmentation_images(3, size=24, seed=5)
    np.testing.assert_array_equal(images, again)
    np.testing.assert_array_equal(masks, same)
    assert not np.array_equal(segmentation_images(3, size=24, seed=6)[1], masks)
    # the foreground is warmer (red minus blue) than the background in most scenes
    warm = images[..., 0] - images[..., 2]
    assert np.mean([warm[k][masks[k] == 1].mean() > warm[k][masks[k] == 0].mean()
                    for k in range(3)]) >= 2 / 3


@pytest.mark.parametrize("kw, error", [({"n_images": 0}, ValueError),
                                       ({"n_images": 2, "size": 4}, ValueError),
                                       ({"n_images": 2.5}, ValueError),
                                       ({"n_images": "3"}, TypeError)])
def test_segmentation_images_check_their_arguments(kw, error):
    with pytest.raises(error, match="n_images|size"):
        segmentation_images(**kw)


def test_segmentation_features_on_images_with_known_answers():
    # a constant image: no texture, no gradient, no colour outlier, every edge weight 1
    flat = segmentation_features(np.full((5, 6, 3), 0.4))
    u, v = flat.node_features, flat.edge_features
    assert u.shape == (30, len(SEGMENTATION_NODE_FEATURES))
    assert v.shape == (len(grid_edges(5, 6)), len(SEGMENTATION_EDGE_FEATURES))
    np.testing.assert_array_equal(flat.edges, grid_edges(5, 6))
    np.testing.assert_allclose(u[:, 1:7], 0.4)
    np.testing.assert_allclose(u[:, 7:], 0.0, atol=1e-12)
    np.testing.assert_allclose(v, 1.0)
    # two halves of different colours: the edges across the boundary have the lowest
    # colour-contrast weight, and the minority half is the colour outlier
    image = np.zeros((8, 8, 3))
    image[:, 6:] = [1.0, 0.0, 0.0]
    split = segmentation_features(image)
    edges, contrast = split.edges, split.edge_features[:, 1]
    across = (edges[:, 0] % 8 == 5) & (edges[:, 1] % 8 == 6)
    assert contrast[across].max() < contrast[~across].min()
    outlier = split.node_features[:, 9].reshape(8, 8)
    assert outlier[:, 7].min() > outlier[:, 0].max()


@pytest.mark.parametrize("image, match", [(np.zeros((4, 4)), "shape"),
                                          (np.full((4, 4, 3), np.nan), "NaN")])
def test_segmentation_features_refuse_bad_images(image, match):
    with pytest.raises(ValueError, match=match):
        segmentation_features(image)


def test_a_crf_learned_on_the_features_beats_the_all_background_labelling():
    images, masks = segmentation_images(8, size=24, seed=0)
    X = [segmentation_features(im) for im in images]
    Y = [m.ravel() for m in masks]
    learner = SSVM(reg=1e3, model=CRF(oracle="qpbo"), max_iter=20, tol=0.0).fit(X[:4], Y[:4])
    error = np.mean([np.mean(p != y) for p, y in zip(learner.predict(X[4:]), Y[4:])])
    assert error < 0.8 * np.mean([y.mean() for y in Y[4:]])


@pytest.mark.skipif(not RUNNER.exists(), reason="bench/ is not beside tests/ (installed "
                    "package only)")
def test_the_scale_benchmark_runs_at_a_smoke_size(capsys):
    sys.path.insert(0, str(RUNNER.parent))  # importable by name: its children unpickle it
    import learn_scale
    learn_scale.main(["--train", "3", "--test", "2", "--size", "12", "--passes", "2",
                 "--speed-passes", "1", "--learners", "mle-bcfw,ssvm-bcfw"])
    out = capsys.readouterr().out
    mle = out[out.index("mle-bcfw: reg"):out.index("ssvm-bcfw: reg")]
    assert "status max_iter" in mle
    rows = [line.split() for line in mle.splitlines()[2:] if line.strip()]
    assert [int(r[0]) for r in rows] == [0, 1, 2]  # a test error after every pass
    assert all(0.0 <= float(r[3]) <= 1.0 for r in rows)
    assert "processes" in out and "equal: True" in out and "equal: False" not in out
