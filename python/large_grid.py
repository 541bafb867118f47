"""Approximate marginals on a large grid with an approximate MAP oracle.

    python python/large_grid.py [--side 100] [--oracle trws] [--max-time 60]
                                [--plot FILE]

Barrier FW (Alg. 2) with TRW-S as the MAP oracle and ICM local search (Alg. 6) on the
paper's grid family; exact marginals are out of reach at this size, so the script compares
with tree-reweighted BP's marginals and reports the log Z bound TRW-S certifies.
``--plot`` saves both runs' P(x_i = 1) as images side by side (needs the ``plot`` extra).
"""
import argparse

import numpy as np

import fwcore


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=100, help="grid side length")
    p.add_argument("--oracle", default="trws",
                   help="approximate MAP oracle (trws, icm, qpbo, ...)")
    p.add_argument("--max-time", type=float, default=60.0, help="time budget in seconds")
    p.add_argument("--rho-updates", type=int, default=3)
    p.add_argument("--plot", metavar="FILE", help="save both runs' marginals as images")
    args = p.parse_args(argv)
    model = fwcore.random_grid(args.side, seed=0)
    print(f"{args.side}x{args.side} grid: {model.n_vars} variables, {model.n_edges} edges")
    res = fwcore.barrier_fw(model, oracle=args.oracle, rho_updates=args.rho_updates,
                       max_time=args.max_time, seed=0)
    kind = "certified" if res.certified else "not certified"
    print(f"Barrier FW ({args.oracle}): {res.time:.1f} s, status {res.status.value}, "
          f"{res.n_oracle_calls} MAP calls, {res.info['n_icm_calls']} ICM calls")
    print(f"  TRW = {res.info['primal']:.2f}, log Z <= {res.log_z_upper:.2f} ({kind})")
    bp = fwcore.trbp(model, rho_updates=0, max_iter=300, max_time=args.max_time)
    diff = np.mean([abs(a[1] - b[1]) for a, b in zip(res.node_marginals, bp.node_marginals)])
    print(f"TRBP: {bp.time:.1f} s, status {bp.status.value}, TRW = {bp.info['primal']:.2f}; "
          f"mean |P_FW(x_i=1) - P_TRBP(x_i=1)| = {diff:.3f}")
    if args.plot:
        import matplotlib.pyplot as plt

        from fwcore.plot import plot_marginals
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
        for ax, (name, run) in zip(axes, [("Barrier FW", res), ("TRBP", bp)]):
            plot_marginals(run, (args.side, args.side), ax=ax).set_title(name)
        fig.savefig(args.plot, dpi=90, bbox_inches="tight")


if __name__ == "__main__":
    main()
