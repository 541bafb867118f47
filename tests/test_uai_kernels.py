"""The UAI file kernels (fwcore/_uai.pyx) against plain-Python twins: the token grammar
and number parsing (Python's float and a decimal log), the formatting of blocks (Python's
%.17g), the assembly of a pairwise model from factors (a loop over factors)."""
import math
import re

import numpy as np
import pytest

from fwcore import _uai
from fwcore.factor_graph import model_from_factors, model_from_flat_factors

_FLOAT = re.compile(rb"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def ln_decimal(tok):
    """Twin of the kernel's log of a decimal token: from its digits and exponent."""
    m = _FLOAT.fullmatch(tok)
    whole, _, frac = m.group(1).partition(b".")
    digits = (whole + frac).lstrip(b"0")
    if not digits:
        return -math.inf
    exp = m.group(2)[1:] if m.group(2) else b"0"
    if len(exp.lstrip(b"+-0")) > 15:
        return math.nan
    head = digits[:17]
    return math.log(int(head)) + (int(exp) - len(frac) + len(digits) - len(head)) * math.log(10)


def read_twin(tokens, log):
    """(status, values) of reading ``tokens`` as non-negative numbers: float() where the
    grammar holds, the decimal log where a double cannot hold the value."""
    out = []
    for k, tok in enumerate(tokens):
        if not _FLOAT.fullmatch(tok):
            return _uai.NOT_NUMBER, k
        if re.match(rb"-[0.]*[1-9]", tok):
            return _uai.NEGATIVE, k
        v = float(tok)
        if log:
            tiny, big = np.finfo(float).tiny, np.finfo(float).max
            if (v < tiny and re.search(rb"[1-9]", tok.split(b"e")[0].split(b"E")[0])) or v > big:
                v = ln_decimal(tok)
                if math.isnan(v):
                    return _uai.EXPONENT, k
            else:
                with np.errstate(divide="ignore"):
                    v = float(np.log(v))
        elif math.isinf(v):
            return _uai.OVERFLOW, k
        out.append(v)
    return _uai.OK, out


def _tokens(rng, n):
    """Random number tokens, extremes included."""
    pool = [b"0", b"-0", b"0.0", b".5", b"5.", b"1e-400", b"2.5e-330", b"1e400", b"1e308",
            b"4.9e-324", b"2.2250738585072014e-308", b"1.7976931348623157e308",
            b"0.00012345678901234567890123e-320", b"00012", b"+3", b"1E5", b"1e+05",
            b"123456789012345678901234567890", b"0e-99999999999999999999"]
    toks = [rng.choice(pool) if rng.random() < 0.3 else
            (b"%.17g" % rng.lognormal(0, 30)) for _ in range(n)]
    return toks


@pytest.mark.parametrize("log", [False, True])
def test_numbers_match_python(log):
    rng = np.random.default_rng(0)
    toks = _tokens(rng, 3000)
    if not log:
        toks = [t for t in toks if not math.isinf(float(t))]
    mode = _uai.NONNEG | (_uai.LOG if log else 0)
    s = _uai.Scanner(b" \n".join(toks) + b"  # end\n")
    out, specials = np.empty(len(toks)), []
    status, k = s.read_numbers(out, mode, specials)
    assert (status, k) == (_uai.OK, len(toks))
    if log:
        with np.errstate(divide="ignore"):
            np.log(out, out=out)
        for at, ln in specials:
            out[at] = ln
    np.testing.assert_array_equal(out, read_twin(toks, log)[1])


@pytest.mark.parametrize("bad, status", [(b"1_0", _uai.NOT_NUMBER), (b"nan", _uai.NOT_NUMBER),
                                         (b"-1e-400", _uai.NEGATIVE), (b"0x10", _uai.NOT_NUMBER),
                                         (b"1e99999999999999999999", _uai.EXPONENT),
                                         (b"1e5x", _uai.NOT_NUMBER), (b"e5", _uai.NOT_NUMBER)])
def test_bad_number_found_where_the_twin_finds_it(bad, status):
    toks = [b"0.5", b"1e-400", bad, b"2"]
    s = _uai.Scanner(b" ".join(toks))
    got = s.read_numbers(np.empty(4), _uai.NONNEG | _uai.LOG, [])
    assert got == read_twin(toks, True) == (status, 2)
    assert s.index == 2  # the cursor is left before the token to blame


def test_integers_and_lines():
    text = b"# c\n 0012 -3 +7\n99999999999999999999 4#x\n5"
    s = _uai.Scanner(text)
    assert s.count == 6 and s.line(5) == 4 and s.line(6) == 4
    out = np.empty(3, dtype=np.int64)
    assert s.read_ints(out, -5, 20) == (_uai.OK, 3) and out.tolist() == [12, -3, 7]
    assert s.next_int(0, 10) == (_uai.BIG, 0) and s.index == 3
    s.seek(4)
    assert s.next_int(0, 3) == (_uai.RANGE, 0) and s.tokens(4, 5) == [b"4", b"5"]


@pytest.mark.parametrize("seed", range(4))
def test_format_blocks_is_percent_17g(seed):
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.lognormal(0, 50, 200), [0.0, 5e-324, 1.7976931348623157e308,
                                                         1.0, 0.1, 1e-300]])
    off = np.array([0, 3, 4, 100, values.size], dtype=np.int64)
    text = _uai.format_blocks(values, off, b"\n\n", b"\n")
    twin = b"".join(b"\n\n%d\n" % (b - a) + b" ".join(b"%.17g" % v for v in values[a:b])
                    for a, b in zip(off[:-1], off[1:]))
    assert text == twin
    ints = rng.integers(-2**62, 2**62, 50)
    assert (_uai.format_int_blocks(ints, off[:2], b"\n", True)
            == b"\n3 " + b" ".join(b"%d" % v for v in ints[:3]))


