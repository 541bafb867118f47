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
from pathlib import Path

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
  fwcore infer --example grid5x5                 a shipped example model (see below)
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
  PREFIX.PR   log10 of Z (exact) or of the upper bound on Z (infer: certified, except
              for the methods that give none, as loopy BP); not written when Ctrl-C came
              before any bound was measured
  PREFIX.BOUNDS  beside it, what is known of log Z, a line each (name, ln, log10, what):
              log_z_lower and log_z_upper (certified), log_z_estimate and its sampled
              interval log_z_estimate_lower / _upper (with their probability) where the
              method samples; log_z alone when exact (not written with --out -)
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
                          f"log Z = {res.log_z:.10g}"], res)
    return 0


def _report(args, model, lines, res):
    """With --out write PREFIX.MAR, PREFIX.PR and PREFIX.BOUNDS (`_bounds_text`; first: a
    reader of stdout that goes away, as ``| head`` does, cannot stop them; --out -: the
    first two to stdout), then print a summary and the marginals of the result ``res``."""
    from .io.uai import STDIO, write_mar, write_pr
    wrote = None
    if args.out:
        to = STDIO if args.out == STDIO else args.out
        write_mar(to if to == STDIO else f"{to}.MAR", res.node_marginals)
        if res.log_z_upper == math.inf:  # interrupted before any bound was measured
            wrote = f"wrote {_named(to, '.MAR')} (no bound on log Z yet: no {_named(to, '.PR')})"
        else:
            write_pr(to if to == STDIO else f"{to}.PR", res.log_z_upper)
            what = ("Z" if res.log_z_upper == res.log_z_lower else
                    "the upper bound on Z" if res.certified else "an estimate of Z")
            wrote = f"wrote {_named(to, '.MAR')} and {_named(to, '.PR')} (log10 of {what})"
            if to != STDIO:
                Path(f"{to}.BOUNDS").write_text(_bounds_text(args.model, res))
                wrote = wrote.replace(" and ", ", ") + f" and {_named(to, '.BOUNDS')}"
    out = _summary_stream(args)
    print(f"{args.model}: {_describe(model)}", file=out)
    for line in lines:
        print(line, file=out)
    print("node marginals P(x_i = 0), P(x_i = 1), ...:", file=out)
    _print_marginals(res.node_marginals, None if args.all else _SHOWN, out)
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
    from .marginals import infer
    from .marginals.result import progress_line
    model = _load(args)
    options = {name: getattr(args, name) for name in _method_options()
               if getattr(args, name) is not None}
    if args.oracle_options:
        if "oracle" not in options:
            raise ValueError("--option configures the MAP oracle given by --oracle: give "
                             "--oracle too")
        options["oracle"] = (options["oracle"], _options(args.oracle_options))
    progress = _Progress(args, progress_line)
    try:
        res = infer(model, method=args.method, max_time=args.max_time, max_iter=args.max_iter,
                    seed=args.seed, callback=progress, verbose=progress.verbose, **options)
    finally:
        progress.close()
    _report(args, model, _infer_summary(res), res)
    return _exit_code(res.status)


def _bounds_text(model, res):
    """PREFIX.BOUNDS: what is known of log Z, a line each: name, natural log, log10, and
    what it is (exact, certified, an estimate; sampled with its probability); the .PR file
    holds the log10 of ``log_z_upper``."""
    rows = [("log_z_lower", res.log_z_lower, "certified lower bound"),
            ("log_z_upper", res.log_z_upper, "certified upper bound (the .PR value)"
             if res.certified else "an estimate, not a bound (the .PR value)")]
    if res.log_z_upper == res.log_z_lower and res.certified:
        rows = [("log_z", res.log_z_upper, "exact (the .PR value)")]
    estimate = getattr(res, "log_z_estimate", None)
    if estimate is not None and len(rows) > 1:
        chance = f"sampled, holds with probability {res.confidence:g}"
        rows += [("log_z_estimate", estimate, "sampled estimate"),
                 ("log_z_estimate_lower", res.log_z_estimate_lower, chance),
                 ("log_z_estimate_upper", res.log_z_estimate_upper, chance)]
    lines = [f"# log Z of {model} by {res.method} ({res.status.value}): name, ln, log10, what"]
    lines += [f"{name} {value:.17g} {value / math.log(10):.17g} {what}"
              for name, value, what in rows if value is not None]
    return "\n".join(lines) + "\n"


def _infer_summary(res):
    """What an `infer` result means, in words."""
    if res.method.startswith("exact/"):
        how = {"tree": "two-pass sum-product on a forest"}.get(res.method[6:], res.method[6:])
        return [(f"exact marginals by {how} in {res.time:.3f} s (the model is small or "
                 "simple enough)"), f"log Z = {res.log_z_upper:.10g}"]
    lines = [(f"{res.method}: {res.time:.3f} s, {res.n_iter} iterations, "
              f"{res.n_oracle_calls} MAP calls"), f"status {res.message}"]
    if res.method.startswith("barrier-fw"):
        lines.append(f"TRW objective = {res.info['primal']:.10g}")
    if res.status is Status.STALLED and not res.certified:
        lines.append("(an approximate MAP oracle proves nothing: try --oracle exact on small "
                     "models)")
    lines.append(res.interval_text())
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
    """KEY=VALUE strings → dict, values parsed by `_value`."""
    out = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option takes KEY=VALUE; got {pair!r}")
        out[key] = _value(text)
    return out


