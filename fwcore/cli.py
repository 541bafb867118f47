"""Command line: ``fwcore COMMAND MODEL.uai`` or ``fwcore COMMAND --example NAME`` (also
``python -m fwcore``); the epilog of ``fwcore --help`` (`_EPILOG`) says what it prints and
writes, and its exit codes.

Ctrl-C during ``infer`` or ``map`` prints the best result so far (status interrupted),
writes what ``--out`` asks for, and exits with status 130; before there is a result, and
during ``exact`` (which has no partial answer), it exits with 130 at once."""
import argparse
import inspect
import math
import os
import sys
import time

import numpy as np

from . import __version__, datasets
from .results import Status

__all__ = ["main"]

_BAD_ARGUMENTS = 2  # argparse's own code for a bad command line
_INTERRUPTED = 130
_BROKEN_PIPE = 141  # 128 + SIGPIPE, as other tools in a pipeline report it
#: node marginals printed unless --all
_SHOWN = 20

_EPILOG = """\
examples:
  fwcore infer --example grid5x5 --oracle exact   a shipped example model (see below)
  fwcore infer model.uai --max-time 60 --out res  marginals and a log Z bound, files res.*
  fwcore exact model.uai --evid model.uai.evid    exact answers with evidence clamped
  fwcore map model.uai --method ilp --time-limit 10 --out res

example models (--example NAME, or fwcore.datasets in Python): {examples}

output: a summary and the node marginals on stdout (the first {shown} unless --all), progress
on stderr (infer; --quiet for none; a tqdm bar with the 'progress' extra). With
--out PREFIX, in the UAI competition's formats:
  PREFIX.MAR  node marginals (exact, infer)
  PREFIX.PR   log10 of Z (exact) or of the upper bound on Z (infer); not written when
              Ctrl-C came before any bound was measured
  PREFIX.MAP  the assignment found (map)

exit status:
  0    success (also a run stopped by --max-time: the status line says so)
  2    bad arguments, or a model or evidence file that cannot be read or used
  130  interrupted by Ctrl-C (infer, map: the best result so far is printed and written
       first; exact: at once, nothing written)
  141  stdout closed by its reader (as in '| head'); the --out files are written

Run 'fwcore COMMAND --help' for the options of a command."""


def _load(args):
    from .io import apply_evidence, read_evid, read_model
    if args.example:
        args.model = str(datasets.path(args.example))
    model = read_model(args.model)
    if args.evid:
        model = apply_evidence(model, read_evid(args.evid))
    return model


def _describe(model):
    """'n variables, E edges', or for a FactorGraph its factors and its reduction."""
    from .factor_graph import FactorGraph
    if isinstance(model, FactorGraph):
        return (f"{model.n_vars} variables, {model.n_factors} factors of arity up to "
                f"{model.max_arity} (solved as a pairwise model of {model.reduced.n_vars} "
                f"variables and {model.reduced.n_edges} edges)")
    return f"{model.n_vars} variables, {model.n_edges} edges"


def _print_marginals(node_marginals, limit, out):
    shown = node_marginals if limit is None else node_marginals[:limit]
    for i, p in enumerate(shown):
        probs = " ".join(f"{v:.4f}" for v in p)
        print(f"  x{i:<5d} {probs}", file=out)
    if len(shown) < len(node_marginals):
        print(f"  ... {len(node_marginals) - len(shown)} more (use --all or --out)", file=out)


def _cmd_exact(args):
    from .exact import exact_inference
    model = _load(args)
    t0 = time.perf_counter()
    res = exact_inference(model, memory_limit=int(args.memory_limit * 2**20))
    seconds = time.perf_counter() - t0
    _report(args, model, [f"exact inference ({res.method}) in {seconds:.3f} s",
                          f"log Z = {res.log_z:.10g}"], res.node_marginals, res.log_z)
    return 0


def _report(args, model, lines, node_marginals, log_z):
    """With --out write PREFIX.MAR and PREFIX.PR (first: a reader of stdout that goes away,
    as ``| head`` does, cannot stop them), then print a summary and the marginals."""
    from .io.uai import write_mar, write_pr
    wrote = None
    if args.out:
        write_mar(args.out + ".MAR", node_marginals)
        if log_z == math.inf:  # interrupted before any bound was measured
            wrote = f"wrote {args.out}.MAR (no bound on log Z yet: no {args.out}.PR)"
        else:
            write_pr(args.out + ".PR", log_z)
            wrote = f"wrote {args.out}.MAR and {args.out}.PR"
    print(f"{args.model}: {_describe(model)}")
    for line in lines:
        print(line)
    print("node marginals P(x_i = 0), P(x_i = 1), ...:")
    _print_marginals(node_marginals, None if args.all else _SHOWN, sys.stdout)
    if wrote:
        print(wrote)


