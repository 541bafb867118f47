"""Barrier FW at the speed of its kernels, and loopy BP beside PGMax (issue 30, items 1-2).

`Orchestration`: ``barrier_fw(oracle="exact")`` on gridWi5Tr1 (fw-inference/grid5x5): Python
calls per MAP call (function calls in fwcore's own files, as the issue counted them, and
in every file) and the kernels' share of the run's wall and CPU time (time inside
fwcore's compiled functions, the wrappers' own clock reads counted outside; medians of 7
runs each). Targets: <= 500 calls, >= 70% of wall.

`FamilyTimes`: CPU seconds per instance of ``barrier_fw(oracle="exact")`` on the fw-inference
families (5 instances each; quick: 2), each run in a fresh interpreter after one warm-up
run; with ``FWCORE_BENCH_BASE`` = another built checkout (the base commit), that
checkout's run of each instance alternates with this one's, and the median per-instance
ratio new / base is tracked (target <= 1/2) with the largest differences of MAP calls,
bound gap and zeta_mu (the same answers up to the paths' rounding).

`LoopyBPPeer`: loopy BP on ``random_grid(side, seed=0)`` (10^4 and 10^5 variables), CPU
and wall seconds per iteration, serial and with ``n_jobs=2``, against PGMax run by the
interpreter ``FWCORE_PGMAX_PYTHON`` (its own virtual environment, see
bench/peers/pgmax_bp.py; skipped without it). Targets: CPU ratio (serial) <= 1, wall
ratio with n_jobs=2 <= 1.
"""
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fwcore
from fwcore.io.uai import read_uai

from .common import INSTANCES, QUICK, instance_path

_EXTENSIONS = ("_kernels", "_oracles", "_elim", "_symbolic", "_linalg", "_wmb")
_GRID = "fw-inference/grid5x5/gridWi5Tr1.uai"
_FAMILIES = {"clique-0.5": [f"clique10/{i}" for i in range(1, 6)],
             "clique-2": [f"clique10/{i}" for i in range(201, 206)],
             "clique-8": [f"clique10/{i}" for i in range(801, 806)],
             "grid-5x5": [f"grid5x5/gridWi5Tr{i}" for i in range(1, 6)]}
#: this checkout (the fwcore this process imported), for the interpreters it starts
_HERE = str(Path(fwcore.__file__).resolve().parents[1])


def _python_calls(run):
    """(calls in fwcore's files, calls in every file) of Python functions during run()."""
    counts = [0, 0]

    def profile(frame, event, arg):
        if event == "call":
            counts[1] += 1
            counts[0] += "/fwcore/" in frame.f_code.co_filename
    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, counts


def _kernel_share(run, clock):
    """The share of run()'s ``clock`` seconds spent inside fwcore's compiled functions (each
    wrapped with that clock while run() runs)."""
    spent = [0.0]

    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += clock() - start
        return wrapper
    saved = []
    for name in _EXTENSIONS:
        module = importlib.import_module(f"fwcore.{name}")
        for attr, fn in vars(module).items():
            if type(fn).__name__ == "cython_function_or_method":
                saved.append((module, attr, fn))
                setattr(module, attr, timed(fn))
    try:
        start = clock()
        run()
        total = clock() - start
    finally:
        for module, attr, fn in saved:
            setattr(module, attr, fn)
    return spent[0] / total


