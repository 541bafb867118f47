"""Barrier FW Fig. 1 redrawn on the shared instances (needs the ``plot`` extra and pytoulbar2).

    python bench/paper_fig1.py OUT.png [--instances 2]

Runs every method of bench/benchmarks/fig1.py on the clique families (theta = 0.5 to 8)
and the 5x5 grids, prints the table (means per instance) and saves one PNG with the
panels: (a, b) zeta_logZ against MAP calls on a 5x5 grid and a theta = 2 clique (M_delta
with the exact oracle and L_delta: the certified bound, or the TRW value where a record
has none; the approximate oracle: the TRW value, as the paper plots it), (c) zeta_mu
against MAP calls on the grids for M_delta after the first rho and after 10 rho updates,
(d) MAP calls per instance against theta (the paper's (d) is a 40-node RBM, not drawn
here), (e, f) zeta_mu and zeta_logZ against theta on the cliques. Instances are read in
place from $FWCORE_INSTANCES (default ../shared/instances). Measured on 2 busy cores: 2
instances per family take about 7 minutes, ``--instances 5`` (the paper code's averaging)
about 16.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from fwcore.oracles import available_oracles

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.fig1 import FAMILIES, METHODS, PRIMAL, THETAS, run_family  # noqa: E402

_CURVES = ["M-exact", "M-approx", "L"]  # the methods whose traces panels (a, b) draw


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("paper_fig1 needs matplotlib: pip install 'fwcore[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _convergence(ax, runs, title):
    for method in _CURVES:
        for k, row in enumerate(runs[method]):
            c = row[4].trace.columns()
            value = c["primal"] if method in PRIMAL else np.where(np.isfinite(c["bound"]),
                                                                  c["bound"], c["primal"])
            ax.plot(c["n_oracle_calls"], np.abs(value - row[5]), color=f"C{_CURVES.index(method)}",
                    lw=1, label=method if k == 0 else None)
    ax.set(xlabel="MAP calls", ylabel="zeta_logZ", yscale="log", title=title)
    ax.legend(fontsize=7)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="PNG file to write")
    p.add_argument("--instances", type=int, default=2, help="instances per family (1-5)")
    args = p.parse_args(argv)
    plt = _pyplot()
    if not available_oracles()["toulbar2"]:
        raise SystemExit("paper_fig1 needs pytoulbar2 (Perturb-and-MAP's MAP solver, as in "
                         "App. G): pip install pytoulbar2")
    runs = {f: {m: run_family(f, m, args.instances) for m in METHODS} for f in FAMILIES}
    print(f"{'family':<11}{'method':<19}{'zeta_mu':>9}{'zeta_logZ':>11}{'MAP calls':>11}"
          f"{'seconds':>9}")
    for f in FAMILIES:
        for m in METHODS:
            z_mu, z_lz, calls, sec = np.mean([r[:4] for r in runs[f][m]], axis=0)
            print(f"{f:<11}{m:<19}{z_mu:>9.3f}{z_lz:>11.3f}{calls:>11.0f}{sec:>9.2f}")

    fig, axes = plt.subplots(2, 3, figsize=(15, 9))
    (a, b, c), (d, e, f) = axes
    _convergence(a, runs["grid-5x5"], "(a) zeta_logZ: 5x5 grids")
    _convergence(b, runs["clique-2"], "(b) zeta_logZ: 10-node cliques, theta = 2")
    for k, (first, opt) in enumerate(zip(runs["grid-5x5"]["M-exact-first-rho"],
                                         runs["grid-5x5"]["M-exact"])):
        c.plot([first[2], opt[2]], [first[0], opt[0]], "o-", color="C0",
               label="M_delta: first rho, rho_opt" if k == 0 else None)
    for j, m in enumerate(["TRBP", "loopy-BP", "PAM"]):
        c.axhline(np.mean([r[0] for r in runs["grid-5x5"][m]]), color=f"C{j + 1}", ls="--",
                  label=m)
    c.set(xlabel="MAP calls", ylabel="zeta_mu", title="(c) zeta_mu: 5x5 grids")
    c.legend(fontsize=7)
    families = [f"clique-{t:g}" for t in THETAS]
    for ax, col, label in ((d, 2, "MAP calls"), (e, 0, "zeta_mu"), (f, 1, "zeta_logZ")):
        for j, m in enumerate(METHODS):
            y = [np.mean([r[col] for r in runs[fam][m]]) for fam in families]
            if col != 2 or max(y) > 0:
                ax.plot(THETAS, y, "o-", color=f"C{j}", label=m, ms=3)
        ax.set(xlabel="theta", ylabel=label, yscale="log" if col else "linear")
        ax.legend(fontsize=7)
    d.set_title("(d) MAP calls per instance: cliques")
    e.set_title("(e) zeta_mu: 10-node cliques")
    f.set_title("(f) zeta_logZ: 10-node cliques")
    fig.tight_layout()
    fig.savefig(args.out, dpi=70)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
