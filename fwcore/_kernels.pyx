# cython: language_level=3
"""Hot loops of fwcore on the flat layout of DESIGN.md.

Every kernel takes typed memoryviews, runs its loop without the GIL and trusts its inputs:
the Python callers validate once. Each kernel has a plain-NumPy twin in tests/.

Shared argument names (all C-contiguous, the arrays of a `PairwiseMRF`):
theta, mu, d, grad_out: float64[D]; card: int32[n]; edges: int32[E, 2];
node_off: int64[n+1]; edge_off: int64[E+1]; adj_start: int64[n+1]; adj_var, adj_edge:
int32[2E]; adj_first: int8[2E]; weight: float64[D], the entropy coefficient K of each
entry (K = c_i = 1 - sum of rho_e over edges at i on node i's block, K = rho_e on edge e's
block; `fwcore.marginals.rho.entropy_weights`).

Zero marginals: 0 log 0 = 0 and (-inf) * 0 = 0 in values. Wherever a log of a
non-positive marginal would be needed (gradients, line-search derivatives) it is replaced
by LOG_FLOOR = log(5e-324) ~ -744.4, the log of the smallest positive double, so results
stay finite (+inf only from theta = -inf) and never NaN.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, exp, fabs, log, pow
from libc.stdint cimport int8_t, uint64_t
from libc.stdlib cimport qsort
from ._clock cimport monotonic
from ._fastmath cimport fw_exp, fw_log

from ._bp cimport node_sums
from ._graph cimport Graph


cdef extern from "Python.h":
    int PyErr_CheckSignals()  # declared without ``except``: its exception stays pending

cnp.import_array()

cdef double LOG_FLOOR = log(4.9406564584124654e-324)

# The TRW passes in C: one fused loop per kernel around an inline branch-free log, so that
# GCC vectorises it (runtime-dispatched clones for x86-64-v4/v3 on Linux; the sums are
# `omp simd` reductions, enabled by -fopenmp-simd in setup.py, no OpenMP runtime).
cdef extern from *:
    """
    /* f = sum_k [mu_k > 0] mu_k (w_k log mu_k - theta_k), returned;
       grad_k = w_k (1 + log mu_k) - theta_k. */
    FW_CLONES static double fw_trw_value_grad(const double *theta, const double *mu,
                                              const double *w, double *grad, ptrdiff_t n,
                                              double floor_) {
        double f = 0.0;
        #pragma omp simd reduction(+:f)
        for (ptrdiff_t k = 0; k < n; k++) {
            double m = mu[k], lg = fw_log(m, floor_), t = m * (w[k] * lg - theta[k]);
            f += m > 0.0 ? t : 0.0;
            grad[k] = w[k] * (1.0 + lg) - theta[k];
        }
        return f;
    }
    /* With x = mu + g d: p1 = sum over d_k != 0 of d_k (w_k (1 + log x_k) - theta_k),
       p2 = sum over x_k > 0 of w_k d_k^2 / x_k. */
    FW_CLONES static void fw_trw_line_derivs(const double *theta, const double *mu,
                                             const double *d, const double *w, double g,
                                             ptrdiff_t n, double floor_, double *p1,
                                             double *p2) {
        double s1 = 0.0, s2 = 0.0;
        #pragma omp simd reduction(+:s1, s2)
        for (ptrdiff_t k = 0; k < n; k++) {
            double dk = d[k], x = mu[k] + g * dk, lg = fw_log(x, floor_);
            double t1 = dk * (w[k] * (1.0 + lg) - theta[k]), t2 = w[k] * dk * dk / x;
            s1 += dk != 0.0 ? t1 : 0.0;
            s2 += x > 0.0 ? t2 : 0.0;
        }
        *p1 = s1;
        *p2 = s2;
    }
    /* log(exp(a) + exp(b)) for finite a, b */
    FW_INLINE double fw_lse2(double a, double b, double floor_) {
        double top = a > b ? a : b, gap = a > b ? b - a : a - b;
        return top + fw_log(1.0 + fw_exp(gap), floor_);
    }
    /* Binary TRBP: messages lo..hi-1 of a sweep (`trbp_binary_sweeps`), the reverse of
       message m being m + shift; returns their largest change. */
    FW_CLONES static double fw_bp_binary(const double *table, const int *sender,
                                         const double *node_sum, const double *logm,
                                         double *out, ptrdiff_t lo, ptrdiff_t hi,
                                         ptrdiff_t shift, double damping, double floor_) {
        double change = 0.0;
        #pragma omp simd reduction(max:change)
        for (ptrdiff_t m = lo; m < hi; m++) {
            ptrdiff_t t = sender[m], r = m + shift;
            double p0 = node_sum[2 * t] - logm[2 * r], p1 = node_sum[2 * t + 1] - logm[2 * r + 1];
            double n0 = fw_lse2(table[4 * m] + p0, table[4 * m + 1] + p1, floor_);
            double n1 = fw_lse2(table[4 * m + 2] + p0, table[4 * m + 3] + p1, floor_);
            double o0 = logm[2 * m], o1 = logm[2 * m + 1];
            double v = (1.0 - damping) * (n1 - n0) + damping * (o1 - o0);
            double d0 = -fw_lse2(0.0, v, floor_), d1 = v + d0;
            out[2 * m] = d0;
            out[2 * m + 1] = d1;
            double c0 = fabs(d0 - o0), c1 = fabs(d1 - o1), c = c0 > c1 ? c0 : c1;
            change = change > c ? change : c;
        }
        return change;
    }
    """
    double fw_trw_value_grad(const double* theta, const double* mu, const double* w,
                             double* grad, Py_ssize_t n, double floor_) noexcept nogil
    void fw_trw_line_derivs(const double* theta, const double* mu, const double* d,
                            const double* w, double g, Py_ssize_t n, double floor_,
                            double* p1, double* p2) noexcept nogil
    double fw_bp_binary(const double* table, const int* sender, const double* node_sum,
                        const double* logm, double* out, Py_ssize_t lo, Py_ssize_t hi,
                        Py_ssize_t shift, double damping, double floor_) noexcept nogil


# -- scores of assignments --------------------------------------------------------------

cdef inline double _score(const double[::1] theta, const int[::1] card, const int[:, ::1] edges,
                          const long long[::1] node_off, const long long[::1] edge_off,
                          const int[::1] x) noexcept nogil:
    """<theta, mu(x)> in O(n + E)."""
    cdef Py_ssize_t i, e
    cdef double s = 0.0
    for i in range(card.shape[0]):
        s += theta[node_off[i] + x[i]]
    for e in range(edges.shape[0]):
        s += theta[edge_off[e] + x[edges[e, 0]] * card[edges[e, 1]] + x[edges[e, 1]]]
    return s


def score_assignments(const double[::1] theta, Graph graph, const int[:, ::1] atoms,
                      double[::1] out):
    """out[a] = <theta, mu(atoms[a])> for each assignment row, without dense vertices."""
    cdef Py_ssize_t a
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    with nogil:
        for a in range(atoms.shape[0]):
            out[a] = _score(theta, card, edges, node_off, edge_off, atoms[a])


# -- TRW objective (Barrier FW eq. 1-2; f = -TRW as in DESIGN.md) -----------------------

def trw_value_grad(const double[::1] theta, const double[::1] mu, const double[::1] weight,
                   double[::1] grad_out):
    """f(mu) = -TRW(mu) = -(<theta, mu> + sum_i c_i H(mu_i) + sum_e rho_e H(mu_e)), returned,
    and grad f = weight (1 + log mu) - theta written to grad_out, in one fused pass (Barrier
    FW eq. 2 and Sec. 3). The FW potentials are theta~ = -grad_out.

    Where mu = 0 the value term is 0 (also when theta = -inf) and the gradient uses
    LOG_FLOOR for log 0. f is +inf when mu > 0 on a state with theta = -inf.
    """
    cdef double f = 0.0
    if mu.shape[0] == 0:
        return f
    with nogil:
        f = fw_trw_value_grad(&theta[0], &mu[0], &weight[0], &grad_out[0], mu.shape[0],
                              LOG_FLOOR)
    return f


def block_entropies(const double[::1] mu, const long long[::1] off, double[::1] out):
    """out[b] = H(mu[off[b]:off[b+1]]) = -sum mu log mu (0 log 0 = 0), for B = len(out)
    blocks. Node entropies: off = node_off; edge (joint) entropies: off = edge_off."""
    cdef Py_ssize_t b, k
    cdef double h, m
    with nogil:
        for b in range(out.shape[0]):
            h = 0.0
            for k in range(off[b], off[b + 1]):
                m = mu[k]
                if m > 0.0:
                    h -= m * log(m)
            out[b] = h
    return np.asarray(out)


def edge_mutual_information(const double[::1] mu, Graph graph, double[::1] out):
    """out[e] = MI_e = H(r) + H(s) - H(mu_e), with r, s the row and column sums of the edge
    block itself (Barrier FW, Alg. 2 footnote 2; equal to H(mu_i) + H(mu_j) - H(mu_e) on
    the local polytope). Computed as sum mu_e (log mu_e - log r - log s), so MI >= 0 up to
    rounding even when mu drifts off local consistency."""
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] edge_off = graph.edge_off
    cdef Py_ssize_t e, a, b, ci, cj, base
    cdef double mi, m, r, lr
    cdef int max_card = 1 if card.shape[0] == 0 else max(1, int(np.max(card)))
    cdef double[::1] logcol = np.empty(max_card)
    with nogil:
        for e in range(edges.shape[0]):
            ci = card[edges[e, 0]]
            cj = card[edges[e, 1]]
            base = edge_off[e]
            for b in range(cj):
                r = 0.0
                for a in range(ci):
                    r += mu[base + a * cj + b]
                logcol[b] = log(r) if r > 0.0 else 0.0
            mi = 0.0
            for a in range(ci):
                r = 0.0
                for b in range(cj):
                    r += mu[base + a * cj + b]
                lr = log(r) if r > 0.0 else 0.0
                for b in range(cj):
                    m = mu[base + a * cj + b]
                    if m > 0.0:
                        mi += m * (log(m) - lr - logcol[b])
            out[e] = mi
    return np.asarray(out)


# -- line search along d (DESIGN.md, "TRW objective") -----------------------------------

cdef inline void _derivs(const double[::1] theta, const double[::1] mu, const double[::1] d,
                         double g, const double[::1] weight, double* p1,
                         double* p2) noexcept nogil:
    p1[0] = 0.0
    p2[0] = 0.0
    if mu.shape[0] == 0:
        return
    fw_trw_line_derivs(&theta[0], &mu[0], &d[0], &weight[0], g, mu.shape[0], LOG_FLOOR, p1, p2)
    if p1[0] != p1[0]:  # +inf and -inf from theta = -inf: mass enters an impossible state
        p1[0] = INFINITY


def trw_line_derivs(const double[::1] theta, const double[::1] mu, const double[::1] d,
                    double gamma, const double[::1] weight):
    """(phi'(gamma), phi''(gamma)) for phi(gamma) = f(mu + gamma d), f = -TRW, in one fused
    pass: phi' = <grad f(mu + gamma d), d>, phi'' = sum_k weight_k d_k^2 / (mu + gamma d)_k.

    Entries with d = 0 are skipped (they contribute nothing, even where theta = -inf).
    Entries with mu + gamma d <= 0 use LOG_FLOOR in phi' and add nothing to phi'' (phi''
    is then not meaningful; keep gamma inside the feasible segment). If theta = -inf
    terms of both signs meet, phi' = +inf.
    """
    cdef double p1, p2
    with nogil:
        _derivs(theta, mu, d, gamma, weight, &p1, &p2)
    return p1, p2


def trw_line_search(const double[::1] theta, const double[::1] mu, const double[::1] d,
                    const double[::1] weight, double gamma_max, double rtol=1e-10, double atol=0.0,
                    int max_passes=60):
    """argmin of phi(gamma) = f(mu + gamma d) over [0, gamma_max]: safeguarded Newton on
    phi' with a bisection bracket on the sign of phi' (phi need not be convex: node
    weights c_i can be negative). Returns (gamma, passes), passes = kernel passes over D.

    The caller guarantees mu + gamma d >= 0 on [0, gamma_max]. Iterates stay strictly
    inside (0, gamma_max); gamma_max is evaluated (for the sign of phi' only) when Newton
    points beyond it, and returned only when phi'(gamma_max) <= 0. Returns 0 when
    phi'(0) >= 0. Stops when |phi'| <= max(atol, rtol |phi'(0)|), when the bracket
    collapses to rounding, or after max_passes passes.
    """
    cdef double gamma
    cdef int passes
    with nogil:
        gamma = _line_search(theta, mu, d, weight, gamma_max, rtol, atol, max_passes, &passes)
    return gamma, passes


cdef double _line_search(const double[::1] theta, const double[::1] mu, const double[::1] d,
                         const double[::1] weight, double gamma_max, double rtol, double atol,
                         int max_passes, int* n_passes) noexcept nogil:
    """`trw_line_search`'s loop; the passes go to n_passes."""
    cdef double g = 0.0, lo = 0.0, hi = gamma_max, p1, p2, tol, cand
    cdef bint hi_known = False
    cdef int passes = 1
    _derivs(theta, mu, d, 0.0, weight, &p1, &p2)
    tol = atol
    if fabs(p1) < INFINITY and rtol * fabs(p1) > tol:
        tol = rtol * fabs(p1)
    if not p1 < 0.0 or gamma_max <= 0.0:
        max_passes = 0  # phi'(0) >= 0: no descent along d
    while passes < max_passes:
        cand = g - p1 / p2 if 0.0 < p2 < INFINITY else INFINITY
        if not (lo < cand < hi):
            cand = hi if cand >= hi and not hi_known else 0.5 * (lo + hi)
        if not (lo < cand <= hi) or (cand == hi and hi_known):
            break  # the bracket has collapsed to adjacent doubles
        g = cand
        _derivs(theta, mu, d, g, weight, &p1, &p2)
        passes += 1
        if g == gamma_max:
            if p1 <= 0.0:
                lo = gamma_max  # phi' < 0 all the way
                break
            hi_known = True
            p2 = 0.0  # phi'' is not meaningful at the boundary: bisect next
            continue
        if fabs(p1) <= tol:
            lo = g
            break
        if p1 < 0.0:
            lo = g
        else:
            hi = g
            hi_known = True
    n_passes[0] = passes
    return lo


# -- MFW correction over the visited vertices (Barrier FW Alg. 5) -----------------------

cdef inline void _to_vertex(double[::1] d, const double[::1] x, const double[::1] u0,
                            double delta, const int[::1] card, const int[:, ::1] edges,
                            const long long[::1] node_off, const long long[::1] edge_off,
                            const int[::1] atom) noexcept nogil:
    """d = v - x, v the vertex of M_delta that ``atom`` names: (1 - delta) mu(atom) +
    delta u0, or u0 itself for a row starting with -1 (`fwcore.fw.domains.Vertices`)."""
    cdef Py_ssize_t k, i, e
    if atom[0] < 0:
        for k in range(x.shape[0]):
            d[k] = u0[k] - x[k]
        return
    for k in range(x.shape[0]):
        d[k] = delta * u0[k] if delta != 0.0 else 0.0
    for i in range(card.shape[0]):
        d[node_off[i] + atom[i]] += 1.0 - delta
    for e in range(edges.shape[0]):
        d[edge_off[e] + atom[edges[e, 0]] * card[edges[e, 1]] + atom[edges[e, 1]]] += 1.0 - delta
    for k in range(x.shape[0]):
        d[k] -= x[k]


cdef inline void _add_assignment(double[::1] x, double w, const int[::1] card,
                                 const int[:, ::1] edges, const long long[::1] node_off,
                                 const long long[::1] edge_off,
                                 const int[::1] atom) noexcept nogil:
    cdef Py_ssize_t i, e
    for i in range(card.shape[0]):
        x[node_off[i] + atom[i]] += w
    for e in range(edges.shape[0]):
        x[edge_off[e] + atom[edges[e, 0]] * card[edges[e, 1]] + atom[edges[e, 1]]] += w


def add_assignment(double[::1] x, Graph graph, const int[::1] atom, double w):
    """x += w mu(atom), in place: w on the n node entries and E edge entries of the
    assignment ``atom`` (the vertex of the marginal polytope it names)."""
    with nogil:
        _add_assignment(x, w, graph.card, graph.edges, graph.node_off, graph.edge_off, atom)


cdef inline void _add_vertex(double[::1] x, double w, const double[::1] u0, double delta,
                             const int[::1] card, const int[:, ::1] edges,
                             const long long[::1] node_off, const long long[::1] edge_off,
                             const int[::1] atom) noexcept nogil:
    """x += w v, v as in `_to_vertex` (the order of `fwcore.fw.Domain.add_vertices`)."""
    cdef Py_ssize_t k
    if atom[0] < 0:
        for k in range(x.shape[0]):
            x[k] += w * u0[k]
        return
    _add_assignment(x, (1.0 - delta) * w, card, edges, node_off, edge_off, atom)
    if delta != 0.0:
        for k in range(x.shape[0]):
            x[k] += (delta * w) * u0[k]


def add_vertices(double[::1] x, Graph graph, const int[:, ::1] atoms,
                 const double[::1] weights, const double[::1] u0, double delta):
    """x += sum_a weights[a] v_delta(a), in place, atom by atom (the order of
    `fwcore.fw.Domain.add_vertices`): v_delta(a) = (1 - delta) mu(a) + delta u0 for an
    assignment row, u0 for a row starting with -1."""
    cdef Py_ssize_t a
    with nogil:
        for a in range(atoms.shape[0]):
            _add_vertex(x, weights[a], u0, delta, graph.card, graph.edges, graph.node_off,
                        graph.edge_off, atoms[a])


def mfw_correction(const double[::1] theta, Graph graph, const double[::1] weight,
                   const int[:, ::1] atoms, double[::1] alpha, double[::1] x,
                   const double[::1] u0, double delta, double tol, Py_ssize_t max_steps,
                   double drop_tol, double time_limit, double[::1] grad, double[::1] d,
                   double[::1] scores):
    """Barrier FW Alg. 5: away-step FW (MFW, Alg. 3) minimising f = -TRW over conv(V_delta),
    V the assignments ``atoms`` (int32[m, n]; a row starting with -1 is u0) with
    barycentric weights ``alpha`` and x = sum_a alpha_a v_delta(a), both updated in place.

    A step: grad = grad f(x) (`trw_value_grad`), scores_a = <grad, v_delta(a)> (O(n + E)
    per atom), pFW gap = max of the scores of positive weight - min of all; stop when it
    is <= tol, after max_steps steps or past time_limit seconds (<= 0: none). Else the FW
    direction to the best atom or the away direction from the worst atom of positive
    weight, whichever has the larger gap (a FW step when that atom holds all the weight),
    with the exact line search (`trw_line_search`) up to 1 or the away step's
    alpha / (1 - alpha) (a drop there); then weights <= drop_tol are zeroed and x moved to
    the hull of the others. grad, d (length D) and scores (length m) are scratch.
    Returns (steps, last pFW gap, f at the last x); the loop stops early when f is NaN or
    +inf (the caller raises).
    """
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef Py_ssize_t m = atoms.shape[0], n_dim = x.shape[0], steps = 0, a, k, i_s, i_v
    cdef double f = 0.0, gu, gx, gap = INFINITY, gamma, gamma_max, total
    cdef double stop = monotonic() + time_limit if time_limit > 0.0 else INFINITY
    cdef int passes
    with nogil:
        while True:
            f = fw_trw_value_grad(&theta[0], &x[0], &weight[0], &grad[0], n_dim, LOG_FLOOR)
            if not f < INFINITY:
                break
            gu = 0.0
            gx = 0.0
            for k in range(n_dim):
                gu += grad[k] * u0[k]
                gx += grad[k] * x[k]
            i_s = 0
            i_v = -1
            for a in range(m):
                if atoms[a, 0] < 0:
                    scores[a] = gu
                elif delta != 0.0:
                    scores[a] = (1.0 - delta) * _score(grad, card, edges, node_off, edge_off,
                                                       atoms[a]) + delta * gu
                else:
                    scores[a] = _score(grad, card, edges, node_off, edge_off, atoms[a])
                if scores[a] < scores[i_s]:
                    i_s = a
                if alpha[a] > 0.0 and (i_v < 0 or scores[a] > scores[i_v]):
                    i_v = a
            gap = scores[i_v] - scores[i_s]
            if gap <= tol or steps == max_steps or monotonic() >= stop:
                break
            if gx - scores[i_s] >= scores[i_v] - gx or alpha[i_v] >= 1.0 - 1e-15:
                _to_vertex(d, x, u0, delta, card, edges, node_off, edge_off, atoms[i_s])
                gamma = _line_search(theta, x, d, weight, 1.0, 1e-10, 0.0, 60, &passes)
                gamma = min(max(gamma, 0.0), 1.0)
                for a in range(m):
                    alpha[a] *= 1.0 - gamma
                alpha[i_s] += gamma
            else:
                gamma_max = alpha[i_v] / (1.0 - alpha[i_v])
                _to_vertex(d, x, u0, delta, card, edges, node_off, edge_off, atoms[i_v])
                for k in range(n_dim):
                    d[k] = -d[k]
                gamma = _line_search(theta, x, d, weight, gamma_max, 1e-10, 0.0, 60, &passes)
                gamma = min(max(gamma, 0.0), gamma_max)
                for a in range(m):
                    alpha[a] *= 1.0 + gamma
                alpha[i_v] = 0.0 if gamma >= gamma_max else alpha[i_v] - gamma
            if gamma > 0.0:
                for k in range(n_dim):
                    x[k] += gamma * d[k]
            total = 0.0  # drop weights <= drop_tol, moving x to the others' hull
            for a in range(m):
                if alpha[a] <= drop_tol and alpha[a] != 0.0:
                    total += alpha[a]
                    _add_vertex(x, -alpha[a], u0, delta, card, edges, node_off, edge_off,
                                atoms[a])
            if total != 0.0:
                for a in range(m):
                    alpha[a] = 0.0 if alpha[a] <= drop_tol else alpha[a] / (1.0 - total)
                for k in range(n_dim):
                    x[k] /= 1.0 - total
            steps += 1
    return steps, gap, f


# -- ICM (Besag 1986; Barrier FW, Alg. 6) ----------------------------------------------

cdef inline uint64_t _splitmix64(uint64_t* state) noexcept nogil:
    cdef uint64_t z
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline Py_ssize_t _randint(uint64_t* state, Py_ssize_t m) noexcept nogil:
    """Uniform integer in [0, m), m < 2**32 (multiply-shift)."""
    return <Py_ssize_t>(((_splitmix64(state) >> 32) * <uint64_t>m) >> 32)


cdef inline void _shuffle(int[::1] a, Py_ssize_t lo, Py_ssize_t hi,
                          uint64_t* state) noexcept nogil:
    """Fisher-Yates shuffle of a[lo:hi] in place, from the last entry down."""
    cdef Py_ssize_t t, j
    cdef int tmp
    for t in range(hi - 1, lo, -1):
        j = lo + _randint(state, t - lo + 1)
        tmp = a[t]
        a[t] = a[j]
        a[j] = tmp


def icm(const double[::1] theta, Graph graph, int[::1] x, int max_sweeps=100, order=None,
        seed=None, int block=1024, bint skip_clean=True):
    """Iterated conditional modes (maximising <theta, mu(x)>), in place on x (warm start).

    A sweep visits each entry of `order` (int32, default 0..n-1: all variables) once and
    sets its variable to the argmax of its local score given its neighbours, moving only on
    a strict improvement (ties and all -inf rows keep the current state). Stops after a
    sweep that changes nothing, or after max_sweeps sweeps.
    Without `seed` a sweep follows `order`. With `seed` (inline splitmix64 generator,
    reproducible) `order` is cut into blocks of `block` consecutive entries and each sweep
    visits the blocks in a fresh random order, each block's entries in a fresh random
    order (Fisher-Yates of the block list, then of each block's slice of `order` as it is
    reached; with m <= block entries this is one uniform permutation per sweep). A block's
    data stays in cache on grids and other locally numbered graphs, where a full
    permutation per sweep of 10^5 variables costs ~7-10x a sweep in index order (blocked:
    ~2.5-3x; block sizes 128-4096 measured alike).
    skip_clean: skip an entry whose variable was evaluated before and none of whose
    neighbours has moved since; such a visit could not move (its last evaluation left it at
    a maximiser of the same local scores), so x, sweeps and converged are those of visiting
    every entry, and a sweep after the first costs about the number of moves made before.
    Returns (score of x, sweeps done, converged: the last sweep changed nothing).
    """
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], t, v, u, a, slot, e, best_a, xv, b, lo, hi
    cdef int[::1] ord_ = (np.arange(n, dtype=np.int32) if order is None
                          else np.array(order, dtype=np.int32).ravel())
    cdef Py_ssize_t m = ord_.shape[0]
    if m and (np.min(ord_) < 0 or np.max(ord_) >= n):
        raise ValueError(f"order must list variables in 0..{n - 1}")
    if block < 1:
        raise ValueError(f"block must be >= 1; got {block}")
    cdef Py_ssize_t n_blocks = (m + block - 1) // block
    cdef int[::1] blocks = np.arange(n_blocks, dtype=np.int32)
    cdef int8_t[::1] dirty = np.ones(n, dtype=np.int8)
    cdef bint shuffle = seed is not None, changed = True
    cdef uint64_t state = 0 if seed is None else <uint64_t>(int(seed) & 0xFFFFFFFFFFFFFFFF)
    cdef int sweeps = 0
    cdef double s, best, cur, score
    with nogil:
        while changed and sweeps < max_sweeps:
            changed = False
            sweeps += 1
            if shuffle:
                _shuffle(blocks, 0, n_blocks, &state)
            for b in range(n_blocks):
                lo = blocks[b] * <Py_ssize_t>block
                hi = min(lo + block, m)
                if shuffle:
                    _shuffle(ord_, lo, hi, &state)
                for t in range(lo, hi):
                    v = ord_[t]
                    if skip_clean:
                        if not dirty[v]:
                            continue
                        dirty[v] = 0
                    xv = x[v]
                    best = -INFINITY
                    best_a = xv
                    cur = -INFINITY
                    for a in range(card[v]):
                        s = theta[node_off[v] + a]
                        for slot in range(adj_start[v], adj_start[v + 1]):
                            u = adj_var[slot]
                            e = adj_edge[slot]
                            if adj_first[slot]:
                                s += theta[edge_off[e] + a * card[u] + x[u]]
                            else:
                                s += theta[edge_off[e] + x[u] * card[v] + a]
                        if a == xv:
                            cur = s
                        if s > best:
                            best = s
                            best_a = a
                    if best > cur:
                        x[v] = <int>best_a
                        changed = True
                        for slot in range(adj_start[v], adj_start[v + 1]):
                            dirty[adj_var[slot]] = 1
        score = _score(theta, card, edges, node_off, edge_off, x)
    return score, sweeps, not changed


# -- the local score of a variable (ICM-like moves, decoding) -------------------------

cdef inline double _local(const double[::1] theta, const int[::1] card,
                          const long long[::1] node_off, const long long[::1] edge_off,
                          const long long[::1] adj_start, const int[::1] adj_var,
                          const int[::1] adj_edge, const int8_t[::1] adj_first,
                          const int[::1] x, Py_ssize_t v, Py_ssize_t a, const int8_t* only,
                          int* n_bad) noexcept nogil:
    """The finite part of the terms of <theta, mu(x)> that involve v, with x_v = a (only
    the edges to the neighbours u with only[u] != 0 unless ``only`` is NULL), node term
    first, then the CSR neighbours; the number of -inf terms among them goes to n_bad."""
    cdef Py_ssize_t slot, u, e
    cdef double s = 0.0, t = theta[node_off[v] + a]
    n_bad[0] = 0
    if t == -INFINITY:
        n_bad[0] += 1
    else:
        s += t
    for slot in range(adj_start[v], adj_start[v + 1]):
        u = adj_var[slot]
        if only != NULL and not only[u]:
            continue
        e = adj_edge[slot]
        if adj_first[slot]:
            t = theta[edge_off[e] + a * card[u] + x[u]]
        else:
            t = theta[edge_off[e] + x[u] * card[v] + a]
        if t == -INFINITY:
            n_bad[0] += 1
        else:
            s += t
    return s


# -- decoding under arc consistency (maintained arc consistency, Sabin & Freuder 1994) ---

cdef bint _ac_propagate(const double[::1] theta, const int[::1] card,
                        const long long[::1] node_off, const long long[::1] edge_off,
                        const long long[::1] adj_start, const int[::1] adj_var,
                        const int[::1] adj_edge, const int8_t[::1] adj_first,
                        const int8_t[::1] hard, int8_t[::1] alive, int[::1] n_alive,
                        int[::1] queue, int8_t[::1] queued, Py_ssize_t* q_len,
                        long long[::1] trail, int[::1] trail_var,
                        Py_ssize_t* trail_len) noexcept nogil:
    """AC-3 from the variables in queue[:q_len] (LIFO): every live state b of a neighbour w
    across an edge with a -inf entry keeps a live support a at u (theta_uw(a, b) > -inf),
    else it dies (recorded on the trail). Returns False when a domain empties (the queue
    is then emptied)."""
    cdef Py_ssize_t u, w, slot, e, a, b, cu, cw
    cdef long long pos
    cdef bint supported
    while q_len[0]:
        q_len[0] -= 1
        u = queue[q_len[0]]
        queued[u] = 0
        cu = card[u]
        for slot in range(adj_start[u], adj_start[u + 1]):
            e = adj_edge[slot]
            if not hard[e]:
                continue
            w = adj_var[slot]
            cw = card[w]
            for b in range(cw):
                if not alive[node_off[w] + b]:
                    continue
                supported = False
                for a in range(cu):
                    if not alive[node_off[u] + a]:
                        continue
                    if adj_first[slot]:
                        pos = edge_off[e] + a * cw + b
                    else:
                        pos = edge_off[e] + b * cu + a
                    if theta[pos] != -INFINITY:
                        supported = True
                        break
                if supported:
                    continue
                alive[node_off[w] + b] = 0
                n_alive[w] -= 1
                trail[trail_len[0]] = node_off[w] + b
                trail_var[trail_len[0]] = <int>w
                trail_len[0] += 1
                if n_alive[w] == 0:
                    while q_len[0]:
                        q_len[0] -= 1
                        queued[queue[q_len[0]]] = 0
                    return False
                if not queued[w]:
                    queued[w] = 1
                    queue[q_len[0]] = <int>w
                    q_len[0] += 1
    return True


cdef inline void _ac_undo(int8_t[::1] alive, int[::1] n_alive, const long long[::1] trail,
                          const int[::1] trail_var, Py_ssize_t* trail_len,
                          Py_ssize_t mark) noexcept nogil:
    """Revive the states that died after trail position ``mark``."""
    while trail_len[0] > mark:
        trail_len[0] -= 1
        alive[trail[trail_len[0]]] = 1
        n_alive[trail_var[trail_len[0]]] += 1


cdef inline void _ac_kill(int8_t[::1] alive, int[::1] n_alive, long long[::1] trail,
                          int[::1] trail_var, Py_ssize_t* trail_len, Py_ssize_t v,
                          long long pos) noexcept nogil:
    alive[pos] = 0
    n_alive[v] -= 1
    trail[trail_len[0]] = pos
    trail_var[trail_len[0]] = <int>v
    trail_len[0] += 1


def ac_decode(const double[::1] theta, Graph graph, int[::1] x):
    """A labelling using only finite entries of theta, built variable by variable in index
    order under maintained arc consistency (without backtracking to earlier variables), in
    place on x, whose entries are the preferred states.

    The domains start as the states with a finite unary entry, made arc consistent over the
    -inf entries of the edge tables (AC-3). Then each variable v in turn takes, among the
    live states of its domain, x[v] if it is live, else the first of highest local score
    (unary plus the edges to the variables already set), and arc consistency propagates
    that choice. A choice that empties a domain is undone, its state deleted (and that
    deletion propagated), and the next live state tried. On a forest, and wherever no
    domain runs out, every entry x uses is finite; x keeps every state of a preferred
    labelling that is feasible. A variable left without a live state (arc consistency
    is not global consistency on cycles) stops the propagation: from it on, each variable
    takes the first state of fewest -inf terms (unary and edges to variables already set),
    then x[v] among those, then the highest finite local score.
    Returns whether every entry x uses is finite.
    """
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], n_edges = edges.shape[0], n_states = node_off[n]
    cdef int8_t[::1] hard = np.zeros(n_edges, dtype=np.int8)
    cdef int8_t[::1] alive = np.zeros(n_states, dtype=np.int8)
    cdef int8_t[::1] queued = np.zeros(n, dtype=np.int8)
    cdef int8_t[::1] is_set = np.zeros(n, dtype=np.int8)
    cdef int[::1] n_alive = np.zeros(n, dtype=np.int32)
    cdef int[::1] queue = np.empty(n, dtype=np.int32)
    cdef long long[::1] trail = np.empty(n_states, dtype=np.int64)
    cdef int[::1] trail_var = np.empty(n_states, dtype=np.int32)
    cdef Py_ssize_t q_len = 0, trail_len = 0, mark, v, a, e, choice, fewest
    cdef long long k
    cdef int bad
    cdef double s, best
    cdef bint broken = False
    with nogil:
        for e in range(n_edges):
            for k in range(edge_off[e], edge_off[e + 1]):
                if theta[k] == -INFINITY:
                    hard[e] = 1
                    break
        for v in range(n):
            for a in range(card[v]):
                if theta[node_off[v] + a] != -INFINITY:
                    alive[node_off[v] + a] = 1
                    n_alive[v] += 1
            if n_alive[v] == 0:
                broken = True
            queued[v] = 1
            queue[q_len] = <int>v
            q_len += 1
        if not broken:
            broken = not _ac_propagate(theta, card, node_off, edge_off, adj_start, adj_var,
                                       adj_edge, adj_first, hard, alive, n_alive, queue,
                                       queued, &q_len, trail, trail_var, &trail_len)
        for v in range(n):
            while not broken:
                trail_len = 0  # the choices before v are never undone
                choice = -1
                if alive[node_off[v] + x[v]]:
                    choice = x[v]
                else:  # a live state has no -inf term with the variables set
                    best = -INFINITY
                    for a in range(card[v]):
                        if not alive[node_off[v] + a]:
                            continue
                        s = _local(theta, card, node_off, edge_off, adj_start, adj_var,
                                   adj_edge, adj_first, x, v, a, &is_set[0], &bad)
                        if choice < 0 or s > best:
                            best = s
                            choice = a
                if n_alive[v] == 1:
                    break
                mark = trail_len
                for a in range(card[v]):
                    if a != choice and alive[node_off[v] + a]:
                        _ac_kill(alive, n_alive, trail, trail_var, &trail_len, v,
                                 node_off[v] + a)
                queued[v] = 1
                queue[0] = <int>v
                q_len = 1
                if _ac_propagate(theta, card, node_off, edge_off, adj_start, adj_var,
                                 adj_edge, adj_first, hard, alive, n_alive, queue, queued,
                                 &q_len, trail, trail_var, &trail_len):
                    break
                _ac_undo(alive, n_alive, trail, trail_var, &trail_len, mark)
                _ac_kill(alive, n_alive, trail, trail_var, &trail_len, v, node_off[v] + choice)
                if n_alive[v] == 0:
                    broken = True
                    break
                queued[v] = 1
                queue[0] = <int>v
                q_len = 1
                broken = not _ac_propagate(theta, card, node_off, edge_off, adj_start,
                                           adj_var, adj_edge, adj_first, hard, alive,
                                           n_alive, queue, queued, &q_len, trail,
                                           trail_var, &trail_len)
            if broken:  # fewest -inf terms with the variables set, then x[v], then score
                fewest = n + 1
                best = -INFINITY
                choice = -1
                for a in range(card[v]):
                    s = _local(theta, card, node_off, edge_off, adj_start, adj_var,
                               adj_edge, adj_first, x, v, a, &is_set[0], &bad)
                    if (choice < 0 or bad < fewest or
                            (bad == fewest and choice != x[v] and (a == x[v] or s > best))):
                        fewest, best, choice = bad, s, a
            x[v] = <int>choice
            is_set[v] = 1
        s = _score(theta, card, edges, node_off, edge_off, x)
    return s != -INFINITY


