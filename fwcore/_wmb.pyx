# cython: language_level=3
"""Weighted mini-bucket elimination (`fwcore.marginals.wmb`) in kernels over flat arrays:
the mini-bucket tree is built (`mini_buckets`) and every pass runs (`forward`, `backward`,
`decode`, `read`) in one call over the whole tree, with no Python per bucket or cluster.

The tree (`Tree`) is struct of arrays. Cluster c eliminates ``c_var[c]`` from its scope
``c_scope[c_start[c]:c_start[c + 1]]`` (latest-eliminated variable first, so ``c_var[c]`` is
the last axis and every sub-scope keeps the order); it sends its message to ``c_parent[c]``
(−1: a root, whose message is a number) and holds the model's factors ``own_list[own_start[c]:
own_start[c + 1]]``; its children are ``ch_list[ch_start[c]:ch_start[c + 1]]``; the clusters
of the p-th variable eliminated (``order[p]``) are ``b_start[p]`` to ``b_start[p + 1]`` (a
bucket), so children come before their parent. The model enters as flat factors: scopes
(``f_start``, ``f_var``), tables (``f_tab`` from ``f_off[f]``, C order over the scope as
given), and ``fixed`` (a variable's evidence state, −1 when free), read in place: a cluster's
table f_c (its factors, its reparameterisation ``repar`` on its variable and its children's
forward messages ``fwd``) is rebuilt in scratch when a pass needs it, never stored, so a
tree's memory is its messages (``fwd``, ``bwd``: one table over scope minus variable per
cluster, from ``msg_off[c]``) and the scratch of its largest bucket.

Every operand is added into a cluster's table by its strides on the cluster's axes (0 where
it lacks one), a row (the last axis) at a time; the log-sum-exps run over rows with a
branch-free exp vectorised across entries (GCC clones for x86-64-v4/v3). The weights are
one float per cluster: the primitives take w > 0 (and w = 0, max, in `_rows_wlse`), the
places where negative weights (a lower bound) would enter. Long calls poll the deadline
``stop_at`` (`time.monotonic` seconds; inf: none) and, in the main thread, Python's signal
handlers every POLL entries of work (a few milliseconds): a passed deadline returns
`TIMEUP`, Ctrl-C raises KeyboardInterrupt, in both cases with the pass unfinished.
Each kernel has a NumPy twin in tests/test_wmb.py.
"""
import threading

import numpy as np

from libc.math cimport INFINITY, exp, log
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memset

from ._clock cimport monotonic


cdef extern from "Python.h":
    int PyErr_CheckSignals()  # declared without ``except``: its exception stays pending

#: most axes of a table (NumPy's own limit is 64)
cdef enum:
    _AXES = 64
    # entries of work between two polls of the clock and the signal handlers
    POLL = 1 << 18
MAX_AXES = _AXES
# what the kernels return: done, deadline passed, Ctrl-C (exception pending), no memory
cdef enum:
    DONE = 0
    TIMEUP = 1
    SIGNALLED = 2
    NO_MEMORY = 3
#: the kernels' statuses for Python: a pass ended, or its deadline passed first
PASS_DONE, PASS_TIMEUP = DONE, TIMEUP
#: rows shorter than this are summed in place (a vectorised call costs more than them)
cdef Py_ssize_t _SHORT = 16

# The row loops in C, vectorised by GCC (runtime-dispatched clones for x86-64-v4/v3 on
# Linux, `omp simd` enabled by -fopenmp-simd in setup.py, no OpenMP runtime).
cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    #include <stddef.h>
    #if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__x86_64__) \
        && defined(__linux__) && defined(__GLIBC__)
    #define WMB_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
    #else
    #define WMB_CLONES
    #endif
    #if defined(__GNUC__)
    #define WMB_INLINE static inline __attribute__((always_inline))
    #else
    #define WMB_INLINE static inline
    #endif
    /* exp(x) for x <= 0 (x may be -inf), 0 below -708: x = k ln 2 + r with |r| <= ln 2 / 2
       (k rounded by the 1.5 * 2^52 shifter, ln 2 split in two), exp(r) by its Taylor
       polynomial to r^13 (truncation < 2e-17), 2^k written into the exponent bits;
       branch-free, so that loops calling it vectorise. */
    WMB_INLINE double wmb_exp(double x) {
        const double shifter = 6755399441055744.0, log2e = 1.4426950408889634,
                     ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
        double xc = x < -708.0 ? -708.0 : x;
        double t = xc * log2e + shifter, k = t - shifter;
        double r = (xc - k * ln2_hi) - k * ln2_lo;
        double p = 1.6059043836821613e-10;
        p = p * r + 2.08767569878681e-09;
        p = p * r + 2.505210838544172e-08;
        p = p * r + 2.755731922398589e-07;
        p = p * r + 2.7557319223985893e-06;
        p = p * r + 2.48015873015873e-05;
        p = p * r + 0.0001984126984126984;
        p = p * r + 0.001388888888888889;
        p = p * r + 0.008333333333333333;
        p = p * r + 0.041666666666666664;
        p = p * r + 0.16666666666666666;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        uint64_t bits; memcpy(&bits, &t, 8);
        bits = (uint64_t)((int64_t)(bits - 0x4338000000000000ULL) + 1023) << 52;
        double scale; memcpy(&scale, &bits, 8);
        return x < -708.0 ? 0.0 : p * scale;
    }
    /* max(top, x[0..n)) */
    WMB_CLONES static double wmb_row_max(const double *x, ptrdiff_t n, double top) {
        #pragma omp simd reduction(max:top)
        for (ptrdiff_t k = 0; k < n; k++) top = x[k] > top ? x[k] : top;
        return top;
    }
    /* sum of exp((x[k] - top) inv) over k < n, top finite and >= every x[k] */
    WMB_CLONES static double wmb_row_sum_exp(const double *x, ptrdiff_t n, double top,
                                             double inv) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (ptrdiff_t k = 0; k < n; k++) s += wmb_exp((x[k] - top) * inv);
        return s;
    }
    /* min(top, x[0..n)) */
    WMB_CLONES static double wmb_row_min(const double *x, ptrdiff_t n, double top) {
        #pragma omp simd reduction(min:top)
        for (ptrdiff_t k = 0; k < n; k++) top = x[k] < top ? x[k] : top;
        return top;
    }
    /* top[k] = min(top[k], x[k]) for k < n */
    WMB_CLONES static void wmb_min_into(const double *x, double *top, ptrdiff_t n) {
        #pragma omp simd
        for (ptrdiff_t k = 0; k < n; k++) top[k] = x[k] < top[k] ? x[k] : top[k];
    }
    /* top[k] = max(top[k], x[k]) for k < n */
    WMB_CLONES static void wmb_max_into(const double *x, double *top, ptrdiff_t n) {
        #pragma omp simd
        for (ptrdiff_t k = 0; k < n; k++) top[k] = x[k] > top[k] ? x[k] : top[k];
    }
    /* acc[k] += exp((x[k] - top[k]) inv) where top[k] is finite, for k < n */
    WMB_CLONES static void wmb_sum_exp_into(const double *x, const double *top, double *acc,
                                            ptrdiff_t n, double inv) {
        #pragma omp simd
        for (ptrdiff_t k = 0; k < n; k++) {
            double e = wmb_exp((x[k] - top[k]) * inv);
            acc[k] += top[k] > -HUGE_VAL ? e : 0.0;
        }
    }
    /* x[k] = exp((x[k] - top) inv) for k < n, top finite and >= every x[k]; returns their sum */
    WMB_CLONES static double wmb_exp_shift(double *x, ptrdiff_t n, double top, double inv) {
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (ptrdiff_t k = 0; k < n; k++) {
            double e = wmb_exp((x[k] - top) * inv);
            x[k] = e;
            s += e;
        }
        return s;
    }
    /* top[r] = max_t x[r inner + t] and sum[r] = sum_t exp((x[r inner + t] - top[r]) inv)
       (0 when top[r] = -inf) for r < rows: short rows, vectorised across rows */
    WMB_CLONES static void wmb_short_rows(const double *x, ptrdiff_t rows, ptrdiff_t inner,
                                          double inv, double *top, double *sum) {
        if (inner == 2) {      /* binary: one exp a row, exp(0) = 1 for the max */
            #pragma omp simd
            for (ptrdiff_t r = 0; r < rows; r++) {
                double a = x[2 * r], b = x[2 * r + 1], t = a > b ? a : b, d = a - b;
                top[r] = t;
                sum[r] = t > -HUGE_VAL ? 1.0 + wmb_exp((d < 0.0 ? d : -d) * inv) : 0.0;
            }
            return;
        }
        #pragma omp simd
        for (ptrdiff_t r = 0; r < rows; r++) {
            const double *row = x + r * inner;
            double t = row[0], s = 0.0;
            for (ptrdiff_t k = 1; k < inner; k++) t = row[k] > t ? row[k] : t;
            for (ptrdiff_t k = 0; k < inner; k++) s += wmb_exp((row[k] - t) * inv);
            top[r] = t;
            sum[r] = t > -HUGE_VAL ? s : 0.0;
        }
    }
    """
    double wmb_exp(double x) noexcept nogil
    double wmb_row_max(const double* x, Py_ssize_t n, double top) noexcept nogil
    double wmb_row_min(const double* x, Py_ssize_t n, double top) noexcept nogil
    void wmb_min_into(const double* x, double* top, Py_ssize_t n) noexcept nogil
    double wmb_row_sum_exp(const double* x, Py_ssize_t n, double top, double inv) noexcept nogil
    void wmb_max_into(const double* x, double* top, Py_ssize_t n) noexcept nogil
    void wmb_sum_exp_into(const double* x, const double* top, double* acc, Py_ssize_t n,
                          double inv) noexcept nogil
    double wmb_exp_shift(double* x, Py_ssize_t n, double top, double inv) noexcept nogil
    void wmb_short_rows(const double* x, Py_ssize_t rows, Py_ssize_t inner, double inv,
                        double* top, double* sum) noexcept nogil




def exp_nonpositive(const double[::1] x, double[::1] out):
    """out = exp(x) for x ≤ 0 (−inf included; 0 below −708) by the kernels' branch-free
    exp (its NumPy twin is np.exp)."""
    cdef Py_ssize_t k
    with nogil:
        for k in range(x.shape[0]):
            out[k] = wmb_exp(x[k])


# -- polling ------------------------------------------------------------------------------

ctypedef struct Poll:
    int64_t unpolled
    double stop_at
    bint main_thread


cdef void _poll_init(Poll* q, double stop_at) noexcept nogil:
    q.unpolled = POLL        # the first poll reads the clock at once
    q.stop_at = stop_at


cdef int _poll(Poll* q, int64_t work) noexcept nogil:
    """Count ``work`` entries; every POLL of them, TIMEUP when ``stop_at`` has passed, and
    in the main thread SIGNALLED when a signal handler raised (its exception pending)."""
    q.unpolled += work
    if q.unpolled < POLL:
        return DONE
    q.unpolled = 0
    if monotonic() >= q.stop_at:
        return TIMEUP
    if q.main_thread:
        with gil:
            if PyErr_CheckSignals() != 0:
                return SIGNALLED
    return DONE


cdef int _raise_pending() except -1:
    """Raise the exception a signal handler left pending (`_poll`)."""
    return -1


cdef object _finish(int status):
    """A kernel's status for Python: SIGNALLED raises the pending KeyboardInterrupt."""
    if status == SIGNALLED:
        _raise_pending()
    if status == NO_MEMORY:
        raise MemoryError("weighted mini-bucket kernels ran out of memory")
    return status


