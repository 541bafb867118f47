"""fwcore past exact reach against the anchor, Merlin's weighted mini-bucket (issue 29).

    python bench/beyond.py                         # the models of uai2014-beyond/
    python bench/beyond.py --held-out              # + uai2014/, uai2014-higher-order/, -large/
    python bench/beyond.py M.uai DIR --ibounds 5,10 --merlin-timeout 60 --max-time 30
    python bench/beyond.py --merlin PATH --no-cache --json rows.json
    python bench/beyond.py --pygms /tmp/pygms-venv/bin/python --seeds 20 --max-time 10
    python bench/beyond.py --peers-only --merlin PATH --pygms PY   # the peers' rows alone

On UAI models with official answers (MODEL.uai.MAR, MODEL.uai.PR) it runs, per model:
Merlin WMB (task MAR: a certified upper bound on log Z and marginals) at each i-bound,
fwcore's `loopy_bp` and `trbp` (its ``log_z_upper`` is the uncertified TRW value) and
fwcore's own answer, `fwcore.infer(model, max_time=T, method="approximate")`;
then prints a markdown table per model and a summary against issue 29's targets.

- Evidence: MODEL.uai.evid, when present, is applied (`fwcore.io.uai.apply_evidence`) and
  given to Merlin (``--evidence-file``); the official answers condition on it.
- ζ = mean over variables of ½‖μ_i − p_i‖₁ against MODEL.uai.MAR, **evidence variables
  excluded for every method**: the official .MAR, Merlin and fwcore all write them as
  point masses, so they would only dilute the error.
- bound − log Z: log Z is the .PR file's log10 Z × ln 10 (`fwcore.io.read_pr`); Merlin
  writes ln Z. A certified bound below log Z by more than the .PR file's printed precision
  is flagged loudly (a bug, or an unverified official answer that is wrong). lower − log Z
  likewise, for results with ``log_z_lower``.
- Merlin (benchmark-only; `bench/peers/build_merlin.sh` builds it) is found by --merlin or
  $MERLIN; without it its rows are skipped, saying why. Each run is capped from outside
  (--merlin-timeout seconds of wall time, --merlin-memory GiB of address space): Merlin
  ignores its own --time-limit, and runs all --merlin-iterations tightening passes (a
  pass takes ~12 s at i-bound 5 on the 21-label ObjectDetection models, so the default
  100 need ~20 min there). Its seconds are the wall time of the whole process. Every
  pass prints its bound and Merlin's own clock (from the end of reading the model): the
  row's ``trajectory``, kept from a run cut short too, gives WMB's bound at any time
  (`merlin_bound_by`), so "at the same wall time" compares fwcore's bound with the
  best any i-bound had proved by fwcore's seconds.
  Results are cached in --cache by (model and evidence content, i-bound, iterations).
- The interval a user reads (issue 36): fwcore's certified lower bound (lower − log Z),
  its sampled estimate and the probabilistic interval at 95% (estimate − log Z, and the
  interval's ends − log Z), and pyGMs' weighted mini-bucket bound and importance-sampling
  estimate (`bench/peers/pygms_wmb.py`, run by the Python of pyGMs' own virtual
  environment given by --pygms or $PYGMS_PYTHON, for --max-time seconds: half its
  passes, half its samples) beside Merlin. With --seeds N, fwcore's answer is run with
  seeds 0..N-1 and the summary counts how often the interval holds log Z. The summary
  of issue 36's targets follows issue 29's.
"""
import argparse
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

import fwcore
from fwcore.io.uai import apply_evidence, read_evid, read_mar, read_pr, write_evid

REPO = Path(__file__).resolve().parents[1]
INSTANCES = Path(os.environ.get("FWCORE_INSTANCES", REPO.parent / "shared" / "instances"))
BEYOND_SETS = ("uai2014-beyond",)
HELD_OUT_SETS = ("uai2014", "uai2014-higher-order", "uai2014-large")
#: models whose official answers nobody has checked (exact inference is out of reach)
UNVERIFIED_ANSWERS = {"relational_1"}
#: the margin by which fwcore's marginals may trail the better BP baseline (issue 29)
ZETA_SLACK = 0.005
#: Merlin prints 6 decimals (two bounds within it are a tie)
MERLIN_PRECISION = 1e-6


