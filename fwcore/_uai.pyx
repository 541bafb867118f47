# cython: language_level=3
"""Kernels of the UAI file formats (`fwcore.io.uai`): a cursor over the tokens of a file
that reads integers, numbers, scopes and tables in bulk, each token checked against the
formats' grammar, and the formatting of blocks of numbers for the writers.

Tokens are separated by ASCII whitespace (Python's ``bytes.split``); ``#`` starts a comment
that runs to the end of its line, inside a token too. The cursor counts tokens, never
lines: a caller that reports an error asks for the line of the token to blame
(`Scanner.line`), which scans the file again (errors only).

Grammar (ASCII only): an integer is ``[+-]?[0-9]+`` with at most 20 digits after its
leading zeros; a number is ``[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)?``, and
where a reader allows it ``-inf`` or ``-infinity`` in any case. Numbers are parsed by the C
library's ``strtod`` (correctly rounded, as Python's ``float``) while the decimal point of
the C locale is ``.``, else by Python's own ``PyOS_string_to_double``; a number of at most
15 significant digits and a power of ten within 10^±22 (``1``, ``0.25``) is the exact
quotient or product of two doubles, correctly rounded by one operation (Clinger's fast
path), without either.

Every bulk read returns ``(status, ...)``; on a failure the cursor is left before the
token to blame (`Scanner.index`; the end of the file: `Scanner.count`), so the caller
names it. The bulk reads hold the GIL and run Python's signal handlers every 2^20 tokens:
Ctrl-C stops them within milliseconds.
"""
import numpy as np

cimport cython
from libc.locale cimport localeconv
from libc.math cimport INFINITY, NAN, log
from libc.stdint cimport INT64_MAX, int64_t, uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1
    double PyOS_string_to_double(const char* s, char** endptr,
                                 object overflow_exception) except? -1.0
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int* ptype) except NULL


# what a read returns, and the modes of the number reads: C constants, and Python names
cdef enum:
    OK = 0
    END = 1            # the file ends where a token was expected
    NOT_INT = 2        # not an integer
    TOO_LARGE = 3      # an integer of more than 20 digits
    RANGE = 4          # an integer outside its range
    NOT_NUMBER = 5     # not a number
    NEGATIVE = 6       # a number below zero where none may be
    OVERFLOW = 7       # a number beyond a double's range
    EXPONENT = 8       # (log mode) a number whose exponent has more than 15 digits
    TWICE = 9          # a scope with a variable twice
    SIZE = 10          # a table whose count is not its scope's size
    INSIDE = 11        # the file ends inside a block of numbers
    BIG = 12           # a non-negative integer beyond int64
    NONNEG = 1         # refuse numbers below zero (however small: -1e-400 too)
    LOG = 2            # the natural log of each entry, from its decimal text where a
                       # double cannot hold the entry
    NEG_INF = 4        # take -inf / -infinity

# the same names for the Python side (`fwcore.io.uai`): a C enum is not a module attribute
globals().update({name: value for name, value in (
    ("OK", OK),
    ("END", END),
    ("NOT_INT", NOT_INT),
    ("TOO_LARGE", TOO_LARGE),
    ("RANGE", RANGE),
    ("NOT_NUMBER", NOT_NUMBER),
    ("NEGATIVE", NEGATIVE),
    ("OVERFLOW", OVERFLOW),
    ("EXPONENT", EXPONENT),
    ("TWICE", TWICE),
    ("SIZE", SIZE),
    ("INSIDE", INSIDE),
    ("BIG", BIG),
    ("NONNEG", NONNEG),
    ("LOG", LOG),
    ("NEG_INF", NEG_INF),
    )})

cdef enum:
    POLL = 1 << 20  # tokens between two runs of Python's signal handlers

# byte classes: 1 whitespace, 2 the comment sign
cdef unsigned char KIND[256]
for _c in range(256):
    KIND[_c] = 1 if _c in b" \t\n\r\x0b\x0c" else (2 if _c == ord("#") else 0)

cdef double LN10 = log(10.0)
# 10^0 .. 10^22, each exactly a double
cdef double POW10[23]
for _k in range(23):
    POW10[_k] = float(10**_k)
cdef double TINY = 2.2250738585072014e-308
cdef double HUGE = 1.7976931348623157e308


cdef inline bint _digit(unsigned char c) noexcept nogil:
    return c >= 48 and c <= 57


