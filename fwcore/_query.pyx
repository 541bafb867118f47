# cython: language_level=3
"""Kernels of exact sampling, joint queries and marginal MAP (`fwcore.sample`,
`fwcore.query`, `fwcore.mmap`).

- `topological_order`: Kahn's algorithm over a parent graph (CSR).
- `forward_sample`: ancestral sampling of a Bayesian network, variable by variable in
  topological order, each sample's row of its CPT found by the parents' strides.
- `up_pass`: variable elimination on a clique tree (the layout of
  `fwcore._elim.CliqueTree`: elimination order; cliques (v, then S_v in elimination
  order), children and owned edges in CSR) that keeps every message m_v (C order over
  S_v) in one flat array; the first ``n_sum`` variables of the order are summed out
  (log-sum-exp), the rest maximised with their first maximiser kept (constrained
  elimination for marginal MAP: sum variables first, then max; Dechter 1999).
- `backward_sample`: exact samples from the messages of an all-sum `up_pass`, in reverse
  elimination order: x_v ~ p(x_v | x_{S_v}) = exp(t_v(x_v, x_{S_v}) − m_v(x_{S_v})), t_v
  the clique entry (θ_v, v's owned edges, its children's messages).
- `backtrack`: the max variables' maximisers in reverse elimination order.

Randomness comes in as uniforms drawn by NumPy (so every draw is reproducible from the
seed, and the NumPy twins in the tests draw the same samples); samples and uniforms are
(variable, sample) arrays. A clique entry is summed from its operands through strides, no
clique table is stored. In the main thread the passes take the GIL every POLL entries to
run Python's signal handlers (Ctrl-C: KeyboardInterrupt within milliseconds) and look at
the deadline. −inf entries stay −inf; an all −inf slice gives m = −inf, never NaN.
"""
import numpy as np

from libc.math cimport INFINITY, exp, log
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

from ._clock cimport monotonic
from ._elim cimport CliqueTree, Tree, make_tree


cdef extern from "Python.h":
    int PyErr_CheckSignals()  # declared without ``except``: its exception stays pending

cdef enum:
    POLL = 1 << 20  # clique entries between two checks (about 10 ms of work)
    DONE = 0
    NO_MEMORY = -1
    SIGNALLED = -2
    TIMED_OUT = -3


def topological_order(const int64_t[::1] start, const int64_t[::1] parents):
    """Variables 0..n-1 ordered so that each comes after its parents (``parents[start[v]:
    start[v + 1]]``); shorter than n when the graph has a cycle (the variables on or
    after one are left out). Kahn's algorithm, lowest index first among the ready."""
    cdef int64_t n = start.shape[0] - 1, v, k, c, head = 0, tail = 0
    order = np.empty(n, dtype=np.int64)
    indeg = np.zeros(n, dtype=np.int64)
    ch_start = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] out = order, deg = indeg, cs = ch_start
    cdef int64_t[::1] ch = np.empty(max(parents.shape[0], 1), dtype=np.int64)
    cdef int64_t[::1] fill = np.zeros(n + 1, dtype=np.int64)
    with nogil:
        for v in range(n):
            deg[v] = start[v + 1] - start[v]
            for k in range(start[v], start[v + 1]):
                cs[parents[k] + 1] += 1
        for v in range(n):
            cs[v + 1] += cs[v]
        for v in range(n):
            for k in range(start[v], start[v + 1]):
                ch[cs[parents[k]] + fill[parents[k]]] = v
                fill[parents[k]] += 1
        for v in range(n):
            if deg[v] == 0:
                out[tail] = v
                tail += 1
        while head < tail:
            v = out[head]
            head += 1
            for k in range(cs[v], cs[v + 1]):
                c = ch[k]
                deg[c] -= 1
                if deg[c] == 0:
                    out[tail] = c
                    tail += 1
    return order[:tail]


cdef inline int64_t draw(const double* w, int64_t size, double u) noexcept nogil:
    """A draw from the weights w[0..size-1] with the uniform u: the first j whose
    running sum w[0] + ... + w[j] exceeds u times their total (at most size - 1)."""
    cdef double total = 0.0, acc = 0.0, target
    cdef int64_t j
    for j in range(size):
        total += w[j]
    target = u * total
    for j in range(size - 1):
        acc += w[j]
        if acc > target:
            return j
    return size - 1


