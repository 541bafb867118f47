"""Weighted mini-bucket at scale (issue 39): fwcore's WMB per pass against Merlin's at the
same i-bound and elimination order, and `fwcore.infer` on generated grids of 10^4 to 10^6
variables. Every figure of a table comes from one run (ratios side by side).

    python bench/wmb_scale.py merlin [--merlin PATH] [--ibound 10] [--passes 8] [--models ...]
    python bench/wmb_scale.py infer [--sizes 100,300,1000] [--kinds 1,3,potts] [--max-time 60]
        [--sigint 5]
    python bench/wmb_scale.py bounds --baseline DIR [--times 1,10,60] [--repeat 3] [--models ...]

``merlin``: on linkage_12, Promedus_17, Grids_15 (the shared UAI instances, evidence
applied) and a 100x100 binary grid (couplings U[−1, 1]), each side in its own process:
fwcore's `weighted_mini_bucket(ibound=I, max_iter=P)` and Merlin's ``--algorithm wmb
--ibound I --iterations P`` given fwcore's order (the free variables renumbered as
Merlin numbers them once evidence is removed; variables the file itself fixes, which
fwcore conditions on, first) through ``$MERLIN_ORDER_FILE``, which a
local patch of ``wmb::init`` reads (in a copy of Merlin's sources outside the repository,
``m_order = m_gmo.order2(...)`` becomes: when ``getenv("MERLIN_ORDER_FILE")`` is set,
read the order's indices from that file into ``m_order``; then build as
bench/peers/build_merlin.sh does), and once more on Merlin's own (min-fill) order. fwcore's
run ends after its P passes (its callback), as Merlin's does: the phases after the passes
(sampling, loopy BP, the lower bounds) are not part of these figures. Columns: seconds to
the first certified bound (the end of the first pass, from the call / Merlin's start;
fwcore's includes finding its first order, compared with Merlin on its own order), the
median seconds of a pass after the first (fwcore's trace, Merlin's printed clock, same
order: the rest of fwcore's order search and its move to the best order fall in the
first of these intervals, which the median leaves out), peak RSS of the process, the
bound after P passes (fwcore's first pass on its first order). Merlin needs its binary
(--merlin or $MERLIN).

``infer``: `fwcore.infer(model, max_time=T)` on `random_grid(h, coupling=c)` (c = 1, 3)
and `potts_grid(h, n_labels=8)`, in a child process each: wall seconds, the trace's time
of the first pass's bound, the median pass, peak RSS over the RSS before the call (bytes
a variable, the lazy imports of the call included; the grid is generated in the child, as
a user makes one, so numpy.random is loaded before: a model read from a file pays its 3 MB
in the first call), the interval upper − lower as a share
of |log Z| (log Z: the sampled estimate, else the interval's midpoint, marked "mid"),
status, whether the marginals are uniform and which candidate gave them; with --sigint S,
a second run gets SIGINT S seconds into the call: seconds from the signal to the result,
and its status. The other tables' grids are generated once and pickled under --cache
(outside the repository). README's "A million variables" holds the table.

``bounds``: the certified bounds of ``fwcore.infer(model, max_time=T,
method="approximate")`` (bench/beyond.py's answer) at each T, this checkout against the one
at --baseline DIR (another worktree with its extensions built, first on the child's
sys.path), run in turns (baseline, this) in a child process each: medians over --repeat
runs of the upper and lower bounds, and of the seconds to the first certified bound
(the trace's first pass).
"""
import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
INSTANCES = Path(os.environ.get("FWCORE_INSTANCES", REPO.parent / "shared" / "instances"))
UAI_MODELS = ("uai2014-beyond/linkage_12", "uai2014-beyond/Promedus_17", "uai2014/Grids_15")


def load_uai(stem):
    """A shared instance with its evidence applied (`fwcore.io.uai`), and the evidence."""
    from fwcore.io.uai import apply_evidence, read_evid, read_uai
    path = INSTANCES / f"{stem}.uai"
    model = read_uai(path)
    evid = Path(f"{path}.evid")
    evidence = read_evid(evid) if evid.exists() else {}
    return (apply_evidence(model, evidence) if evidence else model), evidence, path


def generate(h, kind):
    """``random_grid(h, coupling=kind)`` or, for kind "potts", ``potts_grid(h, 8)``."""
    import fwcore
    return (fwcore.potts_grid(h, n_labels=8, seed=0) if kind == "potts" else
            fwcore.random_grid(h, coupling=float(kind), seed=0))