# -- row primitives -----------------------------------------------------------------------

cdef void _rows_wlse(const double* x, int64_t rows, int64_t inner, double w, double* out,
                     double* tmp) noexcept nogil:
    """out[r] = w log Σ_t exp(x[r, t] / w) for w > 0 (w = 0: max_t x[r, t]); −inf for a row
    of −inf. For w < 0 (a lower bound's negative weights) the same, at most min_t x[r, t],
    from the row's min: −inf where the row has a −inf entry. ``tmp``: ``rows`` doubles of
    scratch."""
    cdef int64_t r, t
    cdef double top, inv
    if w < 0.0:
        inv = 1.0 / w
        for r in range(rows):
            top = wmb_row_min(x + r * inner, inner, INFINITY)
            out[r] = (top + w * log(wmb_row_sum_exp(x + r * inner, inner, top, inv))
                      if top > -INFINITY else -INFINITY)
        return
    if w == 0.0:
        for r in range(rows):
            out[r] = wmb_row_max(x + r * inner, inner, -INFINITY)
        return
    inv = 1.0 / w
    if inner < _SHORT:
        wmb_short_rows(x, rows, inner, inv, out, tmp)
        for r in range(rows):
            out[r] = out[r] + w * log(tmp[r]) if tmp[r] > 0.0 else -INFINITY
        return
    for r in range(rows):
        top = wmb_row_max(x + r * inner, inner, -INFINITY)
        out[r] = (top + w * log(wmb_row_sum_exp(x + r * inner, inner, top, inv))
                  if top > -INFINITY else -INFINITY)


cdef inline int64_t _next_row(int64_t* index, const int64_t* shape, const int64_t* stride,
                              int64_t d, int64_t j) noexcept nogil:
    """Advance the odometer ``index`` over every axis but the last by one row; returns the
    offset of the new row given ``j``, the old row's (both at last-axis index 0)."""
    cdef int64_t k = d - 2
    while k >= 0:
        index[k] += 1
        j += stride[k]
        if index[k] < shape[k]:
            return j
        j -= shape[k] * stride[k]
        index[k] = 0
        k -= 1
    return j


cdef int64_t _merge(int64_t d, const int64_t* shape, const int64_t* stride,
                    int64_t* merged) noexcept nogil:
    """Adjacent axes merged where the slower one's stride is the faster one's times its
    extent (a contiguous run, or a run the operand lacks: strides 0), so that rows are
    long: returns the number of axes left; their extents go to merged[d:], their
    strides (each the stride of its fastest axis) to merged[2d:]."""
    cdef int64_t a, top = d - 1, k
    cdef int64_t* ext = merged + d
    cdef int64_t* st = merged + 2 * d
    ext[top] = shape[d - 1]
    st[top] = stride[d - 1]
    for a in range(d - 2, -1, -1):
        if stride[a] == st[top] * ext[top]:
            ext[top] *= shape[a]
        else:
            top -= 1
            ext[top] = shape[a]
            st[top] = stride[a]
    for k in range(d - top):
        ext[k] = ext[top + k]
        st[k] = st[top + k]
    return d - top


cdef void _wlse_into(const double* x, int64_t n, int64_t d0, const int64_t* shape0,
                     const int64_t* out_stride0, double w, double* out, int64_t m,
                     double* acc, int64_t* index) noexcept nogil:
    """out[j] = w log Σ_{i → j} exp(x[i] / w) (w ≠ 0), entry i of the C-order table ``x``
    of ``shape0`` going to out[Σ_k index_k(i) out_stride0[k]]; −inf where every entry
    sent to j is −inf (w > 0) or some entry is (w < 0: the shift is the min, not the max). The last axis's out stride is 0 or 1; ``acc``: m doubles of
    scratch, ``index``: 3 d0 of scratch. Read twice in the table's own order, its axes
    merged (`_merge`), a row at a time (rows of at least _SHORT vectorised)."""
    cdef int64_t d = _merge(d0, shape0, out_stride0, index)
    cdef const int64_t* shape = index + d0
    cdef const int64_t* out_stride = index + 2 * d0
    cdef int64_t i, j, t, inner = shape[d - 1], step = out_stride[d - 1]
    cdef double inv = 1.0 / w, top
    cdef bint low = w < 0.0
    for j in range(d):
        index[j] = 0
    for j in range(m):
        out[j] = INFINITY if low else -INFINITY
        acc[j] = 0.0
    j = 0
    i = 0
    while i < n:                      # the max (w < 0: min) sent to each out entry
        if inner < _SHORT:
            for t in range(inner):
                if (x[i + t] < out[j + t * step]) if low else (x[i + t] > out[j + t * step]):
                    out[j + t * step] = x[i + t]
        elif step == 0:
            out[j] = (wmb_row_min(&x[i], inner, out[j]) if low else
                      wmb_row_max(&x[i], inner, out[j]))
        elif low:
            wmb_min_into(&x[i], &out[j], inner)
        else:
            wmb_max_into(&x[i], &out[j], inner)
        i += inner
        j = _next_row(index, shape, out_stride, d, j)
    j = 0
    i = 0
    while i < n:                      # Σ exp((x − max) / w)
        if inner < _SHORT:
            for t in range(inner):
                top = out[j + t * step]
                if top > -INFINITY:
                    acc[j + t * step] += wmb_exp((x[i + t] - top) * inv)
        elif step == 0:
            if out[j] > -INFINITY:
                acc[j] += wmb_row_sum_exp(&x[i], inner, out[j], inv)
        else:
            wmb_sum_exp_into(&x[i], &out[j], &acc[j], inner, inv)
        i += inner
        j = _next_row(index, shape, out_stride, d, j)
    for j in range(m):
        if out[j] > -INFINITY:
            out[j] += w * log(acc[j])


