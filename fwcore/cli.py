"""Command line: ``fwcore COMMAND MODEL.uai`` or ``fwcore COMMAND --example NAME`` (also
``python -m fwcore``); the epilog of ``fwcore --help`` (`_EPILOG`) says what it prints and
writes, and its exit codes. Every example in a help text runs (a test runs them).

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
  fwcore map model.uai.gz --max-time 5 --out -    a MAP assignment, written to stdout
  fwcore map model.uai --method ilp --max-time 10 --out

models: UAI files, MARKOV or BAYES networks with factors of any arity, plain or gzip, xz or
bzip2 compressed; '-' reads one from stdin. Example models (--example NAME, or
fwcore.datasets in Python): {examples}

output: a summary and the node marginals on stdout (the first {shown} unless --all), progress
on stderr (infer, map; --quiet for none; a bar of the time spent with the 'progress' extra,
else a line a second). With --out PREFIX, in the UAI competition's formats (--out alone:
PREFIX is the model file's name; --out -: to stdout, the summary then on stderr):
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


#: seconds after which a run without --max-time says that the option exists
_HINT_AFTER = 10.0


def _load(args):
    from .io import apply_evidence, read_evid, read_model
    if args.example:
        args.model = str(datasets.path(args.example))
    args.out = _out_prefix(args)
    model = read_model(args.model)
    if args.evid:
        model = apply_evidence(model, read_evid(args.evid, case=args.evid_case))
    return model


def _out_prefix(args):
    """--out's PREFIX: as given, '-' (stdout), or for --out alone the model file's name
    without a compression suffix, in the current folder."""
    from .io import COMPRESSED, STDIO
    if args.out is not _MODEL_NAME:
        return args.out
    if args.model == STDIO:
        raise ValueError("--out needs a PREFIX when the model comes from stdin")
    name = os.path.basename(args.model)
    stem, suffix = os.path.splitext(name)
    return stem if suffix.lower() in COMPRESSED else name


def _named(prefix, suffix):
    """How the summary names the file ``prefix + suffix`` ('-': stdout)."""
    return f"the {suffix} file to stdout" if prefix == "-" else prefix + suffix


def _summary_stream(args):
    """Where the summary goes: stderr when --out - writes the answer files to stdout."""
    return sys.stderr if args.out == "-" else sys.stdout


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
    as ``| head`` does, cannot stop them; --out -: both to stdout), then print a summary
    and the marginals."""
    from .io.uai import STDIO, write_mar, write_pr
    wrote = None
    if args.out:
        to = STDIO if args.out == STDIO else args.out
        write_mar(to if to == STDIO else f"{to}.MAR", node_marginals)
        if log_z == math.inf:  # interrupted before any bound was measured
            wrote = f"wrote {_named(to, '.MAR')} (no bound on log Z yet: no {_named(to, '.PR')})"
        else:
            write_pr(to if to == STDIO else f"{to}.PR", log_z)
            wrote = f"wrote {_named(to, '.MAR')} and {_named(to, '.PR')}"
    out = _summary_stream(args)
    print(f"{args.model}: {_describe(model)}", file=out)
    for line in lines:
        print(line, file=out)
    print("node marginals P(x_i = 0), P(x_i = 1), ...:", file=out)
    _print_marginals(node_marginals, None if args.all else _SHOWN, out)
    if wrote:
        print(wrote, file=out)


class _Progress:
    """A run's progress on stderr, nothing with --quiet: with the ``progress`` extra
    (tqdm) a bar of the seconds spent (out of --max-time when given) showing the last
    record's ``line``, else the run's own progress lines (``verbose``: one a second,
    `fwcore.loop`); a run past `_HINT_AFTER` seconds without --max-time says that the
    option exists. Nothing is drawn before the first record, so an argument error or
    an exact answer shows no bar."""

    def __init__(self, args, line):
        self.max_time, self.line, self.hinted = args.max_time, line, False
        self.tqdm = None if args.quiet else _tqdm()
        self.quiet, self.bar = args.quiet, None
        #: the entry point prints its progress lines itself (no bar to draw them in)
        self.verbose = not self.quiet and self.tqdm is None

    def __call__(self, rec):
        if self.quiet:
            return True
        if self.max_time is None and not self.hinted and rec.time > _HINT_AFTER:
            self.hinted = True
            self._write(f"fwcore: {rec.time:.0f} s so far; --max-time SECONDS bounds a run "
                        "(Ctrl-C stops it with the best result so far)")
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=self.max_time, unit="s", file=sys.stderr,
                                     desc="fwcore", bar_format=_BAR if self.max_time else
                                     "{desc}: {n:.1f} s{postfix}")
            self.bar.update(max(rec.time - self.bar.n, 0.0))
            self.bar.set_postfix_str(self.line(rec), refresh=True)
        return True

    def _write(self, text):
        if self.tqdm is not None:
            self.tqdm.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