def grid(h, kind, cache):
    """A generated grid, pickled once under ``cache``."""
    path = Path(cache) / f"grid{h}_{kind}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    model = generate(h, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(model, f, protocol=5)
    return model


def model_of(name, cache):
    if name.startswith("grid"):
        h, kind = name[4:].split("_")
        return grid(int(h), kind, cache), {}, None
    return load_uai(name)


# -- one side, in a child process ---------------------------------------------------------

def fwcore_side(name, ibound, passes, cache):
    """fwcore's WMB at ``ibound``: its order (for Merlin), times and bound."""
    import fwcore  # noqa: F401  (import time outside the figures)
    from fwcore.loop import Deadline
    from fwcore.marginals import wmb
    from fwcore.views import fixed_states, flat_factors
    model, _, _ = model_of(name, cache)
    flat, fixed = flat_factors(model), fixed_states(model)
    order = wmb._elimination_order(model, flat, fixed, Deadline())
    started = time.perf_counter()
    # the passes only, as Merlin's run: the callback ends the run after the last pass's
    # record (status interrupted), before the phases after the passes (sampling, loopy BP,
    # the lower bounds), which Merlin does not have
    res = wmb.weighted_mini_bucket(model, ibound=ibound, max_iter=passes + 1, tol=0.0,
                                   callback=lambda record: record.iteration < passes)
    seconds = time.perf_counter() - started
    times = res.trace.columns()["time"]
    _, evidence, _ = model_of(name, cache)
    if evidence:                                      # Merlin drops evidence variables
        order = (np.cumsum(fixed < 0) - 1)[order]
    else:                                             # ones fixed in the file: first
        order = np.concatenate([np.flatnonzero(fixed >= 0), order])
    return {"first": float(times[1]) if len(times) > 1 else seconds,
            "pass": float(np.median(np.diff(times[1:]))) if len(times) > 2 else None,
            "bound": res.log_z_upper, "passes": res.n_iter,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "order": order.tolist()}


def merlin_side(binary, name, ibound, passes, order, cache):
    """Merlin's WMB at ``ibound`` on fwcore's ``order`` (None: its own min-fill order):
    printed clock, bound, peak RSS."""
    from fwcore.io.uai import write_evid, write_uai
    model, evidence, path = model_of(name, cache)
    with tempfile.TemporaryDirectory(prefix="merlin-") as tmp:
        if path is None:
            path = Path(tmp, "model.uai")
            write_uai(model, path)
        cmd = [binary, "--input-file", str(path), "--task", "PR", "--algorithm", "wmb",
               "--ibound", str(ibound), "--iterations", str(passes), "--output-format",
               "uai", "--output-file", str(Path(tmp, "out"))]
        if evidence:
            write_evid(Path(tmp, "e.evid"), evidence)
            cmd[3:3] = ["--evidence-file", str(Path(tmp, "e.evid"))]
        env = dict(os.environ)
        if order is not None:
            Path(tmp, "order").write_text(" ".join(map(str, order)))
            env["MERLIN_ORDER_FILE"] = str(Path(tmp, "order"))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    clock = [float(line.split("time=")[1].split()[0]) for line in done.stdout.splitlines()
             if "logZ:" in line and "time=" in line]
    bounds = [float(line.split()[1]) for line in done.stdout.splitlines()
              if line.strip().startswith("logZ:")]
    return {"first": clock[0] if clock else None,
            "pass": float(np.median(np.diff(clock))) if len(clock) > 1 else None,
            "bound": bounds[-1] if bounds else None, "passes": len(clock),
            "rss": max(rss, before) * 1024}


