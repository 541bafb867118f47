"""UAI competition file formats: MARKOV models, evidence and answer files.

The formats are those of the UAI inference competitions (2008-2014): whitespace-separated
tokens, line breaks carry no meaning; ``#`` starts a comment that runs to the end of its
line (as pyAgrum writes them). A model file holds potentials, not logs, so
θ = log(table) and zero entries become −inf. Answer files: ``.MAR`` (node marginals),
``.PR`` (log10 Z), ``.MAP``/``.MPE``/``.MMAP`` (an assignment; marginal MAP's: of the
query variables); ``.evid`` (clamped variables), query files (marginal MAP's variables).

Tables are read in the format's order, the last variable of a scope fastest, as toulbar2
and Merlin read them. pyAgrum 3.3.1 writes another order for a CPT of two or more parents
(its parents reversed) and for MARKOV factors of three or more variables (that of its own
tensors): its files read without error (the CPTs stay normalised) but as other tables.
`read_uai` warns when a file carries pyAgrum's marks (its comments) and such a table;
convert the network with pyAgrum instead: ``fwcore.from_pyagrum(pyagrum.loadBN(path))``
(``loadMRF`` for MARKOV), or ``pyagrum.saveBN(bn, "model.bif")`` then
``fwcore.read_model("model.bif")`` (`fwcore.io.bif`).

`write_uai` writes a BAYES file when the model has a Bayesian-network form
(`fwcore.bayes.bayes_form`: one CPT per variable over an acyclic graph, as read from a
BAYES, BIF or XMLBIF file or converted from pgmpy or pyAgrum), else a MARKOV file. The
format has no names: `fwcore.io.bif` keeps them.

Every reader takes a path or ``-`` (standard input) and reads gzip, xz and bzip2 files
(recognised by their first bytes, whatever the suffix); every writer takes a path or
``-`` (standard output) and compresses by the suffix ``.gz``, ``.xz`` or ``.bz2``.

Every reader raises ValueError naming the file, the line and the token where it broke;
nothing is ever read silently wrong (trailing tokens, wrong counts, negative
probabilities, out-of-range indices and numbers a double cannot hold are errors).

Numbers beyond a double's range: a model file's table entries are read in log space from
their decimal text, so ``1e-400`` gives θ = −921.03 (a possible state, never −inf; only a
written zero is an impossible state) and ``1e400`` gives θ = 921.03. A negative entry
is an error however small (``-1e-400`` too). In answer files a probability or log10 Z
below the smallest double reads as 0, and one whose value (ln Z for ``.PR``) overflows a
double is an error.

Memory stays in proportion to the file (uncompressed): every table must be in the file
before it is stored, and the variables that appear in no factor (which cost θ entries but no file
tokens) may declare at most `MAX_UNUSED_STATES` states in total.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import math
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

from .. import _uai
from .._uai import Scanner, format_blocks, format_int_blocks
from ..bayes import bayes_form
from ..checks import Interval, Options, check_model, validate_params
from ..factor_graph import FactorGraph, model_from_flat_factors
from ..model import Blocks, PairwiseMRF

__all__ = ["read_uai", "write_uai", "read_mar", "write_mar", "read_pr", "write_pr",
           "read_map", "write_map", "read_evid", "write_evid", "apply_evidence", "read_query",
           "STDIO",
           "COMPRESSED", "CPT_TOL", "PathArg"]

#: a file path, or `STDIO`
PathArg = Union[str, "os.PathLike[str]"]
#: the path that means standard input (readers) or standard output (writers)
STDIO = "-"
#: compressed files: suffix -> (first bytes, the module that opens and decompresses them)
COMPRESSED = {".gz": (b"\x1f\x8b", gzip), ".xz": (b"\xfd7zXZ\x00", lzma), ".bz2": (b"BZh", bz2)}
#: how far outside [0, 1] a marginal written to a .MAR file may be (round-off): clipped
_ROUND_OFF = 1e-9
#: a BAYES file's CPT entries over the child must sum to 1 within this (files print few
#: digits)
CPT_TOL = 1e-3

# Tokens are ASCII: digits are [0-9] only (Python's int/float would also take "1_0" or
# Arabic-Indic digits), and no nan/inf except where a reader allows -inf explicitly: the
# grammar of `fwcore._uai`.
_LN10 = math.log(10.0)
_INT64_MAX = 2**63 - 1

#: Cap on the states of the variables in no factor, summed: such a variable costs card[i]
#: floats of θ and no file tokens, so one corrupted cardinality (the 22-byte file
#: ``MARKOV 1 134217728 0``) could otherwise ask for gigabytes. Every other state is paid
#: for by table entries in the file.
MAX_UNUSED_STATES = 2**20
#: Largest variable index, state or cardinality: the layout stores them as int32.
MAX_INDEX = 2**31 - 1

# exp(θ) is a normal double, and log(exp(θ)) returns θ to ~1e-16, only inside this range.
_LOG_MAX = math.log(np.finfo(np.float64).max)
_LOG_TINY = math.log(np.finfo(np.float64).tiny)


def read_bytes(path):
    """(the name to show in messages, the bytes of the file ``path``, decompressed when
    it starts as a gzip, xz or bzip2 file does; `STDIO`: standard input)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike) or {STDIO!r} for "
                        f"standard input; got {type(path).__name__}")
    name = os.fspath(path)
    if name == STDIO:
        name, data = "<stdin>", sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    for suffix, (magic, module) in COMPRESSED.items():
        if data.startswith(magic):
            try:
                return name, module.decompress(data)
            except (OSError, EOFError, lzma.LZMAError) as err:
                raise ValueError(f"{name}: not a readable {suffix} file: {err}") from None
    return name, data


