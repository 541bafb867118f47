"""Are `fwcore.infer`'s marginals ever behind loopy BP's or TRBP's? (issue 36, Deliver 3)

    python bench/marginal_rule.py                          # the shared UAI models and grids
    python bench/marginal_rule.py --budgets 1,10 --method auto DIR_OR_UAI ...
    python bench/marginal_rule.py --json rows.json

Per model with official answers (MODEL.uai.MAR; its evidence applied, its variables left
out of ζ as in bench/beyond.py): loopy BP and TRBP run to their own convergence (their
default sweeps and tolerance, no time limit), then ``fwcore.infer(model, method=M,
max_time=T)`` for each budget T; ζ (mean ½‖μ_i − p_i‖₁) of each, and what infer's result
shows without the answers (its method, status, upper − lower, the sampled interval and
effective sample size when it has them): the features a rule in `fwcore.auto` may read.
Prints a markdown table per budget and the models where infer is behind min(BP, TRBP).
Heavy (minutes per model at T = 60): run it through ``flock /work/heavy.lock`` on a
shared machine.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import fwcore
from beyond import INSTANCES, load_case, with_answers, zeta

#: the default models: every shared UAI set with answers, and the Barrier FW paper's grids
#: ζ differences below this are rounding, not a method behind (DBN_14:
#: exact elimination's ζ 9.917e-13 against loopy BP's 9.916e-13 was flagged)
ZETA_TIE = 1e-9
DEFAULT_SETS = ("uai2014", "uai2014-higher-order", "uai2014-beyond", "fw-inference/grid5x5",
                "fw-inference/grid10x10")


def baseline(name, solve, case):
    """{method, zeta, seconds, status, n_iter} of a BP baseline run to convergence."""
    t0 = time.perf_counter()
    res = solve(case.model)
    return {"method": name, "zeta": zeta(res.node_marginals, case.marginals, case.evidence),
            "seconds": time.perf_counter() - t0, "status": res.status.value,
            "n_iter": res.n_iter}


def ours(case, method, max_time):
    """The row of ``fwcore.infer(model, method, max_time)`` with what it shows of itself."""
    res = fwcore.infer(case.model, method=method, max_time=max_time)
    lower = res.log_z_lower if res.log_z_lower is not None else -math.inf
    estimate = getattr(res, "log_z_estimate", None)       # (a main without it: none)
    return {"method": res.method, "zeta": zeta(res.node_marginals, case.marginals,
                                                case.evidence),
            "seconds": res.time, "status": res.status.value, "n_iter": res.n_iter,
            "upper_minus_lower": res.log_z_upper - lower if res.certified else None,
            "upper_minus_log_z": res.log_z_upper - case.log_z,
            "lower_minus_log_z": lower - case.log_z,
            "estimate_minus_log_z": (None if estimate is None else estimate - case.log_z),
            "estimate_width": (None if estimate is None else
                               res.log_z_estimate_upper - res.log_z_estimate_lower),
            "info": {k: v for k, v in res.info.items()
                     if isinstance(v, (int, float, str, bool))}}


def run_case(case, budgets, method):
    rows = {"model": case.name, "n_vars": len(case.marginals),
            "loopy-bp": baseline("loopy-bp", fwcore.loopy_bp, case),
            "trbp": baseline("trbp", fwcore.trbp, case)}
    for t in budgets:
        rows[f"infer@{t:g}"] = ours(case, method, t)
    return rows


def table(report, budget):
    lines = [f"### infer(max_time={budget:g})", "",
             "| model | infer ζ | its method | s | upper − lower | loopy BP ζ | TRBP ζ | behind |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report:
        o, b, t = r[f"infer@{budget:g}"], r["loopy-bp"], r["trbp"]
        behind = o["zeta"] > min(b["zeta"], t["zeta"]) + ZETA_TIE
        gap = o["upper_minus_lower"]
        lines.append(f"| {r['model']} | {o['zeta']:.4f} | {o['method']} | {o['seconds']:.1f} | "
                     f"{'-' if gap is None else format(gap, '.3g')} | {b['zeta']:.4f} | "
                     f"{t['zeta']:.4f} | {'BEHIND' if behind else ''} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", help=".uai files or folders (default: the shared sets)")
    p.add_argument("--budgets", default="1,10,60", help="infer's max_time values (s)")
    p.add_argument("--method", default="auto", help="infer's method (default %(default)s)")
    p.add_argument("--json", help="write every row to this file")
    opts = p.parse_args(argv)
    budgets = [float(b) for b in opts.budgets.split(",") if b]
    roots = [Path(a) for a in opts.models] or [INSTANCES / s for s in DEFAULT_SETS]
    paths = [q for r in roots for q in (sorted(r.glob("*.uai")) if r.is_dir() else [r])]
    if not with_answers(paths):
        p.error(f"no .uai model with an answer file in {', '.join(map(str, roots))} "
                "(set FWCORE_INSTANCES to the shared instances or name models)")
    report = []
    for path in with_answers(paths):
        report.append(run_case(load_case(path), budgets, opts.method))
        r = report[-1]
        print(f"{r['model']}: " + ", ".join(
            f"{k} ζ {v['zeta']:.4f} ({v['seconds']:.1f} s)" for k, v in r.items()
            if isinstance(v, dict)), flush=True)
    for t in budgets:
        print("\n" + table(report, t))
    if opts.json:
        Path(opts.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.exit(main())