def forward_sample(const int64_t[::1] order, const int32_t[::1] card,
                   const int64_t[::1] par_start, const int64_t[::1] par_var,
                   const int64_t[::1] par_stride, const int64_t[::1] cpt_off,
                   const double[::1] cpt, const double[:, ::1] u, int32_t[:, ::1] x):
    """Ancestral samples of a Bayesian network into ``x`` (variable, sample): in
    ``order``, x_v of sample k is drawn with ``u[v, k]`` from the row r = Σ_p x_p
    par_stride[p] of v's CPT, ``cpt[cpt_off[v] + r card_v: ... + card_v]``."""
    cdef int64_t m = x.shape[1], step, v, k, p, row, cv
    with nogil:
        for step in range(order.shape[0]):
            v = order[step]
            cv = card[v]
            for k in range(m):
                row = 0
                for p in range(par_start[v], par_start[v + 1]):
                    row += x[par_var[p], k] * par_stride[p]
                x[v, k] = <int32_t>draw(&cpt[cpt_off[v] + row * cv], cv, u[v, k])


ctypedef struct Messages:
    const int64_t* off           # m_v at msg[off[v]:off[v + 1]]
    double* msg
    double deadline              # `monotonic` seconds; INFINITY: none


ctypedef struct Clique:
    int64_t ncl, nop
    int32_t* pos                 # n: axis of each variable in the clique
    int64_t* cards               # cards of the clique axes (axis 0 = v)
    int64_t* digit               # odometer over the separator axes
    int64_t* stride              # nop x ncl: each operand's stride on each clique axis
    int64_t* delta               # nop x ncl: its offset change when axis a steps up and
                                 # the faster axes wrap to 0
    int64_t* off                 # nop: each operand's offset at the current entry
    const double** ptr           # nop: θ_v, the owned edges' tables, children's messages
    double* t                    # card_v: the clique entries of one separator state
    int64_t unpolled


cdef void clique_free(Clique* w) noexcept nogil:
    free(w.pos)
    free(w.cards)
    free(w.digit)
    free(w.stride)
    free(w.delta)
    free(w.off)
    free(w.ptr)
    free(w.t)


cdef int clique_alloc(const Tree* g, Clique* w) noexcept nogil:
    """Scratch for the largest clique; NO_MEMORY (w freed by the caller)."""
    cdef int64_t v, max_cl = 1, max_ops = 1, max_card = 1
    for v in range(g.n):
        max_cl = max(max_cl, g.clq_start[v + 1] - g.clq_start[v])
        max_ops = max(max_ops, 1 + g.own_start[v + 1] - g.own_start[v]
                      + g.ch_start[v + 1] - g.ch_start[v])
        max_card = max(max_card, <int64_t>g.card[v])
    w.pos = <int32_t*>malloc(max(g.n, 1) * sizeof(int32_t))
    w.cards = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.digit = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.stride = <int64_t*>malloc(max_ops * max_cl * sizeof(int64_t))
    w.delta = <int64_t*>malloc(max_ops * max_cl * sizeof(int64_t))
    w.off = <int64_t*>malloc(max_ops * sizeof(int64_t))
    w.ptr = <const double**>malloc(max_ops * sizeof(double*))
    w.t = <double*>malloc(max_card * sizeof(double))
    w.unpolled = 0
    if (w.pos == NULL or w.cards == NULL or w.digit == NULL or w.stride == NULL
            or w.delta == NULL or w.off == NULL or w.ptr == NULL or w.t == NULL):
        return NO_MEMORY
    return DONE