@cython.final
cdef class Scanner:
    """A cursor over the tokens of ``data`` (bytes): ``index`` tokens are consumed, of
    ``count`` in all."""

    cdef readonly bytes data
    cdef const unsigned char* buf
    cdef Py_ssize_t size
    cdef Py_ssize_t at                 # byte offset after the last consumed token
    cdef readonly Py_ssize_t index     # tokens consumed
    cdef readonly Py_ssize_t count     # tokens in the file
    cdef Py_ssize_t last               # start of the last token of the file (-1: none)
    cdef Py_ssize_t unpolled           # tokens read since the last signal check
    cdef bint c_locale                 # strtod reads "." as the decimal point

    def __cinit__(self, bytes data):
        cdef Py_ssize_t p = 0, n = 0, last = -1
        self.data = data
        self.buf = <const unsigned char*>PyBytes_AS_STRING(data)
        self.size = PyBytes_GET_SIZE(data)
        while True:
            p = self._skip(p)
            if p >= self.size:
                break
            last = p
            n += 1
            p = self._end(p)
        self.count, self.last = n, last
        self.at, self.index = 0, 0
        self._locale()

    cdef inline Py_ssize_t _skip(self, Py_ssize_t p) noexcept:
        """The start of the first token at or after p (size: none)."""
        cdef const unsigned char* b = self.buf
        while p < self.size:
            if KIND[b[p]] == 1:
                p += 1
            elif KIND[b[p]] == 2:
                while p < self.size and b[p] != 10:
                    p += 1
            else:
                break
        return p

    cdef inline Py_ssize_t _end(self, Py_ssize_t p) noexcept:
        """The end of the token starting at p."""
        while p < self.size and KIND[self.buf[p]] == 0:
            p += 1
        return p

    cdef inline int _poll(self) except -1:
        self.unpolled += 1
        if self.unpolled >= POLL:
            self.unpolled = 0
            PyErr_CheckSignals()
        return 0

    def seek(self, Py_ssize_t index):
        """Put the cursor before token ``index`` (0 <= index <= count)."""
        if index < self.index:
            self.at, self.index = 0, 0
        while self.index < index and self.index < self.count:
            self.at = self._end(self._skip(self.at))
            self.index += 1

    def tokens(self, Py_ssize_t index, Py_ssize_t count):
        """The bytes of tokens index..index+count-1 (the cursor does not move)."""
        cdef Py_ssize_t at = self.at, kept = self.index, p, k
        self.seek(index)
        words = []
        for k in range(min(count, self.count - self.index)):
            p = self._skip(self.at)
            self.at = self._end(p)
            words.append(self.data[p:self.at])
        self.at, self.index = at, kept
        return words

    def line(self, Py_ssize_t index):
        """The line of token ``index``; for ``count`` (the end of the file), the line of
        the last token (0 when there is none)."""
        cdef Py_ssize_t at = self.at, kept = self.index, p
        if index >= self.count:
            p = self.last
        else:
            self.seek(index)
            p = self._skip(self.at)
            self.at, self.index = at, kept
        return 0 if p < 0 else self.data.count(b"\n", 0, p) + 1

    # -- integers --------------------------------------------------------------------

    cdef int _int(self, int64_t lo, int64_t hi, int64_t* value) except -1:
        """Read the next token as an integer in [lo, hi] into value; the status (`BIG`:
        a non-negative integer beyond int64). On a failure the token is not consumed."""
        cdef Py_ssize_t p = self._skip(self.at), q, e
        cdef const unsigned char* b = self.buf
        cdef bint neg = False, big = False
        cdef int64_t v = 0, d
        cdef int n_digits = 0
        if p >= self.size:
            return END
        e = self._end(p)
        q = p
        if b[q] == 43 or b[q] == 45:   # + -
            neg = b[q] == 45
            q += 1
        if q == e:
            return NOT_INT
        while q < e and b[q] == 48:    # leading zeros
            q += 1
        while q < e:
            if not _digit(b[q]):
                return NOT_INT
            d = b[q] - 48
            n_digits += 1
            if not big:
                if v > (INT64_MAX - d) // 10:
                    big = True
                else:
                    v = v * 10 + d
            q += 1
        if n_digits > 20:
            return TOO_LARGE
        if big:
            return RANGE if neg else BIG
        if neg:
            v = -v
        if v < lo or v > hi:
            return RANGE
        value[0] = v
        self._poll()
        self.at, self.index = e, self.index + 1
        return OK

    def next_int(self, int64_t lo=0, int64_t hi=INT64_MAX):
        """The next token as an integer in [lo, hi]: (status, value); `BIG` for a
        non-negative one beyond int64 (not consumed: the caller reads its text)."""
        cdef int64_t v = 0
        cdef int status = self._int(lo, hi, &v)
        return status, v

    def read_ints(self, int64_t[::1] out, int64_t lo, int64_t hi):
        """The next len(out) tokens as integers in [lo, hi]: (status, entries read)."""
        cdef Py_ssize_t k
        cdef int status
        for k in range(out.shape[0]):
            status = self._int(lo, hi, &out[k])
            if status != OK:
                return (RANGE if status == BIG else status), k
        return OK, out.shape[0]

    # -- numbers ---------------------------------------------------------------------

    cdef int _number(self, int mode, double* value, list specials, Py_ssize_t k) except -1:
        """Read the next token as a number (`NONNEG`, `LOG`, `NEG_INF` modes) into value;
        the status (`OVERFLOW` and `EXPONENT`: read, and consumed). In `LOG` mode value is
        the entry itself (the caller takes the log of every entry at once) except where a
        double cannot hold it: then 1.0, and (k, its log from the decimal text) is
        appended to ``specials``."""
        cdef Py_ssize_t p = self._skip(self.at), e, q
        cdef const unsigned char* b = self.buf
        cdef bint nonzero = False, seen = False, neg_exp = False, point = False
        cdef char* stop
        cdef double v, ln
        cdef int status = OK, n_sig = 0, n_frac = 0
        cdef int64_t mant = 0, ex = 0
        if p >= self.size:
            return END
        e = self.size  # the grammar's scan finds the token's end
        q = p
        if b[q] == 43 or b[q] == 45:
            q += 1
        while q < e and (_digit(b[q]) or (b[q] == 46 and not point)):  # digits, one "."
            if b[q] == 46:
                point = True
            else:
                nonzero = nonzero or b[q] != 48
                seen = True
                n_frac += point
                if nonzero:
                    n_sig += 1
                    mant = mant * 10 + (b[q] - 48) if n_sig <= 18 else mant
            q += 1
        if seen and q < e and (b[q] == 101 or b[q] == 69):   # e E
            q += 1
            if q < e and (b[q] == 43 or b[q] == 45):
                neg_exp = b[q] == 45
                q += 1
            if q == e or not _digit(b[q]):
                seen = False
            while q < e and _digit(b[q]):
                ex = ex * 10 + (b[q] - 48) if ex < 100000 else ex
                q += 1
        if seen and (q == e or KIND[b[q]] != 0):
            e = q
        else:
            e = self._end(p)
            seen = False
        if not seen:
            if mode & NEG_INF and _neg_inf(b + p, e - p):
                value[0] = -INFINITY
                self.at, self.index = e, self.index + 1
                return OK
            return NOT_NUMBER
        if mode & NONNEG and b[p] == 45 and nonzero:
            return NEGATIVE
        ex = (-ex if neg_exp else ex) - n_frac
        if n_sig <= 15 and -22 <= ex <= 22:  # exact operands, one rounding (Clinger 1990)
            v = mant * POW10[ex] if ex >= 0 else mant / POW10[-ex]
            if b[p] == 45:
                v = -v
        elif self.c_locale:
            v = strtod(<const char*>(b + p), &stop)
        else:
            v = PyOS_string_to_double(<const char*>(b + p), &stop, None)
        if mode & LOG:
            if (v < TINY and nonzero) or v > HUGE:   # 0 only from a written zero
                ln = _ln_decimal(b + p, e - p)
                v = 1.0
                if ln != ln:
                    status = EXPONENT
                else:
                    specials.append((k, ln))
        elif v > HUGE or v < -HUGE:
            status = OVERFLOW
        value[0] = v
        self._poll()
        self.at, self.index = e, self.index + 1
        return status

    cdef void _locale(self) noexcept:
        cdef const char* point = localeconv().decimal_point
        self.c_locale = point[0] == 46 and point[1] == 0

    def read_numbers(self, double[::1] out, int mode, list specials):
        """The next len(out) tokens as numbers (module docstring's modes; `LOG`: see
        `_number`): (status, entries read)."""
        cdef Py_ssize_t done = 0
        cdef int status
        self._locale()
        status = self._numbers(&out[0] if out.shape[0] else NULL, out.shape[0], mode,
                               specials, 0, &done)
        return status, done

    cdef int _numbers(self, double* out, Py_ssize_t count, int mode, list specials,
                      Py_ssize_t o, Py_ssize_t* done) except -1:
        """count numbers into out (entry o of the caller's array on): the status, and in
        done the entries read. An overflow (`OVERFLOW`, `EXPONENT`) is reported once the others are read: a
        token that is no number, or a negative one, after it comes first."""
        cdef Py_ssize_t k, over = -1, at = 0, index = 0
        cdef int status, late = OK
        for k in range(count):
            if over < 0:
                at, index = self.at, self.index
            status = self._number(mode, &out[k], specials, o + k)
            if status == OVERFLOW or status == EXPONENT:
                if over < 0:
                    over, late = k, status
            elif status != OK:
                done[0] = k
                return status
        if over >= 0:
            self.at, self.index = at, index
            done[0] = over
            return late
        done[0] = count
        return OK

    def read_blocks(self, int64_t[::1] sizes, double[::1] out, int mode, list specials,
                    bint counted, bint check, int64_t lo):
        """Blocks of numbers, one after another into ``out``: with ``counted`` each its
        count first (an integer >= lo; with ``check`` it must equal sizes[f], never when
        sizes[f] < 0, else it is stored there), then sizes[f] numbers. A count larger than
        the tokens left is `INSIDE`, found before its numbers are read: ``out`` needs no
        more entries than the file has tokens. Returns (status, block, entry within it
        (-1: the count token), the count read: -1 for one beyond int64, whose text the
        caller reads)."""
        cdef Py_ssize_t f, k, o = 0, at, index
        cdef int64_t c = 0
        cdef int status
        self._locale()
        for f in range(sizes.shape[0]):
            if counted:
                at, index = self.at, self.index
                status = self._int(lo, INT64_MAX, &c)
                if status == BIG:
                    return (SIZE if check else INSIDE), f, -1, -1
                if status != OK:
                    return status, f, -1, 0
                if check and c != sizes[f]:
                    self.at, self.index = at, index
                    return SIZE, f, -1, c
                sizes[f] = c
            else:
                c = sizes[f]
            if c > self.count - self.index:
                return INSIDE, f, 0, c
            status = self._numbers(&out[o] if c else NULL, c, mode, specials, o, &k)
            if status != OK:
                return status, f, k, 0
            o += c
        return OK, sizes.shape[0], 0, 0

    # -- scopes ----------------------------------------------------------------------

    def read_scopes(self, Py_ssize_t n_factors, Py_ssize_t n, int64_t[::1] arity,
                    int64_t[::1] variables, int64_t[::1] stamp):
        """``n_factors`` scopes: each its arity (in 0..n) then that many distinct variables
        (in 0..n-1), stored in ``arity`` and, one scope after another, in ``variables``
        when it is not empty (else only counted). ``stamp``: int64[n] of zeros, work.
        Returns (status, factor, 0 for its arity token or 1 for a variable token, the
        variables read)."""
        cdef Py_ssize_t f, k, total = 0, at = 0, index = 0
        cdef int64_t a = 0, v = 0
        cdef int status
        cdef bint store = variables.shape[0] > 0, twice
        for f in range(n_factors):
            status = self._int(0, n, &a)
            if status != OK:
                return (RANGE if status == BIG else status), f, 0, total
            arity[f] = a
            twice = False
            for k in range(a):
                at, index = self.at, self.index
                status = self._int(0, n - 1, &v)
                if status != OK:
                    return (RANGE if status == BIG else status), f, 1, total
                twice = twice or stamp[v] == f + 1
                stamp[v] = f + 1
                if store:
                    variables[total] = v
                total += 1
            if twice:  # blamed on the scope's last variable, once all of them are read
                self.at, self.index = at, index
                return TWICE, f, 1, total
        return OK, n_factors, 0, total


