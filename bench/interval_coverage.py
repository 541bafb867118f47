"""How often the sampled interval holds log Z (issue 36): ``fwcore.infer`` with seeds
0..N-1 on models with official answers.

    python bench/interval_coverage.py                      # uai2014-beyond, -higher-order
    python bench/interval_coverage.py --seeds 20 --max-time 10 DIR_OR_UAI ...

Per model (its evidence applied): ``infer(model, method, max_time, seed=k)`` for each
seed; prints how many of the intervals ``log_z_estimate_lower ≤ log Z ≤
log_z_estimate_upper`` held (beyond the .PR file's precision), their median width, and
the certified interval's. The interval is meant to hold with probability 0.95 each
time (`fwcore.marginals.estimate`): at least 19 of 20 is the target. Heavy (N x
max_time a model): run it through ``flock /work/heavy.lock`` on a shared machine.
"""
import argparse
import math
import sys
from pathlib import Path

import numpy as np

import fwcore
from beyond import BEYOND_SETS, INSTANCES, load_case, with_answers


def coverage(case, seeds, max_time, method):
    """(held, runs, median width, median certified width) over ``seeds`` runs."""
    held, widths, certified = 0, [], []
    for seed in range(seeds):
        res = fwcore.infer(case.model, method=method, max_time=max_time, seed=seed)
        lower, upper = res.log_z_estimate_lower, res.log_z_estimate_upper
        if lower is None:
            continue
        tol = case.log_z_tolerance
        held += lower <= case.log_z + tol and case.log_z - tol <= upper
        widths.append(upper - lower)
        certified.append(res.log_z_upper - res.log_z_lower)
    width = float(np.median(widths)) if widths else math.nan
    return held, len(widths), width, float(np.median(certified)) if certified else math.nan


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", help=".uai files or folders")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--max-time", type=float, default=10.0)
    p.add_argument("--method", default="approximate")
    opts = p.parse_args(argv)
    roots = ([Path(a) for a in opts.models] or
             [INSTANCES / s for s in (*BEYOND_SETS, "uai2014-higher-order")])
    paths = [q for r in roots for q in (sorted(r.glob("*.uai")) if r.is_dir() else [r])]
    print(f"| model | held | median width | certified width (infer({opts.method!r}, "
          f"max_time={opts.max_time:g})) |\n|---|---|---|---|")
    for path in with_answers(paths):
        case = load_case(path)
        held, runs, width, certified = coverage(case, opts.seeds, opts.max_time, opts.method)
        print(f"| {case.name} | {held}/{runs} | {width:.4g} | {certified:.4g} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