class _Progress:
    """One progress line on stderr per marginal-inference record: a tqdm bar over the
    Barrier FW runs (one per ρ, ``total`` = rho updates + 1) when tqdm is installed (the
    ``progress`` extra), a plain carriage-return line otherwise. Nothing is drawn before
    the first record, so an argument error or an exact answer shows no bar."""

    def __init__(self, total, enabled):
        self.total, self.enabled = total, enabled
        self.bar, self.started, self.last = None, False, 0.0

    def __call__(self, rec):
        if not self.enabled:
            return True
        if not self.started:
            self.started = True
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=self.total, desc="FW runs", unit="run", file=sys.stderr)
            except ImportError:
                pass
        if rec.outer is None:  # a weighted mini-bucket pass
            text = f"log Z in [{rec.score:.6f}, {rec.bound:.6f}]"
        else:
            text = (f"TRW {rec.primal:.6f} gap {rec.gap:.3g} delta {rec.delta:.2g} "
                    f"MAP calls {rec.n_oracle_calls}")
        if self.bar is not None:
            self.bar.update((rec.outer or 0) - self.bar.n)  # runs finished before this one
            self.bar.set_postfix_str(text, refresh=False)
        else:  # one line rewritten in place on a terminal, a line a second in a log
            tty = sys.stderr.isatty()
            if time.perf_counter() - self.last > (0.1 if tty else 1.0):
                self.last = time.perf_counter()
                where = f"pass {rec.iteration}" if rec.outer is None else \
                    f"rho {rec.outer} it {rec.iteration}"
                print(f"{chr(13) if tty else ''}{where} {text}", end="   " if tty else "\n",
                      file=sys.stderr, flush=True)
        return True

    def close(self, finished=False):
        """``finished``: every run ended (no max_time, no Ctrl-C), so the bar is full."""
        if self.bar is not None:
            if finished:
                self.bar.update(self.total - self.bar.n)
            self.bar.close()
        elif self.started and sys.stderr.isatty():
            print(file=sys.stderr)


def _cmd_infer(args):
    from .marginals.barrier_fw import infer
    model = _load(args)
    oracle = args.oracle if not args.oracle_options else \
        (args.oracle, _options(args.oracle_options))
    progress = _Progress(args.rho_updates + 1, not args.quiet)
    res = None
    try:
        res = infer(model, method=args.method, oracle=oracle, domain=args.domain, rho=args.rho,
                    rho_updates=args.rho_updates, rho_step=args.rho_step, tol=args.tol,
                    rho_tol=args.rho_tol, local_search=args.local_search,
                    max_time=args.max_time, seed=args.seed, callback=progress)
    finally:
        progress.close(finished=res is not None and res.status not in (
            Status.MAX_TIME, Status.INTERRUPTED))
    _report(args, model, _infer_summary(res, args), res.node_marginals, res.log_z_upper)
    return _exit_code(res.status)


def _infer_summary(res, args):
    """What an `infer` result means, in words."""
    if res.method.startswith("exact/"):
        how = {"tree": "two-pass sum-product on a forest"}.get(res.method[6:], res.method[6:])
        return [f"exact marginals by {how} in {res.time:.3f} s (the model is small or "
                "simple enough: cheaper than Barrier FW)", f"log Z = {res.log_z_upper:.10g}"]
    if res.method == "wmb":
        return [f"weighted mini-bucket elimination: {res.time:.3f} s, {res.n_iter} passes, "
                f"status {res.status.value}",
                f"{res.log_z_lower:.10g} <= log Z <= {res.log_z_upper:.10g}  (certified)"]
    lines = [f"Barrier FW over the {args.domain} polytope, oracle {args.oracle}: "
             f"{res.time:.3f} s, {res.n_oracle_calls} MAP calls, {res.n_rho_updates} rho "
             f"updates, status {res.status.value}",
             f"TRW objective = {res.primal:.10g}, FW gap = {res.gap:.3g}"
             + ("" if res.certified_gap is None else f", proven gap = {res.certified_gap:.3g}")]
    if res.status is Status.STALLED:
        lines.append("stalled: the MAP oracle found no better vertex, but its bound does not "
                     "prove the answer optimal (an approximate oracle; try --oracle exact "
                     "on small models)")
    lines.append(f"log Z <= {res.log_z_upper:.10g}  (certified)" if res.certified else
                 f"log Z ~ {res.log_z_upper:.10g}  (an estimate, not a bound: the oracle "
                 "proves nothing)")
    return lines