@dataclass
class Case:
    """A model with its official answers: ``model`` has the evidence applied."""
    name: str
    path: Path
    model: object
    evidence: dict
    marginals: list
    log_z: float
    log_z_tolerance: float
    unverified: bool
    key: str


# -- models and answers ------------------------------------------------------------------


def model_paths(args, instances):
    """The .uai files to run: the positional files and folders, else the default sets."""
    if args:
        roots = [Path(a) for a in args]
    else:
        roots = [instances / s for s in BEYOND_SETS]
    found = []
    for root in roots:
        found += sorted(root.glob("*.uai")) if root.is_dir() else [root]
    return found


def with_answers(paths):
    """The paths that have both official answer files beside them."""
    return [p for p in paths if Path(f"{p}.MAR").exists() and Path(f"{p}.PR").exists()]


def pr_tolerance(pr_path):
    """Half a unit of the last digit the .PR file prints for log10 Z, in nats: how far a
    bound may sit below the official log Z from the file's rounding alone (0 for -inf)."""
    token = Path(pr_path).read_text().split()[-1]
    exponent = Decimal(token).as_tuple().exponent
    return 0.5 * 10.0 ** exponent * math.log(10.0) if isinstance(exponent, int) else 0.0


def content_key(path, evidence):
    """A hash of the model file's bytes and the evidence: the Merlin cache's model key."""
    digest = hashlib.sha256(Path(path).read_bytes())
    digest.update(json.dumps(sorted(evidence.items())).encode())
    return digest.hexdigest()[:20]


def load_case(path):
    """The `Case` of the model file ``path`` (evidence from PATH.evid when present)."""
    path = Path(path)
    evid_path = Path(f"{path}.evid")
    evidence = read_evid(evid_path) if evid_path.exists() else {}
    model = fwcore.read_uai(path)
    if evidence:
        model = apply_evidence(model, evidence)
    name = path.name.removesuffix(".uai")
    return Case(name=name, path=path, model=model, evidence=evidence,
                marginals=read_mar(f"{path}.MAR"), log_z=read_pr(f"{path}.PR"),
                log_z_tolerance=pr_tolerance(f"{path}.PR") + MERLIN_PRECISION,
                unverified=name in UNVERIFIED_ANSWERS, key=content_key(path, evidence))


# -- scores --------------------------------------------------------------------------------


def zeta(marginals, reference, excluded=()):
    """Mean over the variables not in ``excluded`` of ½‖μ_i − p_i‖₁ (nan when none is
    left)."""
    if len(marginals) != len(reference):
        raise ValueError(f"{len(marginals)} marginals against {len(reference)} reference ones")
    errors = []
    for i, (mu, p) in enumerate(zip(marginals, reference)):
        if i in excluded:
            continue
        mu, p = np.asarray(mu, dtype=float), np.asarray(p, dtype=float)
        if mu.shape != p.shape:
            raise ValueError(f"variable {i}: marginal of {mu.size} states against {p.size}")
        errors.append(0.5 * np.abs(mu - p).sum())
    return float(np.mean(errors)) if errors else math.nan


def scored(row, marginals, case):
    """``row`` with ζ, bound − log Z and lower − log Z against ``case``'s answers."""
    def minus_log_z(value):
        return None if value is None else value - case.log_z
    row = dict(row)
    row["zeta"] = None if marginals is None else zeta(marginals, case.marginals, case.evidence)
    row["upper_minus_log_z"] = minus_log_z(row.get("log_z_upper"))
    row["lower_minus_log_z"] = minus_log_z(row.get("log_z_lower"))
    for k in ("log_z_estimate", "log_z_estimate_lower", "log_z_estimate_upper"):
        row[k.replace("log_z_", "") + "_minus_log_z"] = minus_log_z(row.get(k))
    return row


# -- Merlin ----------------------------------------------------------------------------------


def find_merlin(option):
    """(path of the Merlin binary or None, why not)."""
    path = option or os.environ.get("MERLIN")
    if not path:
        return None, ("no Merlin binary given (--merlin PATH or $MERLIN; build it with "
                      "bench/peers/build_merlin.sh)")
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        return None, f"Merlin binary {path} is not an executable file"
    return path, ""


