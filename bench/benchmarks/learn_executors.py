"""Learning past one machine (issue 40), asv's view of ``bench/learn_executors.py``: SSVM-BCFW
and MLE-BCFW on a folder of generated segmentation examples, fitted serially, on threads,
on processes and on a dask LocalCluster of 2 workers, each fit in a process of its own.
track_seconds_per_pass, track_kib_sent_per_pass (pickled task arguments after the first
pass), track_driver_rss_mib (the fitting process's peak), track_test_error and
track_equal_to_serial (1: ``coef_`` equals the serial fit's)."""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from .common import QUICK, track_figure

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the runner
import learn_executors as runner  # noqa: E402

N, SIZE, PASSES, BATCH = (16, 24, 2, 4) if QUICK else (200, 100, 3, 16)


class LearnExecutors:
    param_names = ["learner", "executor"]
    params = [list(runner.LEARNERS), list(runner.EXECUTORS)]
    timeout = 3600

    def setup_cache(self):
        """{(learner, executor): figures}, every fit once."""
        args = argparse.Namespace(n=N, size=SIZE, passes=PASSES, batch=BATCH, workers=2,
                                  test=max(N // 4, 2), dask_trim=False,
                                  root=tempfile.mkdtemp(prefix="fwcore-asv-learn-"))
        table = {}
        try:
            self._fit_all(args, table)
        finally:
            shutil.rmtree(args.root)
        return table

    def _fit_all(self, args, table):
        for name in self.params[0]:
            serial = None
            for kind in self.params[1]:
                r = runner.run_child(args, name, kind)
                rows = np.array(r["rows"])
                serial = r["coef"] if serial is None else serial
                table[name, kind] = {
                    "seconds": runner._median_diff(rows[:, 1]),
                    "kib": runner._median_diff(rows[:, 2]) / 2**10,
                    "rss": r["peak"] / 2**20, "error": r["error"],
                    "equal": float(r["coef"] == serial)}

    def setup(self, table, learner, executor):
        self.figures = table[learner, executor]

    track_seconds_per_pass = track_figure("seconds", "s")
    track_kib_sent_per_pass = track_figure("kib", "KiB")
    track_driver_rss_mib = track_figure("rss", "MiB")
    track_test_error = track_figure("error")
    track_equal_to_serial = track_figure("equal")