cdef bint _neg_inf(const unsigned char* s, Py_ssize_t n) noexcept:
    """Is s[:n] -inf or -infinity (any case)?"""
    cdef const char* word = b"-infinity"
    cdef Py_ssize_t k
    if n != 4 and n != 9:
        return False
    for k in range(n):
        if s[k] != word[k] and s[k] != word[k] - 32 * (word[k] >= 97):
            return False
    return True


cdef double _ln_decimal(const unsigned char* s, Py_ssize_t n) noexcept:
    """ln of the non-negative number token s[:n] (it matches the grammar), from its digits
    and exponent: -inf for zero, NaN for an exponent of more than 15 digits. The value is
    head * 10^(exponent - fraction digits + dropped digits), head its first 17
    significant digits: log(head) + that power * ln 10, as `fwcore.io.uai` computed it
    in Python."""
    cdef Py_ssize_t q = 0, n_frac = 0, n_sig = 0, n_head = 0, exp_digits = 0
    cdef uint64_t head = 0
    cdef int64_t e = 0
    cdef bint started = False, neg_exp = False, point = False
    if s[0] == 43 or s[0] == 45:
        q += 1
    while q < n and (_digit(s[q]) or s[q] == 46):   # the mantissa, its point once
        if s[q] == 46:
            point = True
        else:
            n_frac += point
            if s[q] != 48 or started:
                started = True
                n_sig += 1
                if n_head < 17:
                    head = head * 10 + (s[q] - 48)
                    n_head += 1
        q += 1
    if not started:
        return -INFINITY
    if q < n:                      # the exponent
        q += 1
        if s[q] == 43 or s[q] == 45:
            neg_exp = s[q] == 45
            q += 1
        while q < n and s[q] == 48:
            q += 1
        while q < n:
            exp_digits += 1
            if exp_digits > 15:
                return NAN
            e = e * 10 + (s[q] - 48)
            q += 1
    if neg_exp:
        e = -e
    return log(<double>head) + <double>(e - n_frac + n_sig - n_head) * LN10


