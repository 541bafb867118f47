"""Ctrl-C into every long entry point (issues 12, 41): SIGINT 1, 3 and 10 s into each call,
on linkage_12 (with its .evid) and on a 300x300 Potts-8 grid; the seconds from the
signal to the call's return and the status it returned. The target: within 2 s, status
``interrupted``.

    flock /work/heavy.lock python bench/sigint.py             # the table (about 20 min)
    flock /work/heavy.lock python bench/sigint.py --quick     # SIGINT at 1 s only
    python bench/sigint.py [--delays 1,3,10] [--entries infer,...] [--models grid,linkage]
                           [--size 300] [--memory 12] [--wait 60]

Each run is a child Python (SIGINT handled as Python's default) that builds the model,
prints "ready", calls the entry point and prints what it returned (a result's
``status``, a learner's ``status_``) or raised. The parent sends SIGINT ``delay`` seconds
after "ready" and times the signal to the child's answer line; a child silent ``--wait``
seconds after the signal is killed ("no return"). Children run one at a time under a
``--memory`` GiB address-space cap.

Entry points (`ENTRIES`): ``infer`` (default method), ``infer barrier-fw``,
``infer_map`` (default), ``infer_lp`` (default), ``MLEStruct.fit`` and ``SSVM.fit``
(one 8-label CRF example on the grid, TRW-S as the oracle: the learners take examples,
not a model, so they run on the grid only), ``conditioned`` (on the 2 variables
`fwcore.choose_conditioning` picks before the call; branches bounded by ``infer``),
``conditioned_anytime`` (``max_time=120``, branches bounded by ``infer``) and
``mean_field_lower_bound``. Linkage_12 is read from /work/shared/instances/uai2014-beyond
(``--instances``). A call that returns before the signal is listed as "done before"
(not counted). Prints one row per run; exits 1 unless every run that got the signal
returned ``interrupted`` within 2 s.
"""
import argparse
import os
import queue
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

INSTANCES = "/work/shared/instances/uai2014-beyond"
#: the target: seconds from SIGINT to the return
TARGET = 2.0

#: model name -> code building ``m`` (``{size}``, ``{instances}`` filled in)
MODELS = {
    "linkage": ("m = fwcore.apply_evidence(fwcore.read_model('{instances}/linkage_12.uai'), "
                "fwcore.read_evid('{instances}/linkage_12.uai.evid'))"),
    "grid": "m = fwcore.potts_grid({size}, n_labels=8, seed=0)",
}

_BOUND = "lambda b, max_time=None: fwcore.infer(b, max_time=max_time)"
#: a learner's model: the default "lp" oracle refuses the grid's example (its HiGHS LP
#: would take 14.8 GiB, over the oracle's memory_limit): TRW-S
_CRF = "fwcore.learn.CRF(oracle='trws')"
#: entry point -> (the call, given ``m`` (``X, Y`` for a learner, ``S`` the 2 variables
#: `fwcore.choose_conditioning` picks), grid only)
ENTRIES = {
    "infer": ("fwcore.infer(m)", False),
    "infer barrier-fw": ("fwcore.infer(m, method='barrier-fw')", False),
    "infer_map": ("fwcore.infer_map(m)", False),
    "infer_lp": ("fwcore.infer_lp(m)", False),
    "MLEStruct.fit": (f"fwcore.MLEStruct(model={_CRF}).fit(X, Y)", True),
    "SSVM.fit": (f"fwcore.SSVM(model={_CRF}).fit(X, Y)", True),
    "conditioned": ("fwcore.conditioned(m, " + _BOUND + ", S)", False),
    "conditioned_anytime": ("fwcore.conditioned_anytime(m, " + _BOUND + ", 120)", False),
    "mean_field_lower_bound": ("fwcore.mean_field_lower_bound(m)", False),
}

# one 8-label CRF example on the grid: smooth labels seen through noise (node features:
# a bias and the noisy one-hot label; edge features: a bias and whether the noisy labels agree)
_EXAMPLE = """
import numpy as np
from scipy.ndimage import gaussian_filter
from fwcore.generators import grid_edges
rng = np.random.default_rng(0)
field = gaussian_filter(rng.normal(size=({size}, {size})), 4.0).ravel()
y = np.searchsorted(np.quantile(field, np.linspace(0, 1, 9)[1:-1]), field).astype(np.int32)
seen = np.where(rng.random(y.size) < 0.3, rng.integers(0, 8, y.size), y)
u = np.concatenate([np.ones((y.size, 1)), np.eye(8)[seen]], axis=1)
edges = grid_edges({size}, {size})
v = np.stack([np.ones(len(edges)), (seen[edges[:, 0]] == seen[edges[:, 1]]) * 1.0], axis=1)
X, Y = [fwcore.CRFExample(u, edges, v)], [y]
"""

