from libc.stdint cimport int8_t


cdef class Graph:
    cdef readonly const int[::1] card
    cdef readonly const int[:, ::1] edges
    cdef readonly const long long[::1] node_off
    cdef readonly const long long[::1] edge_off
    cdef readonly const long long[::1] adj_start
    cdef readonly const int[::1] adj_var
    cdef readonly const int[::1] adj_edge
    cdef readonly const int8_t[::1] adj_first
