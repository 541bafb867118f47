"""Plain benchmark runner: runs the asv classes of bench/benchmarks without asv.

    python bench/run.py                  # every benchmark module
    python bench/run.py kernels exact    # modules whose name contains a word
    python bench/run.py infer.InferMedium  # one class of one module
    python bench/run.py --quick kernels  # small sizes (FWCORE_BENCH_PROFILE=quick)
    python bench/run.py --list           # the classes, run nothing

For every class: `setup_cache` once, when it has one (asv's convention: its value is
passed first to `setup` and every benchmark method); then for every parameter combination
`setup`, each `time_*` method timed as the median of repeated runs, each `track_*` value,
and each `peakmem_*` peak (tracemalloc, Python-level allocations incl. numpy). Prints one
table per class.
"""
import argparse
import importlib
import inspect
import itertools
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

# single-threaded BLAS (set before the benchmark modules import numpy): timings compare
# algorithms, not thread scheduling on a busy machine
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _time(fn, min_total=0.2, repeats=5):
    """Median seconds per call over `repeats` batches, each batch at least min_total/repeats."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    number = max(1, int(min_total / repeats / max(once, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def _peakmem(fn):
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def run_class(cls):
    params = getattr(cls, "params", [[None]])
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    names = list(getattr(cls, "param_names", [f"p{k}" for k in range(len(params))]))
    methods = [m for m, _ in inspect.getmembers(cls, inspect.isfunction)
               if m.startswith(("time_", "track_", "peakmem_"))]
    rows = []
    cache = [cls().setup_cache()] if hasattr(cls, "setup_cache") else []
    for combo in itertools.product(*params):
        bench = cls()
        args = cache + ([] if combo == (None,) else list(combo))
        try:
            if hasattr(bench, "setup"):
                bench.setup(*args)
        except NotImplementedError as skip:  # asv's convention for "skip this combination"
            rows.append([*map(_fmt, combo), "skipped", str(skip)])
            continue
        for m in methods:
            fn = getattr(bench, m)
            try:
                if m.startswith("time_"):
                    value, unit = _time(lambda: fn(*args)), "s"
                elif m.startswith("peakmem_"):
                    value, unit = _peakmem(lambda: fn(*args)) / 2**20, "MiB"
                else:
                    value, unit = fn(*args), getattr(fn, "unit", "")
            except NotImplementedError as skip:  # e.g. a peer library that is not installed
                rows.append([*map(_fmt, combo), m, f"skipped: {skip}"])
                continue
            rows.append([*map(_fmt, combo), m, f"{_fmt(value)} {unit}".strip()])
        if hasattr(bench, "teardown"):
            bench.teardown(*args)
    header = (names if params != [[None]] else []) + ["benchmark", "value"]
    if params == [[None]]:
        rows = [r[1:] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(f"\n## {cls.__module__}.{cls.__name__}")
    for r in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))
    sys.stdout.flush()


def selected(words):
    """The benchmark classes that ``words`` name (all of them when there are none)."""
    classes = {tuple(w.split(".", 1)) for w in words if "." in w}  # module.Class
    words = [w for w in words if "." not in w]
    for path in sorted((HERE / "benchmarks").glob("*.py")):
        wanted = {c for m, c in classes if m == path.stem}
        if path.stem in ("__init__", "common") or (
                (words or classes) and not wanted and not any(w in path.stem for w in words)):
            continue
        module = importlib.import_module(f"benchmarks.{path.stem}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and any(
                    m.startswith(("time_", "track_", "peakmem_")) for m in dir(cls)) and (
                    not wanted or name in wanted):
                yield cls


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python bench/run.py",
        description="Run the asv benchmark classes of bench/benchmarks without asv and print "
                    "one table per class (time_* medians in s, track_* values, peakmem_* "
                    "peaks in MiB).",
        epilog="Reference instances are read from ../shared/instances or $FWCORE_INSTANCES; "
               "classes that need absent ones print 'skipped'.")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="a word in a module's name (kernels, infer) or MODULE.CLASS "
                             "(infer.InferMedium); none: every module")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, as FWCORE_BENCH_PROFILE=quick")
    parser.add_argument("--list", action="store_true",
                        help="print the selected classes and their parameters, run nothing")
    args = parser.parse_args(argv)
    if args.quick:  # before the benchmark modules read it at import
        os.environ["FWCORE_BENCH_PROFILE"] = "quick"
    found = False
    for cls in selected(args.names):
        found = True
        if args.list:
            print(f"{cls.__module__.split('.', 1)[1]}.{cls.__name__}  "
                  f"{getattr(cls, 'param_names', [])}")
        else:
            run_class(cls)
    if not found:
        parser.error(f"no benchmark class matches {' '.join(args.names)}")


if __name__ == "__main__":
    main()
