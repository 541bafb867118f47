"""Learning past one machine (issue 40): SSVM-BCFW and MLE-BCFW on generated 100x100
segmentation examples (`fwcore.learn.datasets.segmentation_images`, features by
`fwcore.learn.features.segmentation_features`) kept in an `fwcore.learn.data.ExampleFolder`,
fitted serially, on threads, on processes and on a dask LocalCluster (``--workers``
workers of one thread, without dask's MALLOC_TRIM_THRESHOLD_ unless ``--dask-trim``:
`fwcore.learn.shards.MALLOC_TRIM`); the learner's process reads no example itself (the
workers, or the serial loop a few at a time, load them).

    python bench/learn_executors.py --n 1000                 # the executor table
    python bench/learn_executors.py --n 10000 --executors serial --learners ssvm --passes 1
    python bench/learn_executors.py --n 200 --compare-batch 1,16    # minibatch vs BCFW
    python bench/learn_executors.py --n 8 --size 16 --passes 2      # smoke size

Each (learner, executor) fit runs in a fresh process (``--child``), so that its peak
resident memory (VmHWM) is the fit's alone; the held-out error is measured after
that peak is read. Per fit: seconds per pass (median over the passes after the first; a
pass is a BCFW pass and a fresh gap pass), bytes sent to the executor per pass (the
pickled task arguments: a wrapper around a process pool's ``submit``, and around the dask
client's ``submit`` / ``scatter`` / ``gather``, its actors' methods and the futures'
``result`` for what comes back; threads and the serial loop send nothing), the process's
peak RSS beside the pickled size of the dataset, the workers' peak RSS (dask), the held-out error on
``--test`` images, whether ``coef_`` equals the serial fit's, and the progress lines the
``fwcore`` logger printed inside passes. Data sets are written once to ``--root`` and reused.
One BLAS thread per process (the per-example vectors are small).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from fwcore.learn import CRF, SSVM, MLEStruct  # noqa: E402
from fwcore.learn.data import ExampleFolder, write_examples  # noqa: E402
from fwcore.learn.datasets import segmentation_images  # noqa: E402
from fwcore.learn.features import segmentation_features  # noqa: E402

#: λ of bench/learn_scale.py: MLE-Struct's per training pixel, SSVM's
MLE_REG_PER_PIXEL, SSVM_REG = 0.005, 1e6
LEARNERS = {
    "ssvm": lambda reg, **kw: SSVM(reg=reg, method="bcfw", **kw),
    "mle": lambda reg, **kw: MLEStruct(reg=reg, rho=0.5, method="bcfw", **kw),
}
EXECUTORS = ("serial", "threads", "processes", "dask")
#: images generated at a time (bounds the generator's memory)
CHUNK = 50


def images(n, size, seed, first=0):
    """(X, Y) of images first..first+n-1 of the stream ``seed`` (each chunk of `CHUNK`
    has its own seed, so a part is made without the images before it)."""
    X, Y = [], []
    for start in range(first - first % CHUNK, first + n, CHUNK):
        ims, masks = segmentation_images(CHUNK, size, seed=seed * 10**6 + start // CHUNK)
        for k in range(max(first, start), min(first + n, start + CHUNK)):
            X.append(segmentation_features(ims[k - start]))
            Y.append(masks[k - start].ravel())
    return X, Y


def dataset(root, n, size):
    """The `ExampleFolder` of n training images (seed 0) and its pickled size in bytes,
    written once under ``root``."""
    path = Path(root) / f"seg-{n}-{size}"
    info = path / "info.json"
    if not info.exists():
        pickled = 0
        for start in range(0, n, CHUNK):
            X, Y = images(min(CHUNK, n - start), size, 0, start)
            pickled += sum(len(pickle.dumps((x, y), protocol=5)) for x, y in zip(X, Y))
            write_examples(path, X, Y, first=start)
            print(f"  wrote {start + len(X)}/{n} examples to {path}", file=sys.stderr,
                  flush=True)
        info.write_text(json.dumps({"pickled_bytes": pickled}))
    return ExampleFolder(path), json.loads(info.read_text())["pickled_bytes"]


def peak_rss():
    """This process's peak resident memory in bytes (VmHWM: unlike ``ru_maxrss``, which
    a process started by another inherits, it counts from the program's own start)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