def parse_merlin_mar(text):
    """(ln Z bound, marginals) from Merlin's MAR output in UAI format: ``PR``, ln Z and
    Z in brackets, ``STATUS`` and its line, ``MAR``, then n and per variable its number of
    states and probabilities (evidence variables as point masses)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "PR" or "MAR" not in (s.strip() for s in lines):
        raise ValueError("not Merlin's MAR output (PR ... MAR ...)")
    log_z = float(lines[1].split()[0])
    tokens = "\n".join(lines[[s.strip() for s in lines].index("MAR") + 1:]).split()
    n, pos, marginals = int(tokens[0]) if tokens else 0, 1, []
    while len(marginals) < n and pos < len(tokens):
        states = int(tokens[pos])
        marginals.append([float(t) for t in tokens[pos + 1:pos + 1 + states]])
        pos += 1 + states
    if len(marginals) != n or any(not m for m in marginals) or pos != len(tokens):
        raise ValueError(f"Merlin's MAR output is cut short or too long ({n} variables)")
    return log_z, marginals


def parse_merlin_trajectory(text):
    """[(seconds, ln Z bound)] of the passes Merlin printed (``logZ: X (e^X) d=.. time=T
    i=k``), in order."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["logZ:"] and any(f.startswith("time=") for f in fields):
            seconds = next(float(f[5:]) for f in fields if f.startswith("time="))
            out.append((seconds, float(fields[1])))
    return out


def merlin_bound_by(rows, seconds):
    """The least certified bound − log Z any Merlin row had proved by ``seconds`` of its
    own clock (None: none)."""
    bounds = [up for r in rows if r["method"].startswith("merlin")
              for t, up in r.get("trajectory", ()) if t <= seconds]
    return min(bounds, default=None)


def merlin_command(binary, case, ibound, iterations, output, evidence_file):
    """The command line of one Merlin WMB run writing ``output``.MAR."""
    cmd = [binary, "--input-file", str(case.path), "--task", "MAR", "--algorithm", "wmb",
           "--ibound", str(ibound), "--iterations", str(iterations),
           "--output-format", "uai", "--output-file", str(output)]
    if evidence_file is not None:
        cmd += ["--evidence-file", str(evidence_file)]
    return cmd


def run_merlin(binary, case, ibound, iterations, timeout, memory_gib):
    """One Merlin WMB run: a cache entry with ``status`` (ok, timeout, out of memory,
    failed), ``seconds`` (wall), and when ok ``log_z_upper`` and ``marginals``."""
    limit = int(memory_gib * 2 ** 30)

    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory(prefix="merlin-") as tmp:
        evidence_file = None
        if case.evidence:
            evidence_file = Path(tmp) / "model.evid"
            write_evid(evidence_file, case.evidence)
        output = Path(tmp) / "out"
        cmd = merlin_command(binary, case, ibound, iterations, output, evidence_file)
        entry = {"timeout": timeout, "memory_gib": memory_gib}
        t0 = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  check=False, preexec_fn=cap_memory)
        except subprocess.TimeoutExpired as cut:
            printed = cut.stdout.decode() if isinstance(cut.stdout, bytes) else cut.stdout
            return {**entry, "status": "timeout", "seconds": time.perf_counter() - t0,
                    "trajectory": parse_merlin_trajectory(printed or "")}
        entry["seconds"] = time.perf_counter() - t0
        entry["trajectory"] = parse_merlin_trajectory(done.stdout)
        return {**entry, **merlin_outcome(done, Path(f"{output}.MAR"))}


def merlin_outcome(done, mar_path):
    """The status (and, when ok, bound and marginals) of a finished Merlin process."""
    text = mar_path.read_text() if mar_path.exists() else ""
    if done.returncode == 0 and text.strip():
        try:
            log_z, marginals = parse_merlin_mar(text)
        except ValueError as err:
            return {"status": f"failed ({err})"}
        return {"status": "ok", "log_z_upper": log_z, "marginals": marginals}
    messages = done.stdout + done.stderr
    if "bad_alloc" in messages:
        return {"status": "out of memory"}
    last = messages.strip().splitlines()[-1:] or [""]
    return {"status": f"failed (exit {done.returncode}: {last[0][:80]})"}