def weighted_logsumexp(const double[::1] x, const long long[::1] shape,
                       const long long[::1] out_stride, double w, double[::1] out):
    """out[j] = w log Σ_{i → j} exp(x[i] / w) for w ≠ 0, where entry i of ``x`` (a table of
    ``shape``, C order, flattened) goes to out[Σ_k index_k(i) out_stride[k]]; −inf where
    every entry sent to j is −inf (w < 0: where one is). The last axis's out stride is 0 (summed) or 1, and every
    out entry receives at least one entry (the passes' marginalisation, `_wlse_into`)."""
    cdef int64_t d = shape.shape[0]
    cdef int64_t index[3 * _AXES]
    cdef double[::1] acc = np.zeros(max(out.shape[0], 1))
    if not 0 < d <= MAX_AXES:
        raise ValueError(f"a table of {d} axes; between 1 and {MAX_AXES}")
    if out_stride[d - 1] not in (0, 1):
        raise ValueError(f"the last axis's out stride must be 0 or 1; got {out_stride[d - 1]}")
    with nogil:
        _wlse_into(&x[0], x.shape[0], d, <const int64_t*>&shape[0],
                   <const int64_t*>&out_stride[0], w, &out[0], out.shape[0], &acc[0], index)


def rows_wlse(const double[:, ::1] x, double w, double[::1] out):
    """out[r] = w log Σ_t exp(x[r, t] / w) (w ≠ 0; w = 0: the row's max), −inf for a row of
    −inf (w < 0: with a −inf): the forward messages' elimination (`_rows_wlse`)."""
    cdef double[::1] tmp = np.empty(max(x.shape[0], 1))
    if x.shape[0] and x.shape[1]:
        with nogil:
            _rows_wlse(&x[0, 0], x.shape[0], x.shape[1], w, &out[0], &tmp[0])


cdef double _cond_entropy(const double* b, int64_t rows, int64_t inner, double w,
                          double* lr, double* hr) noexcept nogil:
    """H(x_v | the rest) under p ∝ exp(b / w) (x_v the last axis of the rows x inner table
    ``b``): Σ_r p(r) H(row r), from each row's log mass and entropy (``lr``, ``hr``: rows
    doubles of scratch); 0 when b is all −inf. For w < 0 the rows are shifted by their min
    (a row with a −inf entry, where p is not defined, counts as no mass)."""
    cdef int64_t r, t
    cdef double top, s, m1, z, e, inv = 1.0 / w, gtop = -INFINITY, mass = 0.0, h = 0.0
    cdef const double* row
    for r in range(rows):
        row = b + r * inner
        top = wmb_row_min(row, inner, INFINITY) if w < 0.0 else wmb_row_max(row, inner, -INFINITY)
        if top == -INFINITY:
            lr[r] = -INFINITY
            hr[r] = 0.0
            continue
        s = 0.0
        m1 = 0.0
        for t in range(inner):
            if row[t] > -INFINITY:
                z = (row[t] - top) * inv
                e = wmb_exp(z)
                s += e
                m1 += e * z
        hr[r] = log(s) - m1 / s
        lr[r] = top * inv + log(s)
        if lr[r] > gtop:
            gtop = lr[r]
    if gtop == -INFINITY:
        return 0.0
    for r in range(rows):
        if lr[r] > -INFINITY:
            e = exp(lr[r] - gtop)
            mass += e
            h += e * hr[r]
    return h / mass


def conditional_entropy(const double[:, ::1] b, double w):
    """H(x_v | the rest) under the distribution ∝ exp(b / w) over the rows x x_v table
    ``b`` (the weights' gradient, `_cond_entropy`)."""
    cdef double[::1] lr = np.empty(max(b.shape[0], 1)), hr = np.empty(max(b.shape[0], 1))
    cdef double h = 0.0
    if b.shape[0] and b.shape[1]:
        with nogil:
            h = _cond_entropy(&b[0, 0], b.shape[0], b.shape[1], w, &lr[0], &hr[0])
    return h


# -- the symbolic tree --------------------------------------------------------------------

ctypedef struct Vec:
    # a growable array of int64 (``i64``) or int32 (``i32``) entries
    int64_t* i64
    int32_t* i32
    int64_t size
    int64_t capacity


cdef bint _grow(Vec* v, int64_t need, bint wide) noexcept nogil:
    """Room for ``need`` entries (doubling); False when out of memory."""
    cdef int64_t c = v.capacity
    cdef void* p
    if need <= c:
        return True
    while c < need:
        c = 2 * c if c else 64
    p = realloc(<void*>v.i64 if wide else <void*>v.i32, c * (8 if wide else 4))
    if p == NULL:
        return False
    if wide:
        v.i64 = <int64_t*>p
    else:
        v.i32 = <int32_t*>p
    v.capacity = c
    return True


cdef inline bint _push64(Vec* v, int64_t x) noexcept nogil:
    if not _grow(v, v.size + 1, True):
        return False
    v.i64[v.size] = x
    v.size += 1
    return True


cdef inline bint _push32(Vec* v, int32_t x) noexcept nogil:
    if not _grow(v, v.size + 1, False):
        return False
    v.i32[v.size] = x
    v.size += 1
    return True


cdef void _free_vec(Vec* v) noexcept nogil:
    free(v.i64)
    free(v.i32)
    v.i64, v.i32, v.size, v.capacity = NULL, NULL, 0, 0


cdef int _cmp_i64(const void* pa, const void* pb) noexcept nogil:
    cdef int64_t a = (<const int64_t*>pa)[0], b = (<const int64_t*>pb)[0]
    return (a > b) - (a < b)


cdef int64_t _union(const int32_t* a, int64_t na, const int32_t* b, int64_t nb,
                    int32_t* out, const int32_t* card, const int64_t* order,
                    double* entries) noexcept nogil:
    """The union of two position lists sorted in decreasing order into ``out`` (same order);
    returns its length, its table entries (product of the cards) in ``entries``."""
    cdef int64_t i = 0, j = 0, k = 0
    cdef int32_t x
    cdef double e = 1.0
    while i < na or j < nb:
        if j >= nb or (i < na and a[i] > b[j]):
            x = a[i]
            i += 1
        elif i >= na or b[j] > a[i]:
            x = b[j]
            j += 1
        else:
            x = a[i]
            i += 1
            j += 1
        out[k] = x
        e *= card[order[x]]
        k += 1
    entries[0] = e
    return k