cdef void setup(const Tree* g, const Messages* m, Clique* w, int64_t v) noexcept nogil:
    """Operands of clique v with their strides on its axes: θ_v, each owned edge's table
    (x_v on axis 0, its other end on that end's axis), each child's message (C order over
    S_c, a subset of the clique); the odometer and offsets at separator state 0."""
    cdef int64_t a, o, i, e, u, c, s, k0 = g.clq_start[v], ncl = g.clq_start[v + 1] - k0
    cdef int64_t* st
    w.ncl = ncl
    w.nop = 1 + g.own_start[v + 1] - g.own_start[v] + g.ch_start[v + 1] - g.ch_start[v]
    for a in range(ncl):
        u = g.clq_var[k0 + a]
        w.pos[u] = <int32_t>a
        w.cards[a] = g.card[u]
        w.digit[a] = 0
    for o in range(w.nop * ncl):
        w.stride[o] = 0
    for o in range(w.nop):
        w.off[o] = 0
    w.ptr[0] = g.theta + g.node_off[v]
    w.stride[0] = 1
    o = 1
    for i in range(g.own_start[v], g.own_start[v + 1]):
        e = g.own_edge[i]
        u = g.edges[2 * e] + g.edges[2 * e + 1] - v
        st = w.stride + o * ncl
        if g.edges[2 * e] == v:  # θ_e[x_v, x_u]
            st[0], st[w.pos[u]] = g.card[u], 1
        else:
            st[0], st[w.pos[u]] = 1, g.card[v]
        w.ptr[o] = g.theta + g.edge_off[e]
        o += 1
    for i in range(g.ch_start[v], g.ch_start[v + 1]):
        c = g.ch_var[i]
        st = w.stride + o * ncl
        s = 1
        for a in range(g.clq_start[c + 1] - 1, g.clq_start[c], -1):
            st[w.pos[g.clq_var[a]]] = s
            s *= g.card[g.clq_var[a]]
        w.ptr[o] = m.msg + m.off[c]
        o += 1
    for o in range(w.nop):
        s = 0
        for a in range(ncl - 1, 0, -1):
            w.delta[o * ncl + a] = w.stride[o * ncl + a] - s
            s += w.stride[o * ncl + a] * (w.cards[a] - 1)


cdef inline bint advance(Clique* w) noexcept nogil:
    """The next separator state (last axis fastest); False after the last."""
    cdef int64_t a = w.ncl - 1, o
    while a >= 1 and w.digit[a] == w.cards[a] - 1:
        w.digit[a] = 0
        a -= 1
    if a < 1:
        return False
    w.digit[a] += 1
    for o in range(w.nop):
        w.off[o] += w.delta[o * w.ncl + a]
    return True


cdef inline void entries(Clique* w, int64_t cv) noexcept nogil:
    """t[x] = Σ_o operand o at the current offsets, for x = 0..cv-1."""
    cdef int64_t o, x
    cdef double s
    for x in range(cv):
        s = 0.0
        for o in range(w.nop):
            s += w.ptr[o][w.off[o] + x * w.stride[o * w.ncl]]
        w.t[x] = s


cdef bint stop(const Tree* g, const Messages* m, Clique* w, int64_t done,
               int* status) noexcept nogil:
    """Count ``done`` entries; in the main thread, every POLL of them, run the signal
    handlers (SIGNALLED: one raised, its exception pending) and look at the deadline
    (TIMED_OUT)."""
    w.unpolled += done
    if not g.main_thread or w.unpolled < POLL:
        return False
    w.unpolled = 0
    if monotonic() > m.deadline:
        status[0] = TIMED_OUT
        return True
    with gil:
        if PyErr_CheckSignals() != 0:
            status[0] = SIGNALLED
            return True
    return False


cdef int up(const Tree* g, const Messages* m, Clique* w, int64_t n_sum, int32_t* arg,
            const int64_t* arg_off) noexcept nogil:
    cdef int64_t step, v, j, x, cv, best
    cdef double hi, total
    cdef int status = DONE
    for step in range(g.n):
        v = g.order[step]
        setup(g, m, w, v)
        cv = g.card[v]
        j = 0
        while True:
            entries(w, cv)
            hi = w.t[0]
            best = 0
            for x in range(1, cv):
                if w.t[x] > hi:
                    hi, best = w.t[x], x
            if step >= n_sum:
                m.msg[m.off[v] + j] = hi
                arg[arg_off[v] + j] = <int32_t>best
            elif hi == -INFINITY:
                m.msg[m.off[v] + j] = -INFINITY
            else:
                total = 0.0
                for x in range(cv):
                    total += exp(w.t[x] - hi)
                m.msg[m.off[v] + j] = hi + log(total)
            j += 1
            if stop(g, m, w, cv, &status):
                return status
            if not advance(w):
                break
    return DONE


cdef Messages messages(const int64_t[::1] msg_off, double[::1] msg, double deadline):
    cdef Messages m
    m.off = &msg_off[0]
    m.msg = &msg[0] if msg.shape[0] else NULL
    m.deadline = deadline
    return m