def load_cache(path):
    """The Merlin cache {key: entry} in ``path`` (empty when absent)."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {}


def save_cache(path, cache):
    Path(path).write_text(json.dumps(cache))


def cache_key(case, ibound, iterations):
    return f"{case.key}:ibound={ibound}:iterations={iterations}:trajectory"


def reusable(entry, timeout, memory_gib):
    """Whether a cached run answers a run with these limits: a success always, a timeout
    or running out of memory when that limit was at least as generous, another failure
    never."""
    if entry is None:
        return False
    return {"ok": True, "timeout": entry["timeout"] >= timeout,
            "out of memory": entry["memory_gib"] >= memory_gib}.get(entry["status"], False)


def merlin_rows(binary, case, opts, cache):
    """A scored row per i-bound (from the cache, else run and cached)."""
    rows = []
    for ibound in opts.ibounds:
        key = cache_key(case, ibound, opts.merlin_iterations)
        entry, cached = cache.get(key), True
        if opts.no_cache or not reusable(entry, opts.merlin_timeout, opts.merlin_memory):
            entry, cached = run_merlin(binary, case, ibound, opts.merlin_iterations,
                                       opts.merlin_timeout, opts.merlin_memory), False
            cache[key] = entry
            save_cache(opts.cache, cache)
        trajectory = entry.get("trajectory", [])
        best = min((up for _, up in trajectory), default=None)
        row = {"method": f"merlin-wmb i={ibound}", "status": entry["status"] +
               (" (cached)" if cached else ""), "seconds": entry["seconds"],
               "log_z_upper": entry.get("log_z_upper", best), "certified": True,
               "log_z_lower": None,
               "trajectory": [(t, up - case.log_z) for t, up in trajectory]}
        rows.append(scored(row, entry.get("marginals"), case))
    return rows


# -- pyGMs ----------------------------------------------------------------------------------

PYGMS_SCRIPT = REPO / "bench" / "peers" / "pygms_wmb.py"


def find_pygms(option):
    """(the Python of pyGMs' virtual environment or None, why not)."""
    path = option or os.environ.get("PYGMS_PYTHON")
    if not path:
        return None, ("no pyGMs Python given (--pygms PATH or $PYGMS_PYTHON: python3 -m venv "
                      "/tmp/pygms-venv && /tmp/pygms-venv/bin/pip install pygms)")
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        return None, f"pyGMs Python {path} is not an executable file"
    return path, ""


def pygms_rows(python, case, opts):
    """A scored row per --pygms-ibounds: pyGMs' WMB bound (certified: Hölder) and its
    importance-sampling estimate in --max-time seconds (`bench/peers/pygms_wmb.py`),
    capped at 3 x --max-time + 60 s of wall time and --merlin-memory GiB."""
    limit = int(opts.merlin_memory * 2 ** 30)

    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    rows = []
    for ibound in opts.pygms_ibounds:
        row = {"method": f"pygms-wmb i={ibound}", "log_z_upper": None, "certified": True,
               "log_z_lower": None}
        with tempfile.TemporaryDirectory(prefix="pygms-") as tmp:
            cmd = [python, str(PYGMS_SCRIPT), str(case.path), "--ibound", str(ibound),
                   "--seconds", str(opts.max_time)]
            if case.evidence:
                write_evid(Path(tmp) / "model.evid", case.evidence)
                cmd += ["--evid", str(Path(tmp) / "model.evid")]
            t0 = time.perf_counter()
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                      timeout=3 * opts.max_time + 60, preexec_fn=cap_memory)
            except subprocess.TimeoutExpired:
                row.update(status="timeout", seconds=time.perf_counter() - t0)
                rows.append(scored(row, None, case))
                continue
        out = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
        if not out:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            row.update(status=f"failed (exit {done.returncode}: {last[:80]})",
                       seconds=time.perf_counter() - t0)
        else:
            got = json.loads(out[0])
            row.update(status=f"ok ({got['passes']} passes, {got['n_samples']} samples)",
                       seconds=got["seconds"], log_z_upper=got["log_z_upper"],
                       log_z_estimate=got["log_z_estimate"])
        rows.append(scored(row, None, case))
    return rows


# -- fwcore ----------------------------------------------------------------------------------