#: the bar of a run with --max-time: seconds spent out of it
_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.0f} s{postfix}"


def _tqdm():
    """tqdm's bar class, or None without the ``progress`` extra."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _cmd_infer(args):
    from .marginals.barrier_fw import infer
    from .marginals.result import progress_line
    model = _load(args)
    oracle = (args.oracle if not args.oracle_options else
              (args.oracle, _options(args.oracle_options)))
    progress = _Progress(args, progress_line)
    try:
        res = infer(model, method=args.method, oracle=oracle, domain=args.domain, rho=args.rho,
                    rho_updates=args.rho_updates, rho_step=args.rho_step, tol=args.tol,
                    rho_tol=args.rho_tol, local_search=args.local_search,
                    max_time=args.max_time, seed=args.seed, callback=progress,
                    verbose=progress.verbose)
    finally:
        progress.close()
    _report(args, model, _infer_summary(res, args), res.node_marginals, res.log_z_upper)
    return _exit_code(res.status)


def _infer_summary(res, args):
    """What an `infer` result means, in words."""
    if res.method.startswith("exact/"):
        how = {"tree": "two-pass sum-product on a forest"}.get(res.method[6:], res.method[6:])
        return [(f"exact marginals by {how} in {res.time:.3f} s (the model is small or "
                 "simple enough: cheaper than Barrier FW)"), f"log Z = {res.log_z_upper:.10g}"]
    if res.method == "wmb":
        return [f"weighted mini-bucket elimination: {res.time:.3f} s, {res.n_iter} passes",
                f"status {res.message}",
                f"{res.log_z_lower:.10g} <= log Z <= {res.log_z_upper:.10g}  (certified)"]
    lines = [(f"Barrier FW over the {args.domain} polytope, oracle {args.oracle}: "
              f"{res.time:.3f} s, {res.n_oracle_calls} MAP calls, {res.n_rho_updates} rho "
              f"updates"), f"status {res.message}", f"TRW objective = {res.primal:.10g}"]
    if res.status is Status.STALLED:
        lines.append("(an approximate MAP oracle proves nothing: try --oracle exact on small "
                     "models)")
    lines.append(f"log Z <= {res.log_z_upper:.10g}  (certified)" if res.certified else
                 f"log Z ~ {res.log_z_upper:.10g}  (an estimate, not a bound: the oracle "
                 "proves nothing)")
    return lines


def _cmd_map(args):
    from .map import infer_map, progress_line
    from .io.uai import STDIO, write_map
    options = _options(args.oracle_options)
    for key in sorted(options.keys() & _MAP_ARGUMENTS.keys()):
        raise ValueError(f"--option {key}=...: map takes it as {_MAP_ARGUMENTS[key]}")
    model = _load(args)
    progress = _Progress(args, progress_line)
    try:
        res = infer_map(model, method=args.method, max_time=args.max_time, seed=args.seed,
                        callback=progress, verbose=progress.verbose, **options)
    finally:
        progress.close()
    if args.out:  # before printing, as in _report
        write_map(STDIO if args.out == STDIO else f"{args.out}.MAP", res.assignment)
    out = _summary_stream(args)
    print(f"{args.model}: {_describe(model)}", file=out)
    print(f"MAP by {res.method}: {res.time:.3f} s", file=out)
    print(f"status {res.message}", file=out)
    bound = "none" if res.upper_bound is None else f"{res.upper_bound:.10g}"
    print(f"score = {res.score:.10g}, upper bound = {bound}", file=out)
    if args.out:
        print(f"wrote {_named(args.out, '.MAP')}", file=out)
    else:
        print("assignment:", " ".join(map(str, res.assignment)), file=out)
    return _exit_code(res.status)


#: `fwcore.infer_map`'s own arguments, which ``map`` takes as these, never as --option
_MAP_ARGUMENTS = {"model": "its MODEL argument", "method": "--method",
                  "max_time": "--max-time SECONDS", "time_limit": "--max-time SECONDS",
                  "seed": "--seed",
                  "callback": "none (the progress on stderr; --quiet for none)",
                  "verbose": "none (the progress on stderr; --quiet for none)"}


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
                       help="model file in UAI format: a MARKOV or BAYES network, factors of "
                            "any arity, plain or .gz/.xz/.bz2; - for stdin")
    which.add_argument("--example", choices=datasets.names(), metavar="NAME",
                       help="a model shipped with fwcore instead of a file: "
                            + ", ".join(datasets.names()))
    sub.add_argument("--evid", help="evidence file (UAI .evid) clamping some variables")
    sub.add_argument("--evid-case", type=int, metavar="K",
                     help="the case (from 0) of an evidence file of several (UAI 2010 form)")


def _defaults(entry):
    """{parameter: default} of the function ``entry``: the defaults of its command."""
    return {name: p.default for name, p in inspect.signature(entry).parameters.items()}


#: --out given without a PREFIX: the model file's name (`_out_prefix`)
_MODEL_NAME = object()


def _out(sub, files):
    sub.add_argument("--out", nargs="?", const=_MODEL_NAME, metavar="PREFIX",
                     help=f"write {files} (- : to stdout, the summary then on stderr; --out "
                          "alone: PREFIX is the model file's name)")


def _quiet(sub):
    sub.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _marginal_outputs(sub):
    _out(sub, "PREFIX.MAR and PREFIX.PR")
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
        description="Inference in discrete graphical models read from UAI files (MARKOV "
                    "or BAYES networks, factors of any arity). Start with: fwcore infer "
                    "MODEL.uai",
        epilog=_EPILOG.format(examples=", ".join(datasets.names()), shown=_SHOWN),
        formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"fwcore {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_exact(sub)
    _add_infer(sub)
    _add_map(sub)
    return p


def _solvers():
    from .oracles import available_oracles
    return _SOLVERS + ", ".join(available_oracles())


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, keeping an epilog of examples as written (line by line)."""

    def _fill_text(self, text, width, indent):
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _examples(*commands):
    """A command's help epilog: its examples, one a line (a test runs them)."""
    return "examples:\n" + "\n".join(f"  {c}" for c in commands)