class Orchestration:
    """Python calls per MAP call and the kernels' share on gridWi5Tr1 (exact oracle)."""

    timeout = 600

    def setup_cache(self):
        """The figures, or None when the instance is absent."""
        if not (INSTANCES / _GRID).exists():
            return None
        model = read_uai(INSTANCES / _GRID)
        run = functools.partial(fwcore.barrier_fw, model, oracle="exact")
        run()
        res, (own, every) = _python_calls(run)
        return {"calls": own / res.n_oracle_calls, "all_calls": every / res.n_oracle_calls,
                "wall_share": statistics.median(_kernel_share(run, time.perf_counter)
                                                for _ in range(7)),
                "cpu_share": statistics.median(_kernel_share(run, time.process_time)
                                               for _ in range(7))}

    def setup(self, table):
        if table is None:
            instance_path(_GRID)  # NotImplementedError naming it

    def track_python_calls_per_map_call(self, table):
        return table["calls"]

    def track_python_calls_per_map_call_all_files(self, table):
        return table["all_calls"]

    def track_kernel_share_of_wall(self, table):
        return table["wall_share"]

    def track_kernel_share_of_cpu(self, table):
        return table["cpu_share"]


def _child(checkout, paths):
    """Per instance of ``paths``, in a fresh interpreter on ``checkout``: CPU seconds of
    barrier_fw(oracle="exact") after a warm-up run, MAP calls, bound gap and zeta_mu."""
    env = dict(os.environ, PYTHONPATH=checkout, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "benchmarks.speed", *map(str, paths)], env=env,
                         cwd=Path(__file__).resolve().parents[1], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


class FamilyTimes:
    """Seconds per instance on the fw-inference families, and against FWCORE_BENCH_BASE."""

    timeout = 3600

    def setup_cache(self):
        """{"new": rows, "base": rows or None}, a row per instance (cpu, calls, gap, zeta);
        None when the instances are absent."""
        paths = [INSTANCES / f"fw-inference/{name}.uai"
                 for names in _FAMILIES.values() for name in (names[:2] if QUICK else names)]
        if not all(p.exists() for p in paths):
            return None
        base = os.environ.get("FWCORE_BENCH_BASE")
        rows = {"new": [], "base": [] if base else None}
        for path in paths:  # alternating, so that machine load hits both alike
            rows["new"] += _child(_HERE, [path])
            if base:
                rows["base"] += _child(base, [path])
        return rows

    def setup(self, table):
        if table is None:
            raise NotImplementedError(f"{INSTANCES / 'fw-inference'} not found")

    def track_median_seconds(self, table):
        return statistics.median(r["cpu"] for r in table["new"])
    track_median_seconds.unit = "s"

    def _against_base(self, table):
        if table["base"] is None:
            raise NotImplementedError("set FWCORE_BENCH_BASE to a built checkout of the base")
        return list(zip(table["base"], table["new"]))

    def track_median_ratio_to_base(self, table):
        return statistics.median(new["cpu"] / old["cpu"] for old, new in self._against_base(table))
    track_median_ratio_to_base.unit = "x"

    def track_max_map_calls_difference(self, table):
        return max(abs(new["calls"] - old["calls"]) for old, new in self._against_base(table))

    def track_max_bound_gap_difference(self, table):
        return max(abs(new["gap"] - old["gap"]) for old, new in self._against_base(table))

    def track_max_zeta_mu_difference(self, table):
        return max(abs(new["zeta"] - old["zeta"]) for old, new in self._against_base(table))


def per_iteration(run, iterations, repeats=3):
    """(wall, CPU) seconds per iteration of run() (``iterations`` of them; CPU of every
    thread), medians of ``repeats`` runs after a first one (PGMax compiles in it)."""
    run()
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) / iterations, statistics.median(cpu) / iterations