class _Tokens:
    """The whitespace tokens of a file (``#`` comments dropped) and a cursor over them:
    `fwcore._uai.Scanner` reads them in bulk; this class names what went wrong, where;
    ``data``: the file's bytes."""

    def __init__(self, path):
        self.path, data = read_bytes(path)
        self.scan = Scanner(data)
        self.data = data  # `_warn_pyagrum_order` reads its comments

    @property
    def pos(self):
        """The index of the next token."""
        return self.scan.index

    @pos.setter
    def pos(self, index):
        self.scan.seek(index)

    def error(self, msg, pos=None):
        """ValueError naming the file and the line of token ``pos`` (default: current)."""
        pos = self.pos if pos is None else pos
        if pos < self.scan.count:
            tok = self.scan.tokens(pos, 1)[0][:40].decode("ascii", "backslashreplace")
            where = f"line {self.scan.line(pos)}, token {tok!r}"
        else:
            where = f"end of file (after line {self.scan.line(pos)})"
        return ValueError(f"{self.path}: {where}: {msg}")

    def left(self):
        return self.scan.count - self.scan.index

    def int(self, what, lo=0, hi=None):
        """Next token as an integer in [lo, hi] (hi inclusive, None = unbounded)."""
        status, v = self.scan.next_int(lo, _INT64_MAX if hi is None else hi)
        if status == _uai.BIG and hi is None:  # beyond int64: a count no file can hold
            self.pos += 1
            return int(self.scan.tokens(self.pos - 1, 1)[0])
        if status != _uai.OK:
            raise self.int_error(status, what, lo, hi)
        return v

    def ints(self, count, what, lo=0, hi=None):
        """The next ``count`` tokens as integers in [lo, hi] (int64 array); ``what(k)``
        names entry k."""
        out = np.empty(count, dtype=np.int64)
        status, k = self.scan.read_ints(out, lo, _INT64_MAX if hi is None else hi)
        if status != _uai.OK:
            raise self.int_error(status, what(k), lo, hi)
        return out

    def int_error(self, status, what, lo, hi):
        """The error of the integer token at the cursor, read as ``status``."""
        if status == _uai.END:
            return self.error(f"file ends where {what} was expected")
        if status == _uai.NOT_INT:
            return self.error(f"expected {what} (an integer)")
        if status == _uai.TOO_LARGE:
            return self.error(f"{what} is too large")
        rng = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
        return self.error(f"{what} must be {rng}; got {int(self.scan.tokens(self.pos, 1)[0])}")

    def floats(self, count, what, *, allow_neg_inf=False, nonneg=None, log=False):
        """The next ``count`` tokens as finite floats (or -inf when allowed).

        ``nonneg``: why negatives are wrong here; any number below zero is then an error,
        however small (``-1e-400``, which float() reads as -0.0). ``log``: the natural log
        of each entry instead, from its decimal text where a double cannot hold the value
        (ln 1e-400 = -921.03, not ln 0); -inf for a written zero only.
        """
        if count > self.left():
            raise self.error(f"file ends inside {what} ({count} numbers expected)",
                             self.scan.count)
        out, specials = np.empty(count), []
        status, _ = self.scan.read_numbers(out, _mode(allow_neg_inf, nonneg, log), specials)
        if status != _uai.OK:
            raise self.number_error(status, what, nonneg)
        return _logs(out, specials) if log else out

    def number_error(self, status, what, nonneg):
        """The error of the number token at the cursor, read as ``status``."""
        text = {_uai.NOT_NUMBER: f"expected a number in {what}",
                _uai.NEGATIVE: f"negative number in {what}: {nonneg}",
                _uai.OVERFLOW: f"number out of floating-point range in {what}",
                _uai.EXPONENT: (f"number out of range in {what}: its exponent has more "
                                "than 15 digits")}
        return self.error(text[status])

    def header(self, names, what):
        start = self.pos
        if not self.left():
            raise self.error(f"file ends where the header {' or '.join(names)} was expected")
        name = self.scan.tokens(start, 1)[0].decode("ascii", "replace").upper()
        if name not in names:
            raise self.error(f"expected the header {' or '.join(names)} of {what}", start)
        self.pos = start + 1
        return name

    def end(self):
        if self.pos < self.scan.count:
            raise self.error(f"unexpected extra content ({self.left()} tokens) after the "
                             "last expected item")


def _mode(allow_neg_inf=False, nonneg=None, log=False):
    """The `fwcore._uai` mode of a number read."""
    return ((_uai.NEG_INF if allow_neg_inf else 0) | (_uai.NONNEG if nonneg else 0)
            | (_uai.LOG if log else 0))


def _logs(out, specials):
    """ln of the entries ``out`` of a `fwcore._uai` LOG read, in place: the entries a
    double cannot hold were read from their decimal text (``specials``: (index, ln))."""
    with np.errstate(divide="ignore"):
        np.log(out, out=out)
    if specials:
        at, ln = zip(*specials)
        out[list(at)] = ln
    return out