class Counter:
    """Bytes pickled to (``sent``) and from (``received``) another process, counted by
    wrapping what crosses: a process pool's ``submit`` (`CountingPool`), a dask client's
    calls (`count_dask`)."""

    def __init__(self):
        self.sent = self.received = 0

    def out(self, *objects):
        self.sent += len(pickle.dumps(objects, protocol=5))

    def back(self, obj):
        self.received += len(pickle.dumps(obj, protocol=5))
        return obj

    def count_dask(self, client, patch=setattr):
        """Count what ``client`` sends (submit, scatter, calls of actors) and gets back
        (gather, results of futures and of actor calls), each wrapped by
        ``patch(owner, name, wrapper)`` (a test's ``monkeypatch.setattr`` undoes it)."""
        import distributed
        from distributed.actor import Actor, ActorFuture
        submit, scatter, gather = client.submit, client.scatter, client.gather
        result, actor_result = distributed.Future.result, ActorFuture.result
        method = Actor.__getattr__

        def out(*objects):
            self.out([o for o in objects if not isinstance(o, distributed.Future)])

        def counted_submit(fn, *args, **kwargs):
            out(fn, *args)
            return submit(fn, *args, **kwargs)

        def counted_scatter(data, **kwargs):
            out(data)
            return scatter(data, **kwargs)

        def counted_method(actor, name):
            call = method(actor, name)
            return lambda *args: (out(name, *args), call(*args))[1]

        patch(client, "submit", counted_submit)
        patch(client, "scatter", counted_scatter)
        patch(client, "gather", lambda futures, **kw: [self.back(r) for r in gather(futures, **kw)])
        patch(distributed.Future, "result", lambda f, timeout=None: self.back(result(f, timeout)))
        patch(ActorFuture, "result", lambda f, timeout=None: self.back(actor_result(f, timeout)))
        patch(Actor, "__getattr__", counted_method)


#: what the fit of this process sent and got back
COUNTER = Counter()


class CountingPool(Executor):
    """A process pool whose submissions and results are counted (`COUNTER`)."""

    def __init__(self, pool):
        self.pool = pool

    def submit(self, fn, *args, **kwargs):
        COUNTER.out(fn, args, kwargs)
        future = self.pool.submit(fn, *args, **kwargs)
        future.add_done_callback(lambda f: f.exception() or COUNTER.back(f.result()))
        return future

    def shutdown(self, wait=True, **kwargs):
        self.pool.shutdown(wait, **kwargs)


class LineCounter(logging.Handler):
    """Counts the ``fwcore`` logger's progress lines, inside passes and per pass."""

    inside = per_pass = 0

    def emit(self, record):
        if "examples/s" in record.getMessage():
            LineCounter.inside += 1
        else:
            LineCounter.per_pass += 1


def child(args):
    """One fit (``--child learner executor``): prints its figures as JSON."""
    name, kind = args.child
    logger = logging.getLogger("fwcore")
    logger.setLevel(logging.INFO)
    logger.addHandler(LineCounter())
    data, _ = dataset(args.root, args.n, args.size)
    n_pixels = args.size * args.size * len(data)
    reg = SSVM_REG if name == "ssvm" else MLE_REG_PER_PIXEL * n_pixels
    rows = []

    def record(r):
        rows.append((r.iteration, r.time, COUNTER.sent, COUNTER.received, r.primal, r.gap))

    cluster = client = executor = None
    if kind == "threads":
        executor = ThreadPoolExecutor(args.workers)
    elif kind == "processes":
        executor = CountingPool(ProcessPoolExecutor(args.workers))
    elif kind == "dask":
        import dask
        from distributed import Client, LocalCluster
        if not args.dask_trim:  # see `fwcore.learn.shards.MALLOC_TRIM`
            dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_":
                             None})
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = executor = Client(cluster)
        COUNTER.count_dask(client)
    learner = LEARNERS[name](reg, model=CRF(oracle="qpbo"), max_iter=args.passes, tol=0.0,
                             batch_size=args.batch, executor=executor, callback=record)
    t0 = time.perf_counter()
    learner.fit(data)
    fit_seconds = time.perf_counter() - t0
    peak = peak_rss()
    workers_peak = None
    if client is not None:
        workers_peak = sum(client.run(peak_rss).values())
        client.close()
        cluster.close()
    elif executor is not None:
        executor.shutdown()
    Xt, Yt = images(args.test, args.size, 1)
    predicted = learner.set_params(executor=None).predict(Xt)
    error = float(np.mean([np.mean(p != y) for p, y in zip(predicted, Yt)]))
    print(json.dumps({"rows": rows, "fit_seconds": fit_seconds, "peak": peak,
                      "workers_peak": workers_peak, "error": error,
                      "coef": learner.coef_.tolist(), "status": learner.status_.value,
                      "inside": LineCounter.inside, "per_pass": LineCounter.per_pass}))


