"""Weighted mini-bucket at scale (issue 39; `bench/wmb_scale.py` is the plain runner with
Merlin beside it).

`WMBPass`: one pass (forward with matching and the weights' step, then backward) of
`fwcore.marginals.wmb` at i-bound 10 on a binary grid (couplings U[−1, 1]) and a Potts-8
grid, the tree built once in `setup`. `InferGrid`: `fwcore.infer` on grids with
``max_time``: seconds, peak memory, the interval upper − lower as a share of the upper
bound (``track_interval``) and the seconds to the first pass's bound
(``track_first_bound``). `WMBSample` (issue 36): importance sampling down the tree at
i-bound 10 (``time_sample``: 1000 samples) and `WMBLower`: a pass of the lower bound of
mixed signs (weights ≥ 1 and < 0), each beside its NumPy twin's time on a 6x6 grid
(``time_*_twin``: the kernels' speed-up is their ratio).
"""
import numpy as np

import fwcore
from fwcore.loop import Deadline
from fwcore.marginals import wmb
from fwcore.views import fixed_states, flat_factors

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
        flat, fixed = flat_factors(model), fixed_states(model)
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


def _tree(model, ibound):
    flat, fixed = flat_factors(model), fixed_states(model)
    order = wmb._elimination_order(model, flat, fixed, Deadline(10.0))
    return wmb.WeightedMiniBucket(wmb.MiniBuckets(flat, fixed, order, ibound=ibound))


def _twin(model, ibound):
    """`tests/wmb_numpy.WMBTwin` on ``model``'s factors (tests/ beside bench/)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from wmb_lower_numpy import LowerTwin
    from wmb_numpy import WMBTwin, mini_buckets_twin
    flat, fixed = flat_factors(model), fixed_states(model)
    order = wmb._elimination_order(model, flat, fixed, Deadline(10.0)).tolist()
    card = [int(c) for c in model.card]
    scopes = [tuple(int(v) for v in flat.var[flat.start[f]:flat.start[f + 1]])
              for f in range(len(flat.start) - 1)]
    tables = [flat.table[flat.off[f]:flat.off[f + 1]].reshape([card[v] for v in s])
              for f, s in enumerate(scopes)]
    tree = mini_buckets_twin(card, scopes, fixed, order, ibound + 1)
    return WMBTwin(card, scopes, tables, fixed, order, tree), LowerTwin(
        card, scopes, tables, fixed, order, tree)


class WMBSample:
    param_names = ["side"]
    params = [[30] if QUICK else [30, 100]]
    timeout = 600

    def setup(self, side):
        self.run = _ready(_tree(fwcore.random_grid(side, coupling=1.0, seed=0), 10))
        self.u = np.random.default_rng(0).random((1000, len(self.run.mb.order)))
        self.small = _ready(_tree(fwcore.random_grid(6, coupling=1.0, seed=0), 2))
        self.twin, _ = _twin(fwcore.random_grid(6, coupling=1.0, seed=0), 2)
        self.twin.forward(1.0, 1.0, 1e-6)
        self.u_small = np.random.default_rng(0).random((100, 36))

    def time_sample(self, side):
        """1000 samples of the side x side grid."""
        _draw(self.run, self.u)

    def time_sample_small(self, side):
        """100 samples of the 6x6 grid (the twin's model)."""
        _draw(self.small, self.u_small)

    def time_sample_twin(self, side):
        """100 samples of the 6x6 grid by the NumPy twin."""
        from wmb_lower_numpy import sample
        sample(self.twin, self.u_small)


def _ready(run):
    run.forward()
    run.backward()
    return run


def _draw(run, u):
    k = len(u)
    run.sample(u, np.empty((k, len(run.mb.flat.card)), dtype=np.int64), np.empty(k),
               np.empty(k))


class WMBLower:
    param_names = ["side"]
    params = [[30] if QUICK else [30, 100]]
    timeout = 600

    def setup(self, side):
        self.run = _tree(fwcore.random_grid(side, coupling=1.0, seed=0), 10)
        self.run.make_lower()
        self.small = _tree(fwcore.random_grid(6, coupling=1.0, seed=0), 2)
        self.small.make_lower()
        _, self.twin = _twin(fwcore.random_grid(6, coupling=1.0, seed=0), 2)

    def time_pass(self, side):
        self.run.forward(1.0)
        self.run.backward()

    def time_pass_small(self, side):
        self.small.forward(1.0)
        self.small.backward()

    def time_pass_twin(self, side):
        self.twin.forward(1.0, 3.0, 1e-6, 64.0)
        self.twin.backward()
