"""Time limits of the learners (issue 12): ``fit`` with ``max_time`` in {2, 5, 10} s on
training sets where one pass takes seconds, against the wall time of the whole ``fit`` call
(validation included). The contract is wall <= 1.2 max_time + 1 s, status max_time.

    python bench/learn_time_limits.py [--limits 2,5,10] [--cases mle-lp,ssvm-lp,...]

Cases: grid-CRF segmentation (`fwcore.learn.datasets.synthetic_segmentation`, as in
``python/learn_segmentation.py``) with the default 'lp' oracle (a HiGHS LP per example) and
with QPBO, and bipartite point matching (`noisy_point_matching`, as in
``python/learn_matching.py``, Hungarian oracle). Every fit has tol=0 and no pass limit, so
without ``max_time`` it would not stop. Prints one row per (case, limit).
"""
import argparse
import time

from fwcore.learn import CRF, MLEStruct, SSVM
from fwcore.learn.datasets import noisy_point_matching, synthetic_segmentation

UNLIMITED = {"tol": 0.0, "max_iter": 10**6}


def _seg(n_images, size):
    return lambda: synthetic_segmentation(n_images, size=size, noise=1.0, seed=0)


def _match(n_examples, n_points):
    return lambda: noisy_point_matching(n_examples, n_points=n_points, seed=0)


CASES = {
    "mle-lp": ("seg 8 x 48x48, lp", _seg(8, 48),
               lambda t: MLEStruct(reg=100.0, rho=0.5, max_time=t, **UNLIMITED)),
    "ssvm-lp": ("seg 8 x 48x48, lp", _seg(8, 48),
                lambda t: SSVM(reg=0.01, max_time=t, **UNLIMITED)),
    "mle-qpbo": ("seg 40 x 64x64, qpbo", _seg(40, 64),
                 lambda t: MLEStruct(reg=100.0, rho=0.5, model=CRF(oracle="qpbo"), max_time=t,
                                     **UNLIMITED)),
    "ssvm-qpbo": ("seg 40 x 64x64, qpbo", _seg(40, 64),
                  lambda t: SSVM(reg=0.01, model=CRF(oracle="qpbo"), max_time=t, **UNLIMITED)),
    "mle-match": ("match 20 x 300 pts", _match(20, 300),
                  lambda t: MLEStruct(reg=0.01, entropy="bethe", model="bipartite", max_time=t,
                                      **UNLIMITED)),
    "ssvm-match": ("match 20 x 300 pts", _match(20, 300),
                   lambda t: SSVM(reg=0.01, model="bipartite", max_time=t, **UNLIMITED)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limits", default="2,5,10")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    limits = [float(s) for s in args.limits.split(",")]
    print(f"{'case':<11} {'data':<22} {'max_time':>8} {'wall':>7} {'ratio':>6} {'held':>5} "
          f"{'status':<11} {'passes':>6}")
    for case in args.cases.split(","):
        label, data, make = CASES[case]
        X, Y = data()
        for limit in limits:
            learner = make(limit)
            t0 = time.perf_counter()
            learner.fit(X, Y)
            wall = time.perf_counter() - t0
            held = "yes" if wall <= 1.2 * limit + 1.0 else "NO"
            print(f"{case:<11} {label:<22} {limit:>8.0f} {wall:>7.1f} {wall / limit:>6.2f} "
                  f"{held:>5} {learner.status_.value:<11} {learner.n_iter_:>6}", flush=True)


if __name__ == "__main__":
    main()
