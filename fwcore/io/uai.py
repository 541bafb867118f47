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
import re
import sys
import warnings
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike

from ..bayes import bayes_form
from ..checks import Interval, Options, check_model, validate_params
from ..factor_graph import FactorGraph, model_from_factors
from ..model import PairwiseMRF

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
# Arabic-Indic digits), and no nan/inf except where a reader allows -inf explicitly.
_INT = re.compile(rb"[+-]?[0-9]+")
_FLOAT = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NEG_INF = re.compile(rb"-inf(inity)?", re.IGNORECASE)
_NEGATIVE = re.compile(rb"-[0.]*[1-9]")  # a number token below zero (not -0 or -0.0e5)
_LN10 = math.log(10.0)

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
_TINY, _MAX = np.finfo(np.float64).tiny, np.finfo(np.float64).max


def _read_bytes(path):
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
    """Whitespace tokens of a file with their line numbers (``#`` comments dropped), and a
    cursor over them; ``data``: the file's bytes (`_warn_pyagrum_order` reads its
    comments)."""

    def __init__(self, path):
        self.path, data = _read_bytes(path)
        self.data = data
        self.toks, self.lines = [], []
        for ln, line in enumerate(data.split(b"\n"), 1):
            words = line.partition(b"#")[0].split()
            self.toks += words
            self.lines += [ln] * len(words)
        self.pos = 0

    def error(self, msg, pos=None):
        """ValueError naming the file and the line of token ``pos`` (default: current)."""
        pos = self.pos if pos is None else pos
        if pos < len(self.toks):
            tok = self.toks[pos][:40].decode("ascii", "backslashreplace")
            where = f"line {self.lines[pos]}, token {tok!r}"
        else:
            where = f"end of file (after line {self.lines[-1] if self.lines else 0})"
        return ValueError(f"{self.path}: {where}: {msg}")

    def left(self):
        return len(self.toks) - self.pos

    def _next(self, what):
        if self.pos >= len(self.toks):
            raise self.error(f"file ends where {what} was expected")
        self.pos += 1
        return self.toks[self.pos - 1]

    def int(self, what, lo=0, hi=None):
        """Next token as an integer in [lo, hi] (hi inclusive, None = unbounded)."""
        tok = self._next(what)
        if not _INT.fullmatch(tok):
            raise self.error(f"expected {what} (an integer)", self.pos - 1)
        digits = tok.lstrip(b"+-").lstrip(b"0")  # leading zeros are fine
        if len(digits) > 20:  # beyond any sane size (and int() refuses > 4300 digits)
            raise self.error(f"{what} is too large", self.pos - 1)
        v = -int(digits or b"0") if tok.startswith(b"-") else int(digits or b"0")
        if v < lo or (hi is not None and v > hi):
            rng = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
            raise self.error(f"{what} must be {rng}; got {v}", self.pos - 1)
        return v

    def floats(self, count, what, *, allow_neg_inf=False, nonneg=None, log=False):
        """The next ``count`` tokens as finite floats (or -inf when allowed).

        ``nonneg``: why negatives are wrong here; any number below zero is then an error,
        however small (``-1e-400``, which float() reads as -0.0). ``log``: the natural log
        of each entry instead, from its decimal text where a double cannot hold the value
        (ln 1e-400 = -921.03, not ln 0); -inf for a written zero only.
        """
        if count > self.left():
            self.pos = len(self.toks)
            raise self.error(f"file ends inside {what} ({count} numbers expected)")
        start = self.pos
        vals, explicit = np.empty(count), []
        for k, tok in enumerate(self.toks[start:start + count]):
            if _FLOAT.fullmatch(tok):
                if nonneg and _NEGATIVE.match(tok):
                    raise self.error(f"negative number in {what}: {nonneg}", start + k)
                vals[k] = float(tok)
            elif allow_neg_inf and _NEG_INF.fullmatch(tok):
                vals[k] = -np.inf
                explicit.append(k)
            else:
                raise self.error(f"expected a number in {what}", start + k)
        if log:
            self.pos += count
            return self._logs(vals, start, what)
        bad = np.isinf(vals)  # a written number too large for a double, e.g. 1e400
        bad[explicit] = False
        if bad.any():
            raise self.error(f"number out of floating-point range in {what}",
                             start + int(np.flatnonzero(bad)[0]))
        self.pos += count
        return vals

    def _logs(self, vals, start, what):
        """ln of the entries ``vals`` (>= 0) read from the tokens at ``start``."""
        with np.errstate(divide="ignore"):
            logs = np.log(vals)
        for k in np.flatnonzero((vals < _TINY) | (vals > _MAX)):  # 0, subnormal, overflow
            logs[k] = _ln_decimal(self.toks[start + k])
            if math.isnan(logs[k]):
                raise self.error(f"number out of range in {what}: its exponent has more "
                                 "than 15 digits", start + int(k))
        return logs

    def header(self, names, what):
        start = self.pos
        tok = self._next(f"the header {' or '.join(names)}")
        name = tok.decode("ascii", "replace").upper()
        if name not in names:
            raise self.error(f"expected the header {' or '.join(names)} of {what}", start)
        return name

    def end(self):
        if self.pos < len(self.toks):
            raise self.error(f"unexpected extra content ({self.left()} tokens) after the "
                             "last expected item")


