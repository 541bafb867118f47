# cython: language_level=3
"""The end of a TRBP / loopy BP run (`fwcore.marginals.bp`) over the flat layout: the
beliefs of the messages written into the flat marginal vector with their TRW value, in one
pass with no array of the vector's size beside it and one branch-free exp an entry (no
log), over ranges of variables and edges that threads share (the sweeps are
`fwcore._kernels.trbp_sweeps` and `trbp_binary_sweeps`; the array names are theirs).
"""
from libc.math cimport INFINITY

from ._fastmath cimport fw_exp
from ._graph cimport Graph

#: the beliefs' TRW value is summed per chunk of this many nodes or edges (into the
#: ``value`` arrays of `node_beliefs` and `edge_beliefs`), so that it does not depend on how
#: the blocks are split among threads
BELIEF_CHUNK = 4096
cdef Py_ssize_t _CHUNK = BELIEF_CHUNK

cdef extern from *:
    """
    /* a = exp(a - logsumexp(a)) in place, taken as exp(a - max) / sum exp(a - max) (the
       branch-free exp, 0 below -708; all -inf: zeros); returns the block's term of the TRW
       value, sum over entries with mu > 0 of mu (theta - w log mu), log mu taken as
       (a - max) - log(sum): no log an entry. */
    /* a = exp(a - top) / sum exp(a - top) in place, top = max(a) (the branch-free exp, 0
       below -708; top = -inf: zeros); returns the block's term of the TRW value, sum over
       entries with mu > 0 of mu (theta - w log mu), log mu taken as (a - top) - log(sum):
       no log an entry. */
    FW_INLINE double fw_bp_normalise(double *a, const double *theta, ptrdiff_t k, double w,
                                     double top) {
        double s = 0.0, st = 0.0, sd = 0.0;
        if (top == -HUGE_VAL) {
            for (ptrdiff_t x = 0; x < k; x++) a[x] = 0.0;
            return 0.0;
        }
        #pragma omp simd reduction(+:s, st, sd)
        for (ptrdiff_t x = 0; x < k; x++) {
            double d = a[x] - top, e = d > -708.0 ? fw_exp(d) : 0.0;
            /* the selects on the terms, not the sums: GCC 12 vectorised two conditional
               sums of this loop wrongly (on 64-entry blocks) */
            double th = e > 0.0 ? theta[x] : 0.0, dd = e > 0.0 ? d : 0.0;
            a[x] = e;
            s += e;
            st += e * th;
            sd += e * dd;
        }
        double inv = 1.0 / s;
        #pragma omp simd
        for (ptrdiff_t x = 0; x < k; x++) a[x] *= inv;
        return inv * (st - w * sd) + w * log(s);
    }
    FW_CLONES static double fw_bp_node_belief(double *a, const double *theta, ptrdiff_t k,
                                              double w) {
        double top = -HUGE_VAL;
        #pragma omp simd reduction(max:top)
        for (ptrdiff_t x = 0; x < k; x++) top = a[x] > top ? a[x] : top;
        return fw_bp_normalise(a, theta, k, w, top);
    }
    /* An edge's belief block: mu = theta / r + pre_i[a] + pre_j[b] (theta times 1 / r),
       its maximum taken in the same pass, normalised (fw_bp_normalise, with its term of
       the TRW value). */
    FW_CLONES static double fw_bp_edge_belief(double *mu, const double *theta,
                                              const double *pre_i, ptrdiff_t ci,
                                              const double *pre_j, ptrdiff_t cj, double r,
                                              double w) {
        double inv_r = 1.0 / r, top = -HUGE_VAL;
        for (ptrdiff_t a = 0; a < ci; a++) {
            const double *th = theta + a * cj;
            double *m = mu + a * cj, p = pre_i[a];
            #pragma omp simd reduction(max:top)
            for (ptrdiff_t b = 0; b < cj; b++) {
                double v = th[b] * inv_r + p + pre_j[b];
                m[b] = v;
                top = v > top ? v : top;
            }
        }
        return fw_bp_normalise(mu, theta, ci * cj, w, top);
    }
    """
    double fw_bp_node_belief(double* a, const double* theta, Py_ssize_t k,
                             double w) noexcept nogil
    double fw_bp_edge_belief(double* mu, const double* theta, const double* pre_i,
                             Py_ssize_t ci, const double* pre_j, Py_ssize_t cj, double r,
                             double w) noexcept nogil