_SCRIPT = """
import fwcore
{build}
print("ready", flush=True)
try:
    r = {call}
except BaseException as err:
    print("RAISED", type(err).__name__, flush=True)
    raise
status = getattr(r, "status", None) or getattr(r, "status_", None)
print("RESULT", status.value, flush=True)
"""


def script(entry, model, size, instances):
    call, learner = ENTRIES[entry]
    build = MODELS[model].format(size=size, instances=instances)
    if learner:
        build += _EXAMPLE.format(size=size)
    if entry == "conditioned":
        build += "\nS = fwcore.choose_conditioning(m, 2)"
    return _SCRIPT.format(build=build, call=call)


def interrupt(code, delay, memory_gib=None, wait=60.0, root=None):
    """Run ``code`` in a child Python, send SIGINT ``delay`` s after it prints "ready";
    returns (seconds from the signal to its answer line, or None; the answer: "RESULT
    <status>", "RAISED <exception>", "exit <code>: <last line of stderr>", "done before:
    <answer>" or "no return")."""
    def child():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if memory_gib:
            cap = int(memory_gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: a full pipe would block it
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=errors, text=True, env=env, cwd=root, preexec_fn=child)
    lines = queue.Queue()  # (time read, line), None at the end of the output

    def read():
        for line in proc.stdout:
            lines.put((time.monotonic(), line.strip()))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        first = _next(lines, 600.0)
        if first is None or first[1] != "ready":
            return None, f"no model: {_ended(proc, errors)}"
        try:
            early = lines.get(timeout=delay)
            return None, f"done before: {early[1] if early else _ended(proc, errors)}"
        except queue.Empty:
            pass
        os.kill(proc.pid, signal.SIGINT)
        sent = time.monotonic()
        answer = _next(lines, wait)
        if answer is None:  # silent for ``wait`` s, or its output ended without an answer
            seconds, ended = time.monotonic() - sent, _ended(proc, errors)
            return (None, "no return") if ended == "running" else (seconds, ended)
        return answer[0] - sent, answer[1]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        errors.close()


def _next(lines, timeout):
    """The next (time, line) of ``lines`` within ``timeout`` s; None at its end or then."""
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return None


def _ended(proc, errors):
    """How a child without an answer ended: its exit code and last line of stderr."""
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        return "running"
    errors.seek(0)
    return f"exit {proc.returncode}: {_last(errors.read())}"


def _last(text):
    lines = (text or "").strip().splitlines()
    return lines[-1] if lines else ""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delays", default="1,3,10")
    p.add_argument("--entries", default=",".join(ENTRIES))
    p.add_argument("--models", default="linkage,grid")
    p.add_argument("--size", type=int, default=300, help="the grid's side")
    p.add_argument("--memory", type=float, default=12.0, help="GiB per child")
    p.add_argument("--wait", type=float, default=60.0, help="seconds for a child to answer")
    p.add_argument("--instances", default=INSTANCES)
    p.add_argument("--quick", action="store_true", help="SIGINT at 1 s only")
    args = p.parse_args(argv)
    delays = [1.0] if args.quick else [float(d) for d in args.delays.split(",")]
    models = args.models.split(",")
    if "linkage" in models and not Path(args.instances, "linkage_12.uai").is_file():
        print(f"linkage_12.uai is not in {args.instances}: skipped", file=sys.stderr)
        models.remove("linkage")
    print(f"{'entry point':<24} {'model':<8} {'delay':>5} {'seconds':>8}  answer")
    good = total = 0  # runs that got the signal
    for entry in args.entries.split(","):
        for model in models:
            if ENTRIES[entry][1] and model != "grid":
                continue
            for delay in delays:
                code = script(entry, model, args.size, args.instances)
                seconds, answer = interrupt(code, delay, args.memory, args.wait)
                ok = (seconds is not None and seconds <= TARGET
                      and answer == "RESULT interrupted") or answer.startswith("done before")
                good += ok and seconds is not None
                total += not answer.startswith("done before")
                shown = "-" if seconds is None else f"{seconds:.2f}"
                print(f"{entry:<24} {model:<8} {delay:5.0f} {shown:>8}  {answer}"
                      f"{'' if ok else '  <-'}", flush=True)
    print(f"{good}/{total} runs that got the signal returned 'interrupted' within "
          f"{TARGET:g} s of it")
    return 0 if good == total else 1


if __name__ == "__main__":
    sys.exit(main())
