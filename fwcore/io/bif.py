"""Bayesian networks in the BIF and XMLBIF formats, with variable and state names.

BIF (the Interchange Format, version 0.15, as bnlearn's repository, pgmpy and pyAgrum
write it)::

    network "asia" { }
    variable smoke { type discrete [ 2 ] { yes, no }; }
    probability ( smoke ) { table 0.5, 0.5; }
    probability ( lung | smoke ) { ( yes ) 0.1, 0.9; ( no ) 0.01, 0.99; }

``//`` and ``/* */`` comments; names may be quoted; a CPT is given row by row (the
parents' states in parentheses, then the child's probabilities), by ``default`` for the
rows not given, or as one ``table`` with the child's axis slowest (as pgmpy and pyAgrum
read it). XMLBIF (version 0.3): ``VARIABLE`` (``NAME``, ``OUTCOME``s) and ``DEFINITION``
(``FOR``, ``GIVEN``s, ``TABLE`` with the ``FOR`` variable fastest) elements.

The parsers are fwcore's own, not pgmpy's or pyAgrum's (optional extras that would make
a file format depend on a large library: pgmpy's BIF reader needs pyparsing and pandas,
pyAgrum's the whole of pyAgrum); XMLBIF is read with the standard library's
ElementTree. A network reads as a model whose factors are its CPTs (log Z = 0), named
(``model.names``, ``model.states``); variables in the order they are declared. A model
is written back when it has a Bayesian-network form (`fwcore.bayes.bayes_form`); a Markov
network has none and is refused (`fwcore.write_uai` writes it). Probabilities are
written with 17 significant digits, so a round trip keeps them exactly.

Errors are ValueErrors naming the file and, for BIF, the line and the token.
"""
from __future__ import annotations

import bisect
import math
import re
import warnings
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

import numpy as np

from ..bayes import bayes_form
from ..checks import Options, validate_params
from ..factor_graph import FactorGraph, model_from_factors
from ..model import PairwiseMRF
from .convert import text_labels
from .uai import CPT_TOL, PathArg, read_bytes, write_bytes

__all__ = ["read_bif", "write_bif", "read_xmlbif", "write_xmlbif"]

_PUNCT = "{}()[]|,;"
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"[^"]*"|[{}()\[\]|,;]|[^\s{}()\[\]|,;"]+', re.S)
#: what a name or a state may hold to be written unquoted (no space, separator or quote)
_PLAIN = re.compile(r'(?!//|/\*)[^\s{}()\[\]|,;"]+')


class _Tokens:
    """The tokens of a BIF text, with a cursor and errors that name the line."""

    def __init__(self, name, text):
        self.name = name
        self.toks, self.starts = [], []
        for m in _TOKEN.finditer(text):
            tok = m.group()
            if tok[0].isspace() or tok.startswith(("//", "/*")):
                continue
            self.toks.append(tok)
            self.starts.append(m.start())
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.pos = 0

    def where(self, pos=None):
        """'FILE: line L, token T' for token ``pos`` (default: the current one)."""
        pos = self.pos if pos is None else pos
        if pos >= len(self.toks):
            return f"{self.name}: end of file"
        line = bisect.bisect(self.newlines, self.starts[pos]) + 1
        return f"{self.name}: line {line}, token {self.toks[pos][:40]!r}"

    def error(self, msg, pos=None):
        return ValueError(f"{self.where(pos)}: {msg}")

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def next(self, what):
        if self.pos >= len(self.toks):
            raise self.error(f"file ends where {what} was expected")
        self.pos += 1
        return self.toks[self.pos - 1]

    def expect(self, tok):
        if self.next(repr(tok)) != tok:
            raise self.error(f"expected {tok!r}", self.pos - 1)

    def word(self, what):
        """A name: a plain word or a quoted string (quotes dropped)."""
        tok = self.next(what)
        if tok[0] == '"':
            return tok[1:-1]
        if tok in _PUNCT:
            raise self.error(f"expected {what}", self.pos - 1)
        return tok

    def words(self, close, what):
        """Names separated by commas (or spaces) up to the token ``close`` (consumed)."""
        out = []
        while self.peek() != close:
            out.append(self.word(what))
            if self.peek() == ",":
                self.pos += 1
        self.pos += 1
        return out

    def numbers(self, what):
        """Numbers up to ';' (consumed), commas or spaces between them."""
        out = []
        while self.peek() != ";":
            tok = self.next(what)
            if tok == ",":
                continue
            try:
                out.append(float(tok))
            except ValueError:
                raise self.error(f"expected a number in {what}", self.pos - 1) from None
        self.pos += 1
        return out

    def skip_statement(self):
        """Skip to the end of a ``property ...;`` statement."""
        while self.next("';'") != ";":
            pass


