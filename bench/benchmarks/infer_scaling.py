"""Seconds per Barrier FW iteration on grids of 10^3, 10^4 and 10^5 variables (issue 13,
Deliver 3: the cost of an iteration must grow at most linearly with the model).

`InferScaling` runs `fwcore.infer` on ``random_grid(side, coupling=1.0, seed=0)`` for a
fixed amount of work — two inner runs of at most 8 FW iterations with one rho update
between them (``max_iter=8, rho_updates=1``), so every size does about the same number of
iterations and the correction polytope reaches the same size — and reports the wall time
per FW iteration, split into: the MAP oracle calls, the MFW corrections inside the FW
runs, the ICM local search, the rho updates (line search with its corrections, and the
spanning forest) and the initial rho (matrix-tree theorem, once per run). The parts are
timed by wrapping the methods for the duration of the run (the wrapping costs a few
microseconds a call). Each combination is solved once, in `setup_cache` (asv runs it
once per class; `setup` only picks the combination's figures).
"""
import functools
import time
from contextlib import contextmanager

import fwcore
from fwcore.marginals import barrier_fw
from fwcore.fw import corrective
from fwcore.oracles.base import MapOracle

from .common import QUICK, track_figure

#: the parts of a run and the functions whose time (outermost calls only) they count
_PARTS = {
    "oracle": (MapOracle, "argmax"),
    "corrections": (corrective.MFWCorrection, "correct"),
    "local_search": (corrective.LocalSearch, "after_fw_step"),
    "rho_update": (barrier_fw, "_rho_line_search"),
    "initial_rho": (barrier_fw, "initial_rho"),
    "dual_bound": (barrier_fw, "trw_dual_bound"),
}


@contextmanager
def _timed_parts(seconds):
    """Add to ``seconds[part]`` the time spent in each part's function while inside;
    a call nested in another timed call (a correction inside the rho line search, a
    portfolio member inside the portfolio) counts for the outer one only."""
    stack, saved = [], []

    def wrap(part, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if stack:
                return fn(*args, **kwargs)
            stack.append(part)
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[part] += time.perf_counter() - t0
                stack.pop()
        return timed

    for part, (owner, name) in _PARTS.items():
        fn = getattr(owner, name)
        saved.append((owner, name, fn))
        setattr(owner, name, wrap(part, fn))
    try:
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def _seconds(track):
    track.unit = "s"
    return track


class InferScaling:
    """Seconds per FW iteration of `fwcore.infer` on 10^3 / 10^4 / 10^5-variable grids,
    total and per part (oracle, corrections, local search, rho update, initial rho)."""

    param_names = ["side", "oracle"]
    params = [[32, 100] if QUICK else [32, 100, 316], ["trws", "portfolio"]]
    timeout = 3600

    def setup_cache(self):
        """{(side, oracle): (FW iterations, total seconds, {part: seconds})}."""
        table = {}
        for side in self.params[0]:
            model = fwcore.random_grid(side, coupling=1.0, seed=0)
            for oracle in self.params[1]:
                seconds = dict.fromkeys(_PARTS, 0.0)
                with _timed_parts(seconds):
                    t0 = time.perf_counter()
                    result = fwcore.barrier_fw(model, oracle=oracle, seed=0, max_iter=8,
                                          rho_updates=1)
                    total = time.perf_counter() - t0
                table[side, oracle] = (result.n_iter, total, seconds)
        return table

    def setup(self, table, side, oracle):
        self.iterations, self.total, self.seconds = table[side, oracle]
        self.n_iter = max(self.iterations, 1)
        self.figures = {part: s / self.n_iter for part, s in self.seconds.items()}

    def track_n_iter(self, table, side, oracle):
        return self.iterations

    @_seconds
    def track_seconds_per_iteration(self, table, side, oracle):
        """The run less its final tree-decomposition bound (once per run, not per iteration)."""
        return (self.total - self.seconds["dual_bound"]) / self.n_iter

    @_seconds
    def track_dual_bound_seconds(self, table, side, oracle):
        """The tree-decomposition TRW bound after the run (at most as long as the run)."""
        return self.seconds["dual_bound"]

    track_oracle_seconds_per_iteration = track_figure("oracle", unit="s")
    track_correction_seconds_per_iteration = track_figure("corrections", unit="s")
    track_local_search_seconds_per_iteration = track_figure("local_search", unit="s")
    track_rho_update_seconds_per_iteration = track_figure("rho_update", unit="s")
    track_initial_rho_seconds_per_iteration = track_figure("initial_rho", unit="s")

    @_seconds
    def track_other_seconds_per_iteration(self, table, side, oracle):
        """FW steps, gaps, traces: the total less the parts above."""
        return (self.total - sum(self.seconds.values())) / self.n_iter

