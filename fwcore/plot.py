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
    """The primal value (TRW for `fwcore.infer`), primal + gap and the certified bound of
    each recorded iterate against seconds, for any result with a ``trace``."""
    t = _trace(result)
    ax = _axes(ax)
    ax.plot(t["time"], t["primal"], label="primal")
    if np.isfinite(t["gap"]).any():
        ax.plot(t["time"], t["primal"] + t["gap"], label="primal + gap")
    if np.isfinite(t["bound"]).any():
        ax.plot(t["time"], t["bound"], label="certified bound")
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
