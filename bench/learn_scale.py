"""Segmentation learning at the MLE-Struct paper's scale (issue 18): MLE-BCFW, MLE-FW and
SSVM-BCFW on hundreds of 100x100 colour images (`fwcore.learn.datasets.segmentation_images`,
features by `fwcore.learn.features.segmentation_features`), and the executor speed-ups.

    python bench/learn_scale.py                      # 200 train, 100 test, 60 passes
    python bench/learn_scale.py --train 10 --test 5 --size 32 --passes 3   # smoke size
    python bench/learn_scale.py --scaling 50,100,150,200     # cost per pass against size
    python bench/learn_scale.py --learners '' --train 10 --speed-passes 1 --speed-oracle lp

Per learner, in a fresh process of its own that makes its own data (so that its peak
memory is one learner's, data included): the held-out Hamming error after every pass (a
callback predicts the test set; its seconds are not counted as training), training
seconds, oracle calls and the process's peak resident memory. Then seconds per pass
serially, with a thread pool, a process pool and a dask LocalCluster (when
dask.distributed is installed) of ``--workers`` workers; ``--scaling 50,100,200`` instead
prints the cost per pass against the image size.
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
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor  # noqa: E402

import numpy as np  # noqa: E402

from fwcore.learn import CRF, SSVM, MLEStruct  # noqa: E402
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

    learner = LEARNERS[name](_reg(name, X), model=CRF(oracle="qpbo"), max_iter=args.passes,
                             tol=0.0, max_time=args.max_time, callback=evaluate)
    learner.fit(X, Y)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return rows, learner.status_.value, peak


def _speed(name, X, Y, passes, oracle, executor):
    learner = LEARNERS[name](_reg(name, X), model=CRF(oracle=oracle), max_iter=passes, tol=0.0,
                             executor=executor)
    t0 = time.perf_counter()
    learner.fit(X, Y)
    return (time.perf_counter() - t0) / passes, learner.coef_


def _per_pass(name, n_images, size, passes):
    """Seconds per pass after the first (serial; data made in this process)."""
    X, Y = _data(n_images, size, seed=0)
    learner = LEARNERS[name](_reg(name, X), model=CRF(oracle="qpbo"), max_iter=passes,
                             tol=0.0).fit(X, Y)
    times = learner.trace_.columns()["time"]
    return (times[-1] - times[1]) / (passes - 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--size", type=int, default=100, help="image side in pixels")
    parser.add_argument("--passes", type=int, default=60)
    parser.add_argument("--max-time", type=float, default=3600.0, help="seconds per learner")
    parser.add_argument("--learners", default=",".join(LEARNERS),
                        help="comma-separated, from " + ", ".join(LEARNERS) + "; '' for none")
    parser.add_argument("--speed-passes", type=int, default=2,
                        help="passes of the executor comparison (0: skip it)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--speed-oracle", default="qpbo",
                        help="the MAP oracle of the executor comparison (e.g. lp: slower calls)")
    parser.add_argument("--speed-images", type=int, default=None,
                        help="training images of the executor comparison (default: --train)")
    parser.add_argument("--scaling", default="",
                        help="image sides for the cost per pass, e.g. 50,100,200 (20 images)")
    args = parser.parse_args(argv)
    if args.scaling:
        print("cost per pass against image size (20 training images, passes 2-4)")
        print("side  pixels  learner    s/pass  us/pixel")
        for size in map(int, args.scaling.split(",")):
            for name in ("mle-bcfw", "ssvm-bcfw"):
                t = _per_pass(name, 20, size, 4)
                print(f"{size:4d}  {size * size:6d}  {name:9s}  {t:6.2f}  "
                      f"{1e6 * t / (20 * size * size):8.2f}", flush=True)
        return

    t0 = time.perf_counter()
    X, Y = _data(args.train, args.size, seed=0)
    Yt = _data(args.test, args.size, seed=1)[1]
    print(f"data: {args.train} train + {args.test} test images of {args.size}x{args.size} "
          f"pixels, {time.perf_counter() - t0:.1f} s; all-background test error "
          f"{np.mean([y.mean() for y in Yt]):.4f}", flush=True)
    spawn = multiprocessing.get_context("spawn")  # a fresh process: its own peak memory
    for name in filter(None, args.learners.split(",")):
        with ProcessPoolExecutor(1, mp_context=spawn) as child:
            rows, status, peak = child.submit(_fit, name, args).result()
        print(f"\n{name}: reg {_reg(name, X):g}, status {status}, peak memory {peak:.2f} GiB "
              "(the process, its training and test data included)")
        print("pass  seconds  oracle_calls  test_error")
        for k, seconds, calls, err in rows:
            print(f"{k:4d}  {seconds:7.1f}  {calls:12d}  {err:.4f}")
    if args.speed_passes:
        fork = multiprocessing.get_context("fork")
        n = args.speed_images or args.train
        X, Y, oracle = X[:n], Y[:n], args.speed_oracle
        print(f"\nexecutors ({n} images, oracle {oracle}): seconds per pass (speed-up over "
              "serial; equal: the same coef_ as the serial run)")
        for name in ("mle-fw", "mle-bcfw"):
            serial, coef = _speed(name, X, Y, args.speed_passes, oracle, None)
            line = f"{name:9s} serial {serial:.2f}"
            for kind, pool in (("threads", ThreadPoolExecutor(args.workers)),
                               ("processes", ProcessPoolExecutor(args.workers, mp_context=fork))):
                with pool:
                    t, c = _speed(name, X, Y, args.speed_passes, oracle, pool)
                line += f" | {kind} {t:.2f} ({serial / t:.2f}x, equal: {np.allclose(c, coef)})"
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                line += " | dask: not installed (pip install 'fwcore[dask]')"
            else:
                with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster:
                    with Client(cluster) as client:
                        t, c = _speed(name, X, Y, args.speed_passes, oracle,
                                      client.get_executor())
                line += f" | dask {t:.2f} ({serial / t:.2f}x, equal: {np.allclose(c, coef)})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
