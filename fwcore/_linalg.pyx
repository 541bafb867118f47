# cython: language_level=3
"""Sparse linear algebra kernels (graph Laplacians for edge appearance probabilities)."""
import numpy as np


def selected_inverse(const long long[::1] colptr, const int[::1] rowind,
                     const double[::1] lval, const double[::1] diag,
                     double[::1] zval, double[::1] zdiag):
    """Entries of Z = (L D L^T)^{-1} on the pattern of L (Takahashi, Fagan & Chin 1973).

    L is unit lower triangular in CSC (colptr, rowind, lval; a stored diagonal is ignored)
    whose pattern is closed under elimination (the symbolic Cholesky pattern or a superset,
    such as SuperLU's supernodal L); D = diag. Writes Z[rowind[p], j] to zval[p] for the
    strictly lower entries p of column j, and Z[j, j] to zdiag[j]. Backward over columns:
        Z[i, j] = -sum_{k in S_j} Z[i, k] L[k, j],   Z[j, j] = 1/D_j - sum_{k in S_j} L[k, j] Z[k, j]
    with S_j the strictly lower pattern of column j. Cost: sum over j, k in S_j of |col k|.
    """
    cdef Py_ssize_t n = diag.shape[0], j, p, q, k, i
    cdef long long[::1] where = np.full(n, -1, dtype=np.int64)
    cdef double[::1] y = np.zeros(n)
    cdef double lk, zq, s
    with nogil:
        for j in range(n - 1, -1, -1):
            for p in range(colptr[j], colptr[j + 1]):
                if rowind[p] > j:
                    where[rowind[p]] = p
                    y[rowind[p]] = 0.0
            for p in range(colptr[j], colptr[j + 1]):
                k = rowind[p]
                if k <= j:
                    continue
                lk = lval[p]
                y[k] += zdiag[k] * lk
                for q in range(colptr[k], colptr[k + 1]):
                    i = rowind[q]
                    if i > k and where[i] >= 0:
                        zq = zval[q]
                        y[i] += zq * lk
                        y[k] += zq * lval[where[i]]
            s = 0.0
            for p in range(colptr[j], colptr[j + 1]):
                i = rowind[p]
                if i > j:
                    zval[p] = -y[i]
                    s += lval[p] * zval[p]
                    where[i] = -1
            zdiag[j] = 1.0 / diag[j] - s
