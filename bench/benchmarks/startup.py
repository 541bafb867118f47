"""Start-up and library-code ratios of issue 30 (items 3 and 4).

`ImportTime`: wall and CPU seconds of ``import numpy``, ``import fwcore`` and
``python -m fwcore --version`` in fresh interpreters, run interleaved (one of each per
round, so machine load hits all alike), medians over the rounds; the ratio to numpy's
import is the figure to track (target: ``import fwcore`` <= 0.4 s, ``--version`` <= 0.6 s).
fwcore's modules are byte-compiled first, as ``pip install`` leaves them (without it, an
interpreter run with PYTHONDONTWRITEBYTECODE compiles all of fwcore at every import:
about 0.2 s more).

`SpanningForest`: `fwcore.marginals.rho.max_spanning_forest` (scipy's minimum spanning
tree on Kruskal's ranks) against `kruskal_forest`, a pure-Python Kruskal with a union-find
(its former implementation), on a grid with random edge weights; both give the same forest
(tests/test_spanning_forest.py).
"""
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fwcore
from fwcore.generators import grid_edges
from fwcore.marginals.rho import max_spanning_forest

from .common import QUICK

#: the start-up commands, each run by this interpreter
COMMANDS = {"numpy": ["-c", "import numpy"], "fwcore": ["-c", "import fwcore"],
            "fwcore --version": ["-m", "fwcore", "--version"]}


def _run_seconds(args, env):
    """(wall, CPU of the child) seconds of one ``python args`` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


class ImportTime:
    """Seconds to start each command, and its ratio to ``import numpy``; medians of 7
    interleaved rounds (15 in the full profile)."""
    param_names = ["command"]
    params = [list(COMMANDS)]
    rounds = 7 if QUICK else 15

    def setup_cache(self):
        """{command: (wall seconds, CPU seconds)}, medians over the rounds."""
        compileall.compile_dir(Path(fwcore.__file__).parent, quiet=1)
        # the fwcore this process imported, also in the children
        paths = [str(Path(fwcore.__file__).parents[1]), os.environ.get("PYTHONPATH")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
        samples = {name: [] for name in COMMANDS}
        for _ in range(self.rounds):
            for name, args in COMMANDS.items():
                samples[name].append(_run_seconds(args, env))
        return {name: tuple(statistics.median(s) for s in zip(*runs))
                for name, runs in samples.items()}

    def track_wall_seconds(self, table, command):
        return table[command][0]
    track_wall_seconds.unit = "s"

    def track_cpu_seconds(self, table, command):
        return table[command][1]
    track_cpu_seconds.unit = "s"

    def track_wall_ratio_to_numpy(self, table, command):
        return table[command][0] / table["numpy"][0]
    track_wall_ratio_to_numpy.unit = "x"


def kruskal_forest(n, edges, weights):
    """Kruskal over all edges by decreasing weight, ties in edge order, with a union-find
    in pure Python: the reference."""
    edges = np.asarray(edges, dtype=np.int64)
    parent = np.arange(n)

    def find(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    chosen = np.zeros(len(edges))
    for e in np.argsort(-np.asarray(weights), kind="stable"):
        a, b = find(edges[e, 0]), find(edges[e, 1])
        if a != b:
            parent[a] = b
            chosen[e] = 1.0
    return chosen


class SpanningForest:
    """Maximum spanning forest of a side x side grid with random weights (seed 0): seconds
    of each implementation and the time ratio new / reference (issue 30: 176 ms for the
    reference against 15-23 ms for scipy on a 100x100 grid)."""
    param_names = ["side"]
    params = [[100] if QUICK else [100, 316]]

    def setup(self, side):
        self.n = side * side
        self.edges = grid_edges(side, side)
        self.weights = np.random.default_rng(0).random(len(self.edges))

    def time_scipy(self, side):
        max_spanning_forest(self.n, self.edges, self.weights)

    def time_kruskal_reference(self, side):
        kruskal_forest(self.n, self.edges, self.weights)

    def track_ratio_to_kruskal(self, side):
        """Median over 7 interleaved rounds of time(new) / time(reference)."""
        ratios = []
        for _ in range(7):
            t0 = time.perf_counter()
            self.time_scipy(side)
            t1 = time.perf_counter()
            self.time_kruskal_reference(side)
            ratios.append((t1 - t0) / (time.perf_counter() - t1))
        return statistics.median(ratios)
    track_ratio_to_kruskal.unit = "x"
