"""TRBP's bound on log Z from each starting rho (issue 39): the matrix-tree rule (exact
uniform-spanning-tree edge probabilities; a sparse LU that Ctrl-C cannot stop), "uniform"
and "balanced-trees" (spanning forests by Kruskal on the least-used edges, compiled and
interruptible; 32 forests, and 8), on the shared UAI grids and generated grids.

    python bench/trw_rho.py [--instances DIR] [--sizes 100] [--max-time 30]

Prints one row per model and number of rho updates (0: the starting rho's own bound; 10:
`fwcore.trbp`'s default), TRBP's ``log_z_upper`` per rule (lower is tighter; a bound only
at a fixed point of BP) and log Z where the instance has a .PR file.
"""
import argparse
import math
import os
from functools import partial
from pathlib import Path

import fwcore
from fwcore.marginals.rho import balanced_tree_rho

_UAI = ["uai2014/Grids_12.uai", "uai2014/Grids_15.uai", "fw-inference/grid10x10/gridWi10Tr1.uai",
        "fw-inference/grid10x10/gridWi10Tr2.uai", "fw-inference/grid5x5/gridWi5Tr1.uai"]
_RULES = {"matrix-tree": "matrix-tree", "uniform": "uniform",
          "balanced-trees (32)": "balanced-trees",
          "balanced-trees (8)": partial(balanced_tree_rho, n_trees=8)}


def _log_z(path):
    """ln Z from the instance's .PR file (log10 Z), or nan."""
    pr = Path(str(path) + ".PR")
    return float(pr.read_text().split()[-1]) * math.log(10) if pr.exists() else math.nan


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--instances", default=os.environ.get("FWCORE_INSTANCES",
                                                         "/work/shared/instances"))
    p.add_argument("--sizes", default="100", help="generated grid sides, comma-separated")
    p.add_argument("--max-time", type=float, default=30.0)
    args = p.parse_args(argv)
    models = [(Path(rel).stem, fwcore.read_uai(str(Path(args.instances) / rel)),
               _log_z(Path(args.instances) / rel))
              for rel in _UAI if (Path(args.instances) / rel).exists()]
    for n in (int(s) for s in args.sizes.split(",")):
        models += [(f"binary U[-1,1] {n}x{n}", fwcore.random_grid(n, coupling=1.0, seed=0),
                    math.nan),
                   (f"binary U[-3,3] {n}x{n}", fwcore.random_grid(n, coupling=3.0, seed=0),
                    math.nan),
                   (f"potts-8 {n // 2}x{n // 2}", fwcore.potts_grid(n // 2, n_labels=8, seed=0),
                    math.nan)]
    print("| model | log Z | rho updates | " + " | ".join(_RULES) + " |")
    print("|---|---|---|" + "---|" * len(_RULES))
    for name, model, log_z in models:
        for updates in (0, 10):
            bounds = [fwcore.trbp(model, rho=rule, rho_updates=updates,
                                  max_time=args.max_time).log_z_upper
                      for rule in _RULES.values()]
            print(f"| {name} | {log_z:.3f} | {updates} | "
                  + " | ".join(f"{b:.3f}" for b in bounds) + " |", flush=True)


if __name__ == "__main__":
    main()
