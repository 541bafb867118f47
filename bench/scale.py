"""A million variables in one call (issue 39): files, model construction, loopy BP and
TRBP on generated grids of 10^4 to 10^6 variables, each measured in a fresh process.

    flock /work/heavy.lock python bench/scale.py [--sizes 100,300,1000] [--max-time 60]
        [--sigint 5,20] [--parts build,files,bp,sigint] [--merlin PATH]
        [--methods loopy_bp,trbp,mean_field] [--models binary-1,binary-3,potts-8]

- build: the grid's arrays (binary: fields and couplings U[-1, 1]; Potts with 8 labels)
  given to `fwcore.PairwiseMRF`, beside a plain copy of the same arrays (the target: about
  as long as copying them);
- files: `write_uai` then `read_uai` of that model (seconds, file size, the reading
  process's peak RSS) and, with Merlin (``--merlin`` or $MERLIN, built by
  bench/peers/build_merlin.sh), Merlin's own "I/O time" reading the same file;
- bp: `loopy_bp`, `trbp` and ``infer(method="mean-field")`` (``--methods``) with
  ``max_time`` on the binary grids (couplings U[-1, 1] and U[-3, 3]) and the Potts-8 grid
  (``--models``): wall seconds from the call, status, sweeps, whether the result is valid
  (finite marginals summing to 1), the process's peak RSS;
- sigint: SIGINT ``--sigint`` seconds (a comma-separated list) into each of those calls:
  seconds from the signal to the result, and its status.

Prints one markdown table per part. The issue's targets: BP within max_time + 5% + 0.5 s
(63.5 s for 60), SIGINT answered within 2 s, loopy BP under 3 GB on the Potts-8 10^6
grid, the 10^6 binary grid's file read in 10 s and built from arrays in 3 s.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

_MODELS = {  # name -> the expression of the model, side n
    "binary-1": "fwcore.random_grid({n}, coupling=1.0, field=1.0, seed=0)",
    "binary-3": "fwcore.random_grid({n}, coupling=3.0, field=1.0, seed=0)",
    "potts-8": "fwcore.potts_grid({n}, n_labels=8, seed=0)",
}

# each child prints one JSON line; ru_maxrss is the child's own peak (KiB on Linux)
_BUILD = """
import json, resource, time, numpy as np, fwcore
from fwcore.generators import grid_edges
n, k = {n}, {k}
rng = np.random.default_rng(0)
edges = grid_edges(n, n)
unary = rng.uniform(-1, 1, (n * n, k))
pair = rng.uniform(-1, 1, (len(edges), k, k))
t = time.perf_counter(); copies = [unary.copy(), pair.copy(), edges.copy()]
copy = time.perf_counter() - t
del copies
t = time.perf_counter(); m = fwcore.PairwiseMRF(np.full(n * n, k), unary, edges, pair)
build = time.perf_counter() - t
print(json.dumps(dict(build=build, copy=copy)))
"""
_WRITE = """
import json, resource, time, fwcore
m = {model}
t = time.perf_counter(); fwcore.write_uai(m, {path!r})
print(json.dumps(dict(write=time.perf_counter() - t)))
"""
_READ = """
import json, resource, time, fwcore
t = time.perf_counter(); m = fwcore.read_uai({path!r})
print(json.dumps(dict(read=time.perf_counter() - t, theta_gb=m.theta.nbytes / 1e9,
                      rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)))
"""
_BP = """
import functools, json, resource, time, numpy as np, fwcore
m = {model}
print("ready", flush=True)
t = time.monotonic()
r = {call}(m, max_time={max_time})
done = time.monotonic()
nodes = m.node_off[-1]
valid = bool(np.isfinite(r.mu).all() and np.allclose(
    np.add.reduceat(r.mu[:nodes], m.node_off[:-1]), 1.0))
print(json.dumps(dict(wall=done - t, done=done, status=r.status.value, sweeps=r.n_iter,
                      valid=valid, model_gb=m.theta.nbytes / 1e9,
                      rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)))
