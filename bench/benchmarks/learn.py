"""Learning on a synthetic binary grid-CRF segmentation task (issue 7): test Hamming error
against training seconds for MLEStruct-BCFW, MLEStruct-FW and SSVM-BCFW, each run for a
budget of passes over the training set (one pass = one oracle call per example, plus the
fresh duality-gap pass). Oracle: QPBO; MLE-Struct with ρ = 0.5 on every edge (App. E.2)."""
import time

import numpy as np

from fwcore.learn.datasets import synthetic_segmentation
from fwcore.learn import CRF, MLEStruct, SSVM

from .common import QUICK

SIZE, N_TRAIN, N_TEST = (10, 8, 8) if QUICK else (16, 20, 20)
QPBO = CRF(oracle="qpbo")
LEARNERS = {
    "mle-bcfw": lambda k: MLEStruct(reg=100.0, rho=0.5, method="bcfw", model=QPBO, max_iter=k,
                                    tol=0.0),
    "mle-fw": lambda k: MLEStruct(reg=100.0, rho=0.5, method="fw", model=QPBO, max_iter=k,
                                  tol=0.0),
    "ssvm-bcfw": lambda k: SSVM(reg=0.01, method="bcfw", model=QPBO, max_iter=k, tol=0.0),
}


def _error(pred, Y):
    return float(np.mean([np.mean(p != y) for p, y in zip(pred, Y)]))


class LearnSegmentation:
    """track_test_error: mean per-pixel Hamming error on held-out images;
    track_fit_seconds: wall time of fit. Baseline: thresholding the observation at 0.5."""

    param_names = ["learner", "passes"]
    params = [list(LEARNERS), [1, 3, 10, 30]]
    timeout = 600

    def setup_cache(self):
        """{(learner, passes): (test error, fit seconds)} and the thresholding baseline's
        error, every learner fitted once per budget."""
        X, Y = synthetic_segmentation(N_TRAIN, size=SIZE, noise=1.0, seed=0)
        Xt, Yt = synthetic_segmentation(N_TEST, size=SIZE, noise=1.0, seed=1)
        table = {"threshold": _error([(x.node_features[:, 1] > 0.5).astype(int) for x in Xt],
                                     Yt)}
        for learner, make in LEARNERS.items():
            for passes in self.params[1]:
                t0 = time.perf_counter()
                model = make(passes).fit(X, Y)
                table[learner, passes] = (_error(model.predict(Xt), Yt),
                                          time.perf_counter() - t0)
        return table

    def track_test_error(self, table, learner, passes):
        return table[learner, passes][0]

    def track_fit_seconds(self, table, learner, passes):
        return table[learner, passes][1]

    def track_threshold_error(self, table, learner, passes):
        return table["threshold"]
