"""fwcore.plot draws what the results hold (skips without matplotlib)."""
import numpy as np
import pytest

import fwcore
from fwcore.plot import plot_map_trace, plot_marginals, plot_trace

mpl = pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install "
                          "'fwcore[plot]')")
mpl.use("Agg")


def test_trace_marginals_and_map_figures():
    model = fwcore.random_grid(4, 5, coupling=1.0, seed=0)
    res = fwcore.barrier_fw(model, oracle="exact", max_time=30)
    ax = plot_trace(res)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["value", "certified upper bound", "certified lower bound"]
    t = res.trace.columns()
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), t["primal"])
    upper, lower = (ax.get_lines()[k].get_ydata() for k in (1, 2))
    lower = lower[np.isfinite(lower)]
    assert (np.diff(upper) <= 0).all() and (np.diff(lower) >= 0).all()  # proven so far
    assert upper[-1] == pytest.approx(res.log_z_upper)  # the answer's bound, not above it
    assert lower[-1] == pytest.approx(res.log_z_lower)
    ax = plot_marginals(res, (4, 5))
    np.testing.assert_allclose(ax.get_images()[0].get_array()[1, 2], res.node_marginals[7][1])
    best = fwcore.infer_map(model, method="portfolio", time_limit=0.5)
    ax = plot_map_trace(best)
    assert ax.get_lines()[0].get_label() == "score"
    for ax in (plot_trace(res), plot_marginals(res, (4, 5)), plot_map_trace(best)):
        assert ax.get_xlabel() and ax.get_ylabel()  # every axis says what it shows


def test_a_one_record_map_trace_shows_its_point():
    best = fwcore.infer_map(fwcore.random_grid(3, 3, seed=0), method="icm")
    assert len(best.trace) == 1
    line = plot_map_trace(best).get_lines()[0]
    assert line.get_marker() == "o" and line.get_ydata()[0] == best.score


def test_bad_arguments():
    res = fwcore.exact_inference(fwcore.random_grid(2, 2, seed=0))
    with pytest.raises(ValueError, match="holds 6 variables"):
        plot_marginals(res, (2, 3))
    with pytest.raises(ValueError, match="state 2"):
        plot_marginals(res, (2, 2), state=2)
    with pytest.raises(TypeError, match="trace"):
        plot_trace(object())