def _text(path):
    name, data = read_bytes(path)
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: not a UTF-8 text file ({err})") from None


@validate_params({"unnormalized": Options("error", "warn")}, unchecked=("path",))
def read_bif(path: PathArg, *, unnormalized: str = "error") -> PairwiseMRF | FactorGraph:
    """Read a Bayesian network from a BIF file (the module docstring): a `PairwiseMRF`
    when no variable has two parents, else a `FactorGraph`, named by the file's variable
    and state names. Each CPT row must sum to 1 within `fwcore.io.uai.CPT_TOL`
    (``unnormalized="warn"``: a warning instead of an error, the tables read as they are).
    Plain, gzip, xz or bzip2; ``-`` for standard input."""
    name, text = _text(path)
    t = _Tokens(name, text)
    names: list[str] = []
    states, declared, cpts = [], {}, {}
    while t.peek() is not None:
        kw = t.next("a block").lower()
        if kw == "network":
            t.word("the network's name")
            t.expect("{")
            while t.peek() != "}":
                t.skip_statement()
            t.pos += 1
        elif kw == "variable":
            start = t.pos
            v = t.word("a variable name")
            if v in declared:
                raise t.error(f"variable {v!r} is declared twice", start)
            declared[v] = len(names)
            names.append(v)
            states.append(_variable_body(t, v))
        elif kw == "probability":
            start = t.pos
            t.expect("(")
            child = t.word("the child's name")
            if t.peek() == "|":
                t.pos += 1
            parents = t.words(")", "a parent's name")
            for v in [child, *parents]:
                if v not in declared:
                    raise t.error(f"variable {v!r} has no declaration before its CPT", start)
            if child in cpts:
                raise t.error(f"variable {child!r} has two probability blocks", start)
            cpts[child] = (parents, _cpt_body(t, child, parents, names, states, declared),
                           start)
        else:
            raise t.error("expected 'network', 'variable' or 'probability'", t.pos - 1)
    return _network(t, names, states, declared, cpts, unnormalized)


def _variable_body(t, v):
    """The states of variable ``v`` from its ``{ type discrete [ N ] { ... }; ... }``."""
    t.expect("{")
    states = None
    while t.peek() != "}":
        kw = t.next("'type' or 'property'").lower()
        if kw == "property":
            t.skip_statement()
            continue
        if kw != "type" or t.next("'discrete'").lower() != "discrete":
            raise t.error(f"variable {v!r}: expected 'type discrete'", t.pos - 1)
        t.expect("[")
        count_at = t.pos
        count = t.next("the number of states")
        t.expect("]")
        t.expect("{")
        states = t.words("}", "a state name")
        t.expect(";")
        if not count.isdigit() or int(count) != len(states) or not states:
            raise t.error(f"variable {v!r} declares {count} states and names {len(states)}",
                          count_at)
        if len(set(states)) != len(states):
            raise t.error(f"variable {v!r} names a state twice", count_at)
    t.pos += 1
    if states is None:
        raise t.error(f"variable {v!r} has no 'type discrete [...] {{...}};' line", t.pos - 1)
    return states


def _cpt_body(t, child, parents, names, states, declared):
    """P(child | parents) (shape: parents' cards, then the child's; NaN where no row
    was given) from the block's rows, ``default`` and ``table`` entries."""
    pcards = [len(states[declared[p]]) for p in parents]
    cv = len(states[declared[child]])
    table = np.full(pcards + [cv], np.nan)
    t.expect("{")
    while t.peek() != "}":
        start = t.pos
        tok = t.next("a CPT entry")
        if tok.lower() == "property":
            t.skip_statement()
            continue
        if tok.lower() in ("table", "default"):
            values = t.numbers(f"the CPT of {child!r}")
            size = cv * (math.prod(pcards) if tok.lower() == "table" else 1)
            if len(values) != size:
                raise t.error(f"the {tok} of {child!r} has {len(values)} numbers; it needs "
                              f"{size}", start)
            if tok.lower() == "table":  # the child's axis slowest
                table[...] = np.moveaxis(np.reshape(values, [cv] + pcards), 0, -1)
            else:
                rows = np.isnan(table[..., 0])
                table[rows] = values
            continue
        if tok != "(":
            raise t.error(f"expected '(', 'table' or 'default' in the CPT of {child!r}", start)
        row = t.words(")", "a parent's state")
        if len(row) != len(parents):
            raise t.error(f"a row of the CPT of {child!r} names {len(row)} parent states; "
                          f"it has {len(parents)} parents", start)
        index = []
        for p, s in zip(parents, row):
            if s not in states[declared[p]]:
                raise t.error(f"{p!r} has no state {s!r}", start)
            index.append(states[declared[p]].index(s))
        values = t.numbers(f"the CPT of {child!r}")
        if len(values) != cv:
            raise t.error(f"a row of the CPT of {child!r} has {len(values)} numbers; "
                          f"{child!r} has {cv} states", start)
        table[tuple(index)] = values
    t.pos += 1
    return table


