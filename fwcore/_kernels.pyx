# cython: language_level=3
"""Hot loops of fwcore on the flat layout of DESIGN.md.

Every kernel takes typed memoryviews, runs its loop without the GIL and trusts its inputs:
the Python callers validate once. Each kernel has a plain-NumPy twin in tests/.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY

cnp.import_array()


def score_assignments(const double[::1] theta, const int[::1] card, const int[:, ::1] edges,
                      const long long[::1] node_off, const long long[::1] edge_off,
                      const int[:, ::1] atoms, double[::1] out):
    """out[a] = <theta, mu(atoms[a])> for each assignment row, without dense vertices."""
    cdef Py_ssize_t m = atoms.shape[0], n = card.shape[0], n_edges = edges.shape[0]
    cdef Py_ssize_t a, i, e
    cdef double s
    with nogil:
        for a in range(m):
            s = 0.0
            for i in range(n):
                s += theta[node_off[i] + atoms[a, i]]
            for e in range(n_edges):
                s += theta[edge_off[e] + atoms[a, edges[e, 0]] * card[edges[e, 1]]
                           + atoms[a, edges[e, 1]]]
            out[a] = s
