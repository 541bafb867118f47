"""Shared benchmark settings. FWCORE_BENCH_PROFILE picks the sizes: "quick" (seconds per
class: the whole asv suite runs in minutes) or "full" (the papers' sizes, hours). Under asv
(which sets ASV=true) the default is quick, so that ``asv run`` checks every commit in
minutes; ``FWCORE_BENCH_PROFILE=full asv run`` measures the papers' sizes. The plain runner
``bench/run.py`` is full unless given --quick."""
import os
import statistics
import sys
import time
from pathlib import Path

PROFILE = os.environ.get("FWCORE_BENCH_PROFILE", "quick" if os.environ.get("ASV") else "full")
QUICK = PROFILE == "quick"
INSTANCES = Path(os.environ.get("FWCORE_INSTANCES",
                                Path(__file__).resolve().parents[3] / "shared" / "instances"))
TESTS = Path(__file__).resolve().parents[2] / "tests"


def instance_path(relative):
    """INSTANCES / ``relative``; NotImplementedError (asv's skip) when it is missing."""
    path = INSTANCES / relative
    if not path.exists():
        raise NotImplementedError(f"{path} not found")
    return path


def track_figure(key, unit=None):
    """A ``track_*`` method returning ``float(self.figures[key])``: the figures a class's
    ``setup`` picked from its ``setup_cache`` table (asv calls it with the parameters)."""
    def track(self, *params):
        return float(self.figures[key])
    if unit is not None:
        track.unit = unit
    return track


def built_models(makers):
    """(name, model) for each ``{name: make}`` whose ``make()`` does not skip (raise
    NotImplementedError: its instance file is absent)."""
    for name, make in makers.items():
        try:
            yield name, make()
        except NotImplementedError:
            continue


def tests_module(name):
    """A module of tests/ (a kernel's NumPy twin); NotImplementedError (asv's skip)
    without tests/ beside bench/."""
    if not (TESTS / f"{name}.py").exists():
        raise NotImplementedError(f"{TESTS / name}.py not found")
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    return __import__(name)


def median_seconds(fn, repeats=3):
    """The median wall time of ``repeats`` calls of ``fn()``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