def _value(text):
    """A command-line value: an int, a float, true / false, or the text itself (the
    function it goes to checks it, naming the option)."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            continue
    return {"true": True, "false": False}.get(text.lower(), text)


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
    _out(sub, "PREFIX.MAR, PREFIX.PR (log10 of Z, or of the upper bound on Z) and "
              "PREFIX.BOUNDS (log Z's bounds and sampled estimate)")
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
    _add_sample(sub)
    _add_mmap(sub)
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


def _method_options():
    """{option: {its constraints: the methods that take it}} over the registered marginal
    methods (`fwcore.available_methods`): each is a flag of ``fwcore infer``, passed
    only when given (the chosen method refuses one it does not take). ``seed`` is the
    command's own, an executor has no command-line form."""
    from .checks import EXECUTOR
    from .marginals import available_methods
    out = {}
    for name, method in available_methods().items():
        for option, rule in method.options.items():
            if option != "seed" and rule is not EXECUTOR and not (
                    isinstance(rule, list) and EXECUTOR in rule):
                out.setdefault(option, {}).setdefault(_describe_rule(rule), []).append(name)
    return out


def _describe_rule(rule):
    rules = rule if isinstance(rule, list) else [rule]
    return " or ".join("none" if r is None else r.describe() for r in rules)


def _add_infer(sub):
    """`fwcore infer`: its methods and their options are the registry's
    (`fwcore.available_methods`)."""
    from .marginals import available_methods
    methods = ("auto", "approximate", *available_methods())
    inf = sub.add_parser(
        "infer", help="marginals and a certified interval on log Z",
        description="Marginals and certified bounds on log Z: exact when the model is small "
                    "enough, else weighted mini-bucket elimination (Liu & Ihler 2011: an "
                    "interval lower <= log Z <= upper), or the method named: Barrier "
                    "Frank-Wolfe (the TRW objective over the marginal polytope with MAP "
                    "calls, Krishnan et al. 2015), TRBP, loopy BP, mean field, "
                    "Perturb-and-MAP. Each method's options are flags below; one the "
                    "method does not take is refused.",
        epilog=_examples("fwcore infer model.uai --max-time 60 --out res",
                         "fwcore infer model.uai --method barrier-fw --oracle trws --option "
                         "max_iter=50 --max-time 10",
                         "fwcore infer --example clique10 --method barrier-fw --oracle exact"),
        formatter_class=_Formatter)
    _common(inf)
    inf.add_argument("--method", choices=methods, default="auto",
                     help="auto (default): exact when cheap, else approximate = weighted "
                          "mini-bucket elimination (wmb); or a method by name")
    for option, takers in _method_options().items():
        inf.add_argument(f"--{option.replace('_', '-')}", dest=option, type=_value,
                         metavar="VALUE",
                         help="; ".join(f"{rule} for {', '.join(names)}"
                                        for rule, names in takers.items())
                              + (" (bytes)" if option == "memory_limit" else "")
                              + (f"; {_solvers()}" if option == "oracle" else ""))
    inf.add_argument("--option", dest="oracle_options", action="append", metavar="KEY=VALUE",
                     help="option of the MAP oracle given by --oracle, e.g. --option "
                          "max_iter=50 for trws (repeatable)")
    inf.add_argument("--seed", type=int, help="seed for the randomised methods and oracles")
    inf.add_argument("--max-iter", type=int, metavar="N",
                     help="the method's iterations (passes, sweeps, FCFW iterations or "
                          "samples; default: the method's own)")
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


def _add_sample(sub):
    from .sampling import sample
    sa = sub.add_parser(
        "sample", help="samples: exact (forward for Bayesian networks, else through the "
                       "elimination tree), else weighted (importance samples)",
        description="Samples of the model given the evidence: exact where elimination fits "
                    "--memory-limit (forward sampling of a Bayesian network without "
                    "evidence, else backward sampling through the clique tree of variable "
                    "elimination), else importance samples from weighted mini-bucket's "
                    "proposal with their weights (mean 1), a certified interval on log Z "
                    "and the samples' estimate of it.",
        epilog=_examples("fwcore sample model.uai -n 1000 --seed 0 --out samples",
                         "fwcore sample model.uai --evid model.uai.evid -n 5 --out -",
                         "fwcore sample model.uai -n 10000 --method wmb --max-time 2 --out s"),
        formatter_class=_Formatter)
    _common(sa)
    sa.add_argument("-n", "--n", type=int, default=1000, metavar="N",
                    help="how many samples (default 1000)")
    sa.add_argument("--method", choices=("auto", "exact", "wmb"), default="auto",
                    help="auto (default): exact where elimination fits, else wmb; exact "
                         "(refused past exact reach); wmb: importance samples")
    sa.add_argument("--seed", type=int, help="seed of the generator (the same samples "
                                             "every run)")
    _max_time(sa, " (weighted samples: fewer than N then)")
    _memory_limit(sa, sample)
    _out(sa, "PREFIX.csv: a header of variable names, then a sample a line (states by "
             "index), and a last column 'weight' for weighted samples")
    sa.set_defaults(run=_cmd_sample)