cdef inline double _without(const double[::1] node_sum, const int[::1] n_inf, long long at,
                            double own) noexcept nogil:
    """The node sum at entry ``at`` without the log-message entry ``own``: -inf when
    another of its terms is -inf."""
    if own == -INFINITY:
        return node_sum[at] if n_inf[at] == 1 else -INFINITY
    return node_sum[at] - own if n_inf[at] == 0 else -INFINITY


def node_beliefs(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                 const double[::1] rho, const double[::1] weight, const double[::1] logm,
                 double[::1] mu, double[::1] node_sum, int[::1] n_inf, double[::1] value,
                 Py_ssize_t lo, Py_ssize_t hi):
    """The node sums and node beliefs of variables lo..hi-1 of the messages logm into mu
    (the model's flat layout; TRW paper, Wainwright et al. 2005, eq. 40): b_s ∝ exp(θ_s)
    Π_v m_vs^ρ_vs, normalised (all -inf: zeros); adds each node's term of TRW(mu; θ,
    weight) (Barrier FW eq. 1: Σ_x μ_s(x) (θ_s(x) − c_s log μ_s(x)), c_s = 1 − Σ of
    weight_e over the edges at s) to value[s // BELIEF_CHUNK]. node_sum and n_inf (length
    node_off[n]) receive the node sums (`edge_beliefs` reads them)."""
    cdef const int[::1] card = graph.card, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, adj_start = graph.adj_start
    cdef Py_ssize_t t, a
    cdef long long k
    cdef double c
    with nogil:
        node_sums(theta, graph, msg_off, rho, logm, node_sum, n_inf, lo, hi)
        for t in range(lo, hi):
            c = 1.0
            for a in range(adj_start[t], adj_start[t + 1]):
                c -= weight[adj_edge[a]]
            for k in range(node_off[t], node_off[t + 1]):
                mu[k] = node_sum[k] if n_inf[k] == 0 else -INFINITY
            value[t // _CHUNK] += fw_bp_node_belief(&mu[node_off[t]], &theta[node_off[t]],
                                                    card[t], c)


def edge_beliefs(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                 const double[::1] rho, const double[::1] weight, const double[::1] logm,
                 double[::1] mu, const double[::1] node_sum, const int[::1] n_inf,
                 double[::1] work, double[::1] value, Py_ssize_t lo, Py_ssize_t hi):
    """The beliefs of edges lo..hi-1 into mu, after `node_beliefs` of every variable:
    b_st ∝ exp(θ_st/ρ_st) (b_s-sum without m_ts) (b_t-sum without m_st) (eq. 40),
    normalised (all -inf: zeros); adds each edge's term of TRW(mu; θ, weight),
    Σ μ_st (θ_st − weight_e log μ_st), to value[e // BELIEF_CHUNK]. work (length >= 2 *
    max card) is scratch."""
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef Py_ssize_t n_edges = edges.shape[0], kmax = work.shape[0] // 2
    cdef Py_ssize_t e, i, j, a, b, ci, cj
    cdef long long oi, oj, mi, mj
    cdef double* pre_i = &work[0] if work.shape[0] else NULL
    cdef double* pre_j = pre_i + kmax if work.shape[0] else NULL
    with nogil:
        for e in range(lo, hi):
            i, j = edges[e, 0], edges[e, 1]
            ci, cj, oi, oj = card[i], card[j], node_off[i], node_off[j]
            mi, mj = msg_off[n_edges + e], msg_off[e]   # m_{j->i} over x_i, m_{i->j} over x_j
            for a in range(ci):
                pre_i[a] = _without(node_sum, n_inf, oi + a, logm[mi + a])
            for b in range(cj):
                pre_j[b] = _without(node_sum, n_inf, oj + b, logm[mj + b])
            value[e // _CHUNK] += fw_bp_edge_belief(&mu[edge_off[e]], &theta[edge_off[e]],
                                                    pre_i, ci, pre_j, cj, rho[e], weight[e])


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
