"""Marginal MAP beside Merlin's exact bucket-tree elimination (``--task MMAP --algorithm
bte``) on the shared UAI instances, with their evidence and random query sets: the same
value (log of the answer's mass) and the same assignment, and the seconds of each in one
run. Benchmark-only; Merlin is built by ``bench/peers/build_merlin.sh``.

    MERLIN=/path/to/merlin python bench/peers/merlin_mmap.py [--queries 5 20] [--seed 0]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import fwcore

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
from common import INSTANCES  # noqa: E402

MODELS = ["uai2014/Grids_12", "uai2014/CSP_11", "uai2014/ObjectDetection_11",
          "uai2014/Segmentation_11", "uai2014/DBN_14", "uai2014-higher-order/Promedus_11",
          "uai2014-higher-order/Pedigree_11", "uai2014-higher-order/CSP_12"]


def merlin(binary, model, evid, query, timeout):
    """(log value, assignment, seconds) of Merlin's exact MMAP; None past ``timeout``;
    a message when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [binary, "--input-file", str(model), "--query-file", query, "--task", "MMAP",
                "--algorithm", "bte", "--output-file", f"{tmp}/out"]
        if evid:
            args += ["--evidence-file", evid]
        t0 = time.perf_counter()
        try:
            run = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        seconds = time.perf_counter() - t0
        lines = run.stdout.splitlines()
        if "Value" not in lines:
            return f"failed (exit {run.returncode}): {(run.stderr or run.stdout)[-80:]!r}"
        value = float(lines[lines.index("Value") + 1].split()[0])
        x = [int(v) for v in Path(f"{tmp}/out.MMAP").read_text().split()[2:]]
    return value, x, seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, nargs="+", default=[5, 20])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--models", nargs="*", help="instances (default: MODELS)")
    args = p.parse_args()
    binary = os.environ.get("MERLIN", "merlin")
    rng = np.random.default_rng(args.seed)
    print(f"{'model':34} {'|Q|':>4} {'fwcore s':>9} {'merlin s':>9} {'ratio':>6} "
          f"{'value diff':>11} same")
    for name in args.models or MODELS:
        path = INSTANCES / f"{name}.uai"
        if not path.exists():
            continue
        evid = str(path) + ".evid" if Path(str(path) + ".evid").exists() else None
        model = fwcore.read_model(path)
        evidence = fwcore.read_evid(evid) if evid else {}
        free = [v for v in range(model.n_vars) if v not in evidence]
        for k in args.queries:
            q = sorted(rng.choice(free, size=min(k, len(free)), replace=False).tolist())
            with tempfile.NamedTemporaryFile("w", suffix=".query", delete=False) as f:
                f.write(f"{len(q)} {' '.join(map(str, q))}\n")
            t0 = time.perf_counter()
            try:
                ours = fwcore.infer_mmap(model, q, evidence)
                seconds = time.perf_counter() - t0
            except ValueError as err:
                why = str(err).split("): ")[-1].split(". No approximate")[0]
                print(f"{name:34} {k:4d} refused: {why[:150]}")
                continue
            theirs = merlin(binary, path, evid, f.name, args.timeout)
            os.unlink(f.name)
            if not isinstance(theirs, tuple):
                print(f"{name:34} {k:4d} {seconds:9.3f} merlin: "
                      f"{theirs or 'over ' + str(args.timeout) + ' s'}")
                continue
            value, x, merlin_s = theirs
            print(f"{name:34} {k:4d} {seconds:9.3f} {merlin_s:9.3f} {seconds / merlin_s:6.2f} "
                  f"{ours.score - value:11.2e} {list(ours.assignment) == x}")


if __name__ == "__main__":
    main()