# -- model files --------------------------------------------------------------------


@validate_params({"unnormalized": Options("error", "warn")}, unchecked=("path",))
def read_uai(path: PathArg, *, unnormalized: str = "error") -> PairwiseMRF | FactorGraph:
    """Read a UAI MARKOV or BAYES network: a `PairwiseMRF` when every factor has arity 1
    or 2, else a `FactorGraph` (factors of any arity, constants).

    θ = log(table), taken from the decimal text where a double cannot hold the entry;
    only zero entries give −inf, negative entries and nan/inf tokens are errors. A BAYES
    network's conditional probability tables are read as factors (their product is the
    joint distribution, log Z = 0 before evidence); each must be one: its entries for
    every state of the parents sum to 1 (within `CPT_TOL`) over the child, the last
    variable of its scope. One that does not is an error naming the factor
    (``unnormalized="error"``, the default: such a file, e.g. one whose tables are
    written in another order than its scopes, is not the network it was meant to be),
    or with ``unnormalized="warn"`` a warning, the tables then read as they are (a
    Markov network: log Z is no longer 0). Each section of the file is read in bulk by
    `fwcore._uai` (no Python per variable, factor or entry) and the model assembled by
    `fwcore.factor_graph.model_from_flat_factors`.
    """
    t = _Tokens(path)
    bayes = t.header(("MARKOV", "BAYES"), "a UAI model file") == "BAYES"
    n = t.int("the number of variables")
    if n > t.left():
        raise t.error(f"the file declares {n} variables but has only {t.left()} tokens "
                      "left")
    first = t.pos
    card = t.ints(n, lambda i: f"the cardinality of variable {i}", lo=1, hi=MAX_INDEX)
    n_factors = t.int("the number of factors")
    if n_factors > t.left():
        raise t.error(f"the file declares {n_factors} factors but has only {t.left()} "
                      "tokens left")
    arity, variables, declared = _read_scopes(t, card, n_factors)
    _check_unused_states(t, card, variables, first)
    tables, table_off = _read_tables(t, card, arity, variables, declared,
                                     bayes and unnormalized)
    t.end()
    _warn_pyagrum_order(t, bayes, arity, declared)
    del t  # the file's bytes, before the model's arrays are made
    return model_from_flat_factors(card, arity, variables, tables, table_off)


def _warn_pyagrum_order(t, bayes, arity, declared):
    """Warn when the file carries pyAgrum's marks (a BAYES file: a ``# name`` comment on
    every scope line; a MARKOV file: ``# nbr Nodes``) and a table that pyAgrum 3.3.1
    writes in its own order (a CPT of two or more parents, a factor of three or more
    variables; ``declared``: the token index of each factor's arity): such a table reads
    as another one (the module docstring)."""
    if b"#" not in t.data:
        return
    odd = np.flatnonzero(arity >= 3)
    if not odd.size:
        return
    if bayes:
        lines = t.data.split(b"\n")
        marked = all(b"#" in lines[t.scan.line(int(p)) - 1] for p in declared)
    else:
        marked = b"# nbr Nodes" in t.data
    if marked:
        what = "CPTs of two or more parents" if bayes else "factors of three or more variables"
        warnings.warn(
            f"{t.path}: the file looks written by pyAgrum, which writes {what} in its own "
            f"order ({odd.size} here, the first: factor {odd[0]}); read as the UAI format "
            "orders them, they are other tables. Convert it with pyAgrum: "
            "fwcore.from_pyagrum(pyagrum.loadBN(path)) (loadMRF for MARKOV), or "
            "pyagrum.saveBN(bn, 'model.bif') and fwcore.read_model('model.bif')",
            stacklevel=4)


def _read_scopes(t, card, n_factors):
    """The scopes of the ``n_factors`` factors from the cursor on: (arity int64[F], their
    variables one scope after another, the token index of each factor's arity). Read
    twice (checked and counted, then stored), so that nothing is allocated beyond what
    the file holds."""
    n, start = card.shape[0], t.pos
    arity = np.empty(n_factors, dtype=np.int64)
    status, f, part, total = t.scan.read_scopes(n_factors, n, arity, np.empty(0, np.int64),
                                                np.zeros(n, dtype=np.int64))
    if status == _uai.TWICE:
        scope = t.scan.tokens(t.pos - int(arity[f]) + 1, int(arity[f]))
        raise t.error(f"factor {f} has a variable twice in its scope "
                      f"{' '.join(str(int(v)) for v in scope)}")
    if status != _uai.OK:
        what = f"the arity of factor {f}" if part == 0 else f"a variable of factor {f}"
        raise t.int_error(status, what, 0, n if part == 0 else n - 1)
    variables = np.empty(total, dtype=np.int64)
    if total:
        t.pos = start
        t.scan.read_scopes(n_factors, n, arity, variables, np.zeros(n, dtype=np.int64))
    return arity, variables, start + np.arange(n_factors) + (np.cumsum(arity) - arity)