def _add_exact(sub):
    from .exact import exact_inference
    ex = sub.add_parser(
        "exact", help="exact log Z and marginals (variable elimination; small treewidth only)",
        description="Exact log partition function and node marginals by brute force or "
                    "variable elimination. Fails with a clear message when the model's "
                    "treewidth needs more memory than --memory-limit.",
        epilog=_examples("fwcore exact model.uai",
                         "fwcore exact model.uai --evid model.uai.evid --out -"),
        formatter_class=_Formatter)
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
                    "estimate.",
        epilog=_examples("fwcore infer model.uai --max-time 60 --out res",
                         "fwcore infer model.uai --oracle trws --option max_iter=50 --max-time 10",
                         "fwcore infer --example clique10 --method barrier-fw --oracle exact"),
        formatter_class=_Formatter)
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
    _max_time(inf)
    _marginal_outputs(inf)
    _quiet(inf)
    inf.set_defaults(run=_cmd_infer)


def _max_time(sub, more=""):
    sub.add_argument("--max-time", "--time-limit", type=float, metavar="SECONDS",
                     help="stop after this long and return the best result so far (default: "
                          f"none, the run goes on until it converges; after {_HINT_AFTER:g} "
                          f"s the progress says so){more}; --time-limit is the same option")


def _add_map(sub):
    from .map import infer_map
    mp = sub.add_parser("map", help="a most probable assignment (MAP / MPE)",
                        description="Maximise the log-score of an assignment with the chosen "
                                    "solver; exact solvers also prove optimality.",
                        epilog=_examples("fwcore map model.uai.gz --max-time 5 --out -",
                                         "fwcore map model.uai --method trws --option max_iter=50",
                                         "fwcore map model.uai --method ilp --max-time 10 --out"),
                        formatter_class=_Formatter)
    _common(mp)
    method = _defaults(infer_map)["method"]
    mp.add_argument("--method", default=method, help=_solvers() + f" (default {method})")
    _solver_options(mp)
    _max_time(mp, "; the anytime solvers (portfolio, anneal, aobb) use all of it to "
                  "improve the answer unless their bound proves it optimal first (--option "
                  "anytime=false: the fixed effort of portfolio and anneal)")
    _out(mp, "PREFIX.MAP")
    _quiet(mp)
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