def _memory_limit(sub, entry):
    mib = _defaults(entry)["memory_limit"] / 2**20
    sub.add_argument("--memory-limit", type=float, default=mib, metavar="MIB",
                     help=f"largest elimination memory allowed, in MiB (default {mib:g})")


def _cmd_sample(args):
    from .io.uai import STDIO
    from .sampling import sample
    model = _load(args)
    res = sample(model, args.n, seed=args.seed, method=args.method, max_time=args.max_time,
                 memory_limit=int(args.memory_limit * 2**20))
    if args.out:
        names = [str(v) for v in (model.names or [f"x{i}" for i in range(model.n_vars)])]
        target = sys.stdout if args.out == STDIO else f"{args.out}.csv"
        table, fmt = res.samples, "%d"
        if res.estimated:
            table = np.column_stack([res.samples, res.weights])
            fmt = ["%d"] * model.n_vars + ["%.10g"]
            names.append("weight")
        np.savetxt(target, table, fmt=fmt, delimiter=",", header=",".join(names),
                   comments="")
    out = _summary_stream(args)
    print(f"{args.model}: {_describe(model)}", file=out)
    k = len(res.samples)
    print(f"{k} samples by {res.method} sampling in {res.time:.3f} s", file=out)
    if res.estimated:
        print(res.message, file=out)
    print(f"sample frequencies of x_i = 0, 1, ...{' (weighted)' if res.estimated else ''}:",
          file=out)
    total = max(float(res.weights.sum()), 1e-300)
    freq = [np.bincount(res.samples[:, v], weights=res.weights, minlength=int(c)) / total
            for v, c in enumerate(model.card)]
    _print_marginals(freq, _SHOWN, out)
    if args.out:
        print(f"wrote {_named(args.out, '.csv')}", file=out)
    return 0


def _add_mmap(sub):
    from .mmap import infer_mmap
    mm = sub.add_parser(
        "mmap", help="marginal MAP: the most likely state of the query variables, the "
                     "others summed out",
        description="Marginal MAP (Merlin's -t MMAP --query-file): the most likely joint "
                    "state of the query variables given the evidence, the other variables "
                    "summed out; exact by constrained variable elimination where its "
                    "elimination with the query variables last fits --memory-limit, else "
                    "(or past half of --max-time) anytime branch and bound over the query "
                    "variables with a certified upper bound.",
        epilog=_examples("fwcore mmap model.uai --query-file model.uai.query",
                         "fwcore mmap model.uai --query-file model.uai.query --evid "
                         "model.uai.evid --out -"),
        formatter_class=_Formatter)
    _common(mm)
    mm.add_argument("--query-file", required=True, metavar="FILE",
                    help="the query variables: their number, then their indices (as "
                         "Merlin reads them)")
    mm.add_argument("--method", choices=("auto", "exact", "search"), default="auto",
                    help="auto (default): exact where the elimination fits, else search; "
                         "exact (refused past exact reach); search: branch and bound")
    mm.add_argument("--seed", type=int, help="seed of the search's samples")
    _max_time(mm, " (the best answer so far, with its certified bound)")
    _memory_limit(mm, infer_mmap)
    _out(mm, "PREFIX.MMAP: the query variables' states in ascending variable order, as "
             "Merlin writes them")
    mm.set_defaults(run=_cmd_mmap)


def _cmd_mmap(args):
    from .io.uai import STDIO, read_query, write_map
    from .mmap import infer_mmap
    model = _load(args)
    res = infer_mmap(model, read_query(args.query_file), method=args.method,
                     max_time=args.max_time, seed=args.seed,
                     memory_limit=int(args.memory_limit * 2**20))
    if args.out:
        write_map(STDIO if args.out == STDIO else f"{args.out}.MMAP", res.assignment,
                  header="MMAP")
    out = _summary_stream(args)
    print(f"{args.model}: {_describe(model)}", file=out)
    if res.method == "exact":
        print(f"marginal MAP of {len(res.variables)} variables by exact constrained "
              f"elimination in {res.time:.3f} s (induced width {res.info['induced_width']})",
              file=out)
        print(f"log mass of the answer = {res.score:.10g}, P(answer | evidence) = "
              f"{res.probability:.6g}", file=out)
    else:
        print(f"marginal MAP of {len(res.variables)} variables by branch and bound in "
              f"{res.time:.3f} s ({res.info['nodes']} nodes, {res.info['exact_nodes']} "
              f"exact)", file=out)
        print(f"status {res.message}", file=out)
    if args.out:
        print(f"wrote {_named(args.out, '.MMAP')}", file=out)
    else:
        print("assignment:", " ".join(f"x{v}={s}" for v, s in
                                      zip(res.variables, res.assignment.tolist())), file=out)
    return 0


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