def mini_buckets(const int[::1] card, const long long[::1] f_start, const int[::1] f_var,
                 const int[::1] fixed, const long long[::1] order, long long max_vars,
                 double max_entries, double stop_at, double max_messages=INFINITY):
    """The mini-bucket tree of the elimination ``order`` (the free variables; ``fixed[v]``
    ≥ 0 marks the others, left out of every scope): each factor goes to the bucket of its
    first-eliminated free variable; a bucket's items (its factors, then the messages that
    arrive, in that order) are taken from the fewest variables up (stably), each joined to
    the mini-bucket of fewest variables it fits in (at most ``max_vars`` variables and
    ``max_entries`` table entries; first of equals), else starting its own, as Merlin's
    greedy partition does with the pair of fewest variables; each mini-bucket is a cluster
    whose message (its scope but the bucket's variable) joins the bucket of its next
    variable. Returns ``(c_var, c_start, c_scope, c_parent, b_start, f_cluster)`` (the
    `Tree`'s arrays; ``f_cluster[f]`` the cluster holding factor f, −1 when all its
    variables are fixed), None when ``stop_at`` passed first, or False as soon as the
    clusters' messages (entries over scope minus variable) pass ``max_messages`` entries."""
    cdef int64_t n = card.shape[0], nf = f_start.shape[0] - 1, nb = order.shape[0]
    cdef int64_t p, f, k, i, j, g, m, length, best, fewest, cid, it, n_groups = 0, mx
    cdef int64_t n_items, start
    cdef double e, best_entries, messages = 0.0
    cdef int status = DONE
    cdef bint failed = False, too_large = False
    cdef Poll q
    cdef long long[::1] pos = np.full(max(n, 1), -1, dtype=np.int64)
    cdef long long[::1] head = np.full(max(nb, 1), -1, dtype=np.int64)
    cdef long long[::1] tail = np.full(max(nb, 1), -1, dtype=np.int64)
    cdef long long[::1] b_start = np.zeros(nb + 1, dtype=np.int64)
    cdef int[::1] f_cluster = np.full(max(nf, 1), -1, dtype=np.int32)
    # items: scope (positions, decreasing) in ``pool``, kind (factor f ≥ 0, message of
    # cluster c as −c − 1), the next item of its bucket (int32 but the pool's offsets)
    cdef Vec v[16]
    cdef Vec* it_start = &v[0]
    cdef Vec* it_len = &v[1]
    cdef Vec* it_kind = &v[2]
    cdef Vec* it_next = &v[3]
    cdef Vec* pool = &v[4]
    cdef Vec* sel = &v[5]
    cdef Vec* keys = &v[6]
    cdef Vec* grp = &v[7]
    cdef Vec* g_start = &v[8]         # the bucket's mini-buckets: scopes in ``g_pool``
    cdef Vec* g_len = &v[9]
    cdef Vec* g_pool = &v[10]
    cdef Vec* merged = &v[11]
    cdef Vec* c_var = &v[12]          # the clusters
    cdef Vec* c_start = &v[13]
    cdef Vec* c_scope = &v[14]
    cdef Vec* c_parent = &v[15]
    memset(v, 0, sizeof(v))
    q.main_thread = threading.current_thread() is threading.main_thread()
    _poll_init(&q, stop_at)
    with nogil:
        for p in range(nb):
            pos[order[p]] = p
        failed = not _push64(c_start, 0)
        for f in range(nf):                    # the factors, into their buckets
            if failed:
                break
            start = pool.size
            for k in range(f_start[f], f_start[f + 1]):
                if fixed[f_var[k]] < 0:
                    if not _push32(pool, <int32_t>pos[f_var[k]]):
                        failed = True
                        break
                    j = pool.size - 1          # insertion: decreasing positions
                    while j > start and pool.i32[j - 1] < pool.i32[j]:
                        pool.i32[j - 1], pool.i32[j] = pool.i32[j], pool.i32[j - 1]
                        j -= 1
            length = pool.size - start
            if failed or length == 0:
                continue
            p = pool.i32[pool.size - 1]
            it = it_start.size
            failed = not (_push64(it_start, start) and _push32(it_len, <int32_t>length) and
                          _push32(it_kind, <int32_t>f) and _push32(it_next, -1))
            if not failed:
                if tail[p] < 0:
                    head[p] = it
                else:
                    it_next.i32[tail[p]] = <int32_t>it
                tail[p] = it
        for p in range(nb):
            if failed:
                break
            status = _poll(&q, 64 + sel.size * (n_groups + 1))
            if status != DONE:
                break
            sel.size = 0                        # the bucket's items, fewest variables first
            it = head[p]
            while it >= 0:
                if not _push64(sel, it):
                    failed = True
                    break
                it = it_next.i32[it]
            if failed or not _grow(keys, sel.size, True) or not _grow(grp, sel.size, True):
                failed = True
                break
            for k in range(sel.size):
                keys.i64[k] = (<int64_t>it_len.i32[sel.i64[k]] << 32) | k
            qsort(keys.i64, sel.size, sizeof(int64_t), _cmp_i64)
            n_groups = 0
            g_pool.size = 0
            for k in range(sel.size):
                i = sel.i64[keys.i64[k] & 0xFFFFFFFFLL]
                best, fewest = -1, n + 1
                for g in range(n_groups):
                    if g_len.i64[g] >= fewest:
                        continue
                    mx = g_len.i64[g] + it_len.i32[i]
                    if not _grow(merged, mx, False):
                        failed = True
                        break
                    m = _union(g_pool.i32 + g_start.i64[g], g_len.i64[g],
                               pool.i32 + it_start.i64[i], it_len.i32[i], merged.i32,
                               <const int32_t*>&card[0], <const int64_t*>&order[0], &e)
                    if m <= max_vars and e <= max_entries:
                        best, fewest = g, g_len.i64[g]
                if failed:
                    break
                if best < 0:                    # a mini-bucket of its own
                    best = n_groups
                    n_groups += 1
                    if not (_grow(g_start, n_groups, True) and _grow(g_len, n_groups, True)
                            and _grow(g_pool, g_pool.size + it_len.i32[i], False)):
                        failed = True
                        break
                    g_start.i64[best] = g_pool.size
                    g_len.i64[best] = it_len.i32[i]
                    memcpy(g_pool.i32 + g_pool.size, pool.i32 + it_start.i64[i],
                           it_len.i32[i] * 4)
                    g_pool.size += it_len.i32[i]
                else:                           # joined: its scope moves to the pool's end
                    mx = g_len.i64[best] + it_len.i32[i]
                    if not (_grow(merged, mx, False) and _grow(g_pool, g_pool.size + mx, False)):
                        failed = True
                        break
                    m = _union(g_pool.i32 + g_start.i64[best], g_len.i64[best],
                               pool.i32 + it_start.i64[i], it_len.i32[i], merged.i32,
                               <const int32_t*>&card[0], <const int64_t*>&order[0], &e)
                    memcpy(g_pool.i32 + g_pool.size, merged.i32, m * 4)
                    g_start.i64[best] = g_pool.size
                    g_len.i64[best] = m
                    g_pool.size += m
                grp.i64[k] = best
                keys.i64[k] = i                 # (keys now holds the items in that order)
            if failed:
                break
            cid = c_var.size
            for g in range(n_groups):           # the clusters
                length = g_len.i64[g]
                e = 1.0
                for j in range(length):
                    k = order[g_pool.i32[g_start.i64[g] + j]]
                    e *= card[k]
                    if not _push32(c_scope, <int32_t>k):
                        failed = True
                messages += e / card[order[p]]
                failed = failed or not (_push32(c_var, <int32_t>order[p]) and
                                        _push32(c_parent, -1) and
                                        _push64(c_start, c_scope.size))
                if failed:
                    break
            too_large = messages > max_messages
            if failed or too_large:
                break
            for k in range(sel.size):
                i = keys.i64[k]
                if it_kind.i32[i] >= 0:
                    f_cluster[it_kind.i32[i]] = <int32_t>(cid + grp.i64[k])
                else:
                    c_parent.i32[-it_kind.i32[i] - 1] = <int32_t>(cid + grp.i64[k])
            for g in range(n_groups):           # their messages, to the next buckets
                length = g_len.i64[g] - 1
                if length == 0:
                    continue
                start = pool.size
                if not _grow(pool, start + length, False):
                    failed = True
                    break
                memcpy(pool.i32 + start, g_pool.i32 + g_start.i64[g], length * 4)
                pool.size += length
                j = pool.i32[start + length - 1]
                it = it_start.size
                if not (_push64(it_start, start) and _push32(it_len, <int32_t>length) and
                        _push32(it_kind, <int32_t>(-(cid + g) - 1)) and _push32(it_next, -1)):
                    failed = True
                    break
                if tail[j] < 0:
                    head[j] = it
                else:
                    it_next.i32[tail[j]] = <int32_t>it
                tail[j] = it
            b_start[p + 1] = c_var.size
    out = False if too_large else None
    if not failed and not too_large and status == DONE:
        out = (_copy32(c_var), _copy64(c_start), _copy32(c_scope), _copy32(c_parent),
               np.asarray(b_start), np.asarray(f_cluster)[:nf].copy())
    for k in range(16):
        _free_vec(&v[k])
    if failed:
        raise MemoryError("building the mini-bucket tree ran out of memory")
    _finish(status)
    return out


cdef object _copy64(const Vec* v):
    out = np.empty(v.size, dtype=np.int64)
    cdef long long[::1] o = out
    if v.size:
        memcpy(&o[0], v.i64, v.size * 8)
    return out


cdef object _copy32(const Vec* v):
    out = np.empty(v.size, dtype=np.int32)
    cdef int[::1] o = out
    if v.size:
        memcpy(&o[0], v.i32, v.size * 4)
    return out


# -- the tree and its passes --------------------------------------------------------------

