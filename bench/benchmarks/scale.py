"""A million variables in one call (issue 39): building a grid model from NumPy arrays,
writing and reading its UAI file, and loopy BP / TRBP held to ``max_time``.

Sides 100 and 300 in the quick profile, and 1000 (10^6 variables) in the full one (run
that under ``flock /work/heavy.lock`` on a shared machine; bench/scale.py measures each
size in a fresh process, with Merlin's reader and SIGINT beside it). Measured with
bench/scale.py on a loaded 2-core machine, 10^6 variables: `PairwiseMRF` from arrays
1.1-1.6 s (binary and Potts-8; it was 31.6 s for binary), `read_uai` of the binary
grid's 245 MB file 5.6-10.2 s and 0.6 GB (140 s and 5.0 GB before; Merlin's reader 20.4 s
in the same run), of the Potts-8 grid's 742 MB file 24 s and 1.9 GB (Merlin 41 s),
`write_uai` 6.6-8.4 s and 39 s (51 s before for binary); loopy BP and TRBP with
max_time = 60 s returned in 52.5-61.6 s, loopy BP at 2.92 GB peak RSS on Potts-8.
"""
import os
import tempfile
import time

import numpy as np

import fwcore
from fwcore.generators import grid_edges

from .common import QUICK

_SIDES = [100, 300] if QUICK else [100, 300, 1000]
_MAX_TIME = 2.0 if QUICK else 60.0
_MODELS = {"binary-1": lambda n: fwcore.random_grid(n, coupling=1.0, field=1.0, seed=0),
           "binary-3": lambda n: fwcore.random_grid(n, coupling=3.0, field=1.0, seed=0),
           "potts-8": lambda n: fwcore.potts_grid(n, n_labels=8, seed=0)}


class ScaleFiles:
    """Seconds to build a grid model from its arrays (and to copy those arrays, the
    target), to write its UAI file and to read it back; the reader's peak memory."""

    param_names = ["side", "model"]
    params = [_SIDES, ["binary-1", "potts-8"]]
    timeout = 1800

    def setup(self, side, model):
        k = 8 if model == "potts-8" else 2
        rng = np.random.default_rng(0)
        self.arrays = (np.full(side * side, k), rng.uniform(-1, 1, (side * side, k)),
                       grid_edges(side, side))
        self.arrays += (rng.uniform(-1, 1, (len(self.arrays[2]), k, k)),)
        self.model = _MODELS[model](side)
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "model.uai")
        fwcore.write_uai(self.model, self.path)

    def teardown(self, side, model):
        os.remove(self.path)
        os.rmdir(self.dir)

    def time_build_from_arrays(self, side, model):
        fwcore.PairwiseMRF(*self.arrays)

    def time_copy_the_arrays(self, side, model):
        [a.copy() for a in self.arrays]

    def time_write_uai(self, side, model):
        fwcore.write_uai(self.model, self.path)

    def time_read_uai(self, side, model):
        fwcore.read_uai(self.path)

    def peakmem_read_uai(self, side, model):
        fwcore.read_uai(self.path)

    def track_file_mb(self, side, model):
        return os.path.getsize(self.path) / 1e6

    track_file_mb.unit = "MB"


class ScaleBP:
    """Loopy BP and TRBP with ``max_time`` (2 s quick, 60 s full): wall seconds from the
    call (the target: within 5% + 0.5 s of max_time), seconds past max_time, whether the
    result is valid (finite marginals summing to 1: 1.0), and the run's peak memory."""

    param_names = ["side", "model", "method"]
    params = [_SIDES, list(_MODELS), ["loopy_bp", "trbp"]]
    timeout = 3600

    def setup(self, side, model, method):
        self.model = _MODELS[model](side)
        self.run = getattr(fwcore, method)
        t = time.monotonic()
        self.result = self.run(self.model, max_time=_MAX_TIME)
        self.wall = time.monotonic() - t

    def track_wall(self, side, model, method):
        return self.wall

    def track_past_max_time(self, side, model, method):
        return self.wall - _MAX_TIME

    def track_valid(self, side, model, method):
        mu, off = self.result.mu, self.model.node_off
        sums = np.add.reduceat(mu[:off[-1]], off[:-1])
        return float(np.isfinite(mu).all() and np.allclose(sums, 1.0))

    def peakmem_run(self, side, model, method):
        self.run(self.model, max_time=_MAX_TIME)

    track_wall.unit = track_past_max_time.unit = "s"
