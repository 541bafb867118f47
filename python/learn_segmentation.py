"""Learn a grid CRF for binary segmentation with MLE-Struct and a structured SVM.

    python python/learn_segmentation.py [--plot FILE]

Synthetic noisy images (fwcore.learn.datasets); QPBO as the MAP oracle; both learners need
nothing but MAP calls. Prints the test Hamming error of each and of plain thresholding,
and MLE-Struct's calibrated marginals for one pixel. ``--plot`` saves one test image with
its truth, both learners' MAP labellings and MLE-Struct's marginals (needs the ``plot``
extra).
"""
import argparse
import time

import numpy as np

from fwcore.learn import CRF, MLEStruct, SSVM
from fwcore.learn.datasets import synthetic_segmentation

SIZE = 16


def error(pred, Y):
    return float(np.mean([np.mean(p != y) for p, y in zip(pred, Y)]))


def save_images(path, x, y, learners):
    """The test image's evidence channel, its truth, each learner's labelling and
    MLE-Struct's P(foreground), on a 0..1 grey scale."""
    import matplotlib.pyplot as plt
    panels = [("image (noisy evidence)", np.clip(x.node_features[:, 1], 0.0, 1.0)),
              ("truth", y)]
    panels += [(f"{name} MAP", learner.predict([x])[0]) for name, learner in learners.items()]
    panels.append(("MLEStruct P(foreground)",
                   learners["MLEStruct"].predict_marginals([x])[0][:, 1]))
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 2.9))
    for ax, (title, image) in zip(axes, panels):
        shown = ax.imshow(np.reshape(image, (SIZE, SIZE)).astype(float), cmap="gray",
                          vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    fig.colorbar(shown, ax=axes, shrink=0.8, label="evidence, label or P(foreground)")
    fig.savefig(path, dpi=90)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plot", metavar="FILE", help="save one test image and its labellings")
    args = p.parse_args(argv)
    X, Y = synthetic_segmentation(20, size=SIZE, noise=1.0, seed=0)
    Xt, Yt = synthetic_segmentation(20, size=SIZE, noise=1.0, seed=1)
    threshold = [(x.node_features[:, 1] > 0.5).astype(int) for x in Xt]
    print(f"threshold at 0.5       test error {error(threshold, Yt):.3f}")
    crf = CRF(oracle="qpbo")
    learners = {"MLEStruct": MLEStruct(reg=100.0, rho=0.5, model=crf, max_iter=10),
                "SSVM": SSVM(reg=0.01, model=crf, max_iter=10)}
    for name, learner in learners.items():
        t0 = time.perf_counter()
        learner.fit(X, Y)
        print(f"{name + ' (BCFW)':<22} test error {error(learner.predict(Xt), Yt):.3f}  "
              f"fit {time.perf_counter() - t0:.1f} s, duality gap {learner.gap_:.3g}")
    marg = learners["MLEStruct"].predict_marginals(Xt[:1])[0]
    print(f"{'':<22} P(pixel 0 = foreground) = {marg[0, 1]:.3f} (truth {Yt[0][0]})")
    if args.plot:
        save_images(args.plot, Xt[0], Yt[0], learners)


if __name__ == "__main__":
    main()