def _scope_sizes(card, arity, variables):
    """The table size of each scope (int64; -1 where it is beyond int64)."""
    sizes = np.ones(arity.shape[0], dtype=np.int64)
    some = np.flatnonzero(arity)
    if some.size:
        starts = (np.cumsum(arity) - arity)[some]
        cards = card[variables]
        sizes[some] = np.multiply.reduceat(cards, starts)
        big = np.add.reduceat(np.log2(cards), starts) > 62   # the products may wrap
        for f, s in zip(some[big], starts[big]):
            size = math.prod(int(c) for c in cards[s:s + arity[f]])  # exact, unbounded
            sizes[f] = size if size <= _INT64_MAX else -1
    return sizes


def _read_tables(t, card, arity, variables, declared, cpt):
    """The tables of the factors from the cursor on, as natural logs one after another,
    and their offsets; ``cpt``: the BAYES check of `read_uai` ("error" or "warn"; False:
    none). Nothing is allocated beyond the entries the file holds."""
    sizes = _scope_sizes(card, arity, variables)
    start = t.pos
    fits = (sizes >= 0).all() and float(sizes.sum()) <= t.left()
    tables, specials = np.empty(int(sizes.sum()) if fits else t.left()), []
    status, f, k, count = t.scan.read_blocks(sizes, tables, _mode(nonneg=True, log=True),
                                             specials, True, True, 0)
    table_off = np.zeros(arity.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.maximum(sizes, 0), out=table_off[1:])
    done = f if status != _uai.OK else arity.shape[0]
    _logs(tables[:table_off[done]], [s for s in specials if s[0] < table_off[done]])
    if cpt:
        _check_cpts(t, card, arity[:done], variables, declared, tables, table_off, start, cpt)
    if status == _uai.OK:
        return tables, table_off
    if status == _uai.SIZE:
        count = count if count >= 0 else int(t.scan.tokens(t.pos, 1)[0])
        scope = variables[(np.cumsum(arity) - arity)[f]:][:arity[f]]
        size = math.prod(int(c) for c in card[scope])
        if count != size:
            raise t.error(f"factor {f} (scope {' '.join(map(str, scope))}, declared at line "
                          f"{t.scan.line(declared[f])}) needs {size} table entries; the file "
                          f"says {count}")
    if status in (_uai.SIZE, _uai.INSIDE):  # a table of more entries than tokens left
        raise t.error(f"file ends inside the table of factor {f} ({count} numbers expected)",
                      t.scan.count)
    if k < 0:
        raise t.int_error(status, f"the table size of factor {f}", 0, None)
    raise t.number_error(status, f"the table of factor {f}",
                         "tables hold potentials (>= 0), not log-potentials")


def _check_cpts(t, card, arity, variables, declared, theta, table_off, start, unnormalized):
    """Refuse (or with ``unnormalized="warn"`` warn about) each BAYES factor among the
    first len(arity) whose entries do not sum to 1 over its child (the last variable of
    its scope) for some state of its parents; ``theta`` the log tables, read from token
    ``start`` on. All factors at once: a sum per parent state (`np.add.reduceat`)."""
    some = np.flatnonzero(arity)
    if not some.size:
        return
    scope_end = np.cumsum(arity)
    child = card[variables[scope_end[some] - 1]]
    n_runs = (table_off[some + 1] - table_off[some]) // child
    run_start = (np.repeat(table_off[some], n_runs) + np.repeat(child, n_runs)
                 * (np.arange(int(n_runs.sum())) - np.repeat(np.cumsum(n_runs) - n_runs, n_runs)))
    p = np.exp(theta[:table_off[arity.shape[0]]])
    p[table_off[np.flatnonzero(arity == 0)]] = 0.0  # constants: in no parent state's sum
    sums = np.add.reduceat(p, run_start)
    bad = np.abs(sums - 1.0) > CPT_TOL
    run_off = np.zeros(some.size + 1, dtype=np.int64)
    np.cumsum(n_runs, out=run_off[1:])
    for g in np.flatnonzero(np.add.reduceat(bad, run_off[:-1]) if bad.size else bad):
        f = int(some[g])
        scope = variables[scope_end[f] - arity[f]:scope_end[f]]
        off = bad[run_off[g]:run_off[g + 1]]
        r = int(np.flatnonzero(off)[0])
        parents = np.unravel_index(r, card[scope[:-1]]) if arity[f] > 1 else ()
        where = (", ".join(f"x{v} = {int(s)}" for v, s in zip(scope[:-1], parents))
                 or "its only row")
        message = (f"factor {f} (scope {' '.join(map(str, scope))}, declared at line "
                   f"{t.scan.line(declared[f])}) is not a conditional probability table of "
                   f"its child x{scope[-1]} (the last variable of its scope): its entries "
                   f"for {where} sum to {float(sums[run_off[g] + r]):.6g}, not 1 "
                   f"({int(off.sum())} of {off.size} parent states are off); the file's "
                   "tables may be written in another order than its scopes. read_uai(path, "
                   "unnormalized='warn') reads the tables as they are (a Markov network, "
                   "log Z no longer 0)")
        if unnormalized == "error":
            raise t.error(message, start + f + 1 + int(table_off[f]))
        warnings.warn(f"{t.path}: {message}", stacklevel=5)


