"""Plots in the manner of Smooth and Strong Fig. 1 and 2 (needs the optional matplotlib).

    python bench/lp_figures.py [outdir]          # FWCORE_BENCH_PROFILE=quick: small runs

Saves lp_kolmogorov.png, lp_protein.png and lp_segmentation.png: each method's objective
per iteration (solid) and its best decoded score (dashed), with the LP optimum where
HiGHS gives it. Runs the same problems and settings as bench/benchmarks/infer_lp.py.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.infer_lp import CONFIGS, SEGMENTATION_CONFIGS, run  # noqa: E402


def main(outdir="."):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("lp_figures needs matplotlib (pip install matplotlib); no figures written")
        return
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for name, configs in (("kolmogorov", CONFIGS), ("protein", CONFIGS),
                          ("segmentation", SEGMENTATION_CONFIGS)):
        fig, ax = plt.subplots(figsize=(8, 5))
        reference = None
        for config in configs:
            try:
                res, reference = run(name, config)
            except NotImplementedError as skip:   # instance file absent
                print(f"skipping {name}: {skip}")
                break
            cols = res.trace.columns()
            line, = ax.plot(cols["iteration"], cols["primal"], label=config)
            ax.plot(cols["iteration"], cols["score"], "--", color=line.get_color())
        else:
            if reference is not None:
                ax.axhline(reference, color="k", lw=0.8, ls=":", label="LP optimum")
            ax.set_xscale("log")
            ax.set_xlabel("iterations (passes over all regions)")
            ax.set_ylabel("objective (solid), best decoded score (dashed)")
            ax.set_title(name)
            ax.legend(fontsize=7)
            fig.tight_layout()
            path = outdir / f"lp_{name}.png"
            fig.savefig(path, dpi=120)
            print(f"wrote {path}")
        plt.close(fig)


if __name__ == "__main__":
    main(*sys.argv[1:])
