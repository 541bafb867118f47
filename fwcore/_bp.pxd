# The node sums of TRBP / loopy BP, one definition for the sweeps
# (`fwcore._kernels.trbp_sweeps`) and the beliefs (`fwcore._bp.beliefs`).
from libc.math cimport INFINITY
from libc.stdint cimport int8_t

from ._graph cimport Graph


cdef inline void node_sums(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                           const double[::1] rho, const double[::1] logm,
                           double[::1] node_sum, int[::1] n_inf, Py_ssize_t lo,
                           Py_ssize_t hi) noexcept nogil:
    """node_sum_t = theta_t + sum_v rho_vt log m_vt for t in lo..hi-1, as its finite part
    and its number of -inf terms (n_inf), as the sweeps keep them."""
    cdef const int[::1] card = graph.card, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n_edges = graph.edges.shape[0], t, a, e, m, x, o
    cdef long long ot
    cdef double v, r
    for t in range(lo, hi):
        ot = node_off[t]
        for x in range(card[t]):
            node_sum[ot + x] = theta[ot + x]
            n_inf[ot + x] = 0
            if theta[ot + x] == -INFINITY:
                node_sum[ot + x] = 0.0
                n_inf[ot + x] = 1
        for a in range(adj_start[t], adj_start[t + 1]):
            e = adj_edge[a]
            m = n_edges + e if adj_first[a] else e
            r = rho[e]
            o = msg_off[m]
            for x in range(card[t]):
                v = logm[o + x]
                if v != -INFINITY:
                    node_sum[ot + x] += r * v
                else:
                    n_inf[ot + x] += 1