def ours_solver(method, max_time, seed=None):
    """(label, function model -> result) for fwcore's main answer: ``infer`` with
    ``method`` ("approximate" by default: the approximate path even where exact
    elimination would fit, so that it is scored against the known answers) and ``seed``
    (None: infer's default)."""
    return (f'infer(method="{method}")',
            lambda m: fwcore.infer(m, max_time=max_time, method=method, seed=seed))


def fwcore_row(label, solve, case):
    """The scored row of ``solve(case.model)`` (status "error: ..." when it raises)."""
    t0 = time.perf_counter()
    try:
        result = solve(case.model)
    except Exception as err:  # noqa: BLE001 (one failing method must not end a long run)
        return scored({"method": label, "status": f"error: {type(err).__name__}: {err}"[:120],
                       "seconds": time.perf_counter() - t0, "log_z_upper": None,
                       "certified": False, "log_z_lower": None}, None, case)
    status = getattr(result.status, "value", result.status)
    row = {"method": f"{label} [{result.method}]" if result.method not in label else label,
           "status": str(status), "seconds": result.time, "log_z_upper": result.log_z_upper,
           "certified": bool(result.certified),
           "log_z_lower": getattr(result, "log_z_lower", None), **estimate_fields(result)}
    return scored(row, result.node_marginals, case)


def estimate_fields(result):
    """A result's sampled estimate and probabilistic interval (None when it has none)."""
    return {k: getattr(result, k, None) for k in
            ("log_z_estimate", "log_z_estimate_lower", "log_z_estimate_upper")}


def fwcore_rows(case, opts, ours):
    """The rows of loopy BP, TRBP and fwcore's own answer (label ``ours[0]``)."""
    t = opts.max_time
    return [fwcore_row("loopy-bp", lambda m: fwcore.loopy_bp(m, max_time=t), case),
            fwcore_row("trbp", lambda m: fwcore.trbp(m, max_time=t), case),
            {**fwcore_row(*ours, case), "ours": True}]


# -- report ----------------------------------------------------------------------------------