class LoopyBPPeer:
    """Loopy BP seconds per iteration on binary grids, and against PGMax: ``rounds``
    rounds of fwcore serial, fwcore with n_jobs=2 and PGMax in turn (so that machine load
    hits all alike); the seconds are medians over the rounds, each ratio the median of
    the rounds' ratios."""

    param_names = ["variables"]
    params = [[10**4, 10**5]]
    timeout = 1800
    iterations = 100
    rounds = 3

    def setup_cache(self):
        """{variables: {"n_jobs=1": [(wall, cpu) per round], "n_jobs=2": [...],
        "pgmax": [...] or None}}."""
        peer = os.environ.get("FWCORE_PGMAX_PYTHON")
        table = {}
        for variables in self.params[0]:
            side = round(variables ** 0.5)
            model = fwcore.random_grid(side, seed=0)
            row = {"n_jobs=1": [], "n_jobs=2": [], "pgmax": [] if peer else None}
            for _ in range(self.rounds):
                for k in (1, 2):
                    row[f"n_jobs={k}"].append(per_iteration(functools.partial(
                        fwcore.loopy_bp, model, max_iter=self.iterations, tol=1e-300,
                        n_jobs=k), self.iterations))
                if peer:
                    row["pgmax"].append(_pgmax_per_iteration(peer, side, self.iterations))
            table[variables] = row
        return table

    def setup(self, table, variables):
        self.row = table[variables]

    def _median(self, key, k):
        return statistics.median(r[k] for r in self.row[key])

    def _ratio(self, key, k):
        if self.row["pgmax"] is None:
            raise NotImplementedError("set FWCORE_PGMAX_PYTHON to PGMax's interpreter")
        return statistics.median(a[k] / b[k] for a, b in zip(self.row[key], self.row["pgmax"]))

    def track_cpu_per_iteration(self, table, variables):
        return self._median("n_jobs=1", 1)
    track_cpu_per_iteration.unit = "s"

    def track_wall_per_iteration(self, table, variables):
        return self._median("n_jobs=1", 0)
    track_wall_per_iteration.unit = "s"

    def track_wall_per_iteration_n_jobs_2(self, table, variables):
        return self._median("n_jobs=2", 0)
    track_wall_per_iteration_n_jobs_2.unit = "s"

    def track_pgmax_cpu_per_iteration(self, table, variables):
        self._ratio("pgmax", 1)  # skips without the peer
        return self._median("pgmax", 1)
    track_pgmax_cpu_per_iteration.unit = "s"

    def track_pgmax_wall_per_iteration(self, table, variables):
        self._ratio("pgmax", 0)
        return self._median("pgmax", 0)
    track_pgmax_wall_per_iteration.unit = "s"

    def track_cpu_ratio_to_pgmax(self, table, variables):
        return self._ratio("n_jobs=1", 1)
    track_cpu_ratio_to_pgmax.unit = "x"

    def track_wall_ratio_n_jobs_2_to_pgmax(self, table, variables):
        return self._ratio("n_jobs=2", 0)
    track_wall_ratio_n_jobs_2_to_pgmax.unit = "x"


def _pgmax_per_iteration(peer, side, iterations):
    """(wall, CPU) seconds per iteration of PGMax's loopy BP, run by the interpreter
    ``peer`` through bench/peers/pgmax_bp.py."""
    env = dict(os.environ, PYTHONPATH=_HERE, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([peer, str(Path(__file__).resolve().parents[1] / "peers" / "pgmax_bp.py"),
                          "--per-iteration", str(side), str(iterations)],
                         env=env, check=True, capture_output=True, text=True).stdout
    seconds = json.loads(out.strip().splitlines()[-1])
    return seconds["wall"], seconds["cpu"]


def _main(paths):
    """The child of `FamilyTimes`: one JSON row per instance file."""
    from fwcore.io.uai import read_mar, read_pr
    rows = []
    for path in paths:
        model = read_uai(path)
        fwcore.barrier_fw(model, oracle="exact")
        c0 = time.process_time()
        res = fwcore.barrier_fw(model, oracle="exact")
        cpu = time.process_time() - c0
        exact = read_mar(f"{path}.MAR")
        rows.append({"cpu": cpu, "calls": res.n_oracle_calls,
                     "gap": res.log_z_upper - read_pr(f"{path}.PR"),
                     "zeta": float(np.mean([abs(a[1] - b[1])
                                            for a, b in zip(res.node_marginals, exact)]))})
    print(json.dumps(rows))


if __name__ == "__main__":
    _main(sys.argv[1:])
