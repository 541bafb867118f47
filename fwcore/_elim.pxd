# The clique tree of `fwcore._elim` (its kernels' layout), shared with `fwcore._query`.
from libc.stdint cimport int32_t, int64_t


ctypedef struct Tree:
    const double* theta
    const int32_t* card
    const int32_t* edges         # [E, 2] row-major
    const int64_t* node_off
    const int64_t* edge_off
    const int64_t* order
    const int64_t* clq_start
    const int32_t* clq_var
    const int64_t* ch_start
    const int32_t* ch_var
    const int64_t* own_start
    const int32_t* own_edge
    int64_t n
    bint main_thread             # check for signals (`signalled`)


cdef class CliqueTree:
    cdef const int[::1] card
    cdef const int[:, ::1] edges
    cdef const int64_t[::1] node_off, edge_off, order, clq_start, ch_start, own_start
    cdef const int[::1] clq_var, ch_var, own_edge


cdef Tree make_tree(CliqueTree t, const double[::1] theta)