def _check_unused_states(t, card, variables, first):
    """Refuse more than MAX_UNUSED_STATES states over the variables in no factor
    (``first``: the position of the first cardinality token)."""
    used = np.zeros(len(card), dtype=bool)
    used[variables] = True
    unused = np.flatnonzero(~used)
    states = int(card[unused].sum())
    if states > MAX_UNUSED_STATES:
        v = int(unused[np.argmax(card[unused])])
        raise t.error(f"variable {v} has {card[v]} states but is in no factor; the "
                      f"variables in no factor have {states} states in all, over the "
                      f"reader's limit fwcore.io.uai.MAX_UNUSED_STATES = {MAX_UNUSED_STATES} "
                      "(a wrong cardinality? otherwise give the variable a unary factor)",
                      first + v)


def write_uai(model: PairwiseMRF | FactorGraph, path: PathArg) -> None:
    """Write ``model`` (a `PairwiseMRF` or a `FactorGraph`) as a UAI BAYES file when it
    has a Bayesian-network form (`fwcore.bayes.bayes_form`, CPT rows summing to 1 within
    `CPT_TOL`: one CPT per variable, its parents then itself), else as a MARKOV file: for
    a PairwiseMRF one factor per variable, then one per edge; for a FactorGraph its
    factors as given. Each table = exp(θ) printed with 17 significant digits, so `read_uai`
    returns θ to ~1e-16 (−inf exactly, as a 0 entry). A MARKOV file's text is made by
    `fwcore._uai.format_blocks` and written as it is made, a slice of the tables at a
    time (memory stays small whatever the model's size).

    Finite θ must lie in [log(tiny), log(max)] ≈ [−708.4, 709.8]; outside it exp(θ)
    overflows or loses precision, and rather than shift a factor by a constant (which
    would silently change log Z) this raises ValueError naming the factor.
    """
    if isinstance(model, FactorGraph):
        scopes = [s for s, _ in model.factors]
        arity = np.array([len(s) for s in scopes], dtype=np.int64)
        variables = np.array([v for s in scopes for v in s], dtype=np.int64)
        tables = (np.concatenate([t.ravel() for _, t in model.factors]) if scopes
                  else np.zeros(0))
        off = np.zeros(len(scopes) + 1, dtype=np.int64)
        np.cumsum([t.size for _, t in model.factors], out=off[1:])

        def name(k):
            return f"factor {k} (scope {' '.join(map(str, scopes[k]))})"
    else:
        check_model(model)
        n = model.n_vars
        arity = np.repeat(np.array([1, 2], dtype=np.int64), [n, model.n_edges])
        variables = np.concatenate([np.arange(n), model.edges.ravel()]).astype(np.int64)
        tables, off = model.theta, np.concatenate([model.node_off, model.edge_off[1:]])

        def name(k):
            if k < n:
                return f"the unary of variable {k}"
            i, j = model.edges[k - n]
            return f"edge {k - n} ({i}, {j})"
    form = bayes_form(model, tol=CPT_TOL)
    if form is not None:
        write_bytes(path, [("\n".join(_bayes_lines(model, form)) + "\n").encode("ascii")])
        return
    _check_writable(tables, off, name)
    scope_off = np.zeros(arity.shape[0] + 1, dtype=np.int64)
    np.cumsum(arity, out=scope_off[1:])
    card = np.asarray(model.card, dtype=np.int64)
    cuts = _cuts(off)

    def text():
        yield f"MARKOV\n{card.shape[0]}\n".encode()
        yield format_int_blocks(card, np.array([0, card.shape[0]], dtype=np.int64), b"", False)
        yield f"\n{arity.shape[0]}".encode()
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            yield format_int_blocks(variables, scope_off[lo:hi + 1], b"\n", True)
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            yield format_blocks(np.exp(tables[off[lo]:off[hi]]), off[lo:hi + 1] - off[lo],
                                b"\n\n", b"\n")
        yield b"\n"
    write_bytes(path, text())


#: entries (and blocks) of a slice of text made at once by the writers
_SLICE = 2**20


def _cuts(off):
    """Block boundaries cutting the blocks of offsets ``off`` into slices of about
    `_SLICE` entries and at most `_SLICE` blocks (0 and the block count included)."""
    at = np.searchsorted(off, np.arange(0, off[-1], _SLICE), side="right") - 1
    return np.unique(np.concatenate([at, np.arange(0, off.shape[0] - 1, _SLICE),
                                     [0, off.shape[0] - 1]]))


def _check_writable(theta, off, name):
    """Refuse a finite θ whose exp a potential cannot hold exactly (`write_uai`), naming
    its block ``name(k)`` (``off``: the blocks' offsets); a slice at a time."""
    for start in range(0, theta.shape[0], _SLICE):
        part = theta[start:start + _SLICE]
        bad = np.isfinite(part) & ((part > _LOG_MAX) | (part < _LOG_TINY))
        if bad.any():
            at = start + int(np.flatnonzero(bad)[0])
            k = int(np.searchsorted(off, at, side="right")) - 1
            raise ValueError(f"write_uai: θ = {theta[at]!r} in {name(k)} is outside "
                             f"[{_LOG_TINY:.1f}, {_LOG_MAX:.1f}], where exp(θ) cannot be "
                             "written exactly as a potential; subtract a constant from that "
                             "factor (log Z shifts by the same constant)")


