"""Weighted mini-bucket at scale (issue 39; `bench/wmb_scale.py` is the plain runner with
Merlin beside it).

`WMBPass`: one pass (forward with matching and the weights' step, then backward) of
`fwcore.marginals.wmb` at i-bound 10 on a binary grid (couplings U[−1, 1]) and a Potts-8
grid, the tree built once in `setup`. `InferGrid`: `fwcore.infer` on grids with
``max_time``: seconds, peak memory, the interval upper − lower as a share of the upper
bound (``track_interval``) and the seconds to the first pass's bound
(``track_first_bound``).
"""
import numpy as np

import fwcore
from fwcore.loop import Deadline
from fwcore.marginals import wmb

from .common import QUICK

_SIDES = [100] if QUICK else [100, 300, 1000]
_MAX_TIME = 5 if QUICK else 60


def _grid(side, kind):
    if kind == "potts":
        return fwcore.potts_grid(side, n_labels=8, seed=0)
    return fwcore.random_grid(side, coupling=float(kind), seed=0)


class WMBPass:
    param_names = ["side", "kind"]
    params = [[100] if QUICK else [100, 300], ["1", "potts"]]
    timeout = 600

    def setup(self, side, kind):
        model = _grid(side, kind)
        flat, fixed = wmb.flat_factors(model), wmb._fixed_states(model)
        order = wmb._elimination_order(model, flat, fixed, Deadline(10.0))
        self.run = wmb.WeightedMiniBucket(wmb.MiniBuckets(flat, fixed, order, ibound=10 if
                                                          kind != "potts" else 3))
        self.run.forward()
        self.run.backward()

    def time_pass(self, side, kind):
        self.run.forward(0.5)
        self.run.backward()


class InferGrid:
    param_names = ["side", "kind"]
    params = [_SIDES, ["1", "3", "potts"]]
    timeout = 900

    def setup(self, side, kind):
        self.model = _grid(side, kind)

    def _infer(self):
        return fwcore.infer(self.model, max_time=_MAX_TIME)

    def time_infer(self, side, kind):
        self._infer()

    def peakmem_infer(self, side, kind):
        self._infer()

    def track_interval(self, side, kind):
        res = self._infer()
        return 100.0 * (res.log_z_upper - res.log_z_lower) / abs(res.log_z_upper)

    track_interval.unit = "% of log Z"

    def track_first_bound(self, side, kind):
        times = self._infer().trace.columns()["time"]
        return float(times[1]) if len(times) > 1 else float(np.nan)

    track_first_bound.unit = "seconds"