# -- formatting ---------------------------------------------------------------------------

cdef inline Py_ssize_t _put_int(char* out, int64_t v) noexcept:
    """Write v in decimal at out; its length."""
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, k, q
    cdef uint64_t u = <uint64_t>(-v) if v < 0 else <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    k = 0
    if v < 0:
        out[0] = 45
        k = 1
    for q in range(n):
        out[k + q] = tmp[n - 1 - q]
    return k + n


def format_blocks(const double[::1] values, const int64_t[::1] off, bytes before,
                  bytes after):
    """The blocks of ``values`` (block f: values[off[f]:off[f + 1]]) as text: for each,
    ``before``, its size, ``after`` and its entries with 17 significant digits (Python's
    ``%.17g``), separated by spaces. Returns bytes."""
    cdef Py_ssize_t f, k, nb = len(before), na = len(after), m = off.shape[0] - 1
    cdef Py_ssize_t cap = (off[m] - off[0]) * 25 + m * (24 + nb + na)
    cdef bytearray text = bytearray(cap)
    cdef char* out = text
    cdef char* s
    cdef const char* pb = before
    cdef const char* pa = after
    cdef Py_ssize_t n, used = 0
    for f in range(m):
        memcpy(out + used, pb, nb)
        used += nb
        used += _put_int(out + used, off[f + 1] - off[f])
        memcpy(out + used, pa, na)
        used += na
        for k in range(off[f], off[f + 1]):
            if k > off[f]:
                out[used] = 32
                used += 1
            s = PyOS_double_to_string(values[k], b"g", 17, 0, NULL)
            n = len(s)
            memcpy(out + used, s, n)
            used += n
            PyMem_Free(s)
    return PyBytes_FromStringAndSize(out, used)


