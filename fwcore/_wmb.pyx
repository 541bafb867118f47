# cython: language_level=3
"""The weighted log-sum-exp of weighted mini-bucket elimination
(`fwcore.marginals.wmb`), fused into one pass per row: NumPy needs five passes (max,
subtract, scale, exp, sum) and is slowest on the short rows WMB eliminates."""
from libc.math cimport exp, log, INFINITY


def weighted_logsumexp_rows(const double[:, ::1] x, double w, double[::1] out):
    """out[i] = w log Σ_j exp(x[i, j] / w) for w > 0; −inf where a row is all −inf."""
    cdef Py_ssize_t i, j, n = x.shape[0], m = x.shape[1]
    cdef double top, total, inv = 1.0 / w
    with nogil:
        for i in range(n):
            top = -INFINITY
            for j in range(m):
                if x[i, j] > top:
                    top = x[i, j]
            if top == -INFINITY:
                out[i] = -INFINITY
                continue
            total = 0.0
            for j in range(m):
                total += exp((x[i, j] - top) * inv)
            out[i] = top + w * log(total)
