"""Learn a grid CRF for binary segmentation with MLE-Struct and a structured SVM.

    python python/learn_segmentation.py

Synthetic noisy images (fwcore.learn.datasets); QPBO as the MAP oracle; both learners need
nothing but MAP calls. Prints the test Hamming error of each and of plain thresholding,
and MLE-Struct's calibrated marginals for one pixel.
"""
import time

import numpy as np

from fwcore.learn import MLEStruct, SSVM
from fwcore.learn.datasets import synthetic_segmentation


def error(pred, Y):
    return float(np.mean([np.mean(p != y) for p, y in zip(pred, Y)]))


def main():
    X, Y = synthetic_segmentation(20, size=16, noise=1.0, seed=0)
    Xt, Yt = synthetic_segmentation(20, size=16, noise=1.0, seed=1)
    print(f"threshold at 0.5       test error {error([(x.node_features[:, 1] > 0.5).astype(int) for x in Xt], Yt):.3f}")
    for name, learner in [("MLEStruct (BCFW)", MLEStruct(reg=100.0, rho=0.5, oracle="qpbo", max_iter=10)),
                          ("SSVM (BCFW)", SSVM(reg=0.01, oracle="qpbo", max_iter=10))]:
        t0 = time.perf_counter()
        learner.fit(X, Y)
        print(f"{name:<22} test error {error(learner.predict(Xt), Yt):.3f}  "
              f"fit {time.perf_counter() - t0:.1f} s, duality gap {learner.gap_:.3g}")
        if isinstance(learner, MLEStruct):
            marg = learner.predict_marginals(Xt[:1])[0]
            print(f"{'':<22} P(pixel 0 = foreground) = {marg[0, 1]:.3f} (truth {Yt[0][0]})")


if __name__ == "__main__":
    main()
