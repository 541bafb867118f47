"""Barrier FW and TRBP on the two large models of the paper's Sec. 5, made synthetic.

    python python/paper_large_models.py [--size 40] [--max-time 30] [--oracle NAME]

Horses: `fwcore.segmentation_crf`, a near-submodular contrast-sensitive Potts CRF on a
noisy image of size × 1.2·size pixels (size 100: the paper's N about 12,000). Chinese
characters: `fwcore.skip_grid`, a frustrated binary grid with skip edges at offsets 1, 2
and 4, of 0.8·size × 0.8·size cells (size 100: 6,400). Each is solved by `fwcore.infer`
(Barrier FW, Alg. 2; its default oracle unless --oracle is given) within --max-time
seconds, and by TRBP; the script prints both runs, their disagreement and, for the
segmentation, the pixel error against the true mask. With matplotlib (the 'plot' extra)
it saves P(x_i = 1) as images side by side: segmentation_marginals.png (with the image
and the truth) and skip_grid_marginals.png, in --out-dir.
"""
import argparse
from pathlib import Path

import numpy as np

import fwcore


def p_one(result, shape):
    """P(x_i = 1) of every variable as an image of the given shape."""
    return np.array([m[1] for m in result.node_marginals]).reshape(shape)


def solve(name, model, shape, args):
    print(f"{name}: {shape[0]}x{shape[1]}, {model.n_vars} variables, {model.n_edges} edges")
    options = {} if args.oracle is None else {"oracle": args.oracle}
    fw = fwcore.infer(model, max_time=args.max_time, seed=0, **options)
    kind = "certified" if fw.certified else "not certified"
    print(f"  Barrier FW: {fw.time:.1f} s, status {fw.status.value}, "
          f"{fw.n_oracle_calls} MAP calls, log Z <= {fw.log_z_upper:.2f} ({kind})")
    bp = fwcore.trbp(model, max_time=args.max_time)
    print(f"  TRBP:       {bp.time:.1f} s, status {bp.status.value}, "
          f"TRW = {bp.primal:.2f} (a bound only at an exact fixed point)")
    fw_p, bp_p = p_one(fw, shape), p_one(bp, shape)
    print(f"  mean |P_FW(x_i=1) - P_TRBP(x_i=1)| = {np.mean(np.abs(fw_p - bp_p)):.3f}")
    return fw_p, bp_p


def save_images(path, panels):
    """Each (title, image) in one row of panels, P(x_i = 1) on a fixed 0..1 grey scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4))
    for ax, (title, image) in zip(axes, panels):
        ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"saved {path}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=40,
                   help="image height; 100 gives the paper's sizes (default 40)")
    p.add_argument("--max-time", type=float, default=30.0,
                   help="time budget of each run, seconds (default 30)")
    p.add_argument("--oracle", default=None, help="MAP oracle of Barrier FW (default: infer's)")
    p.add_argument("--out-dir", default=".", help="where the PNG images go")
    args = p.parse_args(argv)
    if args.size < 2:
        p.error("--size must be at least 2")

    h, w = args.size, round(1.2 * args.size)
    seg, image, truth = fwcore.segmentation_crf(h, w, seed=0, return_image=True)
    seg_fw, seg_bp = solve("Segmentation (Horses-like)", seg, (h, w), args)
    for name, prob in (("Barrier FW", seg_fw), ("TRBP", seg_bp)):
        print(f"  {name}: pixels misclassified at P > 0.5: {np.mean((prob > 0.5) != truth):.3f}")
    side = max(2, round(0.8 * args.size))
    skip = fwcore.skip_grid(side, seed=0)
    skip_fw, skip_bp = solve("Skip grid (Chinese-characters-like)", skip, (side, side), args)

    try:
        import matplotlib  # noqa: F401  (the optional 'plot' extra)
    except ImportError:
        print("matplotlib is not installed (pip install 'fwcore[plot]'): no images saved")
        return
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    grey_image = np.clip(image, 0.0, 1.0)
    save_images(out / "segmentation_marginals.png",
                [("noisy image", grey_image), ("truth", truth.astype(float)),
                 ("Barrier FW P(x=1)", seg_fw), ("TRBP P(x=1)", seg_bp)])
    save_images(out / "skip_grid_marginals.png",
                [("Barrier FW P(x=1)", skip_fw), ("TRBP P(x=1)", skip_bp)])


if __name__ == "__main__":
    main()