ctypedef struct G:
    int64_t n, nf, nc, nb
    const int32_t* card
    const int32_t* fixed
    const int64_t* order
    const int64_t* f_start
    const int32_t* f_var
    const int64_t* f_off
    const double* f_tab
    const int32_t* c_var
    const int64_t* c_start
    const int32_t* c_scope
    const int32_t* c_parent
    const int64_t* b_start
    const int64_t* ch_start
    const int32_t* ch_list
    const int64_t* own_start
    const int32_t* own_list
    const int64_t* entries
    const int64_t* msg_off
    const int64_t* rep_off
    double* weight
    double* repar
    double* fwd
    double* bwd


#: the arrays of a `Tree`, by dtype (the model's, the tree's, then the state of a run)
TREE_INT32 = ("card", "fixed", "f_var", "c_var", "c_scope", "c_parent", "ch_list", "own_list")
TREE_INT64 = ("order", "f_start", "f_off", "c_start", "b_start", "ch_start", "own_start",
              "entries", "msg_off", "rep_off")
TREE_FLOAT = ("f_tab", "weight", "repar", "fwd", "bwd")


cdef const void* _data(object a):
    """The data of a contiguous array (NULL when empty); the caller keeps ``a`` alive."""
    cdef const unsigned char[::1] view = a.reshape(-1).view(np.uint8)
    return &view[0] if view.shape[0] else NULL


cdef class Tree:
    """The mini-bucket tree and the state of a run on it, as flat arrays (the module
    docstring names them): ``arrays`` maps each name of TREE_INT32 / TREE_INT64 /
    TREE_FLOAT to a C-contiguous array of that dtype (int32, int64, float64), which the
    kernels read and write in place; ``max_len``, ``max_entries``, ``max_bucket``,
    ``max_split``: axes of the largest cluster, entries of the largest cluster, of the
    largest bucket and of the largest bucket of several clusters (the scratch sizes);
    ``constant``: what the bound adds to the roots' messages (the factors of fixed
    variables only, log |X_v| of each free variable in no factor); ``has_backward``: a
    backward pass has ended (the weights' step uses its messages)."""

    cdef G g
    cdef readonly dict arrays
    cdef readonly int64_t max_len, max_entries, max_bucket, max_split
    cdef public double constant
    cdef public bint has_backward

    def __init__(self, dict arrays, int64_t max_len, int64_t max_entries, int64_t max_bucket,
                 int64_t max_split, double constant):
        for names, dtype in ((TREE_INT32, np.int32), (TREE_INT64, np.int64),
                             (TREE_FLOAT, np.float64)):
            for name in names:
                a = arrays[name]
                if not (isinstance(a, np.ndarray) and a.dtype == dtype and
                        a.flags.c_contiguous):
                    raise TypeError(f"Tree: {name} must be a C-contiguous {np.dtype(dtype)} "
                                    f"array")
        for name in ("weight", "repar", "fwd", "bwd"):
            if not arrays[name].flags.writeable:
                raise ValueError(f"Tree: {name} must be writeable")
        self.arrays = arrays
        self.max_len, self.max_entries = max(max_len, 1), max(max_entries, 1)
        self.max_bucket, self.max_split = max(max_bucket, 1), max(max_split, 1)
        self.constant, self.has_backward = constant, False
        g = &self.g
        g.n, g.nf = arrays["card"].shape[0], arrays["f_start"].shape[0] - 1
        g.nc, g.nb = arrays["c_var"].shape[0], arrays["order"].shape[0]
        g.card = <const int32_t*>_data(arrays["card"])
        g.fixed = <const int32_t*>_data(arrays["fixed"])
        g.order = <const int64_t*>_data(arrays["order"])
        g.f_start = <const int64_t*>_data(arrays["f_start"])
        g.f_var = <const int32_t*>_data(arrays["f_var"])
        g.f_off = <const int64_t*>_data(arrays["f_off"])
        g.f_tab = <const double*>_data(arrays["f_tab"])
        g.c_var = <const int32_t*>_data(arrays["c_var"])
        g.c_start = <const int64_t*>_data(arrays["c_start"])
        g.c_scope = <const int32_t*>_data(arrays["c_scope"])
        g.c_parent = <const int32_t*>_data(arrays["c_parent"])
        g.b_start = <const int64_t*>_data(arrays["b_start"])
        g.ch_start = <const int64_t*>_data(arrays["ch_start"])
        g.ch_list = <const int32_t*>_data(arrays["ch_list"])
        g.own_start = <const int64_t*>_data(arrays["own_start"])
        g.own_list = <const int32_t*>_data(arrays["own_list"])
        g.entries = <const int64_t*>_data(arrays["entries"])
        g.msg_off = <const int64_t*>_data(arrays["msg_off"])
        g.rep_off = <const int64_t*>_data(arrays["rep_off"])
        g.weight = <double*>_data(arrays["weight"])
        g.repar = <double*>_data(arrays["repar"])
        g.fwd = <double*>_data(arrays["fwd"])
        g.bwd = <double*>_data(arrays["bwd"])


ctypedef struct Work:
    int32_t* axis       # n: each variable's axis in the loaded cluster (`_load`)
    int64_t* K          # the loaded cluster's cards, an operand's strides, an odometer
    int64_t* stride     # (with its merged axes: 3 times the axes)
    int64_t* index
    double* T           # the tables of a bucket's clusters, one after the other
    double* B           # their beliefs (forward passes of a bucket of several clusters)
    double* acc         # scratch of a cluster's entries, twice
    double* acc2
    double* lm          # a bucket's node log-marginals, weights' gradients
    Poll q


cdef int _work_alloc(Tree t, Work* w, double stop_at, bint beliefs):
    """Scratch for ``t``'s passes; NO_MEMORY when out of memory (free with `_work_free`)."""
    memset(w, 0, sizeof(Work))
    w.axis = <int32_t*>malloc(max(t.g.n, 1) * sizeof(int32_t))
    w.K = <int64_t*>malloc(t.max_len * sizeof(int64_t))
    w.stride = <int64_t*>malloc(t.max_len * sizeof(int64_t))
    w.index = <int64_t*>malloc(3 * t.max_len * sizeof(int64_t))
    w.T = <double*>malloc(t.max_bucket * sizeof(double))
    w.B = <double*>malloc((t.max_split if beliefs else 1) * sizeof(double))
    w.acc = <double*>malloc(t.max_entries * sizeof(double))
    w.acc2 = <double*>malloc(t.max_entries * sizeof(double))
    w.lm = <double*>malloc((2 * t.max_bucket + 2) * sizeof(double))
    w.q.main_thread = threading.current_thread() is threading.main_thread()
    _poll_init(&w.q, stop_at)
    if (w.axis == NULL or w.K == NULL or w.stride == NULL or w.index == NULL or
            w.T == NULL or w.B == NULL or w.acc == NULL or w.acc2 == NULL or w.lm == NULL):
        return NO_MEMORY
    return DONE


cdef void _work_free(Work* w) noexcept nogil:
    free(w.axis)
    free(w.K)
    free(w.stride)
    free(w.index)
    free(w.T)
    free(w.B)
    free(w.acc)
    free(w.acc2)
    free(w.lm)


cdef inline int64_t _load(const G* g, Work* w, int64_t c) noexcept nogil:
    """Cluster c's axes: ``w.axis`` of its variables and their cards ``w.K``; returns how
    many."""
    cdef int64_t s = g.c_start[c], L = g.c_start[c + 1] - s, a
    for a in range(L):
        w.axis[g.c_scope[s + a]] = <int32_t>a
        w.K[a] = g.card[g.c_scope[s + a]]
    return L


cdef inline int64_t _factor_strides(const G* g, const Work* w, int64_t f, int64_t L,
                                    int64_t* stride) noexcept nogil:
    """Factor f's table strides on the loaded cluster's axes (0 where it lacks one); returns
    its offset at the fixed variables' states."""
    cdef int64_t a, k = g.f_start[f + 1] - 1, st = 1, base = g.f_off[f]
    cdef int32_t u
    for a in range(L):
        stride[a] = 0
    while k >= g.f_start[f]:
        u = g.f_var[k]
        if g.fixed[u] >= 0:
            base += g.fixed[u] * st
        else:
            stride[w.axis[u]] = st
        st *= g.card[u]
        k -= 1
    return base


