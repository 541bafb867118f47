# cython: language_level=3
"""The weighted log-sum-exp of weighted mini-bucket elimination (`fwcore.marginals.wmb`)
over any axes of a C-ordered table, in place of NumPy's transpose, copy and five passes
(max, subtract, scale, exp, sum): the table is read in its own order twice, row by row,
each row sent to its output entries by the output's strides (0 on a summed axis), the
rows' loops vectorised around a branch-free exp."""
import numpy as np

from libc.math cimport log, INFINITY

#: most axes of a table (NumPy's own limit is 64)
cdef enum:
    _AXES = 64
MAX_AXES = _AXES
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
    double wmb_row_sum_exp(const double* x, Py_ssize_t n, double top, double inv) noexcept nogil
    void wmb_max_into(const double* x, double* top, Py_ssize_t n) noexcept nogil
    void wmb_sum_exp_into(const double* x, const double* top, double* acc, Py_ssize_t n,
                          double inv) noexcept nogil
    void wmb_short_rows(const double* x, Py_ssize_t rows, Py_ssize_t inner, double inv,
                        double* top, double* sum) noexcept nogil


def exp_nonpositive(const double[::1] x, double[::1] out):
    """out = exp(x) for x ≤ 0 (−inf included; 0 below −708) by the kernels' branch-free
    exp (its NumPy twin is np.exp)."""
    cdef Py_ssize_t k
    with nogil:
        for k in range(x.shape[0]):
            out[k] = wmb_exp(x[k])


def short_rows(const double[:, ::1] x, double w, double[::1] top, double[::1] total):
    """top[r] = max x[r] and total[r] = Σ_t exp((x[r, t] − top[r]) / w) (0 where x[r] is
    all −inf): the weighted log-sum-exp of short rows is top + w log total."""
    with nogil:
        wmb_short_rows(&x[0, 0], x.shape[0], x.shape[1], 1.0 / w, &top[0], &total[0])


def weighted_logsumexp(const double[::1] x, const Py_ssize_t[::1] shape,
                       const Py_ssize_t[::1] out_stride, double w, double[::1] out):
    """out[j] = w log Σ_{i → j} exp(x[i] / w) for w > 0, where entry i of ``x`` (a table of
    ``shape``, C order, flattened) goes to out[Σ_k index_k(i) out_stride[k]]; −inf where
    every entry sent to j is −inf. The last axis's out stride is 0 (summed) or 1, and
    every out entry receives at least one entry."""
    cdef Py_ssize_t n = x.shape[0], m = out.shape[0], d = shape.shape[0]
    cdef Py_ssize_t i, j, t, inner = shape[d - 1] if d else 1
    cdef Py_ssize_t step = out_stride[d - 1] if d else 0
    cdef double inv = 1.0 / w, top
    cdef double[::1] acc = np.zeros(m)
    cdef Py_ssize_t index[_AXES]          # the odometer over the axes but the last
    if d > MAX_AXES:
        raise ValueError(f"a table of {d} axes; at most {MAX_AXES}")
    if step not in (0, 1):
        raise ValueError(f"the last axis's out stride must be 0 or 1; got {step}")
    with nogil:
        for j in range(d):
            index[j] = 0
        for j in range(m):
            out[j] = -INFINITY
        j = 0
        i = 0
        while i < n:                      # the max sent to each out entry
            if inner < _SHORT:
                for t in range(inner):
                    if x[i + t] > out[j + t * step]:
                        out[j + t * step] = x[i + t]
            elif step == 0:
                out[j] = wmb_row_max(&x[i], inner, out[j])
            else:
                wmb_max_into(&x[i], &out[j], inner)
            i += inner
            j = _next_row(index, &shape[0], &out_stride[0], d, j)
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
            j = _next_row(index, &shape[0], &out_stride[0], d, j)
        for j in range(m):
            if out[j] > -INFINITY:
                out[j] += w * log(acc[j])


cdef inline Py_ssize_t _next_row(Py_ssize_t* index, const Py_ssize_t* shape,
                                 const Py_ssize_t* out_stride, Py_ssize_t d,
                                 Py_ssize_t j) noexcept nogil:
    """Advance the odometer ``index`` over every axis but the last by one row; returns the
    out offset of the new row given ``j``, the old row's (both at last-axis index 0)."""
    cdef Py_ssize_t k = d - 2
    while k >= 0:
        index[k] += 1
        j += out_stride[k]
        if index[k] < shape[k]:
            return j
        j -= shape[k] * out_stride[k]
        index[k] = 0
        k -= 1
    return j