def format_int_blocks(const int64_t[::1] values, const int64_t[::1] off, bytes before,
                      bint counted):
    """The blocks of ``values`` as text: for each, ``before``, with ``counted`` its size,
    then its entries, separated by spaces. Returns bytes."""
    cdef Py_ssize_t f, k, nb = len(before), m = off.shape[0] - 1
    cdef Py_ssize_t cap = (off[m] - off[0]) * 21 + m * (21 + nb)
    cdef bytearray text = bytearray(cap)
    cdef char* out = text
    cdef const char* pb = before
    cdef Py_ssize_t used = 0
    for f in range(m):
        memcpy(out + used, pb, nb)
        used += nb
        if counted:
            used += _put_int(out + used, off[f + 1] - off[f])
        for k in range(off[f], off[f + 1]):
            if k > off[f] or counted:
                out[used] = 32
                used += 1
            used += _put_int(out + used, values[k])
    return PyBytes_FromStringAndSize(out, used)


# -- assembling a pairwise model from its factors -------------------------------------------

def add_tables(double[::1] theta, const double[::1] tables, const int64_t[::1] table_off,
               const int64_t[::1] dest, const int64_t[::1] rows, const int64_t[::1] cols,
               const signed char[::1] flipped):
    """theta[dest[f]:] += table f (tables[table_off[f]:table_off[f + 1]]) for each factor
    f, in order; a flipped table (rows[f] x cols[f], written over (j, i)) is added
    transposed. ``-inf`` + anything finite stays -inf."""
    cdef Py_ssize_t f, a, c, o, d, r, q
    with nogil:
        for f in range(table_off.shape[0] - 1):
            o, d = table_off[f], dest[f]
            if not flipped[f]:
                for a in range(table_off[f + 1] - o):
                    theta[d + a] += tables[o + a]
            else:
                r, q = rows[f], cols[f]
                for a in range(r):
                    for c in range(q):
                        theta[d + c * r + a] += tables[o + a * q + c]