def run_child(args, name, kind, batch=None):
    cmd = [sys.executable, __file__, "--child", name, kind, "--n", str(args.n), "--size",
           str(args.size), "--passes", str(args.passes), "--batch",
           str(args.batch if batch is None else batch), "--workers", str(args.workers),
           "--test", str(args.test), "--root", args.root] + ["--dask-trim"] * args.dask_trim
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{name} on {kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def _median_diff(values):
    d = np.diff(values)
    return float(np.median(d[1:] if d.size > 1 else d)) if d.size else float("nan")


def table(args):
    data, pickled = dataset(args.root, args.n, args.size)
    print(f"{args.n} examples of {args.size}x{args.size} pixels in {data.path}: pickled "
          f"{pickled / 2**20:.0f} MiB; {args.passes} passes, batch_size {args.batch}, "
          f"{args.workers} workers; held-out: {args.test} images", flush=True)
    print("learner  executor   s/pass  sent:first  sent/pass  (% data)  back/pass  "
          "driver RSS  (% data)  workers RSS  error   equal  lines in passes")
    for name in filter(None, args.learners.split(",")):
        serial = None
        for kind in filter(None, args.executors.split(",")):
            r = run_child(args, name, kind)
            rows = np.array(r["rows"])
            serial = r["coef"] if kind == "serial" else serial
            equal = "-" if serial is None or kind == "serial" else str(r["coef"] == serial)
            per_pass, back = _median_diff(rows[:, 2]), _median_diff(rows[:, 3])
            workers = "-" if r["workers_peak"] is None else f"{r['workers_peak'] / 2**30:.2f} GiB"
            print(f"{name:7s}  {kind:9s}  {_median_diff(rows[:, 1]):6.2f}  "
                  f"{rows[0, 2] / 2**20:7.1f} MiB  {per_pass / 2**10:7.1f} KiB  "
                  f"{100 * per_pass / pickled:7.3f}  {back / 2**10:7.1f} KiB  "
                  f"{r['peak'] / 2**30:6.2f} GiB  {100 * r['peak'] / pickled:7.1f}  "
                  f"{workers:>11s}  {r['error']:.4f}  {equal:5s}  {r['inside']}", flush=True)


def compare_batch(args):
    """Objective and gap per pass of serial MLE-BCFW and SSVM-BCFW for each batch size."""
    print(f"minibatch BCFW against BCFW: {args.n} examples, serial, objective (gap) per pass")
    for name in filter(None, args.learners.split(",")):
        for batch in map(int, args.compare_batch.split(",")):
            r = run_child(args, name, "serial", batch)
            cells = "  ".join(f"{p:.6g} ({g:.3g})" for *_, p, g in r["rows"])
            print(f"{name:5s} batch {batch:3d}: {cells}  error {r['error']:.4f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="training examples")
    parser.add_argument("--size", type=int, default=100, help="image side in pixels")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="BCFW batch_size")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--test", type=int, default=100, help="held-out images")
    parser.add_argument("--learners", default="ssvm,mle")
    parser.add_argument("--executors", default=",".join(EXECUTORS))
    parser.add_argument("--compare-batch", default="", help="batch sizes, e.g. 1,16")
    parser.add_argument("--root", default=os.environ.get("FWCORE_BENCH_DATA",
                                                         "/tmp/fwcore-bench-data"))
    parser.add_argument("--dask-trim", action="store_true",
                        help="keep dask's MALLOC_TRIM_THRESHOLD_ (64 KiB) on its workers")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
    elif args.compare_batch:
        compare_batch(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