def _ln_decimal(tok):
    """ln of a non-negative decimal number token, from its digits and exponent (so also
    where float() gives 0, a subnormal or inf); -inf for zero, NaN for an exponent of
    more than 15 digits."""
    m = _FLOAT.fullmatch(tok)
    whole, _, frac = m.group(1).partition(b".")
    digits = (whole + frac).lstrip(b"0")
    if not digits:
        return -math.inf
    exp = m.group(2)[1:] if m.group(2) else b"0"
    if len(exp.lstrip(b"+-0")) > 15:
        return math.nan
    head = digits[:17]  # the value is int(head) * 10**(exponent - len(frac) + dropped)
    return math.log(int(head)) + (int(exp) - len(frac) + len(digits) - len(head)) * _LN10


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
    Markov network: log Z is no longer 0). The model is assembled by
    `fwcore.factor_graph.model_from_factors`.
    """
    t = _Tokens(path)
    bayes = t.header(("MARKOV", "BAYES"), "a UAI model file") == "BAYES"
    n = t.int("the number of variables")
    if n > t.left():
        raise t.error(f"the file declares {n} variables but has only {t.left()} tokens "
                      "left")
    first = t.pos
    card = [t.int(f"the cardinality of variable {i}", lo=1, hi=MAX_INDEX) for i in range(n)]
    n_factors = t.int("the number of factors")
    if n_factors > t.left():
        raise t.error(f"the file declares {n_factors} factors but has only {t.left()} "
                      "tokens left")
    scopes, scope_pos = [], []
    for f in range(n_factors):
        scope_pos.append(t.pos)
        arity = t.int(f"the arity of factor {f}", hi=n)
        scope = tuple(t.int(f"a variable of factor {f}", hi=n - 1) for _ in range(arity))
        if len(set(scope)) < arity:
            raise t.error(f"factor {f} has a variable twice in its scope "
                          f"{' '.join(map(str, scope))}", t.pos - 1)
        scopes.append(scope)
    _check_unused_states(t, card, scopes, first)
    tables = []  # each allocated once its entries have been read: paid for by the file
    for f, scope in enumerate(scopes):
        size = math.prod(card[v] for v in scope)
        count = t.int(f"the table size of factor {f}")
        if count != size:
            raise t.error(f"factor {f} (scope {' '.join(map(str, scope))}, declared at "
                          f"line {t.lines[scope_pos[f]]}) needs {size} table entries; the "
                          f"file says {count}", t.pos - 1)
        start = t.pos
        tables.append(t.floats(count, f"the table of factor {f}", log=True,
                               nonneg="tables hold potentials (>= 0), not log-potentials")
                      .reshape([card[v] for v in scope]))
        if bayes:
            _check_cpt(t, f, scope, tables[-1], start, t.lines[scope_pos[f]], unnormalized)
    t.end()
    _warn_pyagrum_order(t, bayes, scopes, scope_pos)
    model = model_from_factors(card, list(zip(scopes, tables)))
    t.data = None
    return model


def _warn_pyagrum_order(t, bayes, scopes, scope_pos):
    """Warn when the file carries pyAgrum's marks (a BAYES file: a ``# name`` comment on
    every scope line; a MARKOV file: ``# nbr Nodes``) and a table that pyAgrum 3.3.1
    writes in its own order (a CPT of two or more parents, a factor of three or more
    variables): such a table reads as another one (the module docstring)."""
    if b"#" not in t.data:
        return
    odd = [f for f, s in enumerate(scopes) if len(s) >= 3]
    if not odd:
        return
    if bayes:
        lines = t.data.split(b"\n")
        marked = all(b"#" in lines[t.lines[p] - 1] for p in scope_pos)
    else:
        marked = b"# nbr Nodes" in t.data
    if marked:
        what = "CPTs of two or more parents" if bayes else "factors of three or more variables"
        warnings.warn(
            f"{t.path}: the file looks written by pyAgrum, which writes {what} in its own "
            f"order ({len(odd)} here, the first: factor {odd[0]}); read as the UAI format "
            "orders them, they are other tables. Convert it with pyAgrum: "
            "fwcore.from_pyagrum(pyagrum.loadBN(path)) (loadMRF for MARKOV), or "
            "pyagrum.saveBN(bn, 'model.bif') and fwcore.read_model('model.bif')",
            stacklevel=4)


def _check_cpt(t, f, scope, theta, start, line, unnormalized):
    """Refuse (or with ``unnormalized="warn"`` warn about) BAYES factor ``f`` whose
    entries do not sum to 1 over its child (the last variable of its ``scope``) for some
    state of its parents; ``theta`` its log table, read from token ``start`` on."""
    if not scope:
        return
    sums = np.exp(theta).sum(axis=-1)
    bad = np.abs(sums - 1.0) > CPT_TOL
    if not bad.any():
        return
    parents = np.unravel_index(int(np.flatnonzero(bad)[0]), sums.shape)
    where = ", ".join(f"x{v} = {int(s)}" for v, s in zip(scope[:-1], parents)) or "its only row"
    message = (f"factor {f} (scope {' '.join(map(str, scope))}, declared at line {line}) is "
               f"not a conditional probability table of its child x{scope[-1]} (the last "
               f"variable of its scope): its entries for {where} sum to "
               f"{float(sums[parents]):.6g}, not 1 ({int(bad.sum())} of {bad.size} parent "
               "states are off); the file's tables may be written in another order than its "
               "scopes. read_uai(path, unnormalized='warn') reads the tables as they are (a "
               "Markov network, log Z no longer 0)")
    if unnormalized == "error":
        raise t.error(message, start)
    warnings.warn(f"{t.path}: {message}", stacklevel=4)


def _check_unused_states(t, card, scopes, first):
    """Refuse more than MAX_UNUSED_STATES states over the variables in no factor
    (``first``: the position of the first cardinality token)."""
    used = np.zeros(len(card), dtype=bool)
    used[[v for scope in scopes for v in scope]] = True
    unused = np.flatnonzero(~used)
    states = sum(card[v] for v in unused)
    if states > MAX_UNUSED_STATES:
        v = int(unused[np.argmax([card[v] for v in unused])])
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
    returns θ to ~1e-16 (−inf exactly, as a 0 entry).

    Finite θ must lie in [log(tiny), log(max)] ≈ [−708.4, 709.8]; outside it exp(θ)
    overflows or loses precision, and rather than shift a factor by a constant (which
    would silently change log Z) this raises ValueError naming the factor.
    """
    if isinstance(model, FactorGraph):
        scopes = [s for s, _ in model.factors]
        tables = [t.ravel() for _, t in model.factors]
        names = [f"factor {k} (scope {' '.join(map(str, s))})" for k, s in enumerate(scopes)]
    else:
        check_model(model)
        scopes = [(i,) for i in range(model.n_vars)] + [tuple(e) for e in model.edges.tolist()]
        tables = ([model.unary(i) for i in range(model.n_vars)] +
                  [model.pairwise(e).ravel() for e in range(model.n_edges)])
        names = ([f"the unary of variable {i}" for i in range(model.n_vars)] +
                 [f"edge {e} ({i}, {j})" for e, (i, j) in enumerate(model.edges.tolist())])
    form = bayes_form(model, tol=CPT_TOL)
    if form is not None:
        _write(path, _bayes_lines(model, form))
        return
    out = ["MARKOV", str(len(model.card)), " ".join(map(str, model.card)), str(len(scopes))]
    out += [" ".join(map(str, (len(s),) + s)) for s in scopes]
    for name, theta in zip(names, tables):
        bad = np.isfinite(theta) & ((theta > _LOG_MAX) | (theta < _LOG_TINY))
        if bad.any():
            raise ValueError(f"write_uai: θ = {theta[np.flatnonzero(bad)[0]]!r} in {name} is "
                             f"outside [{_LOG_TINY:.1f}, {_LOG_MAX:.1f}], where exp(θ) cannot "
                             "be written exactly as a potential; subtract a constant from "
                             "that factor (log Z shifts by the same constant)")
        out += ["", str(theta.size), " ".join(f"{v:.17g}" for v in np.exp(theta))]
    _write(path, out)