def _bayes_lines(model, form):
    """A BAYES file's lines: per variable its CPT (`fwcore.bayes.BayesForm`), the scope
    its parents then the variable, the entries with the variable fastest (17 digits)."""
    out = ["BAYES", str(model.n_vars), " ".join(map(str, model.card)), str(model.n_vars)]
    out += [" ".join(map(str, (len(p) + 1, *p, v))) for v, p in enumerate(form.parents)]
    for cpt in form.cpts:
        out += ["", str(cpt.size), " ".join(f"{v:.17g}" for v in cpt.ravel())]
    return out


# -- answer and evidence files ----------------------------------------------------------


def read_mar(path: PathArg) -> Blocks:
    """Node marginals from a ``.MAR`` file: a sequence of 1-D float arrays (read-only
    views of one flat array, `fwcore.model.Blocks`).

    Format: ``MAR``, n, then per variable its cardinality and that many probabilities.
    The older form with a leading solution count of 1 is accepted. Entries must be in
    [0, 1] (one below the smallest double, e.g. 1e-400, reads as 0) and each variable's
    must sum to 1 within 1e-2 (files print few digits).
    """
    t = _Tokens(path)
    t.header(("MAR",), "a marginals file")
    return _optional_count(t, lambda: _parse_mar(t))


def _parse_mar(t):
    n = t.int("the number of variables")
    if n > t.left():
        raise t.error(f"the file declares {n} variables but has only {t.left()} tokens left")
    base, sizes = t.pos, np.full(n, -1, dtype=np.int64)
    out = np.empty(t.left())
    status, i, k, count = t.scan.read_blocks(sizes, out, _mode(nonneg=True), [], True, False, 1)
    off = np.zeros(i + 1, dtype=np.int64)
    np.cumsum(sizes[:i], out=off[1:])
    p = out[:off[-1]]
    if i:  # the variables read whole, checked in order before the one that broke
        first = np.searchsorted(off, np.flatnonzero(p > 1.0)[:1], side="right") - 1
        with np.errstate(over="ignore"):
            sums = np.abs(np.add.reduceat(p, off[:-1]) - 1.0) > 1e-2
        g = min([*first.tolist(), *np.flatnonzero(sums)[:1].tolist()], default=i)
        start = base + off[g] + g + 1 if g < i else 0
        if g < i and (p[off[g]:off[g + 1]] > 1.0).any():
            raise t.error(f"marginal of variable {g} has an entry outside [0, 1]",
                          start + int(np.flatnonzero(p[off[g]:off[g + 1]] > 1.0)[0]))
        if g < i:
            raise t.error(f"marginal of variable {g} sums to "
                          f"{p[off[g]:off[g + 1]].sum():.6g}, not 1", start)
    if status == _uai.INSIDE:
        count = count if count >= 0 else int(t.scan.tokens(t.pos, 1)[0])
        raise t.error(f"file ends inside the marginal of variable {i} ({count} numbers "
                      "expected)", t.scan.count)
    if status != _uai.OK and k < 0:
        raise t.int_error(status, f"the cardinality of variable {i}", 1, None)
    if status != _uai.OK:
        raise t.number_error(status, f"the marginal of variable {i}",
                             "marginals are probabilities in [0, 1]")
    t.end()
    p.flags.writeable = False
    return Blocks(p, off)


def write_mar(path: PathArg, node_marginals: Sequence[ArrayLike]) -> None:
    """Write node marginals (a sequence of 1-D arrays, e.g. a result's `Blocks`) as a
    ``.MAR`` file; entries within 1e-9 of [0, 1] (round-off) are clipped to it."""
    if isinstance(node_marginals, Blocks) and node_marginals.rows is None:
        off = node_marginals.off - node_marginals.off[0]
        flat = node_marginals.vec[node_marginals.off[0]:node_marginals.off[-1]]
    else:
        blocks = []
        for i, p in enumerate(node_marginals):
            p = np.asarray(p, dtype=np.float64)
            if p.ndim != 1 or p.size < 1:
                raise ValueError(f"node_marginals[{i}] must be a non-empty 1-D array; got "
                                 f"shape {p.shape}")
            blocks.append(p)
        off = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum([p.size for p in blocks], out=off[1:])
        flat = np.concatenate(blocks) if blocks else np.zeros(0)
    bad = ~np.isfinite(flat) | (flat < -_ROUND_OFF) | (flat > 1 + _ROUND_OFF)
    if bad.any():
        i = int(np.searchsorted(off, np.flatnonzero(bad)[0], side="right")) - 1
        raise ValueError(f"node_marginals[{i}] must hold probabilities in [0, 1]")
    flat = np.clip(flat, 0.0, 1.0)  # round-off, e.g. 1.0000000000000002 from a normalisation
    cuts = _cuts(off)
    write_bytes(path, [f"MAR\n{off.shape[0] - 1}".encode(),
                  *(format_blocks(flat, off[lo:hi + 1], b" ", b" ")
                    for lo, hi in zip(cuts[:-1], cuts[1:])), b"\n"])


def read_pr(path: PathArg) -> float:
    """Natural log Z from a ``.PR`` file (which holds log10 Z; ln Z = value · ln 10).
    A value of -inf (Z = 0) is accepted; so is the older form with a leading count 1.
    A value whose ln Z a double cannot hold (``|log10 Z|`` > 7.8e307) is an error."""
    t = _Tokens(path)
    t.header(("PR",), "a partition-function file")
    return _optional_count(t, lambda: _parse_pr(t))