def _cmd_map(args):
    from .map import infer_map
    from .io.uai import write_map
    options = _options(args.oracle_options)
    for key in sorted(options.keys() & _MAP_ARGUMENTS.keys()):
        raise ValueError(f"--option {key}=...: map takes it as {_MAP_ARGUMENTS[key]}")
    model = _load(args)
    res = infer_map(model, method=args.method, time_limit=args.time_limit, seed=args.seed,
                    **options)
    if args.out:  # before printing, as in _report
        write_map(args.out + ".MAP", res.assignment)
    print(f"{args.model}: {_describe(model)}")
    print(f"MAP by {res.method}: {res.time:.3f} s, status {res.status.value}")
    bound = "none" if res.upper_bound is None else f"{res.upper_bound:.10g}"
    print(f"score = {res.score:.10g}, upper bound = {bound}")
    if args.out:
        print(f"wrote {args.out}.MAP")
    else:
        print("assignment:", " ".join(map(str, res.assignment)))
    return _exit_code(res.status)


#: `fwcore.infer_map`'s own arguments, which ``map`` takes as these, never as --option
_MAP_ARGUMENTS = {"model": "its MODEL argument", "method": "--method",
                  "time_limit": "--time-limit SECONDS", "seed": "--seed"}


def _exit_code(status):
    """130 (the shell's code for SIGINT) when Ctrl-C stopped the run, else 0."""
    return _INTERRUPTED if status is Status.INTERRUPTED else 0


def _options(pairs):
    """KEY=VALUE strings → dict, values parsed as int, float, bool or left as text."""
    out = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes KEY=VALUE; got {pair!r}")
        for parse in (int, float):
            try:
                out[key] = parse(text)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(text.lower(), text)
    return out


def _common(sub):
    which = sub.add_mutually_exclusive_group(required=True)
    which.add_argument("model", nargs="?",
                       help="model file in UAI MARKOV format (unary and pairwise factors)")
    which.add_argument("--example", choices=datasets.names(), metavar="NAME",
                       help="a model shipped with fwcore instead of a file: "
                            + ", ".join(datasets.names()))
    sub.add_argument("--evid", help="evidence file (UAI .evid) clamping some variables")


def _defaults(entry):
    """{parameter: default} of the function ``entry``: the defaults of its command."""
    return {name: p.default for name, p in inspect.signature(entry).parameters.items()}


def _marginal_outputs(sub):
    sub.add_argument("--out", metavar="PREFIX", help="write PREFIX.MAR and PREFIX.PR")
    sub.add_argument("--all", action="store_true",
                     help=f"print every marginal, not the first {_SHOWN}")


def _solver_options(sub):
    sub.add_argument("--option", dest="oracle_options", action="append", metavar="KEY=VALUE",
                     help="option of the MAP solver chosen, e.g. --option max_iter=50 for "
                          "trws (repeatable; an unknown one is refused, naming the solver's "
                          "options)")
    sub.add_argument("--seed", type=int, help="seed for randomised solvers")


#: what --oracle and --method take (`fwcore.resolve_oracle`)
_SOLVERS = ("MAP solver: exact (the cheapest exact one: tree, bruteforce, elimination, "
            "toulbar2 or ilp), auto (that one when cheap, else portfolio), or one of: ")