# -- simulated annealing (Kirkpatrick, Gelatt & Vecchi 1983; Metropolis et al. 1953) ------

def anneal(const double[::1] theta, Graph graph, int[::1] x, int[::1] best_x,
           double t_start, double t_end, long long n_moves, long long start,
           long long stop, double time_limit, unsigned long long seed, int[::1] log):
    """Moves start .. stop - 1 of a simulated-annealing schedule of n_moves moves
    (maximising <theta, mu(x)>), from x, in place; best_x receives the best labelling
    visited (x itself included).

    Move m visits variable m mod n (index order: cache-friendly on locally numbered
    graphs) and proposes a state a != x_v drawn uniformly (inline splitmix64 generator
    started at ``seed``); it is accepted by the Metropolis rule at temperature
    T = t_start cool^(m // 4096), cool = (t_end / t_start)^(4096 / n_moves) (geometric
    from t_start to t_end): always when the finite score does not drop, else with
    probability exp(delta / T). Impossible states: the -inf terms of x are counted, never
    summed; a move that adds -inf terms is rejected and one that removes some is accepted,
    so from a feasible x the search never leaves the feasible set. time_limit (seconds,
    <= 0: none) is checked every 4096 moves. ``log`` (int32[n], work) lists the variables
    moved since the last best, so best_x is updated in O(moves) (a full copy after n
    logged moves).
    Returns (best finite score, best number of -inf terms, moves done, moves accepted,
    generator state): a call for the moves from start + moves done on, with that state
    and x, goes on with the same walk, so a schedule cut into calls is the one call's.
    """
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], v, a, i, e, k, n_log = 0
    cdef long long move = start, accepted = 0
    cdef int bad_a, bad_c, bad = 0, best_bad
    cdef uint64_t state = seed
    cdef double fin = 0.0, best_fin, la, lc, delta, t, u
    cdef double cool = 1.0 if n_moves <= 1 or t_end >= t_start else \
        (t_end / t_start) ** (4096.0 / n_moves)
    cdef double temp = t_start * pow(cool, <double>(start // 4096))
    cdef double deadline = monotonic() + time_limit if time_limit > 0.0 else INFINITY
    cdef bint overflow = False
    if n == 0:
        return 0.0, 0, 0, 0, seed
    with nogil:
        for i in range(n):                   # score of x: finite part and -inf count
            t = theta[node_off[i] + x[i]]
            if t == -INFINITY:
                bad += 1
            else:
                fin += t
        for e in range(edges.shape[0]):
            t = theta[edge_off[e] + x[edges[e, 0]] * card[edges[e, 1]] + x[edges[e, 1]]]
            if t == -INFINITY:
                bad += 1
            else:
                fin += t
        for i in range(n):
            best_x[i] = x[i]
        best_fin, best_bad = fin, bad
        while move < stop:
            if move & 4095 == 0 and move != start:
                temp = t_start * pow(cool, <double>(move // 4096))
                if monotonic() > deadline:
                    break
            v = move % n
            move += 1
            if card[v] < 2:
                continue
            a = _randint(&state, card[v] - 1)
            if a >= x[v]:
                a += 1
            la = _local(theta, card, node_off, edge_off, adj_start, adj_var, adj_edge,
                        adj_first, x, v, a, NULL, &bad_a)
            lc = _local(theta, card, node_off, edge_off, adj_start, adj_var, adj_edge,
                        adj_first, x, v, x[v], NULL, &bad_c)
            if bad_a > bad_c:
                continue
            delta = la - lc
            if bad_a == bad_c and delta < 0.0:
                if delta < -40.0 * temp:     # exp(-40) ~ 4e-18: never accepted
                    continue
                u = (_splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0)
                if u >= exp(delta / temp):
                    continue
            x[v] = <int>a
            fin += delta
            bad += bad_a - bad_c
            accepted += 1
            if n_log < n:
                log[n_log] = <int>v
                n_log += 1
            else:
                overflow = True
            if bad < best_bad or (bad == best_bad and fin > best_fin):
                best_fin, best_bad = fin, bad
                if overflow:
                    for i in range(n):
                        best_x[i] = x[i]
                else:
                    for k in range(n_log):
                        best_x[log[k]] = x[log[k]]
                n_log = 0
                overflow = False
    return best_fin, best_bad, move - start, accepted, state


# -- Euclidean projection onto the simplex {w >= 0, sum w = z} --------------------------

cdef int _cmp_desc(const void* pa, const void* pb) noexcept nogil:
    cdef double a = (<const double*>pa)[0], b = (<const double*>pb)[0]
    return (a < b) - (a > b)


cdef inline void _shift_clip(double[::1] v, Py_ssize_t start, Py_ssize_t stop,
                             double tau) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(start, stop):
        v[k] = v[k] - tau if v[k] > tau else 0.0


cdef inline Py_ssize_t _load_block(const double[::1] v, const long long[::1] offsets,
                                   Py_ssize_t b, double[::1] out) noexcept nogil:
    """out[:m] = block b of v; returns m."""
    cdef Py_ssize_t k, start = offsets[b], m = offsets[b + 1] - offsets[b]
    for k in range(m):
        out[k] = v[start + k]
    return m


def _check_radius(double z):
    if not 0.0 < z < INFINITY:
        raise ValueError(f"z must be a positive finite radius; got {z}")


def _max_block(const long long[::1] offsets):
    cdef Py_ssize_t b, m = 1
    for b in range(offsets.shape[0] - 1):
        m = max(m, offsets[b + 1] - offsets[b])
    return m


def project_simplex_sort(double[::1] v, const long long[::1] offsets, double z=1.0):
    """In place, each block v[offsets[b]:offsets[b+1]] (non-empty, finite) <- its
    Euclidean projection onto {w >= 0, sum w = z}, z > 0: sort-based (Held et al. 1974;
    Duchi et al. 2008, Fig. 1), O(m log m) per block."""
    _check_radius(z)
    cdef double[::1] u = np.empty(_max_block(offsets))
    cdef Py_ssize_t b, k, m, start, rho
    cdef double csum, tau
    with nogil:
        for b in range(offsets.shape[0] - 1):
            start = offsets[b]
            m = _load_block(v, offsets, b, u)
            qsort(&u[0], m, sizeof(double), _cmp_desc)
            csum = 0.0
            tau = u[0] - z
            for k in range(m):
                csum += u[k]
                if u[k] * (k + 1) > csum - z:
                    rho = k + 1
                    tau = (csum - z) / rho
            _shift_clip(v, start, start + m, tau)


def project_simplex_pivot(double[::1] v, const long long[::1] offsets, double z=1.0,
                          unsigned long long seed=0):
    """As `project_simplex_sort` (same result), by the randomized-pivot algorithm of
    Duchi et al. 2008, Fig. 2: expected O(m) per block. `seed` only affects the time."""
    _check_radius(z)
    cdef double[::1] w = np.empty(_max_block(offsets))
    cdef Py_ssize_t b, k, m, start, lo, hi, g, rho
    cdef double s, ds, p, tmp
    cdef uint64_t state = seed
    with nogil:
        for b in range(offsets.shape[0] - 1):
            start = offsets[b]
            m = _load_block(v, offsets, b, w)
            s = 0.0
            rho = 0
            lo = 0
            hi = m
            while lo < hi:
                # pivot to w[lo]; then w[lo+1 : lo+1+g] holds the others >= p
                k = lo + _randint(&state, hi - lo)
                p = w[k]
                w[k] = w[lo]
                w[lo] = p
                g = 0
                ds = p
                for k in range(lo + 1, hi):
                    if w[k] >= p:
                        g += 1
                        tmp = w[k]
                        w[k] = w[lo + g]
                        w[lo + g] = tmp
                        ds += tmp
                if s + ds - (rho + g + 1) * p < z:
                    s += ds
                    rho += g + 1
                    lo = lo + g + 1
                else:
                    hi = lo + 1 + g
                    lo = lo + 1
            _shift_clip(v, start, start + m, (s - z) / rho)


cdef inline double _lse(const double* a, Py_ssize_t k) noexcept nogil:
    """log sum exp(a[:k]); -inf when every entry is -inf."""
    cdef Py_ssize_t x, top = 0
    cdef double mx = -INFINITY, s = 1.0
    for x in range(k):
        if a[x] > mx:
            mx, top = a[x], x
    if mx == -INFINITY:
        return -INFINITY
    for x in range(k):
        if x != top:
            s += exp(a[x] - mx)
    return log(s) + mx


cdef inline void _normalise(double* a, Py_ssize_t k) noexcept nogil:
    """a -= logsumexp(a), unless every entry is -inf: a - max, then minus log Σ exp(a -
    max), so that entries near 1e15 keep their differences (subtracting the sum itself
    would round them to its spacing)."""
    cdef Py_ssize_t x
    cdef double mx = -INFINITY, s = 0.0
    for x in range(k):
        if a[x] > mx:
            mx = a[x]
    if mx == -INFINITY:
        return
    for x in range(k):
        s += exp(a[x] - mx)
    s = log(s)
    for x in range(k):
        a[x] = (a[x] - mx) - s


#: how a BP kernel call ended: its sweeps done (or converged), the time limit passed in a
#: sweep, Python's signal handlers raised in one (Ctrl-C; the exception is raised)
BP_DONE, BP_TIME, BP_SIGNAL = 0, 1, 2
# work (table entries) between two reads of the clock, and between two runs of Python's
# signal handlers (about 10 ms of work; main thread only)
cdef long long _BP_CLOCK = 1 << 16, _BP_SIGNALS = 1 << 21


cdef struct Poll:
    double until           # the clock's time limit (INFINITY: none)
    bint signals           # run Python's signal handlers (the main thread does)
    long long unclocked, unsignalled
    int stop               # BP_TIME or BP_SIGNAL once one came


cdef inline Poll _poll_start(double time_limit, bint signals) noexcept nogil:
    cdef Poll p
    p.until = monotonic() + time_limit if time_limit > 0.0 else INFINITY
    p.signals, p.unclocked, p.unsignalled, p.stop = signals, 0, 0, 0
    return p


cdef inline bint _stopped(Poll* p, long long work) noexcept nogil:
    """Count ``work`` more; True (and p.stop set) once the time limit has passed or a
    signal handler raised (its exception left pending)."""
    p.unclocked += work
    p.unsignalled += work
    if p.unclocked >= _BP_CLOCK:
        p.unclocked = 0
        if monotonic() > p.until:
            p.stop = 1
            return True
    if p.signals and p.unsignalled >= _BP_SIGNALS:
        p.unsignalled = 0
        with gil:
            if PyErr_CheckSignals() != 0:
                p.stop = 2
                return True
    return False


cdef int _raise_pending() except -1:
    """Raise the exception a signal handler left pending (`_stopped`)."""
    return -1


def trbp_sweeps(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                const double[::1] rho, double damping, double tol, Py_ssize_t n_sweeps,
                double[::1] logm, double[::1] new, double[::1] node_sum, double[::1] work,
                int[::1] n_inf, double time_limit, bint signals):
    """Up to n_sweeps damped parallel TRBP sweeps in the log domain, in place on logm
    (TRW paper, Wainwright et al. 2005, eq. 39; `fwcore.marginals.bp`).

    logm: the 2E normalised log-messages, flat; message e (edge e = (i, j)) is i -> j over
    x_j, message E + e is j -> i over x_i, message m at msg_off[m]:msg_off[m+1]. new,
    node_sum, n_inf (length node_off[n]) and work (length >= 2 * max card) are scratch. A
    sweep: node_sum_t = theta_t + sum_v rho_vt log m_vt, kept as its finite part and the
    number of -inf terms (n_inf), so that removing log m_st leaves -inf exactly when
    another term is -inf (a -inf row of an edge table rules its state out at every
    neighbour); message t -> s = logsumexp_{x_t}(theta_st / rho_st + node_sum_t - log m_st),
    -inf on impossible x_s, damped (1 - damping) new + damping old on finite entries,
    normalised. Stops after a sweep whose largest change of a finite entry is < tol.

    A sweep is left, logm as the last whole sweep made it, when ``time_limit`` seconds
    (<= 0: none) have passed or, with ``signals`` (the main thread), when a signal handler
    raises (Ctrl-C: its KeyboardInterrupt is raised); both are checked every few
    milliseconds of work. Returns (whole sweeps done, the last one's largest change,
    BP_DONE or BP_TIME).
    """
    cdef const int[::1] card = graph.card, adj_edge = graph.adj_edge
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], n_edges = edges.shape[0], kmax = work.shape[0] // 2
    cdef Py_ssize_t sweep = 0, t, s, a, e, m, rev, d, x, xt, xs, ct, cs, cj, o, orev
    cdef long long eo, ot, os_
    cdef double r, v, change = INFINITY, swept
    cdef double* pre = &work[0] if work.shape[0] else NULL
    cdef double* buf = pre + kmax if work.shape[0] else NULL
    cdef Poll poll = _poll_start(time_limit, signals)
    with nogil:
        while sweep < n_sweeps and poll.stop == 0:
            node_sums(theta, graph, msg_off, rho, logm, node_sum, n_inf, 0, n)
            swept = 0.0
            for e in range(n_edges):
                if e and _stopped(&poll, 2 * card[edges[e - 1, 0]] * card[edges[e - 1, 1]]):
                    break
                eo = edge_off[e]
                r = rho[e]
                cj = card[edges[e, 1]]
                for d in range(2):
                    if d == 0:
                        t, s, m, rev = edges[e, 0], edges[e, 1], e, n_edges + e
                    else:
                        t, s, m, rev = edges[e, 1], edges[e, 0], n_edges + e, e
                    ct, cs, ot, os_ = card[t], card[s], node_off[t], node_off[s]
                    o, orev = msg_off[m], msg_off[rev]
                    for xt in range(ct):
                        if logm[orev + xt] != -INFINITY:
                            pre[xt] = (node_sum[ot + xt] - logm[orev + xt]
                                       if n_inf[ot + xt] == 0 else -INFINITY)
                        else:
                            pre[xt] = node_sum[ot + xt] if n_inf[ot + xt] == 1 else -INFINITY
                    for xs in range(cs):
                        if theta[os_ + xs] == -INFINITY:
                            new[o + xs] = -INFINITY
                            continue
                        for xt in range(ct):
                            if d == 0:
                                buf[xt] = theta[eo + xt * cj + xs] / r + pre[xt]
                            else:
                                buf[xt] = theta[eo + xs * cj + xt] / r + pre[xt]
                        new[o + xs] = _lse(buf, ct)
                    if damping != 0.0:      # normalising before damping only shifts it
                        for xs in range(cs):
                            if new[o + xs] != -INFINITY:
                                new[o + xs] = ((1 - damping) * new[o + xs]
                                               + damping * logm[o + xs])
                    _normalise(&new[o], cs)
                    for xs in range(cs):
                        if new[o + xs] != -INFINITY:
                            v = fabs(new[o + xs] - logm[o + xs])
                            if v > swept:
                                swept = v
            if poll.stop:
                break
            sweep += 1
            change = swept
            for x in range(logm.shape[0]):
                logm[x] = new[x]
            if change < tol:
                break
    if poll.stop == 2:
        _raise_pending()
    return sweep, change, poll.stop


#: messages per block of a binary sweep: the unit of `binary_messages`, fixed so that any
#: split of a sweep among threads computes every message the same way (bit for bit)
BP_BLOCK = 4096
cdef Py_ssize_t _BP_BLOCK = BP_BLOCK


cdef inline void _binary_node_sums(const double[::1] node_theta, Graph graph,
                                   const double[::1] rho, const double[::1] logm,
                                   double[::1] node_sum, Py_ssize_t lo,
                                   Py_ssize_t hi) noexcept nogil:
    """node_sum_t = theta_t + sum_v rho_vt log m_vt for t in lo..hi-1 (binary)."""
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int[::1] adj_edge = graph.adj_edge
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n_edges = graph.edges.shape[0], t, a, m
    cdef double s0, s1, r
    for t in range(lo, hi):
        s0 = node_theta[2 * t]
        s1 = node_theta[2 * t + 1]
        for a in range(adj_start[t], adj_start[t + 1]):
            m = n_edges + adj_edge[a] if adj_first[a] else adj_edge[a]
            r = rho[adj_edge[a]]
            s0 += r * logm[2 * m]
            s1 += r * logm[2 * m + 1]
        node_sum[2 * t] = s0
        node_sum[2 * t + 1] = s1


cdef inline double _binary_messages(const double[::1] table, const int[::1] sender,
                                    const double[::1] node_sum, const double[::1] logm,
                                    double[::1] new, Py_ssize_t n_edges, double damping,
                                    Py_ssize_t b_lo, Py_ssize_t b_hi, Poll* poll) noexcept nogil:
    """The messages of blocks b_lo..b_hi-1 into new; their largest change (the blocks
    after a stop of ``poll`` are left)."""
    cdef Py_ssize_t per_half = (n_edges + _BP_BLOCK - 1) // _BP_BLOCK, b, lo, hi, half
    cdef double change = 0.0, c
    for b in range(b_lo, b_hi):
        if b > b_lo and _stopped(poll, _BP_CLOCK):  # a block (~50 us): read the clock
            break
        half = b // per_half  # blocks of messages i -> j (reverse m + E), then j -> i
        lo = (b % per_half) * _BP_BLOCK + half * n_edges
        hi = min(lo + _BP_BLOCK, (half + 1) * n_edges)
        c = fw_bp_binary(&table[0], &sender[0], &node_sum[0], &logm[0], &new[0], lo, hi,
                         -n_edges if half else n_edges, damping, LOG_FLOOR)
        if c > change:
            change = c
    return change


def binary_node_sums(Graph graph, const double[::1] node_theta, const double[::1] rho,
                     const double[::1] logm, double[::1] node_sum, Py_ssize_t lo,
                     Py_ssize_t hi):
    """The node sums of variables lo..hi-1 of a `trbp_binary_sweeps` sweep."""
    with nogil:
        _binary_node_sums(node_theta, graph, rho, logm, node_sum, lo, hi)


def binary_messages(const double[::1] table, const int[::1] sender,
                    const double[::1] node_sum, const double[::1] logm, double[::1] new,
                    double damping, Py_ssize_t b_lo, Py_ssize_t b_hi, double time_limit,
                    bint signals):
    """The messages of blocks b_lo..b_hi-1 (BP_BLOCK messages each; the blocks of messages
    i -> j, then of j -> i) of a `trbp_binary_sweeps` sweep into new, after the node sums;
    returns (their largest change, BP_DONE or BP_TIME: the time limit passed before a
    block, the later ones left), checking the clock and, with ``signals``, the signal handlers as
    `trbp_sweeps` does."""
    cdef double change
    cdef Poll poll = _poll_start(time_limit, signals)
    with nogil:
        change = _binary_messages(table, sender, node_sum, logm, new, sender.shape[0] // 2,
                                  damping, b_lo, b_hi, &poll)
    if poll.stop == 2:
        _raise_pending()
    return change, poll.stop


def trbp_binary_sweeps(Graph graph, const double[::1] node_theta, const double[::1] table,
                       const int[::1] sender, const double[::1] rho, double damping,
                       double tol, Py_ssize_t n_sweeps, double[::1] logm, double[::1] new,
                       double[::1] node_sum, double time_limit, bint signals):
    """`trbp_sweeps` for binary variables and finite log-potentials, vectorised over the
    messages (TRW paper, Wainwright et al. 2005, eq. 39): message m (layout of
    `trbp_sweeps`: logm[2m:2m+2]) from variable sender[m] with table[4m:4m+4] =
    theta_st(x_t, x_s) / rho_st at 2 x_s + x_t; node_theta holds the 2n node
    log-potentials. A sweep: the node sums (`binary_node_sums`), then each message
    logsumexp_{x_t}(table + node_sum_t - log m_st), damped as a log-ratio, (1 - damping)
    new + damping old, and normalised (`binary_messages`). new and node_sum (length 2n)
    are scratch. The time limit and signals as in `trbp_sweeps`. Returns (whole sweeps
    done, largest change of the last one, BP_DONE or BP_TIME).
    """
    cdef Py_ssize_t n = graph.card.shape[0], n_edges = sender.shape[0] // 2, sweep = 0, k
    cdef Py_ssize_t n_blocks = 2 * ((n_edges + _BP_BLOCK - 1) // _BP_BLOCK)
    cdef double change = INFINITY, swept
    cdef Poll poll = _poll_start(time_limit, signals)
    with nogil:
        while sweep < n_sweeps:
            _binary_node_sums(node_theta, graph, rho, logm, node_sum, 0, n)
            swept = _binary_messages(table, sender, node_sum, logm, new, n_edges, damping, 0,
                                     n_blocks, &poll)
            if poll.stop:
                break
            sweep += 1
            change = swept
            for k in range(logm.shape[0]):
                logm[k] = new[k]
            if change < tol:
                break
    if poll.stop == 2:
        _raise_pending()
    return sweep, change, poll.stop


# -- tree decomposition of the TRW bound (`fwcore.marginals.trw_dual`) -----------------------------

def forest_partition(Py_ssize_t n, const int[:, ::1] edges):
    """Greedy first-fit partition of the edges into forests: each edge, in order, joins
    the first forest in which its ends are not yet connected (one union-find per forest,
    path halving). Returns (forest index of each edge as int32, number of forests)."""
    cdef Py_ssize_t n_edges = edges.shape[0], e, k, n_forests = 0, a, b
    cdef int[::1] forest = np.empty(n_edges, dtype=np.int32)
    parents = []
    cdef int[::1] up
    for e in range(n_edges):
        k = 0
        while True:
            if k == n_forests:
                parents.append(np.arange(n, dtype=np.int32))
                n_forests += 1
            up = parents[k]
            a, b = edges[e, 0], edges[e, 1]
            while up[a] != a:
                up[a] = up[up[a]]
                a = up[a]
            while up[b] != b:
                up[b] = up[up[b]]
                b = up[b]
            if a != b:
                up[a] = b
                forest[e] = k
                break
            k += 1
    return np.asarray(forest), n_forests


def forest_sum_product(Graph graph, const double[::1] node_theta,
                       const double[::1] edge_theta, const long long[::1] edge_pos,
                       const long long[::1] order, const int[::1] parent_edge,
                       const long long[::1] up_off, double[::1] belief, double[::1] edge_mu,
                       double[::1] up, double[::1] log_z, double[::1] work):
    """Exact sum-product on m forests over copies of the model's variables (two passes).

    Copy u = t n + v is variable v in forest t; its unary log-potentials are
    node_theta[t D + node_off[v] : ...] (D = node_off[n]); its parent is the other end of
    edge parent_edge[u] = e in the same forest (-1 at a root), with the log-potential
    table edge_theta[edge_pos[u] : ...], laid out as the model's table of e. ``order``
    lists every copy, each after its parent. Writes the forests' node marginals into
    ``belief`` (length m D), the marginal of each copy's parent edge into ``edge_mu``
    (edge_theta's layout) and log Z of forest t into log_z[t]. ``up`` (length
    up_off[m n]) holds the upward message of copy u over its parent's states at
    up_off[u]; ``work`` is scratch of length >= max card.
    """
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off
    cdef Py_ssize_t n = card.shape[0], n_copies = order.shape[0], k, u, v, p, t, e, xu, xp
    cdef Py_ssize_t cu, cp, at
    cdef long long dim = node_off[n], ou, op, eo, uo
    cdef bint first
    cdef double m
    cdef double* buf = &work[0] if work.shape[0] else NULL
    with nogil:
        for k in range(belief.shape[0]):
            belief[k] = node_theta[k]
        for t in range(log_z.shape[0]):
            log_z[t] = 0.0
        for k in range(n_copies - 1, -1, -1):  # upward: children before parents
            u = order[k]
            t, v = u // n, u % n
            ou, cu = t * dim + node_off[v], card[v]
            e = parent_edge[u]
            if e < 0:
                log_z[t] += _lse(&belief[ou], cu)
                continue
            first = edges[e, 0] == v
            p = edges[e, 1] if first else edges[e, 0]
            op, cp, eo, uo = t * dim + node_off[p], card[p], edge_pos[u], up_off[u]
            for xp in range(cp):
                for xu in range(cu):
                    buf[xu] = belief[ou + xu] + edge_theta[eo + xu * cp + xp if first
                                                           else eo + xp * cu + xu]
                m = _lse(buf, cu)
                up[uo + xp] = m
                belief[op + xp] += m
        for k in range(n_copies):  # downward: parents (normalised log-beliefs) first
            u = order[k]
            t, v = u // n, u % n
            ou, cu = t * dim + node_off[v], card[v]
            e = parent_edge[u]
            if e >= 0:
                first = edges[e, 0] == v
                p = edges[e, 1] if first else edges[e, 0]
                op, cp, eo, uo = t * dim + node_off[p], card[p], edge_pos[u], up_off[u]
                # the edge's marginal: u's upward belief + table + the parent's normalised
                # belief without u's message (-inf where that message is: no state of
                # u's subtree allows x_p)
                for xu in range(cu):
                    for xp in range(cp):
                        at = eo + xu * cp + xp if first else eo + xp * cu + xu
                        m = up[uo + xp]
                        edge_mu[at] = 0.0 if m == -INFINITY else exp(
                            belief[ou + xu] + edge_theta[at] + belief[op + xp] - m)
                for xu in range(cu):
                    if belief[ou + xu] == -INFINITY:
                        continue
                    for xp in range(cp):
                        at = eo + xu * cp + xp if first else eo + xp * cu + xu
                        m = up[uo + xp]
                        buf[xp] = -INFINITY if m == -INFINITY else (
                            belief[op + xp] - m + edge_theta[at])
                    belief[ou + xu] += _lse(buf, cp)
            _normalise(&belief[ou], cu)
        for k in range(n_copies):
            u = order[k]
            ou, cu = (u // n) * dim + node_off[u % n], card[u % n]
            for xu in range(cu):
                belief[ou + xu] = exp(belief[ou + xu])


# -- balanced spanning forests (`fwcore.marginals.rho.balanced_tree_rho`) ---------------

cdef inline Py_ssize_t _find(long long[::1] parent, Py_ssize_t u) noexcept nogil:
    """The root of u's set (union-find with path halving)."""
    while parent[u] != u:
        parent[u] = parent[parent[u]]
        u = parent[u]
    return u


# ties among the edges of `balanced_trees` are broken in blocks of this many consecutive
# edges (memory stays local: a random order over all the edges of a 10^6-variable grid made
# each forest 5x slower)
cdef Py_ssize_t _TREE_BLOCK = 1024


def balanced_trees(Py_ssize_t n, const int[:, ::1] edges, Py_ssize_t n_trees, uint64_t seed,
                   double[::1] count, int[::1] order, int[::1] ranked, long long[::1] bucket,
                   long long[::1] parent, double time_limit, bint signals):
    """Up to n_trees spanning forests, each edge's count of forests it is in added to
    ``count`` (float64[E], whole numbers): each forest is Kruskal's on the edges by
    increasing count so far, ties in a random order (a Fisher-Yates shuffle of ``order``
    from one splitmix64 stream seeded with ``seed``, then a stable counting sort into
    ``ranked``), so every forest takes the edges used least. ``order`` (int32[E], a
    permutation of the edges), ``ranked`` (int32[E]), ``bucket`` (int64[n_trees + 2] at
    least, counts being below n_trees + its own start) and ``parent`` (int64[n]) are
    scratch. A forest under way is dropped once ``time_limit`` seconds (<= 0: none) have
    passed or, with ``signals``, a signal handler raised (Ctrl-C: its KeyboardInterrupt
    is raised), both read as `trbp_sweeps` does. Returns (whole forests added, BP_DONE or
    BP_TIME)."""
    cdef Py_ssize_t n_edges = edges.shape[0], trees = 0, k, e, c, a, b, top = 0, start
    cdef uint64_t state = seed
    cdef Poll poll = _poll_start(time_limit, signals)
    with nogil:
        for k in range(n_edges):
            top = max(top, <Py_ssize_t>count[k])
        while trees < n_trees and poll.stop == 0:
            start = _randint(&state, n_edges)
            for k in range(n_edges):  # the edges from a random one on, in place order
                order[k] = <int>((start + k) % n_edges)
            for k in range((n_edges + _TREE_BLOCK - 1) // _TREE_BLOCK):  # shuffled in blocks
                _shuffle(order, k * _TREE_BLOCK, min((k + 1) * _TREE_BLOCK, n_edges), &state)
            for c in range(top + 2):
                bucket[c] = 0
            for k in range(n_edges):
                bucket[<Py_ssize_t>count[order[k]] + 1] += 1
            for c in range(top + 1):
                bucket[c + 1] += bucket[c]
            for k in range(n_edges):
                e = order[k]
                c = <Py_ssize_t>count[e]
                ranked[bucket[c]] = e
                bucket[c] += 1
            for a in range(n):
                parent[a] = a
            for k in range(n_edges):
                if _stopped(&poll, 4):
                    break
                e = ranked[k]
                a, b = _find(parent, edges[e, 0]), _find(parent, edges[e, 1])
                if a != b:
                    parent[a] = b
                    ranked[k] = -1 - e  # chosen
            if poll.stop:
                break
            for k in range(n_edges):
                if ranked[k] < 0:
                    e = -1 - ranked[k]
                    count[e] += 1.0
                    top = max(top, <Py_ssize_t>count[e])
            trees += 1
    if poll.stop == 2:
        _raise_pending()
    return trees, poll.stop


# -- naive mean field on the flat layout (`fwcore.marginals.mean_field`) ------------------

def mean_field_sweep(const double[::1] theta, Graph graph, double[::1] q,
                     double time_limit=0.0, bint signals=False):
    """One sweep of coordinate ascent on the mean-field bound L(q), in place on the node
    marginals ``q`` (the node part of the flat layout), variables in index order: q_v ∝
    exp(θ_v + Σ_{e ∋ v} θ_e q_u) over the states that put no mass on an impossible (−inf)
    entry, −inf entries counting 0 in the sum; when every state does, the point mass at
    the state of least impossible mass, of best score among those (the first on ties).
    The sweep stops after a variable's update, as `trbp_sweeps` does, once
    ``time_limit`` seconds (<= 0: none) have passed or, with ``signals``, a signal
    handler raised (Ctrl-C: its KeyboardInterrupt is raised; q so far, every update made
    whole). Returns (the largest change of an entry of q, BP_DONE or BP_TIME)."""
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], v, u, a, b, slot, kv, ku, best
    cdef long long base, ov, ou
    cdef int most = max(np.max(card), 1) if n else 1
    cdef double[::1] score = np.empty(most), bad = np.empty(most)
    cdef double t, top, least, total, moved = 0.0, p
    cdef bint first, any_allowed
    cdef Poll poll = _poll_start(time_limit, signals)
    with nogil:
        for v in range(n):
            if v and _stopped(&poll, card[v - 1] * (1 + adj_start[v] - adj_start[v - 1])
                              * most):
                break
            kv, ov = card[v], node_off[v]
            for a in range(kv):
                t = theta[ov + a]
                score[a] = 0.0 if t == -INFINITY else t
                bad[a] = 1.0 if t == -INFINITY else 0.0
            for slot in range(adj_start[v], adj_start[v + 1]):
                u, first = adj_var[slot], adj_first[slot]
                ku, ou, base = card[u], node_off[u], edge_off[adj_edge[slot]]
                for a in range(kv):
                    for b in range(ku):
                        t = theta[base + a * ku + b] if first else theta[base + b * kv + a]
                        if t == -INFINITY:
                            bad[a] += q[ou + b]
                        else:
                            score[a] += t * q[ou + b]
            any_allowed = False
            top = -INFINITY
            for a in range(kv):
                if bad[a] <= 0.0:
                    any_allowed = True
                    if score[a] > top:
                        top = score[a]
            if not any_allowed:
                least = bad[0]
                for a in range(kv):
                    if bad[a] < least:
                        least = bad[a]
                best = -1
                for a in range(kv):
                    if bad[a] == least and (best < 0 or score[a] > score[best]):
                        best = a
                for a in range(kv):
                    p = 1.0 if a == best else 0.0
                    moved = max(moved, fabs(p - q[ov + a]))
                    q[ov + a] = p
                continue
            total = 0.0
            for a in range(kv):
                score[a] = exp(score[a] - top) if bad[a] <= 0.0 else 0.0
                total += score[a]
            for a in range(kv):
                p = score[a] / total
                moved = max(moved, fabs(p - q[ov + a]))
                q[ov + a] = p
    if poll.stop == 2:
        _raise_pending()
    return moved, poll.stop


def product_marginals(Graph graph, const double[::1] q, double[::1] mu):
    """The flat marginals of the product distribution of the node marginals ``q`` (the
    node part of the flat layout) into ``mu``: ``q`` on the nodes, μ_e(a, b) = q_i(a)
    q_j(b) on edge e = (i, j) (mean field's edge marginals)."""
    cdef const int[::1] card = graph.card
    cdef const int[:, ::1] edges = graph.edges
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef Py_ssize_t e, a, b, ki, kj
    cdef long long oi, oj, oe, x
    with nogil:
        for x in range(q.shape[0]):
            mu[x] = q[x]
        for e in range(edges.shape[0]):
            ki, kj = card[edges[e, 0]], card[edges[e, 1]]
            oi, oj, oe = node_off[edges[e, 0]], node_off[edges[e, 1]], edge_off[e]
            for a in range(ki):
                for b in range(kj):
                    mu[oe + a * kj + b] = q[oi + a] * q[oj + b]


def mean_field_bound(const double[::1] theta, Graph graph, const double[::1] q):
    """L(q) = Σ_i E_q[θ_i] + Σ_e E_q[θ_e] + Σ_i H(q_i) for the product of the node
    marginals ``q``, with 0·(−inf) = 0; −inf when q puts mass on an impossible entry."""
    cdef double total
    with nogil:
        total = _mean_field_bound(theta, graph.card, graph.edges, graph.node_off,
                                  graph.edge_off, q)
    return total


cdef double _mean_field_bound(const double[::1] theta, const int[::1] card,
                              const int[:, ::1] edges, const long long[::1] node_off,
                              const long long[::1] edge_off,
                              const double[::1] q) noexcept nogil:
    cdef Py_ssize_t n = card.shape[0], v, e, a, b, i, j, ki, kj
    cdef double total = 0.0, t, w
    for v in range(n):
        for a in range(card[v]):
            w = q[node_off[v] + a]
            if w > 0.0:
                t = theta[node_off[v] + a]
                if t == -INFINITY:
                    return -INFINITY
                total += w * (t - log(w))
    for e in range(edges.shape[0]):
        i, j = edges[e, 0], edges[e, 1]
        ki, kj = card[i], card[j]
        for a in range(ki):
            if q[node_off[i] + a] <= 0.0:
                continue
            for b in range(kj):
                w = q[node_off[i] + a] * q[node_off[j] + b]
                if w > 0.0:
                    t = theta[edge_off[e] + a * kj + b]
                    if t == -INFINITY:
                        return -INFINITY
                    total += w * t
    return total