cdef int finish(int status) except -1:
    """Raise what stopped a pass: the pending exception (Ctrl-C), MemoryError, or
    TimeoutError (the deadline)."""
    if status == SIGNALLED:
        return -1
    if status == NO_MEMORY:
        raise MemoryError("elimination ran out of memory for its scratch")
    if status == TIMED_OUT:
        raise TimeoutError("the deadline passed during elimination")
    return 0


def up_pass(CliqueTree tree, const double[::1] theta, const int64_t[::1] msg_off,
            double[::1] msg, int64_t n_sum, int32_t[::1] arg, const int64_t[::1] arg_off,
            double deadline=INFINITY):
    """Every message into ``msg`` (m_v at ``msg[msg_off[v]:msg_off[v + 1]]``): the first ``n_sum`` variables of the order
    summed out, the others maximised, their first maximisers written into ``arg`` (m_v's
    layout, at ``arg_off[v]``). Returns Σ of the roots' messages: log Z when all are
    summed, log max_q Σ_rest exp(score) when the max variables come last. n >= 1."""
    cdef Tree g = make_tree(tree, theta)
    cdef Messages m = messages(msg_off, msg, deadline)
    cdef Clique w
    cdef int status
    cdef int64_t v
    cdef double total = 0.0
    with nogil:
        status = clique_alloc(&g, &w)
        if status == DONE:
            status = up(&g, &m, &w, n_sum, &arg[0] if arg.shape[0] else NULL,
                        &arg_off[0] if arg_off.shape[0] else NULL)
        clique_free(&w)
        if status == DONE:
            for v in range(g.n):
                if g.clq_start[v + 1] - g.clq_start[v] == 1:
                    total += m.msg[m.off[v]]
    finish(status)
    return total


def backward_sample(CliqueTree tree, const double[::1] theta, const int64_t[::1] msg_off,
                    double[::1] msg, const double[:, ::1] u, int32_t[:, ::1] x):
    """Exact samples into ``x`` (variable, sample) from the messages of an all-sum
    `up_pass`: in reverse elimination order x_v of sample k is drawn with ``u[v, k]``
    from exp(t_v(·, x_{S_v}) − m_v(x_{S_v}))."""
    cdef Tree g = make_tree(tree, theta)
    cdef Messages m = messages(msg_off, msg, INFINITY)
    cdef Clique w
    cdef int status
    cdef int64_t n_samples = x.shape[1], step, v, k, a, o, xv, cv, j, s
    cdef double mv
    with nogil:
        status = clique_alloc(&g, &w)
        for step in range(g.n - 1, -1, -1):
            if status != DONE:
                break
            v = g.order[step]
            setup(&g, &m, &w, v)
            cv = g.card[v]
            for k in range(n_samples):
                j = 0
                for o in range(w.nop):
                    w.off[o] = 0
                for a in range(1, w.ncl):
                    xv = x[g.clq_var[g.clq_start[v] + a], k]
                    j = j * w.cards[a] + xv
                    for o in range(w.nop):
                        w.off[o] += xv * w.stride[o * w.ncl + a]
                entries(&w, cv)
                mv = m.msg[m.off[v] + j]
                for s in range(cv):
                    w.t[s] = exp(w.t[s] - mv)
                x[v, k] = <int32_t>draw(w.t, cv, u[v, k])
                if stop(&g, &m, &w, cv, &status):
                    break
        clique_free(&w)
    finish(status)


def backtrack(const int64_t[::1] order, const int64_t[::1] clq_start,
              const int32_t[::1] clq_var, const int32_t[::1] card, int64_t n_sum,
              const int32_t[::1] arg, const int64_t[::1] arg_off, int64_t[::1] x):
    """x_v = the maximiser kept for v at the states of S_v, for the max variables
    (order[n_sum:]) in reverse elimination order."""
    cdef int64_t step, v, k, j
    with nogil:
        for step in range(order.shape[0] - 1, n_sum - 1, -1):
            v = order[step]
            j = 0
            for k in range(clq_start[v] + 1, clq_start[v + 1]):
                j = j * card[clq_var[k]] + x[clq_var[k]]
            x[v] = arg[arg_off[v] + j]
