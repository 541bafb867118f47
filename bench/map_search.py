"""MAP on models of any arity, fwcore against toulbar2 and Merlin at equal time (issue 37).

    python bench/map_search.py                      # uai2014-higher-order/, uai2014-beyond/
    python bench/map_search.py --budgets 10,60 --json rows.json
    python bench/map_search.py M.uai DIR --fwcore auto,aobb --merlin-algorithms jglp,wmb
    python bench/map_search.py --toulbar2-python /path/to/venv/bin/python --merlin PATH

Per model (its MODEL.uai.evid applied when present) and time budget T, each solver's best
score (the log-score of its assignment, recomputed by fwcore on the same model), its
bound when it has one, the seconds to its best score and whether it proved it optimal:

- fwcore: ``fwcore.infer_map(model, method, max_time=T)`` for each --fwcore method
  (default: ``auto``, the default a user gets), in this process;
- toulbar2 (pytoulbar2 in a benchmark-only venv, ../shared/PEERS.md; --toulbar2-python or
  $TOULBAR2_PYTHON): `bench/peers/toulbar2_map.py` on the factor graph itself, killed at
  T of wall time (its own limit counts CPU seconds after preprocessing: 8 s for 3 on
  linkage_12), its solutions read and timed as it prints them, proven when it prints
  "Optimum";
- Merlin (`bench/peers/build_merlin.sh`; --merlin or $MERLIN): ``--task MAP --algorithm
  jglp`` / ``wmb`` at --ibound (default 10), which run their own iteration count and
  ignore time limits: each is killed at T (then it has no answer) and its bound is the
  "Final Upper Bound" it prints.

Prints a markdown table per budget and the checks of issue 37 (at the --check budget,
default 20 s: fwcore's default within 0.5 nats of toulbar2 on >= 80% of the models, never
below Merlin's jglp, proving optimality wherever toulbar2 does within 60 s).
Without a peer its columns are skipped, saying why.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import fwcore
from fwcore.factor_graph import FactorGraph
from fwcore.io.uai import apply_evidence, read_evid, read_map, read_uai

REPO = Path(__file__).resolve().parents[1]
INSTANCES = Path(os.environ.get("FWCORE_INSTANCES", REPO.parent / "shared" / "instances"))
SETS = ("uai2014-higher-order", "uai2014-beyond")
TOULBAR2 = REPO / "bench" / "peers" / "toulbar2_map.py"
#: issue 37's margins: within this many nats of toulbar2's score
WITHIN = 0.5


def cases(paths):
    """(name, path, model with its evidence) for every .uai file of ``paths`` (files or
    folders)."""
    files = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.uai")) if p.is_dir() else [p]
    for path in files:
        model = read_uai(str(path))
        evid = path.with_name(path.name + ".evid")
        if evid.exists():
            evidence = read_evid(str(evid))
            if evidence:
                model = apply_evidence(model, evidence)
        yield path.stem, path, model


def factors(model):
    """The model's (scope, log-potential table) factors."""
    if isinstance(model, FactorGraph):
        return list(model.factors)
    return ([((i,), model.unary(i)) for i in range(model.n_vars)] +
            [((int(i), int(j)), model.pairwise(e)) for e, (i, j) in enumerate(model.edges)])


def score_of(model, x):
    return float(model.score(np.asarray(x)))


def run_fwcore(model, seconds, method):
    """One `fwcore.infer_map` call: its row."""
    t0 = time.perf_counter()
    res = fwcore.infer_map(model, method, max_time=seconds, seed=0)
    wall = time.perf_counter() - t0
    to_best = next((r.time for r in res.trace if r.score is not None and
                    r.score >= res.score - 1e-9 * max(1.0, abs(res.score))), res.time)
    return {"score": res.score, "bound": res.upper_bound, "seconds": wall,
            "to_best": to_best, "proven": res.status.value == "converged",
            "detail": res.method}