"""


#: the calls of the bp and sigint parts
_METHODS = {"loopy_bp": "fwcore.loopy_bp", "trbp": "fwcore.trbp",
            "mean_field": "functools.partial(fwcore.infer, method='mean-field')"}


def _child(script, sigint=None):
    """Run ``script`` in a fresh Python; with ``sigint`` send SIGINT that many seconds
    after it prints "ready" (returns the signal's time too). Its last JSON line."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    sent = None
    if "ready" in script:
        proc.stdout.readline()
        if sigint is not None:
            time.sleep(sigint)
            sent = time.monotonic()
            os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": (err.strip().splitlines() or ["no output"])[-1]}, sent
    return json.loads(lines[-1]), sent


def _merlin_read(merlin, path):
    """Merlin's own "I/O time" (seconds) reading ``path``, or None."""
    if not merlin:
        return None
    with tempfile.TemporaryDirectory() as d:
        evid = os.path.join(d, "empty.evid")
        with open(evid, "w") as f:
            f.write("0\n")
        done = subprocess.run([merlin, "-f", path, "-e", evid, "-a", "lbp", "-n", "0", "-t",
                               "MAR", "-O", "uai", "-o", os.path.join(d, "out")],
                              capture_output=True, text=True)
    found = re.search(r"I/O time is ([0-9.eE+-]+)", done.stdout + done.stderr)
    return float(found.group(1)) if found else None


def _table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def build_part(sizes):
    rows = []
    for n in sizes:
        for name, k in (("binary", 2), ("potts-8", 8)):
            got, _ = _child(_BUILD.format(n=n, k=k))
            rows.append([f"{name} {n}x{n}", f"{n * n:.0e}", f"{got.get('build', 0):.2f}",
                         f"{got.get('copy', 0):.2f}", got.get("error", "")])
    print("## Building a model from NumPy arrays (`PairwiseMRF(card, unary, edges, pairwise)`)\n")
    _table(["model", "variables", "build s", "copying the arrays s", "error"], rows)


def files_part(sizes, merlin):
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            for name in ("binary-1", "potts-8"):
                path = os.path.join(d, f"{name}-{n}.uai")
                wrote, _ = _child(_WRITE.format(model=_MODELS[name].format(n=n), path=path))
                size = os.path.getsize(path) / 1e6 if os.path.exists(path) else 0.0
                read, _ = _child(_READ.format(path=path))
                theirs = _merlin_read(merlin, path)
                rows.append([f"{name} {n}x{n}", f"{size:.0f}", f"{wrote.get('write', 0):.2f}",
                             f"{read.get('read', 0):.2f}", f"{read.get('rss_gb', 0):.2f}",
                             f"{read.get('theta_gb', 0):.3f}",
                             "" if theirs is None else f"{theirs:.2f}",
                             read.get("error", "") or wrote.get("error", "")])
                os.remove(path)
    print("## UAI files (`write_uai`, `read_uai`; Merlin's reader on the same file)\n")
    _table(["model", "file MB", "write s", "read s", "read peak RSS GB", "theta GB",
            "Merlin read s", "error"], rows)


def bp_part(sizes, max_time, methods, models, sigint=None):
    rows = []
    for n in sizes:
        for name in models:
            for method in methods:
                script = _BP.format(model=_MODELS[name].format(n=n), call=_METHODS[method],
                                    max_time=max_time)
                got, sent = _child(script, sigint)
                if sigint is None:
                    rows.append([f"{name} {n}x{n}", method, f"{got.get('wall', 0):.2f}",
                                 got.get("status", ""), str(got.get("sweeps", "")),
                                 str(got.get("valid", "")), f"{got.get('rss_gb', 0):.2f}",
                                 f"{got.get('model_gb', 0):.3f}", got.get("error", "")])
                else:
                    rows.append([f"{name} {n}x{n}", method,
                                 f"{got['done'] - sent:.2f}" if "done" in got else "",
                                 got.get("status", ""), str(got.get("valid", "")),
                                 f"{got.get('rss_gb', 0):.2f}", got.get("error", "")])
    if sigint is None:
        print(f"## Loopy BP, TRBP and mean field with max_time = {max_time:g} s\n")
        _table(["model", "method", "wall s", "status", "sweeps", "valid", "peak RSS GB",
                "theta GB", "error"], rows)
    else:
        print(f"## SIGINT {sigint:g} s into loopy BP, TRBP and mean field "
              f"(max_time = {max_time:g} s)\n")
        _table(["model", "method", "result s after SIGINT", "status", "valid", "peak RSS GB",
                "error"], rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,300,1000", help="grid sides, comma-separated")
    p.add_argument("--max-time", type=float, default=60.0)
    p.add_argument("--sigint", default="5,20", help="seconds, comma-separated")
    p.add_argument("--methods", default=",".join(_METHODS))
    p.add_argument("--models", default=",".join(_MODELS))
    p.add_argument("--parts", default="build,files,bp,sigint")
    p.add_argument("--merlin", default=os.environ.get("MERLIN"))
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    parts = args.parts.split(",")
    if "build" in parts:
        build_part(sizes)
    if "files" in parts:
        files_part(sizes, args.merlin)
    methods, models = args.methods.split(","), args.models.split(",")
    if "bp" in parts:
        bp_part(sizes, args.max_time, methods, models)
    if "sigint" in parts:
        for sigint in args.sigint.split(","):
            bp_part(sizes, args.max_time, methods, models, float(sigint))


if __name__ == "__main__":
    main()
