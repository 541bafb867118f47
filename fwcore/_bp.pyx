# cython: language_level=3
"""The end of a TRBP / loopy BP run (`fwcore.marginals.bp`) over the flat layout: the
beliefs of the messages written into the flat marginal vector, and the TRW value of a
marginal vector, each one pass with no array of the vector's size beside it (the sweeps
are `fwcore._kernels.trbp_sweeps` and `trbp_binary_sweeps`; the array names are theirs).
"""
from libc.math cimport INFINITY, exp, log

from ._graph cimport Graph


cdef inline void _exp_normalised(double* a, Py_ssize_t k) noexcept nogil:
    """a = exp(a - logsumexp(a)), taken as exp(a - max) / sum exp(a - max) (one exp an
    entry); all -inf: 0."""
    cdef Py_ssize_t x
    cdef double top = -INFINITY, s = 0.0
    for x in range(k):
        if a[x] > top:
            top = a[x]
    if top == -INFINITY:
        for x in range(k):
            a[x] = 0.0
        return
    for x in range(k):
        a[x] = exp(a[x] - top)
        s += a[x]
    s = 1.0 / s
    for x in range(k):
        a[x] *= s


cdef inline double _without(const double[::1] node_sum, const int[::1] n_inf, long long at,
                            double own) noexcept nogil:
    """The node sum at entry ``at`` without the log-message entry ``own``: -inf when
    another of its terms is -inf."""
    if own == -INFINITY:
        return node_sum[at] if n_inf[at] == 1 else -INFINITY
    return node_sum[at] - own if n_inf[at] == 0 else -INFINITY


def beliefs(const double[::1] theta, Graph graph, const long long[::1] msg_off,
            const double[::1] rho, const double[::1] logm, double[::1] mu,
            double[::1] node_sum, int[::1] n_inf, double[::1] work):
    """The beliefs of the messages logm into mu (the model's flat layout; TRW paper,
    Wainwright et al. 2005, eq. 40): b_s ∝ exp(θ_s) Π_v m_vs^ρ_vs and b_st ∝
    exp(θ_st/ρ_st) (b_s-sum without m_ts) (b_t-sum without m_st), each block normalised
    (all -inf: zeros). node_sum and n_inf (length node_off[n]) and work (length >= 2 *
    max card) are scratch."""
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef Py_ssize_t n = card.shape[0], n_edges = edges.shape[0], kmax = work.shape[0] // 2
    cdef Py_ssize_t t, e, i, j, a, b, ci, cj
    cdef long long oi, oj, eo, mi, mj
    cdef double r
    cdef double* pre_i = &work[0] if work.shape[0] else NULL
    cdef double* pre_j = pre_i + kmax if work.shape[0] else NULL
    with nogil:
        node_sums(theta, graph, msg_off, rho, logm, node_sum, n_inf)
        for t in range(n):
            for a in range(card[t]):
                mu[node_off[t] + a] = (node_sum[node_off[t] + a] if n_inf[node_off[t] + a] == 0
                                       else -INFINITY)
            _exp_normalised(&mu[node_off[t]], card[t])
        for e in range(n_edges):
            i, j = edges[e, 0], edges[e, 1]
            ci, cj, oi, oj, eo, r = card[i], card[j], node_off[i], node_off[j], edge_off[e], rho[e]
            mi, mj = msg_off[n_edges + e], msg_off[e]   # m_{j->i} over x_i, m_{i->j} over x_j
            for a in range(ci):
                pre_i[a] = _without(node_sum, n_inf, oi + a, logm[mi + a])
            for b in range(cj):
                pre_j[b] = _without(node_sum, n_inf, oj + b, logm[mj + b])
            for a in range(ci):
                for b in range(cj):
                    mu[eo + a * cj + b] = theta[eo + a * cj + b] / r + pre_i[a] + pre_j[b]
            _exp_normalised(&mu[eo], ci * cj)


def trw_value(const double[::1] theta, const double[::1] mu, Graph graph,
              const double[::1] rho):
    """TRW(mu; theta, rho) = <theta, mu> + sum_i c_i H(mu_i) + sum_e rho_e H(mu_e), c_i = 1 -
    sum of rho_e over the edges at i (Barrier FW eq. 1; `fwcore.marginals.trw`): the sum
    over entries with mu > 0 of mu (theta - K log mu), K the entry's block coefficient,
    without an array of them."""
    cdef const int[::1] card = graph.card, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef Py_ssize_t t, a, e
    cdef long long k
    cdef double total = 0.0, c
    with nogil:
        for t in range(card.shape[0]):
            c = 1.0
            for a in range(adj_start[t], adj_start[t + 1]):
                c -= rho[adj_edge[a]]
            for k in range(node_off[t], node_off[t + 1]):
                if mu[k] > 0.0:
                    total += mu[k] * (theta[k] - c * log(mu[k]))
        for e in range(edge_off.shape[0] - 1):
            for k in range(edge_off[e], edge_off[e + 1]):
                if mu[k] > 0.0:
                    total += mu[k] * (theta[k] - rho[e] * log(mu[k]))
    return total


def initial_messages(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                     const double[::1] neg_log, double[::1] logm):
    """Uniform normalised log-messages into logm: message m to s is -log(number of
    finite theta_s entries) (neg_log[c - 1], c of them) there and -inf on the impossible
    states of s."""
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off
    cdef Py_ssize_t n_edges = edges.shape[0], m, s, x, c
    with nogil:
        for m in range(2 * n_edges):
            s = edges[m, 1] if m < n_edges else edges[m - n_edges, 0]
            c = 0
            for x in range(card[s]):
                c += theta[node_off[s] + x] != -INFINITY
            for x in range(card[s]):
                logm[msg_off[m] + x] = (neg_log[c - 1] if theta[node_off[s] + x] != -INFINITY
                                        else -INFINITY)