cdef inline void _msg_strides(const G* g, const Work* w, int64_t a, int64_t L,
                              int64_t* stride) noexcept nogil:
    """The strides of cluster a's message (C order over its scope but its last variable)
    on the loaded cluster's axes (0 where it lacks one)."""
    cdef int64_t i, k = g.c_start[a + 1] - 2, st = 1
    for i in range(L):
        stride[i] = 0
    while k >= g.c_start[a]:
        stride[w.axis[g.c_scope[k]]] = st
        st *= g.card[g.c_scope[k]]
        k -= 1


cdef void _add(double* T, int64_t E, int64_t L, const int64_t* K, const int64_t* stride,
               const double* data, int64_t off, int64_t* index) noexcept nogil:
    """T += the operand ``data`` from ``off`` by ``stride`` on T's axes (cards ``K``, E
    entries), its axes merged (`_merge`: ``index`` holds 3 L of scratch)."""
    cdef int64_t d = _merge(L, K, stride, index), t, x
    cdef const int64_t* ext = index + L
    cdef const int64_t* st = index + 2 * L
    cdef int64_t inner = ext[d - 1], si = st[d - 1]
    cdef double v
    for x in range(d):
        index[x] = 0
    t = 0
    while t < E:
        if si == 1:
            for x in range(inner):
                T[t + x] += data[off + x]
        elif si == 0:
            v = data[off]
            for x in range(inner):
                T[t + x] += v
        else:
            for x in range(inner):
                T[t + x] += data[off + x * si]
        t += inner
        off = _next_row(index, ext, st, d, off)


cdef void _scatter(const double* T, int64_t E, int64_t L, const int64_t* K,
                   const int64_t* stride, double* out, int64_t off,
                   int64_t* index) noexcept nogil:
    """out += T summed onto the operand layout of `_add` (its transpose)."""
    cdef int64_t d = _merge(L, K, stride, index), t, x
    cdef const int64_t* ext = index + L
    cdef const int64_t* st = index + 2 * L
    cdef int64_t inner = ext[d - 1], si = st[d - 1]
    cdef double v
    for x in range(d):
        index[x] = 0
    t = 0
    while t < E:
        if si == 0:
            v = 0.0
            for x in range(inner):
                v += T[t + x]
            out[off] += v
        else:
            for x in range(inner):
                out[off + x * si] += T[t + x]
        t += inner
        off = _next_row(index, ext, st, d, off)


cdef void _build(const G* g, Work* w, int64_t c, int64_t L, double* T,
                 bint backward) noexcept nogil:
    """Cluster c's table f_c (loaded by `_load`) into T: its factors, its
    reparameterisation and its children's forward messages; with ``backward`` its
    backward message too (its belief, w_c log of its unnormalised weighted belief)."""
    cdef int64_t E = g.entries[c], inner = w.K[L - 1], rows = E // inner, k, r, x
    cdef const double* rp = g.repar + g.rep_off[c]
    memset(T, 0, E * sizeof(double))
    for k in range(g.own_start[c], g.own_start[c + 1]):
        _add(T, E, L, w.K, w.stride, g.f_tab,
             _factor_strides(g, w, g.own_list[k], L, w.stride), w.index)
    for k in range(g.ch_start[c], g.ch_start[c + 1]):
        _msg_strides(g, w, g.ch_list[k], L, w.stride)
        _add(T, E, L, w.K, w.stride, g.fwd, g.msg_off[g.ch_list[k]], w.index)
    for r in range(rows):
        for x in range(inner):
            T[r * inner + x] += rp[x]
    if backward and g.c_parent[c] >= 0:
        _msg_strides(g, w, c, L, w.stride)
        _add(T, E, L, w.K, w.stride, g.bwd, g.msg_off[c], w.index)


cdef void _beliefs(const G* g, Work* w, int64_t c0, int64_t c1) noexcept nogil:
    """B = the beliefs of a bucket's clusters: their tables T plus backward messages."""
    cdef int64_t c, L, E, off = 0
    for c in range(c0, c1):
        E = g.entries[c]
        memcpy(w.B + off, w.T + off, E * sizeof(double))
        if g.c_parent[c] >= 0:
            L = _load(g, w, c)
            _msg_strides(g, w, c, L, w.stride)
            _add(w.B + off, E, L, w.K, w.stride, g.bwd, g.msg_off[c], w.index)
        off += E