def run_toulbar2(model, seconds, python):
    """toulbar2 in ``python`` (a venv with pytoulbar2) on the model's factors: its row."""
    fs = factors(model)
    lengths = [len(s) for s, _ in fs]
    sizes = [np.asarray(t).size for _, t in fs]
    with tempfile.TemporaryDirectory() as tmp:
        problem = Path(tmp) / "problem.npz"
        np.savez(problem, card=np.asarray(model.card, dtype=np.int64),
                 scope_start=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                 scope_var=np.array([v for s, _ in fs for v in s], dtype=np.int64),
                 table_start=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                 tables=np.concatenate([np.asarray(t, dtype=np.float64).ravel()
                                        for _, t in fs]))
        t0 = time.perf_counter()
        found, proven, best, detail = _toulbar2_process(python, problem, seconds, [])
        if found is None and time.perf_counter() - t0 < seconds:  # it crashed: once more
            found, proven, best, detail = _toulbar2_process(
                python, problem, seconds - (time.perf_counter() - t0), ["--no-elimination"])
            detail = "crashed; again without variable elimination"
    wall = time.perf_counter() - t0
    if best is None:
        return {"score": None, "bound": None, "seconds": wall, "to_best": None,
                "proven": False, "detail": "no solution"}
    score = score_of(model, best)
    return {"score": score, "bound": score if proven else None, "seconds": wall,
            "to_best": found, "proven": proven, "detail": detail}


def _toulbar2_process(python, problem, seconds, flags):
    """One toulbar2 run, killed at ``seconds``: (time of its best solution, proven, that
    solution, "" ); the time is None when it exited abnormally (not killed by the budget)
    before proving anything."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([python, str(TOULBAR2), str(problem), str(seconds), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    killer = threading.Timer(seconds, proc.kill)  # a wall-clock budget, as fwcore's
    killer.start()
    found, proven, best, announced = None, False, None, None
    for line in proc.stdout:
        if announced is not None:  # the values of the solution just announced
            best, found, announced = [int(v) for v in line.split()], announced, None
        elif line.startswith("New solution"):
            announced = time.perf_counter() - t0
        elif line.startswith("Optimum"):
            proven = True
    code = proc.wait()
    killed = not killer.is_alive() or time.perf_counter() - t0 >= seconds
    killer.cancel()
    if code != 0 and not killed and not proven:
        return None, False, best, "crashed"
    return found, proven, best, ""


def run_merlin(path, seconds, merlin, algorithm, ibound, model):
    """Merlin's MAP by ``algorithm`` (jglp, wmb), killed at ``seconds``: its row."""
    evid = path.with_name(path.name + ".evid")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [merlin, "--input-file", str(path), "--task", "MAP", "--algorithm", algorithm,
               "--ibound", str(ibound), "--output-format", "uai", "--output-file", str(out)]
        if evid.exists():
            cmd += ["--evidence-file", str(evid)]
        t0 = time.perf_counter()
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds)
            text = run.stdout
        except subprocess.TimeoutExpired as stopped:
            text = (stopped.stdout or b"").decode() if isinstance(stopped.stdout, bytes) \
                else (stopped.stdout or "")
        wall = time.perf_counter() - t0
        answer = Path(f"{out}.MAP")
        upper = re.findall(r"Final Upper Bound is (\S+)", text)
        if not answer.exists() or not answer.read_text().strip():
            return {"score": None, "bound": float(upper[-1]) if upper else None,
                    "seconds": wall, "to_best": None, "proven": False,
                    "detail": f"no answer within {seconds:g} s"}
        x = read_map(str(answer))
    score = score_of(model, x)
    bound = float(upper[-1]) if upper else None
    return {"score": score, "bound": bound, "seconds": wall, "to_best": wall,
            "proven": bool(bound is not None and np.isfinite(score) and
                           bound - score <= 1e-6 * max(1.0, abs(score))),
            "detail": f"i={ibound}"}