def _network(t, names, states, declared, cpts, unnormalized):
    """The model of the parsed network, its CPTs checked."""
    factors = []
    for v in names:
        if v not in cpts:
            raise t.error(f"variable {v!r} has no probability block")
        parents, table, start = cpts[v]
        where = t.where(start)
        if np.isnan(table).any():
            row = np.argwhere(np.isnan(table[..., 0]))[0]
            given = ", ".join(states[declared[p]][s] for p, s in zip(parents, row))
            raise ValueError(f"{where}: the CPT of {v!r} has no row for ({given}) and no "
                             "default")
        _check_table(where, v, table, unnormalized)
        with np.errstate(divide="ignore"):
            factors.append((tuple(declared[p] for p in parents) + (declared[v],),
                            np.log(table)))
    return model_from_factors([len(s) for s in states], factors, names, states)


def _check_table(where, v, table, unnormalized):
    """Refuse (or warn about) a CPT with a negative or non-finite entry or a row that
    does not sum to 1 within CPT_TOL."""
    if not np.isfinite(table).all() or (table < 0).any():
        raise ValueError(f"{where}: the CPT of {v!r} has a negative or non-finite entry")
    sums = table.sum(axis=-1)
    if np.all(np.abs(sums - 1.0) <= CPT_TOL):
        return
    message = (f"{where}: the CPT of {v!r} has a row summing to "
               f"{float(sums.flat[np.argmax(np.abs(sums - 1.0))]):.6g}, not 1")
    if unnormalized == "error":
        raise ValueError(message + "; unnormalized='warn' reads the tables as they are (a "
                         "Markov network, log Z no longer 0)")
    warnings.warn(message, stacklevel=4)


def _names_for_writing(model, fmt):
    """(names, states, the network form) of ``model`` for a BIF or XMLBIF writer:
    ``x<i>`` and ``s<k>`` where it has none; a name that the format cannot hold
    unquoted, or a model with no Bayesian-network form, is a ValueError."""
    form = bayes_form(model, tol=CPT_TOL)
    if form is None:
        raise ValueError(f"model is not a Bayesian network (its factors are not one "
                         f"conditional probability table per variable over an acyclic "
                         f"graph): {fmt} holds Bayesian networks only; write_uai writes "
                         "any model (MARKOV)")
    names, states = text_labels(model)
    for label in names + [s for ss in states for s in ss]:
        if not _PLAIN.fullmatch(label):
            raise ValueError(f"the name {label!r} has a character {fmt} readers split on "
                             "(space, punctuation or quote): rename it")
    return names, states, form


def write_bif(model: PairwiseMRF | FactorGraph, path: PathArg) -> None:
    """Write a model with a Bayesian-network form (`fwcore.bayes.bayes_form`) as a BIF
    file: variables with their names and state names (``x<i>`` and ``s<k>`` where the
    model has none), then each CPT row by row (a root's as a ``table``); 17 significant
    digits. Compressed by the suffix ``.gz``, ``.xz`` or ``.bz2``; ``-``: standard
    output."""
    names, states, form = _names_for_writing(model, "BIF")
    out = ["network unknown {", "}"]
    for v, ss in zip(names, states):
        out += [f"variable {v} {{", f"  type discrete [ {len(ss)} ] {{ {', '.join(ss)} }};", "}"]
    for v in range(model.n_vars):
        parents, cpt = form.parents[v], form.cpts[v]
        if not parents:
            out += [f"probability ( {names[v]} ) {{", f"  table {_numbers(cpt)};", "}"]
            continue
        out.append(f"probability ( {names[v]} | {', '.join(names[p] for p in parents)} ) {{")
        for row in np.ndindex(*cpt.shape[:-1]):
            given = ", ".join(states[p][s] for p, s in zip(parents, row))
            out.append(f"  ({given}) {_numbers(cpt[row])};")
        out.append("}")
    write_bytes(path, [("\n".join(out) + "\n").encode("utf-8")])