def _parse_pr(t):
    v = float(t.floats(1, "log10 Z", allow_neg_inf=True)[0])
    if math.isfinite(v) and not math.isfinite(v * _LN10):
        raise t.error("log10 Z is too large in magnitude: ln Z = log10 Z · ln 10 overflows "
                      "a double", t.pos - 1)
    t.end()
    return v * _LN10


def write_pr(path: PathArg, log_z: float) -> None:
    """Write the natural log Z ``log_z`` as a ``.PR`` file (log10 Z, 17 digits)."""
    log_z = float(log_z)
    if math.isnan(log_z) or log_z == math.inf:
        raise ValueError(f"log_z must be finite or -inf; got {log_z}")
    write_bytes(path, [b"PR\n%s\n" % (b"-inf" if log_z == -math.inf
                                   else b"%.17g" % (log_z / _LN10))])


def read_map(path: PathArg) -> np.ndarray:
    """An assignment (int64 array) from a ``.MAP`` or ``.MPE`` file: the header, n, then
    n states. The older form with a leading solution count of 1 is accepted."""
    t = _Tokens(path)
    t.header(("MAP", "MPE", "MMAP"), "an assignment file")
    return _optional_count(t, lambda: _parse_map(t))


def _parse_map(t):
    n = t.int("the number of variables")
    if n > t.left():
        raise t.error(f"the file declares {n} variables but has only {t.left()} tokens left")
    x = t.ints(n, lambda i: f"the state of variable {i}", hi=MAX_INDEX - 1)
    t.end()
    return x


@validate_params({"header": Options("MAP", "MPE", "MMAP")}, unchecked=("path", "assignment"))
def write_map(path: PathArg, assignment: ArrayLike, header: str = "MAP") -> None:
    """Write an assignment as a ``.MAP`` (or, with ``header="MPE"``, ``.MPE``) file."""
    x = _int_array("assignment", assignment)
    off = np.array([0, x.size], dtype=np.int64)
    write_bytes(path, [format_int_blocks(x, off, f"{header}\n".encode(), True), b"\n"])


@validate_params({"case": [Interval(0, integer=True), None]}, unchecked=("path",))
def read_evid(path: PathArg, case: int | None = None) -> dict[int, int]:
    """Evidence ``{variable: state}`` from a UAI ``.evid`` file: the number of observed
    variables, then (variable, state) pairs; a variable given twice is an error.

    The UAI 2010 form holds several cases: their number, then each case as above (a
    file of one case, ``1 k v s ...``, is read as that case). Pass ``case`` (0-based) to
    read one case of such a file; without it a file of more than one case is an error
    naming their number. Where a file reads both ways, the single case wins."""
    t = _Tokens(path)
    try:
        evid = _parse_evid(t)
        if case not in (None, 0):
            raise t.error(f"case {case} asked for, but the file holds one evidence case", 0)
        return evid
    except ValueError as err:
        t.pos = 0
        try:
            cases = [_parse_evid(t, last=False) for _ in range(t.int("the number of cases"))]
            t.end()
        except ValueError:
            raise err from None
    if case is None and len(cases) != 1:
        raise t.error(f"the file holds {len(cases)} evidence cases (the UAI 2010 form); pass "
                      f"case=0..{len(cases) - 1} to read one", 0)
    if case is not None and case >= len(cases):
        raise t.error(f"case {case} asked for; the file holds cases 0..{len(cases) - 1}", 0)
    return cases[case or 0]


def _parse_evid(t, last=True):
    """One evidence case from the cursor; ``last``: nothing may follow it."""
    k = t.int("the number of evidence variables")
    if 2 * k > t.left():
        raise t.error(f"the file declares {k} evidence variables but has only {t.left()} "
                      "tokens left")
    base, pairs = t.pos, np.empty(2 * k, dtype=np.int64)
    status, j = t.scan.read_ints(pairs, 0, MAX_INDEX - 1)
    v = pairs[:j - j % 2:2]    # the variables of the pairs read whole, checked first
    seen = np.zeros(v.size, dtype=bool)
    seen[np.unique(v, return_index=True)[1]] = True
    if not seen.all():
        m = int(np.flatnonzero(~seen)[0])
        raise t.error(f"variable {v[m]} is given evidence twice", base + 2 * m)
    if status != _uai.OK:
        raise t.int_error(status, f"the {('variable', 'state')[j % 2]} of evidence pair "
                          f"{j // 2}", 0, MAX_INDEX - 1)
    if last:
        t.end()
    return dict(zip(v.tolist(), pairs[1::2].tolist()))


def write_evid(path: PathArg, evidence: Mapping[int, int]) -> None:
    """Write ``{variable: state}`` as a UAI ``.evid`` file (one line)."""
    pairs = _evidence_pairs(evidence)
    write_bytes(path, [" ".join(map(str, [len(pairs), *(a for p in pairs for a in p)])).encode()
                  + b"\n"])


def read_query(path: PathArg) -> list[int]:
    """The query variables of a marginal MAP task from a query file (Merlin's
    ``--query-file``): their number, then their indices; returned in ascending order, as
    Merlin orders them (and its ``.MMAP`` answer). A variable given twice is an error."""
    t = _Tokens(path)
    k = t.int("the number of query variables")
    if k > t.left():
        raise t.error(f"the file declares {k} query variables but has only {t.left()} tokens "
                      "left")
    found = [t.int(f"query variable {m}", hi=MAX_INDEX - 1) for m in range(k)]
    t.end()
    if len(set(found)) < k:
        raise t.error(f"variable {_first_twice(found)} is a query variable twice", 0)
    return sorted(found)