def table(rows, budget, solvers):
    """A markdown table of one budget's rows."""
    head = ["model"] + [f"{s} score / bound / to best s" for s in solvers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in sorted({r["model"] for r in rows}):
        cells = [name]
        for s in solvers:
            row = next((r for r in rows if r["model"] == name and r["solver"] == s
                        and r["budget"] == budget), None)
            if row is None or row["score"] is None:
                cells.append("—" if row is None else row["detail"])
                continue
            bound = "none" if row["bound"] is None else f"{row['bound']:.3f}"
            best = "" if row["to_best"] is None else f"{row['to_best']:.1f}"
            cells.append(f"{row['score']:.3f}{' (opt)' if row['proven'] else ''} / {bound} / "
                         f"{best}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def checks(rows, budget, fw="fwcore:auto"):
    """Issue 37's checks at ``budget`` (the toulbar2 proof check at the largest budget
    run up to 60 s)."""
    def row(model, solver, b=budget):
        return next((r for r in rows if r["model"] == model and r["solver"] == solver
                     and r["budget"] == b), None)
    models = sorted({r["model"] for r in rows})
    out, close, total = [], 0, 0
    proof_budget = max((r["budget"] for r in rows if r["budget"] <= 60), default=budget)
    for m in models:
        ours, tb2, jglp = row(m, fw), row(m, "toulbar2"), row(m, "merlin:jglp")
        if ours is None:
            continue
        if tb2 is not None and tb2["score"] is not None:
            total += 1
            ok = ours["score"] >= tb2["score"] - WITHIN
            close += ok
            if not ok:
                out.append(f"{m}: {ours['score']:.3f} is {tb2['score'] - ours['score']:.3f} "
                           f"below toulbar2's {tb2['score']:.3f}")
        if jglp is not None and jglp["score"] is not None and ours["score"] < jglp["score"]:
            out.append(f"{m}: below Merlin's jglp ({ours['score']:.3f} < {jglp['score']:.3f})")
        tb2_proof = row(m, "toulbar2", proof_budget)
        if tb2_proof is not None and tb2_proof["proven"] and not ours["proven"]:
            out.append(f"{m}: toulbar2 proves optimality within {proof_budget:g} s, "
                       f"fwcore does not within {budget:g} s")
    head = (f"within {WITHIN} nats of toulbar2 at {budget:g} s: {close} of {total}"
            if total else "toulbar2 not run: no comparison")
    return [head] + out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", help="UAI files or folders (default: the shared "
                                               + ", ".join(SETS) + ")")
    ap.add_argument("--budgets", default="10,60", help="seconds, comma-separated")
    ap.add_argument("--check", type=float, default=20.0,
                    help="the budget of issue 37's checks (added to --budgets)")
    ap.add_argument("--proof", type=float, default=None,
                    help="also run toulbar2 alone for this many seconds where it did not "
                         "prove optimality within --check (the proof check's budget, "
                         "instead of running every solver at 60 s)")
    ap.add_argument("--fwcore", default="auto", help="fwcore methods, comma-separated")
    ap.add_argument("--toulbar2-python", default=os.environ.get("TOULBAR2_PYTHON"))
    ap.add_argument("--merlin", default=os.environ.get("MERLIN"))
    ap.add_argument("--merlin-algorithms", default="jglp,wmb")
    ap.add_argument("--ibound", type=int, default=10)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    paths = args.paths or [INSTANCES / s for s in SETS if (INSTANCES / s).exists()]
    budgets = sorted({float(b) for b in args.budgets.split(",")} | {args.check})
    solvers = [f"fwcore:{m}" for m in args.fwcore.split(",")]
    if args.toulbar2_python:
        solvers.append("toulbar2")
    else:
        print("toulbar2 skipped: no --toulbar2-python / $TOULBAR2_PYTHON", file=sys.stderr)
    algorithms = args.merlin_algorithms.split(",") if args.merlin else []
    if not args.merlin:
        print("Merlin skipped: no --merlin / $MERLIN", file=sys.stderr)
    solvers += [f"merlin:{a}" for a in algorithms]
    rows = []
    for name, path, model in cases(paths):
        for budget in budgets:
            for solver in solvers:
                kind, _, what = solver.partition(":")
                if kind == "fwcore":
                    row = run_fwcore(model, budget, what)
                elif kind == "toulbar2":
                    row = run_toulbar2(model, budget, args.toulbar2_python)
                else:
                    row = run_merlin(path, budget, args.merlin, what, args.ibound, model)
                rows.append({"model": name, "budget": budget, "solver": solver, **row})
                print(f"{name} {budget:g}s {solver}: {row}", file=sys.stderr, flush=True)
        if args.proof and args.toulbar2_python:
            row = next(r for r in rows if r["model"] == name and r["solver"] == "toulbar2"
                       and r["budget"] == args.check)
            if not row["proven"]:
                row = run_toulbar2(model, args.proof, args.toulbar2_python)
            rows.append({**row, "model": name, "budget": args.proof, "solver": "toulbar2"})
            print(f"{name} {args.proof:g}s toulbar2: {row}", file=sys.stderr, flush=True)
    for budget in budgets:
        print(f"\n### {budget:g} s\n")
        print(table(rows, budget, solvers))
    print()
    print("\n".join(checks(rows, args.check, solvers[0])))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