def number(x, fmt):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def model_table(case, rows):
    """The markdown table of one model's rows."""
    note = " (official answers unverified)" if case.unverified else ""
    about = (f"{len(case.marginals)} variables, {len(case.evidence)} observed (excluded "
             f"from ζ), log Z = {case.log_z:.6f}")
    lines = [f"### {case.name}{note}", "", about, "",
             ("| method | ζ | bound − log Z | lower − log Z | estimate − log Z | 95% interval "
              "− log Z | seconds | status |"),
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bound = number(r["upper_minus_log_z"], ".4g")
        if r["log_z_upper"] is not None and not r["certified"]:
            bound += " (uncertified)"
        interval = ("-" if r.get("estimate_lower_minus_log_z") is None else
                    f"[{r['estimate_lower_minus_log_z']:.4g}, "
                    f"{r['estimate_upper_minus_log_z']:.4g}]")
        lines.append(f"| {r['method']} | {number(r['zeta'], '.4f')} | {bound} | "
                     f"{number(r['lower_minus_log_z'], '.4g')} | "
                     f"{number(r.get('estimate_minus_log_z'), '.4g')} | {interval} | "
                     f"{number(r['seconds'], '.1f')} | {r['status']} |")
    return "\n".join(lines)


def bound_violations(case, rows):
    """The certified bounds (upper or lower) on the wrong side of log Z beyond the .PR
    file's precision: (method, which, by how much)."""
    bad = []
    for r in rows:
        up, low = r["upper_minus_log_z"], r["lower_minus_log_z"]
        if r["certified"] and up is not None and up < -case.log_z_tolerance:
            bad.append((r["method"], "upper bound below log Z", up))
        if low is not None and low > case.log_z_tolerance:
            bad.append((r["method"], "lower bound above log Z", low))
    return bad


def verdicts(case, rows):
    """Issue 29's targets for fwcore's answer on one model: a dict of yes/no/why-not."""
    ours = next(r for r in rows if r.get("ours"))
    by_method = {r["method"]: r for r in rows}
    bp_zetas = [by_method[m]["zeta"] for m in ("loopy-bp", "trbp")
                if by_method[m]["zeta"] is not None]
    merlin = merlin_bound_by(rows, ours["seconds"])
    trbp_bound = by_method["trbp"]["upper_minus_log_z"]

    def judge(ok):
        return "yes" if ok else "no"

    out = {"model": case.name + (" (unverified)" if case.unverified else "")}
    z, up = ours["zeta"], ours["upper_minus_log_z"]
    if z is None or len(bp_zetas) < 2:
        out["ζ ≤ min(BP)+.005"] = out["ζ < both BP"] = "-"
    else:
        out["ζ ≤ min(BP)+.005"] = judge(z <= min(bp_zetas) + ZETA_SLACK)
        out["ζ < both BP"] = judge(z < min(bp_zetas))
    if up is None:
        out["bound ≥ log Z"] = out["bound ≤ TRBP"] = out["bound ≤ WMB same time"] = "-"
        return out
    above = up >= -case.log_z_tolerance
    if ours["certified"]:
        out["bound ≥ log Z"] = "yes" if above else "VIOLATED"
    else:
        out["bound ≥ log Z"] = judge(above) + " (uncertified)"
    out["bound ≤ TRBP"] = "-" if trbp_bound is None else judge(up <= trbp_bound)
    out["bound ≤ WMB same time"] = (
        "yes (no WMB bound as fast)" if merlin is None
        else judge(up <= merlin + MERLIN_PRECISION))  # Merlin's rounding: a tie
    return out


def interval_verdicts(case, rows, seed_rows=()):
    """Issue 36's targets for fwcore's answer on one model: the certified lower bound is
    at most log Z and within max(1, upper − log Z) of it; the 95% probabilistic interval
    holds log Z (in how many of the seeds' runs, with --seeds) and is at most 1 nat wide;
    ζ is at most min(loopy BP, TRBP)."""
    ours = next(r for r in rows if r.get("ours"))
    runs = list(seed_rows) or [ours]
    by_method = {r["method"]: r for r in rows}
    out = {"model": case.name + (" (unverified)" if case.unverified else "")}
    up, low = ours["upper_minus_log_z"], ours["lower_minus_log_z"]
    if low is None or up is None:
        out["lower ≤ log Z"] = out["log Z − lower ≤ max(1, up)"] = "-"
    else:
        out["lower ≤ log Z"] = "yes" if low <= case.log_z_tolerance else "VIOLATED"
        out["log Z − lower ≤ max(1, up)"] = "yes" if -low <= max(1.0, up) else "no"
    ends = [(r.get("estimate_lower_minus_log_z"), r.get("estimate_upper_minus_log_z"))
            for r in runs]
    ends = [(a, b) for a, b in ends if a is not None]
    if not ends:
        out["interval ∋ log Z"] = out["interval ≤ 1 nat"] = "-"
    else:
        held = sum(a <= case.log_z_tolerance and b >= -case.log_z_tolerance for a, b in ends)
        enough = held >= 0.95 * len(ends)
        out["interval ∋ log Z"] = f"{'yes' if enough else 'no'} ({held}/{len(ends)})"
        width = float(np.median([b - a for a, b in ends]))
        out["interval ≤ 1 nat"] = f"{'yes' if width <= 1.0 else 'no'} ({width:.3g})"
    bp = [by_method[m]["zeta"] for m in ("loopy-bp", "trbp") if by_method[m]["zeta"] is not None]
    z = ours["zeta"]
    out["ζ ≤ min(BP, TRBP)"] = "-" if z is None or len(bp) < 2 else (
        "yes" if z <= min(bp) else "no")
    return out


def summary_table(all_verdicts):
    """The markdown summary: one row per model, then per column the count of yes."""
    if not all_verdicts:
        return "no models"
    columns = list(all_verdicts[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(v[c] for c in columns) + " |" for v in all_verdicts]
    counts = [f"{sum(v[c].startswith('yes') for v in all_verdicts)}/{len(all_verdicts)}"
              for c in columns[1:]]
    lines.append("| yes | " + " | ".join(counts) + " |")
    return "\n".join(lines)


# -- command line ------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", help=".uai files or folders (default: uai2014-beyond/)")
    p.add_argument("--held-out", action="store_true",
                   help="add " + ", ".join(s + "/" for s in HELD_OUT_SETS))
    p.add_argument("--ibounds", default="5,10,15,20",
                   help="Merlin WMB i-bounds (default %(default)s)")
    p.add_argument("--merlin", help="Merlin binary (default $MERLIN)")
    p.add_argument("--merlin-iterations", type=int, default=100,
                   help="WMB tightening iterations; Merlin runs them all (default %(default)s)")
    p.add_argument("--merlin-timeout", type=float, default=120.0,
                   help="seconds of wall time per Merlin run (default %(default)s)")
    p.add_argument("--merlin-memory", type=float, default=8.0,
                   help="GiB of address space per Merlin run (default %(default)s)")
    p.add_argument("--max-time", type=float, default=60.0,
                   help="fwcore's max_time per call (default %(default)s)")
    p.add_argument("--method", default="approximate",
                   choices=("auto", "approximate", *fwcore.available_methods()),
                   help="fwcore.infer's method (default %(default)s)")
    p.add_argument("--cache", default=str(REPO / "bench" / ".merlin_cache.json"),
                   help="Merlin results cache (default %(default)s)")
    p.add_argument("--no-cache", action="store_true",
                   help="rerun Merlin (the new results replace the cached ones)")
    p.add_argument("--json", help="write every row and verdict to this file")
    p.add_argument("--pygms", help="the Python of pyGMs' virtual environment "
                                   "(default $PYGMS_PYTHON)")
    p.add_argument("--pygms-ibounds", default="10", help="pyGMs' i-bounds (default %(default)s)")
    p.add_argument("--peers-only", action="store_true",
                   help="only the peers' rows (Merlin, pyGMs): no fwcore row, no verdicts")
    p.add_argument("--seeds", type=int, default=0,
                   help="also run fwcore's answer with seeds 0..N-1 (the interval's coverage)")
    opts = p.parse_args(argv)
    opts.ibounds = [int(i) for i in opts.ibounds.split(",") if i]
    opts.pygms_ibounds = [int(i) for i in opts.pygms_ibounds.split(",") if i]
    return opts


def main(argv=None):
    opts = parse_args(argv)
    paths = model_paths(opts.models, INSTANCES)
    if opts.held_out:
        paths += model_paths([str(INSTANCES / s) for s in HELD_OUT_SETS], INSTANCES)
    missing = sorted(set(paths) - set(with_answers(paths)))
    for p in missing:
        print(f"skipping {p}: no .MAR and .PR answers beside it")
    binary, why_not = find_merlin(opts.merlin)
    if binary is None:
        print(f"Merlin rows skipped: {why_not}")
    pygms, why_not = find_pygms(opts.pygms)
    if pygms is None:
        print(f"pyGMs rows skipped: {why_not}")
    cache = load_cache(opts.cache)
    ours = ours_solver(opts.method, opts.max_time)
    print(f"fwcore's answer: {ours[0]}, max_time={opts.max_time:g} s\n")
    report = []
    for path in with_answers(paths):
        case = load_case(path)
        rows = ((merlin_rows(binary, case, opts, cache) if binary else []) +
                (pygms_rows(pygms, case, opts) if pygms else []))
        if opts.peers_only:
            print(model_table(case, rows) + "\n", flush=True)
            report.append({"model": case.name, "log_z": case.log_z, "rows": rows})
            continue
        rows += fwcore_rows(case, opts, ours)
        seed_rows = [fwcore_row(*ours_solver(opts.method, opts.max_time, seed), case)
                     for seed in range(opts.seeds)]
        print(model_table(case, rows) + "\n", flush=True)
        for method, which, by in bound_violations(case, rows):
            culprit = ("or the unverified official answer is wrong" if case.unverified else
                       "a bug")
            print(f"!!! {case.name}: {method}: certified {which} by {by:.4g} ({culprit})\n")
        report.append({"model": case.name, "log_z": case.log_z, "rows": rows,
                       "seed_rows": seed_rows, "verdicts": verdicts(case, rows),
                       "interval_verdicts": interval_verdicts(case, rows, seed_rows)})
    if opts.json:
        Path(opts.json).write_text(json.dumps(report, indent=1))
    if opts.peers_only:
        return
    print("## Summary (fwcore's answer against issue 29's targets)\n")
    print(summary_table([r["verdicts"] for r in report]))
    print("\n## Summary (the interval against issue 36's targets)\n")
    print(summary_table([r["interval_verdicts"] for r in report]))


if __name__ == "__main__":
    sys.exit(main())