def _numbers(values):
    return ", ".join(f"{v:.17g}" for v in np.ravel(values))


@validate_params({"unnormalized": Options("error", "warn")}, unchecked=("path",))
def read_xmlbif(path: PathArg, *, unnormalized: str = "error") -> PairwiseMRF | FactorGraph:
    """Read a Bayesian network from an XMLBIF (0.3) file: ``VARIABLE`` elements (``NAME``,
    ``OUTCOME`` state names) and ``DEFINITION`` elements (``FOR``, ``GIVEN`` parents,
    ``TABLE`` with the ``FOR`` variable fastest). As `read_bif` otherwise."""
    name, data = read_bytes(path)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        raise ValueError(f"{name}: not an XML file: {err}") from None
    network = root if root.tag.upper() == "NETWORK" else _child(root, "NETWORK", name, "BIF")
    names: list[str] = []
    states, declared, cpts = [], {}, {}
    for var in _children(network, "VARIABLE"):
        v = _child(var, "NAME", name, "a VARIABLE").text or ""
        v = v.strip()
        if v in declared:
            raise ValueError(f"{name}: variable {v!r} is declared twice")
        outcomes = [(o.text or "").strip() for o in _children(var, "OUTCOME")]
        if not outcomes or len(set(outcomes)) < len(outcomes):
            raise ValueError(f"{name}: variable {v!r} needs distinct OUTCOME state names")
        declared[v] = len(names)
        names.append(v)
        states.append(outcomes)
    for d in _children(network, "DEFINITION"):
        child = (_child(d, "FOR", name, "a DEFINITION").text or "").strip()
        parents = [(g.text or "").strip() for g in _children(d, "GIVEN")]
        for v in [child, *parents]:
            if v not in declared:
                raise ValueError(f"{name}: the DEFINITION for {child!r} names the undeclared "
                                 f"variable {v!r}")
        if child in cpts:
            raise ValueError(f"{name}: variable {child!r} has two DEFINITIONs")
        text = _child(d, "TABLE", name, f"the DEFINITION for {child!r}").text or ""
        try:
            values = np.array(text.split(), dtype=np.float64)
        except ValueError:
            raise ValueError(f"{name}: the TABLE for {child!r} holds a token that is not a "
                             "number") from None
        shape = [len(states[declared[v]]) for v in [*parents, child]]
        if values.size != math.prod(shape):
            raise ValueError(f"{name}: the TABLE for {child!r} has {values.size} numbers; it "
                             f"needs {math.prod(shape)}")
        cpts[child] = (parents, values.reshape(shape))
    factors = []
    for v in names:
        if v not in cpts:
            raise ValueError(f"{name}: variable {v!r} has no DEFINITION")
        parents, table = cpts[v]
        _check_table(name, v, table, unnormalized)
        with np.errstate(divide="ignore"):
            factors.append((tuple(declared[p] for p in parents) + (declared[v],),
                            np.log(table)))
    return model_from_factors([len(s) for s in states], factors, names, states)


def _children(element, tag):
    return [c for c in element if c.tag.upper() == tag]


def _child(element, tag, name, what):
    found = _children(element, tag)
    if not found:
        raise ValueError(f"{name}: {what} has no {tag} element")
    return found[0]


def write_xmlbif(model: PairwiseMRF | FactorGraph, path: PathArg) -> None:
    """Write a model with a Bayesian-network form as an XMLBIF (0.3) file, names as
    `write_bif` gives them."""
    names, states, form = _names_for_writing(model, "XMLBIF")
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<BIF VERSION="0.3">', "<NETWORK>",
           "<NAME>unknown</NAME>"]
    for v, ss in zip(names, states):
        out += ['<VARIABLE TYPE="nature">', f"  <NAME>{escape(v)}</NAME>"]
        out += [f"  <OUTCOME>{escape(s)}</OUTCOME>" for s in ss]
        out.append("</VARIABLE>")
    for v in range(model.n_vars):
        out += ["<DEFINITION>", f"  <FOR>{escape(names[v])}</FOR>"]
        out += [f"  <GIVEN>{escape(names[p])}</GIVEN>" for p in form.parents[v]]
        out.append(f"  <TABLE>{_numbers(form.cpts[v]).replace(',', '')}</TABLE>")
        out.append("</DEFINITION>")
    out += ["</NETWORK>", "</BIF>"]
    write_bytes(path, [("\n".join(out) + "\n").encode("utf-8")])
