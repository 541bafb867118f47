"""Barrier FW and TRBP on the two large models of the paper's Sec. 5, made synthetic.

    python python/paper_large_models.py [--size 40] [--max-time 30] [--oracle NAME] [--plot FILE]

Horses: `fwcore.segmentation_crf`, a near-submodular contrast-sensitive Potts CRF on a
noisy image of size × 1.2·size pixels (size 100: the paper's N about 12,000). Chinese
characters: `fwcore.skip_grid`, a frustrated binary grid with skip edges at offsets 1, 2
and 4, of 0.8·size × 0.8·size cells (size 100: 6,400). Each is solved by `fwcore.infer`
(Barrier FW, Alg. 2; its default oracle unless --oracle is given) within --max-time
seconds, and by TRBP; the script prints both runs, their disagreement and, for the
segmentation, the pixel error against the true mask. ``--plot`` saves P(x_i = 1) of both
runs as images (with the segmentation's image and truth; needs the ``plot`` extra).
"""
import argparse

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
          f"TRW = {bp.info['primal']:.2f} (a bound only at an exact fixed point)")
    fw_p, bp_p = p_one(fw, shape), p_one(bp, shape)
    print(f"  mean |P_FW(x_i=1) - P_TRBP(x_i=1)| = {np.mean(np.abs(fw_p - bp_p)):.3f}")
    return fw_p, bp_p


def save_images(path, rows):
    """Each row of (title, image) panels in a row of the figure, on a fixed 0..1 grey
    scale."""
    import matplotlib.pyplot as plt
    width = max(len(row) for row in rows)
    fig, axes = plt.subplots(len(rows), width, figsize=(3.2 * width, 3.4 * len(rows)),
                             squeeze=False)
    for row, ax_row in zip(rows, axes):
        for ax in ax_row:
            ax.axis("off")
        for ax, (title, image) in zip(ax_row, row):
            shown = ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.colorbar(shown, ax=axes, shrink=0.8, label="P(x_i = 1); labels 0 / 1")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=40,
                   help="image height; 100 gives the paper's sizes (default 40)")
    p.add_argument("--max-time", type=float, default=30.0,
                   help="time budget of each run, seconds (default 30)")
    p.add_argument("--oracle", default=None, help="MAP oracle of Barrier FW (default: infer's)")
    p.add_argument("--plot", metavar="FILE", help="save the marginals as images")
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
    if args.plot:
        save_images(args.plot, [[("noisy image", np.clip(image, 0.0, 1.0)),
                                 ("truth", truth.astype(float)),
                                 ("Barrier FW P(x=1)", seg_fw), ("TRBP P(x=1)", seg_bp)],
                                [("skip grid: Barrier FW P(x=1)", skip_fw),
                                 ("skip grid: TRBP P(x=1)", skip_bp)]])


if __name__ == "__main__":
    main()
