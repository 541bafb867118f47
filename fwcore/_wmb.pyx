# cython: language_level=3
"""The weighted log-sum-exp of weighted mini-bucket elimination (`fwcore.marginals.wmb`)
over any axes of a C-ordered table, in place of NumPy's transpose, copy and five passes
(max, subtract, scale, exp, sum): the table is read in its own order twice, each entry
sent to its output entry by the output's strides (0 on a summed axis)."""
import numpy as np

from libc.math cimport exp, log, INFINITY

#: most axes of a table (NumPy's own limit is 64)
MAX_AXES = 64


def weighted_logsumexp(const double[::1] x, const Py_ssize_t[::1] shape,
                       const Py_ssize_t[::1] out_stride, double w, double[::1] out):
    """out[j] = w log Σ_{i → j} exp(x[i] / w) for w > 0, where entry i of ``x`` (a table of
    ``shape``, C order, flattened) goes to out[Σ_k index_k(i) out_stride[k]]; −inf where
    every entry sent to j is −inf. Every out entry must receive at least one entry."""
    cdef Py_ssize_t n = x.shape[0], m = out.shape[0], d = shape.shape[0]
    cdef Py_ssize_t i, j, t, inner = shape[d - 1] if d else 1
    cdef Py_ssize_t step = out_stride[d - 1] if d else 0
    cdef double inv = 1.0 / w, top, even, odd
    cdef double[::1] acc = np.zeros(m)
    cdef Py_ssize_t[::1] index = np.zeros(MAX_AXES, dtype=np.intp)
    if d > MAX_AXES:
        raise ValueError(f"a table of {d} axes; at most {MAX_AXES}")
    with nogil:
        for j in range(m):
            out[j] = -INFINITY
        j = 0
        i = 0
        while i < n:                      # the max sent to each out entry
            if step == 0:                 # a row summed into one entry: kept in a register
                top = out[j]
                for t in range(inner):
                    if x[i + t] > top:
                        top = x[i + t]
                out[j] = top
            else:
                for t in range(inner):
                    if x[i + t] > out[j + t * step]:
                        out[j + t * step] = x[i + t]
            i += inner
            j = _next_row(index, shape, out_stride, d, j)
        j = 0
        i = 0
        while i < n:                      # Σ exp((x − max) / w)
            if step == 0:
                top = out[j]
                if top > -INFINITY:       # two sums: independent exps overlap
                    even = odd = 0.0
                    for t in range(0, inner - 1, 2):
                        even += exp((x[i + t] - top) * inv)
                        odd += exp((x[i + t + 1] - top) * inv)
                    if inner % 2:
                        even += exp((x[i + inner - 1] - top) * inv)
                    acc[j] += even + odd
            else:
                for t in range(inner):
                    if out[j + t * step] > -INFINITY:
                        acc[j + t * step] += exp((x[i + t] - out[j + t * step]) * inv)
            i += inner
            j = _next_row(index, shape, out_stride, d, j)
        for j in range(m):
            if out[j] > -INFINITY:
                out[j] += w * log(acc[j])


cdef inline Py_ssize_t _next_row(Py_ssize_t[::1] index, const Py_ssize_t[::1] shape,
                                 const Py_ssize_t[::1] out_stride, Py_ssize_t d,
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