cdef void _reweight(G* g, Work* w, int64_t c0, int64_t c1, double eta, double floor,
                    double ceiling) noexcept nogil:
    """The step on a bucket's weights along the bound's gradient ∂/∂w_r = H_r, the
    conditional entropy of x_v under cluster r's weighted belief (in B). Weights all
    positive (the upper bound; `fwcore.marginals.wmb`'s `_WEIGHT_STEP`): exponentiated
    gradient, w_r ∝ w_r exp(−η (H_r − H̄)), H̄ = Σ_r w_r H_r, each at least ``floor``,
    renormalised. Mixed signs (the lower bound, one positive weight w_+): gradient
    ascent on log |w_r| of each negative one, the positive one taking up the change,
    |w_r| ← |w_r| exp(η w_r (H_r − H_+)), between ``floor`` and ``ceiling`` (larger ones
    cost the bound its precision: w_+ log Σ exp(f / w_+) against the others' of
    opposite sign), w_+ = 1 − Σ_{r ≠ +} w_r."""
    cdef int64_t c, R = c1 - c0, E, K = g.card[g.c_var[c0]], off = 0, pos = -1, n_pos = 0
    cdef double mean = 0.0, s = 0.0, s2 = 0.0
    cdef double* h = w.lm
    cdef double* new = w.lm + R
    for c in range(c0, c1):
        E = g.entries[c]
        h[c - c0] = _cond_entropy(w.B + off, E // K, K, g.weight[c], w.acc, w.acc2)
        mean += g.weight[c] * h[c - c0]
        off += E
        if g.weight[c] > 0.0:
            pos = c
            n_pos += 1
    if n_pos == 1:                     # the lower bound's mixed signs
        for c in range(c0, c1):
            if c != pos:
                g.weight[c] = -min(max(-g.weight[c] * exp(eta * g.weight[c] *
                                                          (h[c - c0] - h[pos - c0])), floor),
                                   ceiling)
                s -= g.weight[c]
        g.weight[pos] = 1.0 + s
        return
    for c in range(c0, c1):
        new[c - c0] = g.weight[c] * exp(-eta * (h[c - c0] - mean))
        s += new[c - c0]
    for c in range(c0, c1):
        new[c - c0] = max(new[c - c0] / s, floor)
        s2 += new[c - c0]
    for c in range(c0, c1):
        g.weight[c] = new[c - c0] / s2


cdef bint _degenerate(const G* g, const Work* w, int64_t c0, int64_t c1) noexcept nogil:
    """Whether a cluster of negative weight has a −inf belief entry (in B): its weighted
    belief ∝ exp(b / w) is not defined there, so the bucket takes no step."""
    cdef int64_t c, off = 0
    for c in range(c0, c1):
        if g.weight[c] < 0.0 and wmb_row_min(w.B + off, g.entries[c], INFINITY) == -INFINITY:
            return True
        off += g.entries[c]
    return False


cdef void _match(G* g, Work* w, int64_t c0, int64_t c1, double step) noexcept nogil:
    """Moment matching of a bucket's clusters on x_v: each reparameterisation (and table
    in T) moves by step · w_r (Σ_s w_s log b_s − log b_r), b_r the normalised weighted
    marginal of r's belief (in B) on x_v; no move at a state where one is 0."""
    cdef int64_t c, i, x, r, L, E, rows, R = c1 - c0, K = g.card[g.c_var[c0]], off = 0
    cdef double top, s, mean, move
    cdef double* lm
    cdef bint ok
    for c in range(c0, c1):
        L = _load(g, w, c)
        E = g.entries[c]
        lm = w.lm + (c - c0) * K
        for i in range(L - 1):
            w.stride[i] = 0
        w.stride[L - 1] = 1
        _wlse_into(w.B + off, E, L, w.K, w.stride, g.weight[c], lm, K, w.acc, w.index)
        top = -INFINITY
        for x in range(K):
            lm[x] /= g.weight[c]
            top = max(top, lm[x])
        if top > -INFINITY:
            s = 0.0
            for x in range(K):
                s += exp(lm[x] - top)
            top += log(s)
            for x in range(K):
                lm[x] -= top
        off += E
    for x in range(K):
        ok, mean = True, 0.0
        for i in range(R):
            if not (-INFINITY < w.lm[i * K + x] < INFINITY):
                ok = False
            mean += g.weight[c0 + i] * w.lm[i * K + x]
        for i in range(R):
            w.lm[i * K + x] = step * g.weight[c0 + i] * (mean - w.lm[i * K + x]) if ok else 0.0
    off = 0
    for c in range(c0, c1):
        lm = w.lm + (c - c0) * K
        E = g.entries[c]
        rows = E // K
        for x in range(K):
            g.repar[g.rep_off[c] + x] += lm[x]
        for r in range(rows):
            for x in range(K):
                w.T[off + r * K + x] += lm[x]
        off += E


def forward(Tree t, double step, double eta, double floor, double stop_at,
            double ceiling=INFINITY):
    """One forward pass, bucket by bucket: the clusters' tables; where a bucket has several
    clusters and ``step`` > 0, their weights' step ``eta`` (`_reweight`, once a backward
    pass has ended; ``floor`` a weight's least, ``ceiling`` a negative one's most) and
    moment matching by ``step``
    (`_match`), unless a cluster of negative weight has a −inf belief (`_degenerate`);
    then each cluster's message w_c log Σ_{x_v} exp(f_c / w_c), its max
    subtracted and added to the bound (a root's, a number, added whole). Returns
    ``(status, bound)``: when DONE, the certified bound on log Z (with `Tree.constant`):
    an upper bound when the weights are positive (Hölder), a lower bound when each
    bucket has one positive weight and the others negative (reverse Hölder)."""
    cdef G* g = &t.g
    cdef Work w
    cdef int64_t p, c, j, c0, c1, off, L, E, K, M
    cdef double total = t.constant, top, value
    cdef double* msg
    cdef bint reweight = eta > 0.0 and t.has_backward
    cdef int status = _work_alloc(t, &w, stop_at, True)
    with nogil:
        for p in range(g.nb if status == DONE else 0):
            c0, c1 = g.b_start[p], g.b_start[p + 1]
            off = 0
            for c in range(c0, c1):
                L = _load(g, &w, c)
                _build(g, &w, c, L, w.T + off, False)
                off += g.entries[c]
            if c1 - c0 > 1 and step > 0.0:
                _beliefs(g, &w, c0, c1)
                if not _degenerate(g, &w, c0, c1):
                    if reweight:
                        _reweight(g, &w, c0, c1, eta, floor, ceiling)
                    _match(g, &w, c0, c1, step)
            off = 0
            for c in range(c0, c1):
                E = g.entries[c]
                K = g.card[g.c_var[c]]
                if g.c_parent[c] < 0:
                    _rows_wlse(w.T + off, 1, K, g.weight[c], &value, w.acc)
                    total += value
                else:
                    msg = g.fwd + g.msg_off[c]
                    M = E // K
                    _rows_wlse(w.T + off, M, K, g.weight[c], msg, w.acc)
                    top = -INFINITY
                    for j in range(M):
                        top = max(top, msg[j])
                    if -INFINITY < top < INFINITY:
                        for j in range(M):
                            msg[j] -= top
                    total += top
                off += E
            status = _poll(&w.q, 4 * off + 16)
            if status != DONE:
                break
    _work_free(&w)
    return _finish(status), total


def backward(Tree t, double stop_at):
    """The backward messages, parents first: b → a is
    w_a log Σ_{C_b \\ C_a} exp(belief_b / w_b) (w_a / w_b) − λ_a (λ_a a's forward message,
    constant there), its max subtracted; NaN (−inf − −inf) and +inf (a finite sum less a
    −inf message, where a's rows are all −inf; or a −inf belief of a negative-weight b)
    as −inf: no belief there. Returns the
    status; DONE sets ``has_backward``."""
    cdef G* g = &t.g
    cdef Work w
    cdef int64_t c, k, a, j, L, E, M
    cdef double ratio, value, top
    cdef const double* fa
    cdef double* ba
    cdef int status = _work_alloc(t, &w, stop_at, False)
    with nogil:
        c = g.nc - 1
        while status == DONE and c >= 0:
            if g.ch_start[c] < g.ch_start[c + 1]:
                L = _load(g, &w, c)
                E = g.entries[c]
                _build(g, &w, c, L, w.T, True)
                for k in range(g.ch_start[c], g.ch_start[c + 1]):
                    a = g.ch_list[k]
                    M = g.msg_off[a + 1] - g.msg_off[a]
                    _msg_strides(g, &w, a, L, w.stride)
                    _wlse_into(w.T, E, L, w.K, w.stride, g.weight[c], w.acc2, M, w.acc,
                               w.index)
                    ratio = g.weight[a] / g.weight[c]
                    fa = g.fwd + g.msg_off[a]
                    ba = g.bwd + g.msg_off[a]
                    top = -INFINITY
                    for j in range(M):
                        value = w.acc2[j] * ratio - fa[j]
                        if value != value or value == INFINITY:
                            value = -INFINITY
                        w.acc2[j] = value
                        top = max(top, value)
                    if not -INFINITY < top < INFINITY:
                        top = 0.0
                    for j in range(M):
                        ba[j] = w.acc2[j] - top
                status = _poll(&w.q, E * (3 + g.ch_start[c + 1] - g.ch_start[c]))
            c -= 1
    _work_free(&w)
    if status == DONE:
        t.has_backward = True
    return _finish(status)


cdef inline void _add_row(const double* data, int64_t base, const int32_t* scope,
                          int64_t first, int64_t last, const int32_t* card, const int64_t* x,
                          int64_t v, int64_t K, double* row) noexcept nogil:
    """row[s] += the table from ``data[base]`` over ``scope[first..last]`` (C order) at the
    labelling ``x`` with x_v = s (the same entry for every s when v is not in the scope)."""
    cdef int64_t kk = last, st = 1, sv = 0, s
    cdef int32_t u
    while kk >= first:
        u = scope[kk]
        if u == v:
            sv = st
        else:
            base += x[u] * st
        st *= card[u]
        kk -= 1
    for s in range(K):
        row[s] += data[base + s * sv]


cdef void _cluster_row(const G* g, const int64_t* x, int64_t c, int64_t v, int64_t K,
                       double* row) noexcept nogil:
    """row[s] = f_c at the labelling ``x`` with x_v = s (its factors, its
    reparameterisation and its children's forward messages; x_v itself is not read)."""
    cdef int64_t k, f, a, s
    for s in range(K):
        row[s] = g.repar[g.rep_off[c] + s]
    for k in range(g.own_start[c], g.own_start[c + 1]):
        f = g.own_list[k]
        _add_row(g.f_tab, g.f_off[f], g.f_var, g.f_start[f], g.f_start[f + 1] - 1, g.card, x,
                 v, K, row)
    for k in range(g.ch_start[c], g.ch_start[c + 1]):
        a = g.ch_list[k]
        _add_row(g.fwd, g.msg_off[a], g.c_scope, g.c_start[a], g.c_start[a + 1] - 2, g.card, x,
                 v, K, row)


cdef int64_t _max_card(Tree t):
    return max(np.max(t.arrays["card"], initial=1), 1)


def decode(Tree t, long long[::1] x, double stop_at):
    """A labelling into ``x``: fixed variables at their states, the others from the last
    eliminated, each at the first argmax of its bucket's tables (mini-buckets summed) with
    the variables already set (Merlin's decoding on the current reparameterisation).
    Returns the status (TIMEUP: ``x`` unfinished)."""
    cdef G* g = &t.g
    cdef Work w
    cdef int64_t p, v, c, s, K, best
    cdef double[::1] scratch = np.empty(2 * _max_card(t))
    cdef double* score = &scratch[0]
    cdef double* row = score + scratch.shape[0] // 2
    cdef int64_t* xp = <int64_t*>&x[0] if x.shape[0] else NULL
    cdef int status = _work_alloc(t, &w, stop_at, False)
    with nogil:
        for v in range(g.n if status == DONE else 0):
            x[v] = g.fixed[v] if g.fixed[v] >= 0 else 0
        p = g.nb - 1
        while status == DONE and p >= 0:
            v = g.order[p]
            K = g.card[v]
            for s in range(K):
                score[s] = 0.0
            for c in range(g.b_start[p], g.b_start[p + 1]):
                _cluster_row(g, xp, c, v, K, row)
                for s in range(K):
                    score[s] += row[s]
            best = 0
            for s in range(1, K):
                if score[s] > score[best]:
                    best = s
            x[v] = best
            status = _poll(&w.q, 8 * (1 + g.b_start[p + 1] - g.b_start[p]) * K)
            p -= 1
    _work_free(&w)
    return _finish(status)


cdef double _score(const G* g, const int64_t* x) noexcept nogil:
    """Σ_f table_f(x) over every factor of the model (fixed variables at their states)."""
    cdef int64_t f, k, off, st
    cdef double total = 0.0
    for f in range(g.nf):
        off, st = g.f_off[f], 1
        k = g.f_start[f + 1] - 1
        while k >= g.f_start[f]:
            off += x[g.f_var[k]] * st
            st *= g.card[g.f_var[k]]
            k -= 1
        total += g.f_tab[off]
    return total


def sample(Tree t, const double[:, ::1] u, long long[:, ::1] x, double[::1] log_q,
           double[::1] log_f, double stop_at):
    """Importance sampling from the proposal of the tree's last forward pass (Liu, Fisher &
    Ihler 2015, Sec. 3; positive weights): for each row k of the uniforms ``u`` (one per
    variable of ``order``), x[k] gets the fixed variables' states and then, from the last
    variable eliminated, x_v drawn from q(x_v | x_later) = Σ_r w_r q_r(x_v | ·) / Σ_r w_r,
    q_r ∝ exp(f_r(x, x_v) / w_r) over the clusters r of v's bucket whose row has a
    finite entry (uniform when none, or the bucket is empty): the first state whose
    cumulative mass exceeds u[k, p] times the total (the last state of positive mass
    when rounding leaves none). log_q[k] = log q(x[k]), log_f[k] = the model's score at
    x[k]; f / q ≤ the pass's bound (`fwcore.marginals.estimate`). Returns (status,
    samples drawn): TIMEUP leaves the later rows undrawn."""
    cdef G* g = &t.g
    cdef Work w
    cdef int64_t k, p, v, c, s, K, pick, last, done = 0, ns = u.shape[0]
    cdef int64_t cost = 8 * (g.nc + g.nb + g.nf + 1)
    cdef double wc, top, z, total, target, cum, lq
    cdef double[::1] scratch = np.empty(2 * _max_card(t))
    cdef double* q = &scratch[0]
    cdef double* row = q + scratch.shape[0] // 2
    cdef int64_t* xk
    cdef int status = _work_alloc(t, &w, stop_at, False)
    with nogil:
        k = 0
        while status == DONE and k < ns:
            xk = <int64_t*>&x[k, 0]
            for v in range(g.n):
                xk[v] = g.fixed[v] if g.fixed[v] >= 0 else 0
            lq = 0.0
            for p in range(g.nb - 1, -1, -1):
                v = g.order[p]
                K = g.card[v]
                for s in range(K):
                    q[s] = 0.0
                for c in range(g.b_start[p], g.b_start[p + 1]):
                    _cluster_row(g, xk, c, v, K, row)
                    wc = g.weight[c]
                    top = wmb_row_max(row, K, -INFINITY)
                    if top == -INFINITY:
                        continue
                    z = wc / wmb_exp_shift(row, K, top, 1.0 / wc)
                    for s in range(K):
                        q[s] += z * row[s]
                total = 0.0
                for s in range(K):
                    total += q[s]
                if not total > 0.0:
                    for s in range(K):
                        q[s] = 1.0
                    total = K
                target = u[k, p] * total
                cum, pick, last = 0.0, -1, 0
                for s in range(K):
                    if q[s] > 0.0:
                        last = s
                    cum += q[s]
                    if pick < 0 and cum > target:
                        pick = s
                if pick < 0 or not q[pick] > 0.0:
                    pick = last
                xk[v] = pick
                lq += log(q[pick] / total)
            log_q[k] = lq
            log_f[k] = _score(g, xk)
            done += 1
            k += 1
            status = _poll(&w.q, cost)
    _work_free(&w)
    return _finish(status), done


def read(Tree t, double[::1] node, const long long[::1] node_off, double[::1] fac,
         double stop_at):
    """The normalised weighted beliefs p_c ∝ exp(belief_c / w_c), each exponentiated once:
    into ``node`` (zeros; v's states from ``node_off[v]``) the mean over v's bucket of its
    clusters' marginals on x_v (fixed variables: point masses; a variable in no factor,
    or whose clusters are all −inf: uniform); into ``fac`` (zeros, the layout of
    ``f_tab``; empty: none) the marginal of each factor of two or more free variables
    from the cluster that holds it (its slice at the fixed variables' states; the rest
    stays 0). Returns the status (TIMEUP: unfinished)."""
    cdef G* g = &t.g
    cdef Work w
    cdef int64_t p, v, c, k, kk, f, L, E, K, r, x, free_vars
    cdef double top, s, inv
    cdef double* nd
    cdef int status = _work_alloc(t, &w, stop_at, False)
    with nogil:
        for p in range(g.nb if status == DONE else 0):
            v = g.order[p]
            K = g.card[v]
            nd = &node[node_off[v]]
            for c in range(g.b_start[p], g.b_start[p + 1]):
                L = _load(g, &w, c)
                E = g.entries[c]
                _build(g, &w, c, L, w.T, True)
                inv = 1.0 / g.weight[c]
                top = wmb_row_max(w.T, E, -INFINITY)
                if top == -INFINITY:
                    continue
                s = 1.0 / wmb_exp_shift(w.T, E, top, inv)
                for k in range(E):
                    w.T[k] *= s
                for r in range(E // K):
                    for x in range(K):
                        nd[x] += w.T[r * K + x]
                for k in range(g.own_start[c], g.own_start[c + 1]):
                    f = g.own_list[k]
                    free_vars = 0
                    for kk in range(g.f_start[f], g.f_start[f + 1]):
                        free_vars += g.fixed[g.f_var[kk]] < 0
                    if free_vars >= 2 and fac.shape[0]:
                        _scatter(w.T, E, L, w.K, w.stride, &fac[0],
                                 _factor_strides(g, &w, f, L, w.stride), w.index)
                status = _poll(&w.q, E * (4 + g.own_start[c + 1] - g.own_start[c]))
                if status != DONE:
                    break
            if status != DONE:
                break
        for v in range(g.n if status == DONE else 0):
            K = g.card[v]
            nd = &node[node_off[v]]
            s = 0.0
            for x in range(K):
                s += nd[x]
            for x in range(K):
                if g.fixed[v] >= 0:
                    nd[x] = 1.0 if x == g.fixed[v] else 0.0
                else:
                    nd[x] = nd[x] / s if s > 0.0 else 1.0 / K
    _work_free(&w)
    return _finish(status)


# -- the model's flat factors -------------------------------------------------------------

def labelling_score(const int[::1] card, const long long[::1] f_start, const int[::1] f_var,
                    const long long[::1] f_off, const double[::1] f_tab,
                    const long long[::1] x, const unsigned char[::1] only=None):
    """Σ_f table_f(x restricted to f's scope) over the factors (``only``: those where it is
    nonzero)."""
    cdef int64_t f, k, off, st, nf = f_start.shape[0] - 1
    cdef double total = 0.0
    with nogil:
        for f in range(nf):
            if only is not None and not only[f]:
                continue
            off, st = f_off[f], 1
            k = f_start[f + 1] - 1
            while k >= f_start[f]:
                off += x[f_var[k]] * st
                st *= card[f_var[k]]
                k -= 1
            total += f_tab[off]
    return total


def factor_max(const int[::1] card, const long long[::1] f_start, const int[::1] f_var,
               const long long[::1] f_off, const double[::1] f_tab, const int[::1] fixed):
    """Σ_f max of f's table over the entries that agree with the fixed variables' states
    (−inf when one has none finite): the product bound's score part."""
    cdef int64_t f, k, i, e, n_e, st, digit, nf = f_start.shape[0] - 1
    cdef double total = 0.0, top
    cdef bint ok
    with nogil:
        for f in range(nf):
            n_e = f_off[f + 1] - f_off[f]
            top = -INFINITY
            for e in range(n_e):
                ok = True
                st = 1
                k = f_start[f + 1] - 1
                while k >= f_start[f] and ok:
                    digit = (e // st) % card[f_var[k]]
                    ok = fixed[f_var[k]] < 0 or digit == fixed[f_var[k]]
                    st *= card[f_var[k]]
                    k -= 1
                if ok and f_tab[f_off[f] + e] > top:
                    top = f_tab[f_off[f] + e]
            total += top
    return total