def _first_twice(values):
    seen = set()
    return next(v for v in values if v in seen or seen.add(v))


def apply_evidence(model: PairwiseMRF | FactorGraph,
                   evidence: Mapping[Any, Any]) -> PairwiseMRF | FactorGraph:
    """Observe variables: a new model of the same kind, same variables and names, whose
    distribution is the model's times each observation's likelihood (a `FactorGraph`
    gets a unary factor per observed variable, and its reduction conditions on hard ones).

    ``evidence`` maps variables to what is observed: a variable is one of ``model.names``
    or an index; hard evidence is a state, one of its ``model.states`` or an index
    (`fwcore.model.Named`): its other states become impossible (θ_i = −inf), so
    ``{"WetGrass": 1}`` on a converted network, ``read_evid(path)`` on a file's model;
    soft (likelihood, virtual) evidence is a vector λ of ``card[i]`` likelihoods >= 0,
    not all zero (a list or an array): θ_i += log λ, as pgmpy's virtual evidence and
    pyAgrum's soft evidence do, e.g. ``{"X": [0.2, 0.8]}``. A BAYES network's log Z with
    evidence is log P(e) (the likelihood of the soft part)."""
    if not isinstance(evidence, Mapping):
        raise TypeError(f"evidence must be a mapping {{variable: state}}; got "
                        f"{type(evidence).__name__}")
    if not isinstance(model, FactorGraph):
        check_model(model)
    logs = {}
    for v, s in evidence.items():
        i = model.var_index(v)
        if i in logs:
            raise ValueError(f"evidence gives variable {v!r} twice (as a name and an index)")
        logs[i] = _log_likelihood(model, i, v, s)
    if isinstance(model, FactorGraph):
        return FactorGraph(model.card, list(model.factors) + [((v,), t) for v, t in logs.items()],
                           names=model.names, states=model.states)
    theta = model.theta.copy()
    for v, t in logs.items():
        theta[model.node_off[v]:model.node_off[v + 1]] += t
    return model.with_theta(theta)


def _log_likelihood(model, i, name, observed):
    """log λ of the observation ``observed`` of variable i (given as ``name``): 0 at an
    observed state and −inf elsewhere, or the log of a likelihood vector."""
    card = int(model.card[i])
    named = (model.states is not None and isinstance(observed, tuple)
             and observed in model.states[i])
    if isinstance(observed, (list, tuple, np.ndarray)) and not named:
        lam = np.asarray(observed)
        if (lam.shape != (card,) or lam.dtype.kind not in "iuf" or not np.isfinite(lam).all()
                or (lam < 0).any() or not (lam > 0).any()):
            raise ValueError(f"soft evidence on variable {name!r} must be {card} finite "
                             f"likelihoods >= 0, not all zero (one per state); got {observed!r}")
        with np.errstate(divide="ignore"):
            return np.log(lam.astype(np.float64))
    return np.where(np.arange(card) == model.state_index(i, observed), 0.0, -np.inf)


# -- helpers --------------------------------------------------------------------------


def _optional_count(t, parse):
    """Run ``parse``; if it fails and the next token is 1, retry after it: older
    competition files put a count of solutions/samples (always 1) after the header. The
    current form wins when both would parse; the error reported is the current form's."""
    start = t.pos
    try:
        return parse()
    except ValueError as err:
        if t.scan.tokens(start, 1) != [b"1"]:
            raise
        t.pos = start + 1
        try:
            return parse()
        except ValueError:
            raise err from None


def _evidence_pairs(evidence):
    if not isinstance(evidence, Mapping):
        raise TypeError(f"evidence must be a mapping {{variable: state}}; got "
                        f"{type(evidence).__name__}")
    pairs = []
    for v, s in evidence.items():
        if not all(isinstance(a, Integral) and not isinstance(a, bool) for a in (v, s)):
            raise TypeError(f"evidence must map integer variables to integer states; got "
                            f"{v!r}: {s!r}")
        v, s = int(v), int(s)
        if v < 0 or s < 0:
            raise ValueError(f"evidence {v}: {s} has a negative variable or state")
        pairs.append((v, s))
    return pairs


def _int_array(name, x):
    x = np.asarray(x)
    if x.ndim != 1 or (x.size and x.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-D array of integer states; got shape "
                         f"{x.shape}, dtype {x.dtype}")
    if (x < 0).any():
        raise ValueError(f"{name} has a negative state")
    return x.astype(np.int64)


def write_bytes(path, parts):
    """Write the bytes ``parts`` (an iterable, written as it yields) to the file ``path``
    (compressed by its suffix, `COMPRESSED`) or, for `STDIO`, to standard output."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike) or {STDIO!r} for "
                        f"standard output; got {type(path).__name__}")
    if os.fspath(path) == STDIO:
        for part in parts:
            sys.stdout.write(part.decode("ascii"))
        sys.stdout.flush()
        return
    compressed = COMPRESSED.get(os.path.splitext(os.fspath(path))[1].lower())
    opener = open if compressed is None else compressed[1].open
    with opener(path, "wb") as f:
        for part in parts:
            f.write(part)