def _bayes_lines(model, form):
    """A BAYES file's lines: per variable its CPT (`fwcore.bayes.BayesForm`), the scope
    its parents then the variable, the entries with the variable fastest (17 digits)."""
    out = ["BAYES", str(model.n_vars), " ".join(map(str, model.card)), str(model.n_vars)]
    out += [" ".join(map(str, (len(p) + 1, *p, v))) for v, p in enumerate(form.parents)]
    for cpt in form.cpts:
        out += ["", str(cpt.size), " ".join(f"{v:.17g}" for v in cpt.ravel())]
    return out


# -- answer and evidence files ----------------------------------------------------------


def read_mar(path: PathArg) -> list[np.ndarray]:
    """Node marginals from a ``.MAR`` file: a list of 1-D float arrays.

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
    out = []
    for i in range(n):
        c = t.int(f"the cardinality of variable {i}", lo=1)
        start = t.pos
        p = t.floats(c, f"the marginal of variable {i}",
                     nonneg="marginals are probabilities in [0, 1]")
        if (p < 0).any() or (p > 1).any():
            raise t.error(f"marginal of variable {i} has an entry outside [0, 1]",
                          start + int(np.flatnonzero((p < 0) | (p > 1))[0]))
        if abs(p.sum() - 1.0) > 1e-2:
            raise t.error(f"marginal of variable {i} sums to {p.sum():.6g}, not 1", start)
        out.append(p)
    t.end()
    return out


def write_mar(path: PathArg, node_marginals: Sequence[ArrayLike]) -> None:
    """Write node marginals (a sequence of 1-D arrays) as a ``.MAR`` file; entries within
    1e-9 of [0, 1] (round-off) are clipped to it."""
    blocks = []
    for i, p in enumerate(node_marginals):
        p = np.asarray(p, dtype=np.float64)
        if p.ndim != 1 or p.size < 1:
            raise ValueError(f"node_marginals[{i}] must be a non-empty 1-D array; got shape "
                             f"{p.shape}")
        if not np.isfinite(p).all() or (p < -_ROUND_OFF).any() or (p > 1 + _ROUND_OFF).any():
            raise ValueError(f"node_marginals[{i}] must hold probabilities in [0, 1]")
        p = np.clip(p, 0.0, 1.0)  # round-off, e.g. 1.0000000000000002 from a normalisation
        blocks.append(f"{p.size} " + " ".join(f"{v:.17g}" for v in p))
    _write(path, ["MAR", " ".join([str(len(blocks))] + blocks)])


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
    _write(path, ["PR", "-inf" if log_z == -math.inf else "%.17g" % (log_z / _LN10)])


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
    x = np.array([t.int(f"the state of variable {i}", hi=MAX_INDEX - 1) for i in range(n)],
                 dtype=np.int64)
    t.end()
    return x


@validate_params({"header": Options("MAP", "MPE", "MMAP")}, unchecked=("path", "assignment"))
def write_map(path: PathArg, assignment: ArrayLike, header: str = "MAP") -> None:
    """Write an assignment as a ``.MAP`` (or, with ``header="MPE"``, ``.MPE``) file."""
    x = _int_array("assignment", assignment)
    _write(path, [header, " ".join(map(str, [x.size, *x]))])


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
    evid = {}
    for m in range(k):
        v = t.int(f"the variable of evidence pair {m}", hi=MAX_INDEX - 1)
        s = t.int(f"the state of evidence pair {m}", hi=MAX_INDEX - 1)
        if v in evid:
            raise t.error(f"variable {v} is given evidence twice", t.pos - 2)
        evid[v] = s
    if last:
        t.end()
    return evid


def write_evid(path: PathArg, evidence: Mapping[int, int]) -> None:
    """Write ``{variable: state}`` as a UAI ``.evid`` file (one line)."""
    pairs = _evidence_pairs(evidence)
    _write(path, [" ".join(map(str, [len(pairs), *(a for p in pairs for a in p)]))])


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
        if t.toks[start:start + 1] != [b"1"]:
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


def _write(path, lines, encoding="ascii"):
    """Write ``lines`` to the file ``path`` (compressed by its suffix, `COMPRESSED`) or,
    for `STDIO`, to standard output."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path (str or os.PathLike) or {STDIO!r} for "
                        f"standard output; got {type(path).__name__}")
    text = "\n".join(lines) + "\n"
    if os.fspath(path) == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    compressed = COMPRESSED.get(os.path.splitext(os.fspath(path))[1].lower())
    opener = open if compressed is None else compressed[1].open
    with opener(path, "wt", encoding=encoding) as f:
        f.write(text)
