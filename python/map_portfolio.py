"""MAP on a frustrated grid: the anytime portfolio's score and certified bound over time.

    python python/map_portfolio.py [--side 100] [--coupling 4] [--max-time 10] [--plot FILE]

`fwcore.infer_map` with the approximate "portfolio" oracle (QPBO, TRW-S and ICM, then
fusion moves and annealing while time is left) on the paper's grid family with strong
mixed couplings, where no exact solver finishes; TRW-S's dual value bounds every labelling,
so the gap between score and bound says how far from optimal the answer can be. ICM alone
is printed for comparison. ``--plot`` saves the portfolio's score and bound against time
(needs the ``plot`` extra).
"""
import argparse

import fwcore


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=100, help="grid side length")
    p.add_argument("--coupling", type=float, default=4.0, help="couplings ~ U[-c, c]")
    p.add_argument("--max-time", type=float, default=10.0, help="time budget in seconds")
    p.add_argument("--plot", metavar="FILE", help="save score and bound against time")
    args = p.parse_args(argv)
    model = fwcore.random_grid(args.side, coupling=args.coupling, seed=0)
    print(f"{args.side}x{args.side} grid, couplings U[-{args.coupling:g}, {args.coupling:g}]")
    for method in ("icm", "portfolio"):
        res = fwcore.infer_map(model, method, max_time=args.max_time, seed=0)
        bound = "none" if res.upper_bound is None else f"{res.upper_bound:.1f}"
        print(f"{method:<10} score {res.score:.1f}, bound {bound}, status "
              f"{res.status.value}, {res.time:.2f} s")
    if args.plot:
        from fwcore.plot import plot_map_trace
        ax = plot_map_trace(res)
        ax.set_title(f"anytime portfolio, {args.side}x{args.side} frustrated grid")
        ax.figure.savefig(args.plot, dpi=90, bbox_inches="tight")


if __name__ == "__main__":
    main()
