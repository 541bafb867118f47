"""Time limits of the inference and MAP entry points (issue 12): each call with a limit of
``--limit`` seconds (``max_time`` or ``time_limit``) on frustrated grids
(`random_grid(n, coupling=4, seed=0)`) and on a large-label star (one 5000-label variable,
four binary neighbours), against its wall time. The contract is wall <= 1.2 limit + 1 s;
a row says "ok" or "OVER". The learners have their own script, learn_time_limits.py.

    python bench/time_limits.py [--limit 5] [--sides 100,200] [--calls infer-trws,trbp,...]
"""
import argparse
import time

import numpy as np

import fwcore

CALLS = {
    "infer-auto": lambda m, t: fwcore.infer(m, max_time=t),
    "infer-exact": lambda m, t: fwcore.barrier_fw(m, oracle="exact", max_time=t),
    "infer-trws": lambda m, t: fwcore.barrier_fw(m, oracle="trws", tol=1e-9, max_time=t),
    "infer-portfolio": lambda m, t: fwcore.barrier_fw(m, oracle="portfolio", tol=1e-9, max_time=t),
    "infer-local": lambda m, t: fwcore.barrier_fw(m, domain="local", tol=1e-9, max_time=t),
    "trbp": lambda m, t: fwcore.trbp(m, max_iter=10**6, tol=1e-15, max_time=t),
    "loopy_bp": lambda m, t: fwcore.loopy_bp(m, max_iter=10**6, tol=1e-15, max_time=t),
    "infer_map-ilp": lambda m, t: fwcore.infer_map(m, method="ilp", time_limit=t),
    "infer_map-lp": lambda m, t: fwcore.infer_map(m, method="lp", time_limit=t),
    "infer_map-toulbar2": lambda m, t: fwcore.infer_map(m, method="toulbar2", time_limit=t),
    "infer_map-portfolio": lambda m, t: fwcore.infer_map(m, method="portfolio", time_limit=t),
    "infer_lp-mplp": lambda m, t: fwcore.infer_lp(m, method="mplp", tol=0, max_time=t),
    "infer_lp-l2-agd": lambda m, t: fwcore.infer_lp(m, method="l2-agd", tol=0, max_time=t),
    "infer_lp-sdca": lambda m, t: fwcore.infer_lp(m, method="sdca", tol=0, max_time=t),
    "perturb_and_map": lambda m, t: fwcore.perturb_and_map(m, oracle="trws", max_time=t,
                                                           seed=0),
}


def star():
    """One 5000-label variable with four binary neighbours (issue 12's M2 model)."""
    rng = np.random.default_rng(0)
    return fwcore.PairwiseMRF([5000, 2, 2, 2, 2], None, [(0, k) for k in range(1, 5)],
                              [rng.normal(size=(5000, 2)) for _ in range(4)])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=float, default=5.0, help="seconds (default 5)")
    p.add_argument("--sides", default="100,200", help="grid sides (default 100,200)")
    p.add_argument("--calls", default=",".join(CALLS), help="entry points, comma-separated")
    args = p.parse_args(argv)
    models = {f"grid{s}": (lambda s=s: fwcore.random_grid(s, coupling=4, seed=0))
              for s in map(int, args.sides.split(","))}
    models["star5000"] = star
    print(f"{'entry point':<21}{'model':<10}{'limit':>6}{'wall':>8}  status / error")
    for name, make in models.items():
        model = make()
        for call in args.calls.split(","):
            t0 = time.perf_counter()
            try:
                status = CALLS[call](model, args.limit).status.value
            except (ValueError, TypeError, RuntimeError) as err:
                status = f"{type(err).__name__}: {str(err)[:60]}"
            wall = time.perf_counter() - t0
            verdict = "ok" if wall <= 1.2 * args.limit + 1.0 else "OVER"
            print(f"{call:<21}{name:<10}{args.limit:>6.1f}{wall:>8.2f}  {verdict} {status}",
                  flush=True)


if __name__ == "__main__":
    main()
