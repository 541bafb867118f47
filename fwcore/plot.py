"""Figures of results (the optional ``plot`` extra: matplotlib, imported when called).

Each function draws on ``ax`` (a new figure's axes when None) and returns the axes:
`plot_trace` (a run's value, gap and certified bound against time), `plot_marginals`
(node marginals of a grid model as an image), `plot_map_trace` (a MAP run's score and
bound against time).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import matplotlib.axes

__all__ = ["plot_trace", "plot_marginals", "plot_map_trace"]


def _axes(ax):
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'fwcore[plot]'") from None
    return plt.subplots()[1] if ax is None else ax


def _trace(result):
    trace = getattr(result, "trace", None)
    if trace is None:
        raise TypeError(f"result must be a fwcore result with a trace; got "
                        f"{type(result).__name__}")
    if not len(trace):
        raise ValueError("the result's trace is empty: nothing to plot (pass a result of a "
                         "run that recorded its iterations)")
    return trace.columns()


def plot_trace(result, ax=None) -> matplotlib.axes.Axes:
    """A run's value (the TRW objective of Barrier FW, a pass's bound, BP's TRW or Bethe
    value, ...) against seconds, with the certified upper and lower bounds proven so far
    (a bound holds from when it is proven: the least upper and greatest lower bound up to
    each time), for any result with a ``trace``. Where no bound is certified, value + gap
    is drawn as an estimate of one. A sampled estimate of log Z (``log_z_estimate``) is a
    point at the end with its probabilistic interval."""
    t = _trace(result)
    ax = _axes(ax)
    ax.plot(t["time"], t["primal"], label="value")
    # the answer's own bounds close the lines at its time (some are proven after the last
    # record: Barrier FW's tree-decomposition bound and lower bound)
    end = [float(result.time)]
    upper = getattr(result, "log_z_upper", None) if getattr(result, "certified", False) else None
    lower = getattr(result, "log_z_lower", None)
    bound = np.append(t["bound"], np.nan if upper is None else upper)
    below = np.append(t["score"], np.nan if lower is None else lower)
    times = np.append(t["time"], end)
    if np.isfinite(bound).any():
        ax.step(times, np.fmin.accumulate(bound), where="post", label="certified upper bound")
    elif np.isfinite(t["gap"]).any():
        ax.plot(t["time"], t["primal"] + t["gap"], linestyle=":",
                label="value + gap (an estimate, not a bound)")
    if np.isfinite(below).any():
        ax.step(times, np.fmax.accumulate(below), where="post", label="certified lower bound")
    estimate = getattr(result, "log_z_estimate", None)
    if estimate is not None:
        ax.errorbar([end[0]], [estimate], fmt="o",
                    yerr=[[estimate - result.log_z_estimate_lower],
                          [result.log_z_estimate_upper - estimate]],
                    label=f"sampled estimate ({result.confidence:g} interval)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("objective (nats)")
    ax.legend()
    return ax


def plot_map_trace(result, ax=None) -> matplotlib.axes.Axes:
    """Best score and certified bound of a MAP run (`fwcore.infer_map`, `infer_lp`)
    against seconds, as steps with a marker at each record (so a one-record trace shows
    a point)."""
    t = _trace(result)
    ax = _axes(ax)
    score = t["score"] if np.isfinite(t["score"]).any() else t["primal"]
    ax.step(t["time"], score, where="post", marker="o", markersize=3, label="score")
    if np.isfinite(t["bound"]).any():
        ax.step(t["time"], t["bound"], where="post", marker="o", markersize=3, label="bound")
    ax.set_xlabel("seconds")
    ax.set_ylabel("log-score")
    ax.legend()
    return ax


def plot_marginals(result, shape: tuple[int, int], state: int = 1,
                   ax=None) -> matplotlib.axes.Axes:
    """P(x_i = ``state``) of ``result.node_marginals`` as an image of ``shape`` (rows,
    cols), variables in row-major order, as `fwcore.random_grid` numbers them."""
    nodes = getattr(result, "node_marginals", None)
    if nodes is None:
        raise TypeError(f"result must carry node_marginals; got {type(result).__name__}")
    rows, cols = shape
    if rows * cols != len(nodes):
        raise ValueError(f"shape {shape} holds {rows * cols} variables; the result has "
                         f"{len(nodes)}")
    if any(len(p) <= state for p in nodes):
        raise ValueError(f"state {state} is beyond some variable's states")
    ax = _axes(ax)
    image = ax.imshow(np.array([p[state] for p in nodes]).reshape(rows, cols), vmin=0.0,
                      vmax=1.0, cmap="viridis")
    ax.figure.colorbar(image, ax=ax, label=f"P(x = {state})")
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    return ax
