"""Command line: ``fwcore COMMAND MODEL.uai`` (also ``python -m fwcore``)."""
import argparse
import sys
import time

import numpy as np

__all__ = ["main"]


def _load(args):
    from .uai import apply_evidence, read_evid, read_uai
    model = read_uai(args.model)
    if args.evid:
        model = apply_evidence(model, read_evid(args.evid))
    return model


def _print_marginals(node_marginals, limit, out):
    shown = node_marginals if limit is None else node_marginals[:limit]
    for i, p in enumerate(shown):
        probs = " ".join(f"{v:.4f}" for v in p)
        print(f"  x{i:<5d} {probs}", file=out)
    if len(shown) < len(node_marginals):
        print(f"  ... {len(node_marginals) - len(shown)} more (use --all or --out)", file=out)


def _cmd_exact(args):
    from .exact import exact_inference
    from .uai import write_mar, write_pr
    model = _load(args)
    t0 = time.perf_counter()
    res = exact_inference(model, memory_limit=int(args.memory_limit * 2**20))
    seconds = time.perf_counter() - t0
    print(f"{args.model}: {model.n_vars} variables, {model.n_edges} edges")
    print(f"exact inference ({res.method}) in {seconds:.3f} s")
    print(f"log Z = {res.log_z:.10g}")
    print("node marginals P(x_i = 0), P(x_i = 1), ...:")
    _print_marginals(res.node_marginals, None if args.all else 20, sys.stdout)
    if args.out:
        write_mar(args.out + ".MAR", res.node_marginals)
        write_pr(args.out + ".PR", res.log_z)
        print(f"wrote {args.out}.MAR and {args.out}.PR")
    return 0


def _parser():
    p = argparse.ArgumentParser(
        prog="fwcore",
        description="Inference in discrete pairwise graphical models read from UAI files "
                    "(MARKOV format).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ex = sub.add_parser(
        "exact", help="exact log Z and marginals (variable elimination; small treewidth only)",
        description="Exact log partition function and node marginals by brute force or "
                    "variable elimination. Fails with a clear message when the model's "
                    "treewidth needs more memory than --memory-limit.")
    ex.add_argument("model", help="model file in UAI MARKOV format")
    ex.add_argument("--evid", help="evidence file (UAI .evid) clamping some variables")
    ex.add_argument("--out", metavar="PREFIX", help="write PREFIX.MAR and PREFIX.PR")
    ex.add_argument("--all", action="store_true", help="print every marginal, not the first 20")
    ex.add_argument("--memory-limit", type=float, default=2048, metavar="MIB",
                    help="largest elimination table allowed, in MiB (default 2048)")
    ex.set_defaults(run=_cmd_exact)
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    np.set_printoptions(precision=4, suppress=True)
    try:
        return args.run(args)
    except (ValueError, TypeError, OSError) as err:
        print(f"fwcore {args.command}: error: {err}", file=sys.stderr)
        return 2