def _status_kib(field):
    """A ``/proc/self/status`` field in KiB (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def infer_side(h, kind, max_time, sigint=None):
    """`fwcore.infer` on a grid generated in this process (as a user makes one); its peak
    RSS is counted from the RSS before the call, the peak reset there (Linux's
    ``clear_refs``); with ``sigint``, SIGINT that many seconds into the call (``after``:
    seconds from the signal to the result)."""
    import signal
    import threading

    import fwcore
    model = generate(h, kind)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    sent = []
    if sigint is not None:     # Python's own handler (a background shell's jobs ignore it)
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def interrupt():
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Timer(sigint, interrupt).start()
    started = time.perf_counter()
    res = fwcore.infer(model, max_time=max_time)
    done = time.perf_counter()
    peak = _status_kib("VmHWM")
    times = res.trace.columns()["time"]
    nodes = np.asarray(res.mu[:model.node_off[-1]])
    uniform = bool(np.allclose(nodes, np.repeat(1.0 / model.card, model.card)))
    return {"wall": done - started, "after": done - sent[0] if sent else None,
            "first": float(times[1]) if len(times) > 1 else None,
            "pass": float(np.median(np.diff(times[1:]))) if len(times) > 2 else None,
            "bytes_per_var": (peak - before) * 1024 / model.n_vars,
            "peak_mb": peak / 1024, "upper": res.log_z_upper, "lower": res.log_z_lower,
            "estimate": res.log_z_estimate, "status": res.status.value,
            "method": res.method, "passes": res.n_iter, "uniform": uniform,
            "marginals": res.info.get("marginals")}


def bound_side(name, max_time, cache):
    """`fwcore.infer(model, max_time=T, method="approximate")`: its bounds, wall seconds,
    the time of its first certified bound (the trace's first pass) and the checkout."""
    import fwcore
    model, _, _ = model_of(name, cache)
    started = time.perf_counter()
    res = fwcore.infer(model, max_time=max_time, method="approximate")
    times = res.trace.columns()["time"]
    return {"wall": time.perf_counter() - started, "upper": res.log_z_upper,
            "lower": res.log_z_lower, "first": float(times[1]) if len(times) > 1 else None,
            "fwcore": str(Path(fwcore.__file__).parents[1])}


def child(kind, *args, path=None):
    """Run one side in a fresh Python (its own peak RSS and import state); ``path``: a
    checkout whose fwcore it imports (first on its sys.path)."""
    first = [str(REPO / "bench")] + ([] if path is None else [str(path)])
    code = (f"import sys, json; sys.path[:0] = {first[::-1]!r}; "
            f"import wmb_scale; print(json.dumps(wmb_scale.{kind}(*{args!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- tables ---------------------------------------------------------------------------------

def merlin_table(opts):
    binary = opts.merlin or os.environ.get("MERLIN")
    if not binary:
        sys.exit("no Merlin binary: --merlin PATH or $MERLIN (a copy patched as the "
                 "module docstring says)")
    names = [m for m in opts.models.split(",")
             if m.startswith("grid") or (INSTANCES / f"{m}.uai").exists()]
    print("| model | i | fwcore first s | Merlin first s (its order) | ratio | Merlin first s "
          "(fwcore's order) | fwcore s/pass | Merlin s/pass | ratio | fwcore RSS MB | "
          "Merlin RSS MB | ratio | fwcore bound | Merlin bound (its order) | Merlin bound |")
    print("|" + "---|" * 15)
    for name in names:
        ours = child("fwcore_side", name, opts.ibound, opts.passes, opts.cache)
        if "error" in ours:
            print(f"| {name} | {opts.ibound} | {ours['error']} |")
            continue
        theirs = child("merlin_side", binary, name, opts.ibound, opts.passes, ours["order"],
                       opts.cache)
        own = child("merlin_side", binary, name, opts.ibound, opts.passes, None, opts.cache)

        def ratio(key, other=theirs):
            a, b = ours.get(key), other.get(key)
            return f"{a / b:.2f}" if a and b else "-"

        def num(x):
            return "-" if x is None else f"{x:.4g}"
        print(f"| {name} | {opts.ibound} | {num(ours['first'])} | {num(own.get('first'))} | "
              f"{ratio('first', own)} | {num(theirs.get('first'))} | {num(ours['pass'])} | "
              f"{num(theirs.get('pass'))} | {ratio('pass')} | {ours['rss'] / 2**20:.0f} | "
              f"{theirs.get('rss', 0) / 2**20:.0f} | {ratio('rss')} | {ours['bound']:.3f} | "
              f"{num(own.get('bound'))} | {num(theirs.get('bound'))} |", flush=True)


def infer_table(opts):
    """One row per grid; the interval as a share of |log Z|, log Z the sampled estimate
    when there is one, else the interval's midpoint."""
    print("| grid | kind | wall s | first bound s | s/pass | passes | RSS B/var | peak MB | "
          "upper | lower | log Z (est) | interval % | status | method | uniform | "
          "marginals | SIGINT s | SIGINT status |")
    print("|" + "---|" * 18)
    for h in [int(s) for s in opts.sizes.split(",")]:
        for kind in opts.kinds.split(","):
            r = child("infer_side", h, kind, opts.max_time)
            s = (child("infer_side", h, kind, opts.max_time, opts.sigint)
                 if opts.sigint else {})
            if "error" in r:
                print(f"| {h}x{h} | {kind} | {r['error']} |")
                continue
            lower = r["lower"] if r["lower"] is not None else -np.inf
            est = r["estimate"] if r["estimate"] is not None else (r["upper"] + lower) / 2
            share = 100 * (r["upper"] - lower) / abs(est)
            print(f"| {h}x{h} | {kind} | {r['wall']:.2f} | {r['first']} | {r['pass']} | "
                  f"{r['passes']} | {r['bytes_per_var']:.0f} | {r['peak_mb']:.0f} | "
                  f"{r['upper']:.1f} | {lower:.1f} | {est:.1f}"
                  f"{'' if r['estimate'] is not None else ' (mid)'} | {share:.2f} | "
                  f"{r['status']} | {r['method']} | {r['uniform']} | {r['marginals']} | "
                  f"{s.get('after') if s.get('after') is None else round(s['after'], 2)} | "
                  f"{s.get('status', s.get('error', ''))} |", flush=True)


def bounds_table(opts):
    """One row per model and max_time: medians over the repeats, baseline against this
    checkout (bound differences: positive is tighter here)."""
    print("| model | max_time | upper (baseline) | upper | tighter by | lower (baseline) | "
          "lower | tighter by | first bound s (baseline) | first bound s |")
    print("|" + "---|" * 10)
    for name in opts.models.split(","):
        for t in [float(x) for x in opts.times.split(",")]:
            runs = {"base": [], "this": []}
            for _ in range(opts.repeat):
                runs["base"].append(child("bound_side", name, t, opts.cache, path=opts.baseline))
                runs["this"].append(child("bound_side", name, t, opts.cache, path=REPO))
            errors = [r["error"] for rs in runs.values() for r in rs if "error" in r]
            errors += [f"imported {r['fwcore']}" for side, rs in runs.items() for r in rs
                       if "fwcore" in r and Path(r["fwcore"]).resolve() != (
                           REPO if side == "this" else Path(opts.baseline).resolve())]
            if opts.json:
                with open(opts.json, "a") as f:
                    f.write(json.dumps({"model": name, "max_time": t, **runs}) + "\n")
            if errors:
                print(f"| {name} | {t:g} | {errors[0]} |", flush=True)
                continue

            def med(side, key):
                values = [r[key] for r in runs[side] if r[key] is not None]
                return float(np.median(values)) if values else float("nan")
            ub, u = med("base", "upper"), med("this", "upper")
            lb, lo = med("base", "lower"), med("this", "lower")
            print(f"| {name} | {t:g} | {ub:.3f} | {u:.3f} | {ub - u:+.3f} | {lb:.3f} | {lo:.3f} "
                  f"| {lo - lb:+.3f} | {med('base', 'first'):.3g} | {med('this', 'first'):.3g} |",
                  flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table", choices=("merlin", "infer", "bounds"))
    p.add_argument("--merlin")
    p.add_argument("--models", default=",".join(UAI_MODELS + ("grid100_1",)),
                   help="merlin: shared instances and generated grids (gridH_C), "
                        "comma-separated")
    p.add_argument("--ibound", type=int, default=10)
    p.add_argument("--passes", type=int, default=8)
    p.add_argument("--sizes", default="100,300,1000")
    p.add_argument("--kinds", default="1,3,potts")
    p.add_argument("--max-time", type=float, default=60.0)
    p.add_argument("--baseline", help="bounds: a checkout to compare with (built)")
    p.add_argument("--times", default="1,10,60", help="bounds: max_time values")
    p.add_argument("--repeat", type=int, default=1, help="bounds: runs of each (medians)")
    p.add_argument("--json", help="bounds: append every run's figures to this file")
    p.add_argument("--sigint", type=float, default=None,
                   help="also SIGINT a second run this many seconds into the call")
    p.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "fwcore-grids"))
    opts = p.parse_args(argv)
    tables = {"merlin": merlin_table, "infer": infer_table, "bounds": bounds_table}
    tables[opts.table](opts)


if __name__ == "__main__":
    main()