def _parser():
    p = argparse.ArgumentParser(
        prog="fwcore",
        description="Inference in discrete pairwise graphical models read from UAI files "
                    "(MARKOV format). Start with: fwcore infer MODEL.uai",
        epilog=_EPILOG.format(examples=", ".join(datasets.names()), shown=_SHOWN),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"fwcore {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_exact(sub)
    _add_infer(sub)
    _add_map(sub)
    return p


def _solvers():
    from .oracles import available_oracles
    return _SOLVERS + ", ".join(available_oracles())


def _add_exact(sub):
    from .exact import exact_inference
    ex = sub.add_parser(
        "exact", help="exact log Z and marginals (variable elimination; small treewidth only)",
        description="Exact log partition function and node marginals by brute force or "
                    "variable elimination. Fails with a clear message when the model's "
                    "treewidth needs more memory than --memory-limit.")
    _common(ex)
    _marginal_outputs(ex)
    memory_limit = _defaults(exact_inference)["memory_limit"] / 2**20
    ex.add_argument("--memory-limit", type=float, default=memory_limit, metavar="MIB",
                    help=f"largest elimination table allowed, in MiB (default {memory_limit:g})")
    ex.set_defaults(run=_cmd_exact)


def _add_infer(sub):
    """`fwcore infer`: its choices and defaults are `fwcore.infer`'s table and signature."""
    from .marginals.barrier_fw import infer
    from .marginals.rho import RHO_RULES
    defaults, table = _defaults(infer), infer.__fwcore_params__
    inf = sub.add_parser(
        "infer", help="marginals and a certified interval on log Z",
        description="Marginals and a certified upper bound on log Z: exact when the model "
                    "is small enough, else weighted mini-bucket elimination (Liu & Ihler "
                    "2011; also a lower bound) or Barrier Frank-Wolfe: the TRW objective "
                    "optimised over the marginal polytope with MAP calls (Krishnan et al. "
                    "2015), whose bound is certified with an exact MAP oracle or one that "
                    "proves a bound (qpbo, trws, portfolio); icm and maxproduct give an "
                    "estimate.")
    _common(inf)
    inf.add_argument("--method", choices=table["method"].values, default=defaults["method"],
                     help="auto (default): exact when cheap, else approximate = weighted "
                          "mini-bucket elimination; wmb; barrier-fw (the options below)")
    inf.add_argument("--oracle", default=defaults["oracle"],
                     help=_solvers() + " (Barrier FW's MAP oracle; default auto: the "
                                    "approximate portfolio); with --method auto, an oracle "
                                    "other than auto runs Barrier FW")
    _solver_options(inf)
    inf.add_argument("--domain", choices=table["domain"].values,
                     default=defaults["domain"],
                     help="optimise over the marginal polytope (default) or the local "
                          "polytope (TRW-BP's answer, with an LP oracle)")
    inf.add_argument("--rho", default=defaults["rho"], choices=RHO_RULES,
                     help=f"initial edge appearance probabilities (default {RHO_RULES[0]})")
    inf.add_argument("--rho-updates", type=int, default=defaults["rho_updates"],
                     metavar="N",
                     help="outer updates of the edge appearance probabilities "
                          f"(default {defaults['rho_updates']})")
    inf.add_argument("--rho-step", choices=table["rho_step"].values,
                     default=defaults["rho_step"],
                     help="step of each rho update: minimise the bound along the update "
                          "(default) or the fixed schedule 2/(i+3)")
    inf.add_argument("--tol", type=float, default=defaults["tol"],
                     help="FW gap in nats ending the last run, whose answer is returned "
                          f"(default {defaults['tol']:g})")
    inf.add_argument("--rho-tol", type=float, default=defaults["rho_tol"],
                     help="FW gap in nats ending the runs before it, which only steer rho "
                          f"(default {defaults['rho_tol']:g})")
    inf.add_argument("--no-local-search", dest="local_search", action="store_false",
                     help="no ICM-driven FW steps between MAP calls (more MAP calls)")
    inf.add_argument("--max-time", type=float, metavar="SECONDS",
                     help="stop after this long and return the best result so far")
    _marginal_outputs(inf)
    inf.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    inf.set_defaults(run=_cmd_infer)


def _add_map(sub):
    from .map import infer_map
    mp = sub.add_parser("map", help="a most probable assignment (MAP / MPE)",
                        description="Maximise the log-score of an assignment with the chosen "
                                    "solver; exact solvers also prove optimality.")
    _common(mp)
    method = _defaults(infer_map)["method"]
    mp.add_argument("--method", default=method, help=_solvers() + f" (default {method})")
    _solver_options(mp)
    mp.add_argument("--time-limit", type=float, metavar="SECONDS",
                    help="time limit for the solver; the anytime solvers (portfolio, anneal) "
                         "use all of it to improve the answer unless their bound proves it "
                         "optimal first (--option anytime=false: their fixed effort)")
    mp.add_argument("--out", metavar="PREFIX", help="write PREFIX.MAP")
    mp.set_defaults(run=_cmd_map)


def main(argv=None):
    args = _parser().parse_args(argv)
    np.set_printoptions(precision=4, suppress=True)
    try:
        return args.run(args)
    except BrokenPipeError:  # stdout's reader went away (`fwcore infer M.uai | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return _BROKEN_PIPE
    except (ValueError, TypeError, OSError) as err:
        print(f"fwcore {args.command}: error: {err}", file=sys.stderr)
        return _BAD_ARGUMENTS
    except KeyboardInterrupt:  # before a result existed (reading the model, exact inference)
        print(f"fwcore {args.command}: interrupted", file=sys.stderr)
        return _INTERRUPTED
