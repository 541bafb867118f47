"""Segmentation learning at the MLE-Struct paper's scale (issue 18): MLE-BCFW, MLE-FW and
SSVM-BCFW on hundreds of 100x100 colour images (`fwcore.learn.datasets.segmentation_images`,
features by `fwcore.learn.features.segmentation_features`), and the executor speed-ups.

    python bench/learn_scale.py                      # 200 train, 100 test, 60 passes
    python bench/learn_scale.py --train 10 --test 5 --size 32 --passes 3   # smoke size

Per learner, in a fresh process of its own that makes its own data (so that its peak
memory is one learner's, data included): the held-out Hamming error after every pass (a callback predicts the test set; its seconds are
not counted as training), training seconds, oracle calls and the child's peak resident
memory (training data included). Then seconds per pass serially, with a process pool and
with a dask LocalCluster (when dask.distributed is installed) of ``--workers`` workers.
One BLAS thread per process: the per-example vectors are too small to gain from BLAS
threads, which only contend for the two cores of this machine.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402

import numpy as np  # noqa: E402

from fwcore.learn import SSVM, MLEStruct  # noqa: E402
from fwcore.learn.datasets import segmentation_images  # noqa: E402
from fwcore.learn.features import segmentation_features  # noqa: E402

#: MLE-Struct's λ per training pixel (its log-likelihood sums over pixels) and SSVM's λ
#: (its loss is a mean over images of per-pixel Hamming losses), the best of a few values
#: on 20 training images of 100x100 pixels (MLE 0.0015 / 0.005 / 0.015; SSVM 1e4 to 1e8)
MLE_REG_PER_PIXEL, SSVM_REG = 0.005, 1e6
LEARNERS = {
    "mle-bcfw": lambda reg, **kw: MLEStruct(reg=reg, rho=0.5, method="bcfw", **kw),
    "mle-fw": lambda reg, **kw: MLEStruct(reg=reg, rho=0.5, method="fw", **kw),
    "ssvm-bcfw": lambda reg, **kw: SSVM(reg=reg, method="bcfw", **kw),
}


def _data(n, size, seed):
    images, masks = segmentation_images(n, size, seed=seed)
    return [segmentation_features(im) for im in images], [m.ravel() for m in masks]


def _error(learner, X, Y):
    return float(np.mean([np.mean(p != y) for p, y in zip(learner.predict(X), Y)]))


def _reg(name, X):
    if name.startswith("ssvm"):
        return SSVM_REG
    return MLE_REG_PER_PIXEL * sum(len(x.node_features) for x in X)


def _fit(name, args):
    """Rows (pass, training seconds, oracle calls, test error), the fit's status and the
    peak memory of this process, which makes its own data (so that the peak counts only
    what one learner needs)."""
    X, Y = _data(args.train, args.size, seed=0)
    Xt, Yt = _data(args.test, args.size, seed=1)
    rows, evaluating = [], [0.0]

    def evaluate(record):
        t0 = time.perf_counter()
        rows.append((record.iteration, record.time - evaluating[0], record.n_oracle_calls,
                     _error(learner, Xt, Yt)))
        evaluating[0] += time.perf_counter() - t0

    learner = LEARNERS[name](_reg(name, X), oracle="qpbo", max_iter=args.passes, tol=0.0,
                             max_time=args.max_time, callback=evaluate)
    learner.fit(X, Y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return rows, learner.status_.value, peak


def _speed(name, X, Y, passes, executor):
    learner = LEARNERS[name](_reg(name, X), oracle="qpbo", max_iter=passes, tol=0.0,
                             executor=executor)
    t0 = time.perf_counter()
    learner.fit(X, Y)
    return (time.perf_counter() - t0) / passes, learner.coef_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--size", type=int, default=100, help="image side in pixels")
    parser.add_argument("--passes", type=int, default=60)
    parser.add_argument("--max-time", type=float, default=3600.0, help="seconds per learner")
    parser.add_argument("--learners", default=",".join(LEARNERS))
    parser.add_argument("--speed-passes", type=int, default=2,
                        help="passes of the executor comparison (0: skip it)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    X, Y = _data(args.train, args.size, seed=0)
    Yt = _data(args.test, args.size, seed=1)[1]
    print(f"data: {args.train} train + {args.test} test images of {args.size}x{args.size} "
          f"pixels, {time.perf_counter() - t0:.1f} s; all-background test error "
          f"{np.mean([y.mean() for y in Yt]):.4f}", flush=True)
    spawn = multiprocessing.get_context("spawn")  # a fresh process: its own peak memory
    for name in args.learners.split(","):
        with ProcessPoolExecutor(1, mp_context=spawn) as child:
            rows, status, peak = child.submit(_fit, name, args).result()
        print(f"\n{name}: reg {_reg(name, X):g}, status {status}, peak memory {peak:.2f} GiB "
              "(the process, its training and test data included)")
        print("pass  seconds  oracle_calls  test_error")
        for k, seconds, calls, err in rows:
            print(f"{k:4d}  {seconds:7.1f}  {calls:12d}  {err:.4f}")
    if args.speed_passes:
        fork = multiprocessing.get_context("fork")
        print("\nexecutors: seconds per pass (speed-up over serial)")
        for name in ("mle-fw", "mle-bcfw"):
            serial, coef = _speed(name, X, Y, args.speed_passes, None)
            line = f"{name:9s} serial {serial:.2f}"
            with ProcessPoolExecutor(args.workers, mp_context=fork) as pool:
                t, c = _speed(name, X, Y, args.speed_passes, pool)
            line += f" | processes {t:.2f} ({serial / t:.2f}x, equal: {np.allclose(c, coef)})"
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                line += " | dask: not installed (pip install 'fwcore[dask]')"
            else:
                with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
                        Client(cluster) as client:
                    t, c = _speed(name, X, Y, args.speed_passes, client.get_executor())
                line += f" | dask {t:.2f} ({serial / t:.2f}x, equal: {np.allclose(c, coef)})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