def test_pairwise_assembly_matches_a_loop():
    """Factors with repeated and reversed scopes, unaries given twice or not at all: the
    flat assembly against the sum of tables, factor by factor."""
    rng = np.random.default_rng(5)
    card = np.array([2, 3, 1, 4, 2])
    scopes = [(1, 0), (0,), (0, 1), (3, 2), (4, 3), (1,), (0, 1), (3, 4), (1,), (2, 0)]
    factors = [(s, rng.normal(size=card[list(s)])) for s in scopes]
    factors[2][1][1, 2] = -np.inf
    m = model_from_factors(card, factors)
    edges = []
    for s in scopes:
        if len(s) == 2 and tuple(sorted(s)) not in edges:
            edges.append(tuple(sorted(s)))
    np.testing.assert_array_equal(m.edges, edges)
    for v in range(len(card)):
        want = sum((t for s, t in factors if s == (v,)), np.zeros(card[v]))
        np.testing.assert_array_equal(m.unary(v), want)
    for e, (i, j) in enumerate(edges):
        want = sum((t if s == (i, j) else t.T for s, t in factors if sorted(s) == [i, j]),
                   np.zeros((card[i], card[j])))
        np.testing.assert_array_equal(m.pairwise(e), want)


def test_flat_assembly_of_the_written_layout_shares_the_tables():
    card = np.array([2, 2, 3])
    arity = np.array([1, 1, 1, 2, 2])
    variables = np.array([0, 1, 2, 0, 1, 1, 2])
    tables = np.arange(2 + 2 + 3 + 4 + 6, dtype=float)
    off = np.array([0, 2, 4, 7, 11, 17])
    m = model_from_flat_factors(card, arity, variables, tables, off)
    assert np.shares_memory(m.theta, tables) and np.array_equal(m.theta, np.arange(17.0))


def test_short_decimals_are_read_as_float_reads_them():
    """Random decimals of 1-16 digits, signs and exponents (Clinger's fast path where
    they are short, strtod elsewhere): bit for bit Python's float, signed zeros too."""
    rng = np.random.default_rng(7)
    toks = []
    for _ in range(20000):
        digits = "".join(map(str, rng.integers(0, 10, rng.integers(1, 17))))
        cut = int(rng.integers(0, len(digits) + 1))
        tok = digits[:cut] + "." + digits[cut:] if rng.random() < 0.7 else digits
        tok = (tok + f"e{int(rng.integers(-30, 31))}" if rng.random() < 0.5 else tok)
        toks.append(("-" if rng.random() < 0.2 else "") + (tok if tok != "." else "0"))
    out = np.empty(len(toks))
    assert _uai.Scanner(" ".join(toks).encode()).read_numbers(out, 0, []) == (_uai.OK, len(toks))
    want = np.array([float(t) for t in toks])
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))
