"""Kernels of exact and anytime MAP search on factor graphs (`fwcore.oracles.search`).

Everything works on one flat layout of *functions* (tables over scopes): function k has the
variables ``f_var[f_start[k]:f_start[k + 1]]``, a stride per variable in ``f_stride`` and
its table at ``val[f_off[k]:f_off[k + 1]]``, so its value at an assignment x is
``val[f_off[k] + sum_t x[f_var[t]] * f_stride[t]]``. The model's factors come first (the
"originals"), the mini-bucket messages after them.

- `minibucket_plan`: the symbolic mini-bucket partition (Dechter & Rish 2003, "Mini-buckets:
  a general scheme for bounded inference", Fig. 3) along an elimination order, scope-based
  (a function joins the first mini-bucket whose scope stays within ``ibound`` variables and
  ``cap`` table entries).
- `minibucket_messages`: max-product mini-bucket elimination with moment matching
  (Flerova, Ihler, Dechter & Otten 2011, "Mini-bucket elimination with moment matching",
  eq. 3): before bucket v is eliminated, every mini-bucket's max-marginal on x_v is
  shifted to the bucket's mean max-marginal (the shifts sum to zero, so the bound stays
  certified; it only tightens).
- `Search`: depth-first AND/OR branch and bound over the pseudo-tree of the order
  (Marinescu & Dechter 2009, "AND/OR branch-and-bound search for combinatorial
  optimization in graphical models", AOBB-C), guided by the mini-bucket heuristic
  (Kask & Dechter 2001), with context caching of exact values and of upper bounds, and a
  factor-graph ICM on the search's current assignment every few milliseconds for an
  anytime incumbent. It polls a deadline and a stop flag; it runs without the GIL.

Scores are maximised; -inf marks impossible entries and is never added to +inf.
"""
import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

from ._clock cimport monotonic

cdef int64_t MASK = (<int64_t> 1 << 40) - 1  # a member's function id, below its mini-bucket

cdef enum:
    # search nodes between two looks at the clock and the stop flag
    POLL = 1024
    # what `Search.run` returns
    DONE = 0
    TIMED_OUT = 1
    STOPPED = 2
    NO_MEMORY = 3
    NODE_LIMIT = 4


# -- growable arrays (nogil) -----------------------------------------------------------------

cdef struct Vec:
    int64_t* data
    int64_t size
    int64_t cap


cdef bint push(Vec* v, int64_t item) noexcept nogil:
    cdef int64_t* grown
    cdef int64_t cap
    if v.size == v.cap:
        cap = 2 * v.cap + 64
        grown = <int64_t*> realloc(v.data, cap * sizeof(int64_t))
        if grown == NULL:
            return False
        v.data, v.cap = grown, cap
    v.data[v.size] = item
    v.size += 1
    return True


cdef object to_array(Vec* v, dtype):
    out = np.empty(v.size, dtype=dtype)
    cdef int64_t k
    cdef int64_t[::1] o64
    cdef int32_t[::1] o32
    if dtype == np.int64:
        o64 = out
        for k in range(v.size):
            o64[k] = v.data[k]
    else:
        o32 = out
        for k in range(v.size):
            o32[k] = <int32_t> v.data[k]
    return out


# -- the mini-bucket partition ---------------------------------------------------------------

def minibucket_plan(const int32_t[::1] card, const int64_t[::1] order,
                    const int64_t[::1] o_start, const int32_t[::1] o_var,
                    int ibound, double cap):
    """The mini-bucket partition of the ``m`` original functions (scopes in CSR:
    ``o_start``, ``o_var``) along the elimination ``order`` (all n variables).

    Each function goes to the bucket of its first-eliminated variable; a bucket's functions,
    largest scope first, join the first of its mini-buckets whose scope then has at most
    ``ibound`` variables and at most ``cap`` table entries, or that they add no variable
    to; else they open a new one. Mini-bucket q of bucket v sends the message over its
    scope minus v to the bucket of that scope's first-eliminated variable (-1: a constant).

    Returns (bucket of each original (-1: a constant), message source bucket, message target,
    message scope CSR (start int64, vars int32, in elimination order), message members CSR
    (start int64, function ids int64: originals 0..m-1, message q is m + q)), messages in
    the order they are made (by their bucket's position in ``order``)."""
    cdef int64_t n = card.shape[0], m = o_start.shape[0] - 1
    cdef int64_t k, t, j, f, q, u, a, b, nq, nm, width, added, start, stop, tgt, msgs
    cdef int64_t v
    cdef double entries
    cdef bint ok = True, fits
    cdef int64_t[::1] pos = np.empty(n, dtype=np.int64)
    cdef int32_t[::1] o_bucket = np.full(m, -1, dtype=np.int32)
    cdef int64_t[::1] head = np.full(n, -1, dtype=np.int64)
    cdef Vec nxt, src, target, s_start, s_var, mm_start, mm_fun
    cdef Vec members, qvar, qsize, qlen, qent
    cdef Vec* vecs[12]
    vecs[:] = [&nxt, &src, &target, &s_start, &s_var, &mm_start, &mm_fun, &members, &qvar,
               &qsize, &qlen, &qent]
    for k in range(12):
        vecs[k].data, vecs[k].size, vecs[k].cap = NULL, 0, 0
    for k in range(n):
        pos[order[k]] = k
    with nogil:
        ok = push(&s_start, 0) and push(&mm_start, 0)
        for f in range(m):  # originals into their buckets (a linked list per bucket)
            ok = ok and push(&nxt, -1)
            b = -1
            for t in range(o_start[f], o_start[f + 1]):
                if b < 0 or pos[o_var[t]] < pos[b]:
                    b = o_var[t]
            o_bucket[f] = <int32_t> b
            if b >= 0:
                nxt.data[f] = head[b]
                head[b] = f
        for k in range(n if ok else 0):
            v = order[k]
            members.size = 0
            f = head[v]
            while f >= 0:
                ok = ok and push(&members, f)
                f = nxt.data[f]
            nm = members.size
            # largest scope first (insertion sort: buckets are small)
            for a in range(1, nm):
                f = members.data[a]
                b = a - 1
                while b >= 0 and _scope_len(members.data[b], m, o_start, &s_start) < \
                        _scope_len(f, m, o_start, &s_start):
                    members.data[b + 1] = members.data[b]
                    b -= 1
                members.data[b + 1] = f
            # mini-buckets: qvar holds their scopes in rows of `width` variables
            width = ibound
            for a in range(nm):
                width = max(width, _scope_len(members.data[a], m, o_start, &s_start))
            qvar.size = 0
            qlen.size = 0
            qent.size = 0
            qsize.size = 0  # member count of each mini-bucket
            nq = 0
            for a in range(nm):
                f = members.data[a]
                q = 0
                while q < nq:
                    added = 0
                    entries = (<double*> qent.data)[q]
                    for t in range(_scope_begin(f, m, o_start, &s_start),
                                   _scope_end(f, m, o_start, &s_start)):
                        u = _scope_at(t, f, m, o_var, &s_var)
                        if not _has(&qvar, q * width, qlen.data[q], u):
                            added += 1
                            entries *= card[u]
                    fits = added == 0 or (qlen.data[q] + added <= ibound and entries <= cap)
                    if fits:
                        break
                    q += 1
                if q == nq:  # a new mini-bucket
                    nq += 1
                    for t in range(width):
                        ok = ok and push(&qvar, -1)
                    ok = ok and push(&qlen, 0) and push(&qent, 0) and push(&qsize, 0)
                    if not ok:
                        break
                    (<double*> qent.data)[q] = 1.0
                for t in range(_scope_begin(f, m, o_start, &s_start),
                               _scope_end(f, m, o_start, &s_start)):
                    u = _scope_at(t, f, m, o_var, &s_var)
                    if not _has(&qvar, q * width, qlen.data[q], u):
                        qvar.data[q * width + qlen.data[q]] = u
                        qlen.data[q] += 1
                        (<double*> qent.data)[q] *= card[u]
                members.data[a] = f + (q << 40)  # remember the mini-bucket of the member
            if not ok:
                break
            for q in range(nq):  # one message per mini-bucket
                msgs = src.size
                ok = ok and push(&src, v) and push(&nxt, -1)
                start = s_var.size
                for t in range(qlen.data[q]):
                    u = qvar.data[q * width + t]
                    if u != v:
                        ok = ok and push(&s_var, u)
                if not ok:
                    break
                stop = s_var.size
                for a in range(start + 1, stop):  # elimination order
                    u = s_var.data[a]
                    b = a - 1
                    while b >= start and pos[s_var.data[b]] > pos[u]:
                        s_var.data[b + 1] = s_var.data[b]
                        b -= 1
                    s_var.data[b + 1] = u
                ok = ok and push(&s_start, stop)
                tgt = s_var.data[start] if stop > start else -1
                ok = ok and push(&target, tgt)
                for a in range(nm):
                    if (members.data[a] >> 40) == q:
                        ok = ok and push(&mm_fun, members.data[a] & MASK)
                ok = ok and push(&mm_start, mm_fun.size)
                if tgt >= 0 and ok:
                    nxt.data[m + msgs] = head[tgt]
                    head[tgt] = m + msgs
            if not ok:
                break
    try:
        if not ok:
            raise MemoryError("the mini-bucket partition ran out of memory")
        return (np.asarray(o_bucket), to_array(&src, np.int32), to_array(&target, np.int32),
                to_array(&s_start, np.int64), to_array(&s_var, np.int32),
                to_array(&mm_start, np.int64), to_array(&mm_fun, np.int64))
    finally:
        for k in range(12):
            free(vecs[k].data)


cdef inline int64_t _scope_begin(int64_t f, int64_t m, const int64_t[::1] o_start,
                                 Vec* s_start) noexcept nogil:
    return o_start[f] if f < m else s_start.data[f - m]


cdef inline int64_t _scope_end(int64_t f, int64_t m, const int64_t[::1] o_start,
                               Vec* s_start) noexcept nogil:
    return o_start[f + 1] if f < m else s_start.data[f - m + 1]


cdef inline int64_t _scope_len(int64_t f, int64_t m, const int64_t[::1] o_start,
                               Vec* s_start) noexcept nogil:
    return _scope_end(f, m, o_start, s_start) - _scope_begin(f, m, o_start, s_start)


cdef inline int64_t _scope_at(int64_t t, int64_t f, int64_t m, const int32_t[::1] o_var,
                              Vec* s_var) noexcept nogil:
    return o_var[t] if f < m else s_var.data[t]


cdef inline bint _has(Vec* qvar, int64_t row, int64_t length, int64_t u) noexcept nogil:
    cdef int64_t t
    for t in range(length):
        if qvar.data[row + t] == u:
            return True
    return False


# -- the mini-bucket messages ----------------------------------------------------------------

cdef struct Tables:
    const int32_t* card
    const int64_t* f_start
    const int32_t* f_var
    const int64_t* f_stride
    const int64_t* f_off
    double* val


def minibucket_messages(const int32_t[::1] card, const int64_t[::1] f_start,
                        const int32_t[::1] f_var, const int64_t[::1] f_stride,
                        const int64_t[::1] f_off, double[::1] val, int64_t m,
                        const int32_t[::1] src, const int64_t[::1] mm_start,
                        const int64_t[::1] mm_fun, bint moment_matching, double time_limit,
                        const uint8_t[::1] stop):
    """Fill the messages' tables (functions m, m + 1, ... of the flat layout: message q
    = function m + q, its members ``mm_fun[mm_start[q]:mm_start[q + 1]]``, its bucket
    ``src[q]``; messages of one bucket consecutive, buckets in elimination order):
    lambda_q(s) = max over x_v of (sum of the members + shift_q(x_v)), the shifts those of
    moment matching when ``moment_matching`` and the bucket has several mini-buckets, else
    zero. Stops (returning False, the tables partly filled) when ``time_limit`` seconds
    (<= 0: none) pass or ``stop[0]`` becomes non-zero; True when done."""
    cdef int64_t n_msg = src.shape[0], q0, q1, q, x, nq, width = 1, k
    cdef int64_t most = 1, c
    cdef double deadline = monotonic() + time_limit if time_limit > 0.0 else INFINITY
    cdef double mean
    cdef bint finished = True, infeasible
    cdef Tables tb
    cdef double* mu
    cdef double* shift
    tb.card, tb.f_start, tb.f_var = &card[0], &f_start[0], &f_var[0]
    tb.f_stride, tb.f_off, tb.val = &f_stride[0], &f_off[0], &val[0]
    for k in range(card.shape[0]):
        width = max(width, card[k])
    q0 = 0
    while q0 < n_msg:  # the most mini-buckets of one bucket
        q1 = q0
        while q1 < n_msg and src[q1] == src[q0]:
            q1 += 1
        most = max(most, q1 - q0)
        q0 = q1
    mu = <double*> malloc(most * width * sizeof(double))
    shift = <double*> malloc(most * width * sizeof(double))
    if mu == NULL or shift == NULL:
        free(mu)
        free(shift)
        raise MemoryError("mini-bucket elimination ran out of memory")
    try:
        with nogil:
            q0 = 0
            while q0 < n_msg and finished:
                q1 = q0
                while q1 < n_msg and src[q1] == src[q0]:
                    q1 += 1
                nq = q1 - q0
                c = card[src[q0]]
                for k in range(nq * c):
                    shift[k] = 0.0
                    mu[k] = -INFINITY
                if moment_matching and nq > 1:
                    for q in range(q0, q1):
                        if not _bucket_pass(&tb, m, q, src[q], &mm_start[0], &mm_fun[0],
                                            &shift[(q - q0) * c], &mu[(q - q0) * c],
                                            False, deadline, &stop[0]):
                            finished = False
                            break
                    for x in range(c if finished else 0):
                        mean = 0.0
                        infeasible = False
                        for q in range(nq):
                            if mu[q * c + x] == -INFINITY:
                                infeasible = True
                            else:
                                mean += mu[q * c + x]
                        mean /= nq
                        for q in range(nq):
                            shift[q * c + x] = -INFINITY if infeasible else mean - mu[q * c + x]
                for q in range(q0, q1 if finished else q0):
                    if not _bucket_pass(&tb, m, q, src[q], &mm_start[0], &mm_fun[0],
                                        &shift[(q - q0) * c], &mu[(q - q0) * c], True,
                                        deadline, &stop[0]):
                        finished = False
                        break
                q0 = q1
    finally:
        free(mu)
        free(shift)
    return finished


cdef bint _bucket_pass(Tables* tb, int64_t m, int64_t q, int64_t v, const int64_t* mm_start,
                       const int64_t* mm_fun, const double* shift, double* mu, bint write,
                       double deadline, const uint8_t* stop) noexcept nogil:
    """One pass over the table of mini-bucket q (bucket v): with ``write``, message q's
    entries (max over x_v of the members' sum plus ``shift``); else ``mu``, its
    max-marginal on x_v (with the shift, which is zero then). False when stopped."""
    cdef int64_t fm = m + q, n_ax = tb.f_start[fm + 1] - tb.f_start[fm]
    cdef int64_t nm = mm_start[q + 1] - mm_start[q], j, a, t, e, total = 1, x, cv = tb.card[v]
    cdef int64_t base = tb.f_off[fm], f, u
    cdef double s, best
    cdef bint ok = True
    cdef int64_t* idx = <int64_t*> malloc((nm * (n_ax + 2) + n_ax + 1) * sizeof(int64_t))
    cdef int64_t* jst
    cdef int64_t* jv
    cdef int64_t* state
    if idx == NULL:
        return False
    jst = idx + nm
    jv = jst + nm * n_ax
    state = jv + nm
    for a in range(n_ax):
        total *= tb.card[tb.f_var[tb.f_start[fm] + a]]
        state[a] = 0
    for j in range(nm):
        f = mm_fun[mm_start[q] + j]
        idx[j] = tb.f_off[f]
        jv[j] = 0
        for a in range(n_ax):
            jst[j * n_ax + a] = 0
        for t in range(tb.f_start[f], tb.f_start[f + 1]):
            u = tb.f_var[t]
            if u == v:
                jv[j] = tb.f_stride[t]
                continue
            for a in range(n_ax):
                if tb.f_var[tb.f_start[fm] + a] == u:
                    jst[j * n_ax + a] = tb.f_stride[t]
                    break
    for e in range(total):
        if (e & 4095) == 4095:
            if stop[0] or monotonic() > deadline:
                ok = False
                break
        best = -INFINITY
        for x in range(cv):
            s = shift[x]
            for j in range(nm):
                s += tb.val[idx[j] + x * jv[j]]
            if s > best:
                best = s
            if not write and s > mu[x]:
                mu[x] = s
        if write:
            tb.val[base + e] = best
        a = n_ax - 1
        while a >= 0:
            state[a] += 1
            for j in range(nm):
                idx[j] += jst[j * n_ax + a]
            if state[a] < tb.card[tb.f_var[tb.f_start[fm] + a]]:
                break
            for j in range(nm):
                idx[j] -= state[a] * jst[j * n_ax + a]
            state[a] = 0
            a -= 1
    free(idx)
    return ok


# -- evaluation of functions at an assignment ------------------------------------------------

cdef inline int64_t _index(const Tables* tb, const int32_t* x, int64_t k, int64_t v,
                           int64_t* vs) noexcept nogil:
    """The table index of function k at x with variable v's term left out (its stride in
    ``vs``, 0 when v is not in the scope)."""
    cdef int64_t t, i = tb.f_off[k]
    vs[0] = 0
    for t in range(tb.f_start[k], tb.f_start[k + 1]):
        if tb.f_var[t] == v:
            vs[0] = tb.f_stride[t]
        else:
            i += x[tb.f_var[t]] * tb.f_stride[t]
    return i


cdef double _score(const Tables* tb, const int32_t* x, int64_t m) noexcept nogil:
    """Sum of the original functions 0..m-1 at x."""
    cdef int64_t k, vs
    cdef double s = 0.0
    for k in range(m):
        s += tb.val[_index(tb, x, k, -1, &vs)]
    return s


def score(const int32_t[::1] card, const int64_t[::1] f_start, const int32_t[::1] f_var,
          const int64_t[::1] f_stride, const int64_t[::1] f_off, double[::1] val, int64_t m,
          const int32_t[::1] x):
    """Sum of the original functions 0..m-1 at the assignment x."""
    cdef Tables tb
    cdef double total
    tb.card, tb.f_start, tb.f_var = &card[0], &f_start[0], &f_var[0]
    tb.f_stride, tb.f_off, tb.val = &f_stride[0], &f_off[0], &val[0]
    with nogil:
        total = _score(&tb, &x[0], m)
    return total


cdef bint _icm(const Tables* tb, int32_t* x, int64_t n, const int64_t* inc_start,
               const int64_t* inc_fun, double* local, int sweeps) noexcept nogil:
    """Iterated conditional modes over the original functions (``inc``: the functions of
    each variable, CSR): each variable in turn takes the state of largest local sum when
    it is strictly larger; at most ``sweeps`` sweeps. True when a sweep moved nothing."""
    cdef int64_t v, a, t, k, vs, i, best
    cdef int sweep
    cdef bint moved = True
    for sweep in range(sweeps):
        moved = False
        for v in range(n):
            if tb.card[v] < 2:
                continue
            for a in range(tb.card[v]):
                local[a] = 0.0
            for t in range(inc_start[v], inc_start[v + 1]):
                k = inc_fun[t]
                i = _index(tb, x, k, v, &vs)
                for a in range(tb.card[v]):
                    local[a] += tb.val[i + a * vs]
            best = x[v]
            for a in range(tb.card[v]):
                if local[a] > local[best]:
                    best = a
            if best != x[v]:
                x[v] = <int32_t> best
                moved = True
        if not moved:
            return True
    return not moved


def icm(const int32_t[::1] card, const int64_t[::1] f_start, const int32_t[::1] f_var,
        const int64_t[::1] f_stride, const int64_t[::1] f_off, double[::1] val,
        const int64_t[::1] inc_start, const int64_t[::1] inc_fun, int32_t[::1] x,
        int sweeps):
    """ICM on the original functions (`_icm`), in place on x; True when converged."""
    cdef Tables tb
    cdef int64_t n = card.shape[0], width = 1, v
    cdef bint done
    for v in range(n):
        width = max(width, card[v])
    cdef double[::1] local = np.empty(width)
    tb.card, tb.f_start, tb.f_var = &card[0], &f_start[0], &f_var[0]
    tb.f_stride, tb.f_off, tb.val = &f_stride[0], &f_off[0], &val[0]
    with nogil:
        done = _icm(&tb, &x[0], n, &inc_start[0], &inc_fun[0], &local[0], sweeps)
    return done


# -- AND/OR branch and bound -----------------------------------------------------------------

cdef struct S:
    Tables tb
    int64_t n
    int64_t m
    const int64_t* ch_start      # pseudo-tree children, CSR
    const int32_t* ch_var
    const int32_t* roots
    int64_t n_roots
    const int64_t* ctx_start     # context (separator) of each variable, CSR
    const int32_t* ctx_var
    const int64_t* ctx_stride    # its strides in the variable's cache table
    const int64_t* cache_off     # -1: not cached
    double* cache_val
    uint8_t* cache_flag          # 0 empty, 1 upper bound, 2 exact
    const int64_t* cost_start    # originals in each bucket, CSR
    const int64_t* cost_fun
    const int64_t* cross_start   # messages crossing each variable's pseudo-tree edge, CSR
    const int64_t* cross_fun
    const int64_t* inc_start     # originals of each variable (ICM), CSR
    const int64_t* inc_fun
    int32_t* x                   # the search's assignment (complete at all times)
    int32_t* xbest               # the incumbent
    int32_t* xtmp
    double* local
    double best                  # the incumbent's score
    double* arena
    int64_t top
    int64_t cap
    int64_t nodes
    double deadline
    double next_look
    double look_every
    const uint8_t* stop
    int halted
    bint first                   # an OR node returns its first success (anytime passes)
    bint recovery                # exact cached values count as upper bounds only
    bint inexact                 # the last `_or` returned a success below its maximum
    const uint8_t* free          # neighbourhood search: only these variables move (NULL: all)
    const int32_t* xfix          # the others keep their state here
    int64_t node_limit           # NODE_LIMIT after this many nodes (0: none)
    double* info


cdef void _look(S* s) noexcept nogil:
    """Every POLL nodes: the clock and the stop flag; every ``look_every`` seconds, ICM
    from the search's assignment (a candidate incumbent)."""
    cdef double now = monotonic(), sc
    cdef int64_t v
    if s.stop[0]:
        s.halted = STOPPED
        return
    if now > s.deadline:
        s.halted = TIMED_OUT
        return
    if s.node_limit > 0 and s.nodes >= s.node_limit:
        s.halted = NODE_LIMIT
        return
    if now >= s.next_look and not s.recovery and s.free == NULL:
        for v in range(s.n):
            s.xtmp[v] = s.x[v]
        _icm(&s.tb, s.xtmp, s.n, s.inc_start, s.inc_fun, s.local, 3)
        sc = _score(&s.tb, s.xtmp, s.m)
        if sc > s.best:
            s.best = sc
            for v in range(s.n):
                s.xbest[v] = s.xtmp[v]
            s.info[0] = sc
        s.next_look = monotonic() + s.look_every
    s.info[1] = <double> s.nodes


cdef void _values(S* s, int64_t v, double* cost, double* h, double* f) noexcept nogil:
    """At the search's assignment of v's ancestors, for each state a of v: cost[a] (v's
    bucket's originals), h[c * card_v + a] (the heuristic of child c's subtree) and
    f[a] = cost[a] + sum_c h[c][a] (an upper bound on the best value of v's subtree with
    x_v = a)."""
    cdef int64_t cv = s.tb.card[v], a, t, k, i, vs, c, nc = s.ch_start[v + 1] - s.ch_start[v]
    for a in range(cv):
        cost[a] = 0.0
    for t in range(s.cost_start[v], s.cost_start[v + 1]):
        k = s.cost_fun[t]
        i = _index(&s.tb, s.x, k, v, &vs)
        for a in range(cv):
            cost[a] += s.tb.val[i + a * vs]
    for a in range(cv):
        f[a] = cost[a]
    for c in range(nc):
        for a in range(cv):
            h[c * cv + a] = 0.0
        for t in range(s.cross_start[s.ch_var[s.ch_start[v] + c]],
                       s.cross_start[s.ch_var[s.ch_start[v] + c] + 1]):
            k = s.cross_fun[t]
            i = _index(&s.tb, s.x, k, v, &vs)
            for a in range(cv):
                h[c * cv + a] += s.tb.val[i + a * vs]
        for a in range(cv):
            f[a] += h[c * cv + a]


cdef double _or(S* s, int64_t v, double alpha, double outside) noexcept nogil:
    """The OR node of v at the search's assignment of its ancestors. Returns V: when V is
    above the threshold max(alpha, incumbent - outside) at the caller's check, V is the
    exact maximum of v's subtree and x holds a maximiser (up to subtrees answered from
    the cache); otherwise V is an upper bound on that maximum at or below it (fail-low).
    ``outside``: an upper bound on everything a complete solution through this node adds
    outside v's subtree."""
    cdef int64_t cv = s.tb.card[v], nc = s.ch_start[v + 1] - s.ch_start[v]
    cdef int64_t key = -1, t, r, a, ci, b, bestx = -1, need
    cdef double ub_cache = INFINITY, best = -INFINITY, upper = -INFINITY, ae, val, rest, vc
    cdef double thr, tmp
    cdef double* cost
    cdef double* h
    cdef double* f
    cdef bint ok, cut = False, tainted = False
    s.nodes += 1
    if s.nodes % POLL == 0:
        _look(s)
    if s.halted:
        return 0.0
    s.inexact = False
    ae = alpha if alpha > s.best - outside else s.best - outside
    if s.cache_off[v] >= 0 and s.free == NULL:
        key = s.cache_off[v]
        for t in range(s.ctx_start[v], s.ctx_start[v + 1]):
            key += s.x[s.ctx_var[t]] * s.ctx_stride[t]
        if s.cache_flag[key] == 2 and not s.recovery:
            return s.cache_val[key]
        if s.cache_flag[key] >= 1:
            ub_cache = s.cache_val[key]
            if ub_cache <= ae:
                return ub_cache
    need = cv * (nc + 3)
    if s.top + need > s.cap:
        s.halted = NO_MEMORY
        return 0.0
    cost = s.arena + s.top
    h = cost + cv
    f = h + nc * cv
    s.top += need
    _values(s, v, cost, h, f)
    if s.free != NULL and not s.free[v]:  # outside the neighbourhood: its fixed state only
        for a in range(cv):
            if a != s.xfix[v]:
                f[a] = -INFINITY
    # states by decreasing f (kept in the arena's last cv slots, as doubles)
    for a in range(cv):
        if f[a] > ub_cache:
            f[a] = ub_cache
        f[cv + a] = <double> a
    for a in range(1, cv):
        tmp = f[cv + a]
        b = a - 1
        while b >= 0 and f[<int64_t> f[cv + b]] < f[<int64_t> tmp]:
            f[cv + b + 1] = f[cv + b]
            b -= 1
        f[cv + b + 1] = tmp
    for r in range(cv):
        a = <int64_t> f[cv + r]
        ae = alpha if alpha > s.best - outside else s.best - outside
        if f[a] <= (ae if ae > best else best):
            if f[a] > upper:
                upper = f[a]
            break
        s.x[v] = <int32_t> a
        val = cost[a]
        ok = True
        for ci in range(nc):
            rest = 0.0
            for b in range(ci + 1, nc):
                rest += h[b * cv + a]
            ae = alpha if alpha > s.best - outside else s.best - outside
            thr = (ae if ae > best else best) - val - rest
            vc = _or(s, s.ch_var[s.ch_start[v] + ci], thr, outside + val + rest)
            if s.halted:
                s.top -= need
                return 0.0
            tainted = tainted or s.inexact
            ae = alpha if alpha > s.best - outside else s.best - outside
            thr = (ae if ae > best else best) - val - rest
            if vc <= thr:
                if val + vc + rest > upper:
                    upper = val + vc + rest
                ok = False
                break
            val += vc
        if ok:
            best, bestx = val, a
            if s.first and r + 1 < cv:
                cut = True
                break
    s.top -= need
    if bestx >= 0:
        s.x[v] = <int32_t> bestx
    # a first success (cut), or values resting on some below (tainted): not to be cached
    s.inexact = cut or tainted
    if cut:
        return best
    if key >= 0 and not tainted:
        if upper <= best:
            s.cache_val[key], s.cache_flag[key] = best, 2
        elif s.cache_flag[key] == 0 or upper < s.cache_val[key]:
            s.cache_val[key], s.cache_flag[key] = upper, 1
    return best if upper <= best else upper


cdef double _top(S* s, double* hr) noexcept nogil:
    """The AND node over the pseudo-tree's roots: their values summed when the total beats
    the incumbent (x then holds the solution), else -inf (the incumbent is optimal)."""
    cdef int64_t k, j, t
    cdef double val = 0.0, rest, vc
    for k in range(s.n_roots):
        hr[k] = 0.0
        for t in range(s.cross_start[s.roots[k]], s.cross_start[s.roots[k] + 1]):
            hr[k] += s.tb.val[s.tb.f_off[s.cross_fun[t]]]
    for k in range(s.n_roots):
        rest = 0.0
        for j in range(k + 1, s.n_roots):
            rest += hr[j]
        vc = _or(s, s.roots[k], s.best - val - rest, val + rest)
        if s.halted:
            return -INFINITY
        if vc <= s.best - val - rest:
            return -INFINITY
        val += vc
    return val


cdef class Search:
    """AND/OR branch and bound on one structure (module docstring). Built once per
    mini-bucket plan; `run` searches the tables in ``val`` (originals then messages)."""

    cdef S s
    cdef object keep      # the arrays the struct points into
    cdef double[::1] cache_val
    cdef uint8_t[::1] cache_flag
    cdef double[::1] arena
    cdef double[::1] local
    cdef int32_t[::1] xtmp

    def __init__(self, card, f_start, f_var, f_stride, f_off, int64_t m, ch_start, ch_var,
                 roots, ctx_start, ctx_var, ctx_stride, cache_off, int64_t cache_size,
                 cost_start, cost_fun, cross_start, cross_fun, inc_start, inc_fun,
                 int64_t arena_size):
        self.keep = []
        n = len(card)
        width = int(np.max(card)) if n else 1
        self.cache_val = np.zeros(max(cache_size, 1))
        self.cache_flag = np.zeros(max(cache_size, 1), dtype=np.uint8)
        self.arena = np.empty(max(arena_size, 1))
        self.local = np.empty(max(width, 1))
        self.xtmp = np.zeros(max(n, 1), dtype=np.int32)
        self.s.n, self.s.m = n, m
        self.s.tb.card = self._p32(card)
        self.s.tb.f_start = self._p64(f_start)
        self.s.tb.f_var = self._p32(f_var)
        self.s.tb.f_stride = self._p64(f_stride)
        self.s.tb.f_off = self._p64(f_off)
        self.s.ch_start = self._p64(ch_start)
        self.s.ch_var = self._p32(ch_var)
        self.s.roots = self._p32(roots)
        self.s.n_roots = len(roots)
        self.s.ctx_start = self._p64(ctx_start)
        self.s.ctx_var = self._p32(ctx_var)
        self.s.ctx_stride = self._p64(ctx_stride)
        self.s.cache_off = self._p64(cache_off)
        self.s.cache_val = &self.cache_val[0]
        self.s.cache_flag = &self.cache_flag[0]
        self.s.cost_start = self._p64(cost_start)
        self.s.cost_fun = self._p64(cost_fun)
        self.s.cross_start = self._p64(cross_start)
        self.s.cross_fun = self._p64(cross_fun)
        self.s.inc_start = self._p64(inc_start)
        self.s.inc_fun = self._p64(inc_fun)
        self.s.arena = &self.arena[0]
        self.s.cap = self.arena.shape[0]
        self.s.local = &self.local[0]
        self.s.xtmp = &self.xtmp[0]

    cdef const int64_t* _p64(self, a):
        """A pointer to ``a`` as int64 (kept alive with the object)."""
        a = np.ascontiguousarray(a, dtype=np.int64)
        cdef const int64_t[::1] view = a if a.size else np.zeros(1, dtype=np.int64)
        self.keep.append(view)
        return &view[0]

    cdef const int32_t* _p32(self, a):
        """A pointer to ``a`` as int32 (kept alive with the object)."""
        a = np.ascontiguousarray(a, dtype=np.int32)
        cdef const int32_t[::1] view = a if a.size else np.zeros(1, dtype=np.int32)
        self.keep.append(view)
        return &view[0]

    def clear_cache(self):
        """Forget the cached values (the tables changed)."""
        self.cache_flag[:] = 0

    def greedy(self, double[::1] val, const int64_t[::1] preorder, int32_t[::1] x):
        """The greedy labelling of the heuristic: variables parents first, each at the
        state of largest f (`_values`), in place on x."""
        cdef int64_t k, v, a, best, width = 1, nc
        for k in range(self.s.n):
            width = max(width, self.s.tb.card[k])
        cdef double[::1] work = np.empty(width * (self.s.n + 3) + 1)
        cdef double* cost = &work[0]
        cdef double* f
        self.s.tb.val = &val[0]
        self.s.x = &x[0] if self.s.n else NULL
        with nogil:
            for k in range(preorder.shape[0]):
                v = preorder[k]
                nc = self.s.ch_start[v + 1] - self.s.ch_start[v]
                f = cost + width + width * nc
                _values(&self.s, v, cost, cost + width, f)
                best = 0
                for a in range(self.s.tb.card[v]):
                    if f[a] > f[best]:
                        best = a
                x[v] = <int32_t> best

    def lns(self, double[::1] val, int32_t[::1] x, int32_t[::1] xbest, double best,
            double time_limit, const uint8_t[::1] stop, double[::1] info, double size,
            int64_t node_limit, uint64_t seed):
        """Large-neighbourhood search from the incumbent ``xbest`` (scoring ``best``,
        finite): again and again, a ball of ``size`` variables around a random one
        (breadth first through the factors) is searched exhaustively, without the cache,
        for at most ``node_limit`` nodes, every other variable fixed at the incumbent; a
        better solution becomes the incumbent (ICM improves it). The ball grows by a fifth
        after a search that ends, shrinks by a fifth after one that hits the node limit
        (Shaw 1998's large neighbourhoods, guided by the structure as toulbar2's
        decomposition-guided VNS). Runs ``time_limit`` seconds or until ``stop[0]``.
        Returns (status: TIMED_OUT or STOPPED, best score, the ball's size)."""
        cdef S* s = &self.s
        cdef int64_t n = s.n, k, head, tail, v, t, u, f, r, count
        cdef double total, got, sc
        cdef uint64_t state = seed
        cdef double[::1] hr = np.zeros(max(s.n_roots, 1))
        cdef uint8_t[::1] free_arr = np.zeros(max(n, 1), dtype=np.uint8)
        cdef int32_t[::1] fix = np.array(xbest, dtype=np.int32) if n else np.zeros(1, np.int32)
        cdef int64_t[::1] queue = np.zeros(max(n, 1), dtype=np.int64)
        s.tb.val = &val[0]
        s.x = &x[0] if n else NULL
        s.xbest = &xbest[0] if n else NULL
        s.best = best
        s.stop = &stop[0]
        s.info = &info[0]
        s.deadline = monotonic() + time_limit if time_limit > 0.0 else INFINITY
        s.next_look = INFINITY
        s.first, s.recovery = False, False
        s.xfix = &fix[0]
        s.top = 0
        count = 0
        with nogil:
            while n > 0:
                if stop[0]:
                    s.halted = STOPPED
                    break
                if monotonic() > s.deadline:
                    s.halted = TIMED_OUT
                    break
                # the ball
                r = <int64_t> (_next(&state) % <uint64_t> n)
                head, tail = 0, 1
                queue[0] = r
                free_arr[r] = 1
                while head < tail and tail < <int64_t> size:
                    v = queue[head]
                    head += 1
                    for t in range(s.inc_start[v], s.inc_start[v + 1]):
                        f = s.inc_fun[t]
                        for k in range(s.tb.f_start[f], s.tb.f_start[f + 1]):
                            u = s.tb.f_var[k]
                            if not free_arr[u] and tail < <int64_t> size:
                                free_arr[u] = 1
                                queue[tail] = u
                                tail += 1
                for v in range(n):
                    s.x[v] = s.xbest[v]
                    fix[v] = s.xbest[v]
                s.free = &free_arr[0]
                s.halted = 0
                s.nodes = 0
                s.node_limit = node_limit
                total = _top(s, &hr[0])
                count += s.nodes
                s.free, s.node_limit = NULL, 0
                for k in range(tail):
                    free_arr[queue[k]] = 0
                if s.halted == NODE_LIMIT:
                    size = size * 0.8 if size * 0.8 > 2.0 else 2.0
                    continue
                if s.halted:
                    break
                size = size * 1.2 if size * 1.2 < n else <double> n
                if total > s.best:
                    got = _score(&s.tb, s.x, s.m)
                    if got > s.best:
                        _icm(&s.tb, s.x, n, s.inc_start, s.inc_fun, s.local, 100)
                        sc = _score(&s.tb, s.x, s.m)
                        for v in range(n):
                            s.xbest[v] = s.x[v]
                        s.best = sc if sc > got else got
                        info[0] = s.best
            info[1] = <double> count
        return s.halted, s.best, size

    def run(self, double[::1] val, int32_t[::1] x, int32_t[::1] xbest, double best,
            double time_limit, const uint8_t[::1] stop, double[::1] info,
            double look_every):
        """Search from the assignment x (complete, updated in place) against the incumbent
        ``xbest`` scoring ``best`` (-inf: none). Returns (status, best score): DONE (0)
        when the search finished, the incumbent then optimal; TIMED_OUT (1) after
        ``time_limit`` seconds (<= 0: none); STOPPED (2) when ``stop[0]`` became non-zero;
        NO_MEMORY (3) when the arena ran out. ``info[0]`` follows the incumbent's score,
        ``info[1]`` the nodes expanded."""
        cdef S* s = &self.s
        cdef double total, got, incumbent, sc
        cdef double[::1] hr = np.zeros(max(s.n_roots, 1))
        cdef int64_t v
        cdef bint cut
        s.tb.val = &val[0]
        s.x = &x[0] if s.n else NULL
        s.xbest = &xbest[0] if s.n else NULL
        s.best = best
        s.stop = &stop[0]
        s.info = &info[0]
        s.deadline = monotonic() + time_limit if time_limit > 0.0 else INFINITY
        s.look_every = look_every
        s.next_look = monotonic() + look_every
        s.halted = 0
        s.free, s.node_limit = NULL, 0
        s.first, s.recovery = True, False
        s.top = 0
        s.nodes = 0
        info[0] = best
        with nogil:
            # first-success passes find better and better solutions; when one finds none,
            # an exhaustive pass finds the optimum or proves the incumbent optimal
            while True:
                incumbent = s.best
                total = _top(s, &hr[0])
                if s.halted:
                    break
                if total <= s.best:
                    if not s.first:  # a proof
                        break
                    s.first = False
                    continue
                got = _score(&s.tb, s.x, s.m)
                if got < total - 1e-9 * (1.0 + (total if total > 0 else -total)):
                    # subtrees answered from the cache: search for the solution again
                    cut, s.first, s.recovery = s.first, True, True
                    s.best = total - 1e-9 * (1.0 + (total if total > 0 else -total))
                    _top(s, &hr[0])
                    got = _score(&s.tb, s.x, s.m)
                    s.first, s.recovery = cut, False
                s.best = incumbent
                if got > incumbent:
                    for v in range(s.n):
                        s.xtmp[v] = s.x[v]
                    _icm(&s.tb, s.xtmp, s.n, s.inc_start, s.inc_fun, s.local, 100)
                    sc = _score(&s.tb, s.xtmp, s.m)
                    for v in range(s.n):
                        s.xbest[v] = s.xtmp[v] if sc > got else s.x[v]
                    s.best = sc if sc > got else got
                    info[0] = s.best
                if not s.first or s.halted:  # the exhaustive pass's answer: the optimum
                    break
                if got <= incumbent:  # no progress (rounding, or a wrong guess): prove
                    s.first = False
            info[0] = s.best
            info[1] = <double> s.nodes
        return (s.halted if s.halted else DONE), s.best


cdef inline uint64_t _next(uint64_t* state) noexcept nogil:
    """splitmix64."""
    state[0] += 0x9E3779B97F4A7C15ULL
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


# -- set-up helpers --------------------------------------------------------------------------

def row_major(const int32_t[::1] card, const int64_t[::1] start, const int32_t[::1] var):
    """Strides (int64, aligned with ``var``) and table offsets (int64[k + 1]) of k tables,
    table j over the variables ``var[start[j]:start[j + 1]]``, row-major (the last
    variable's stride 1), laid end to end."""
    cdef int64_t k = start.shape[0] - 1, j, t, size
    stride_arr = np.empty(var.shape[0], dtype=np.int64)
    off_arr = np.empty(k + 1, dtype=np.int64)
    cdef int64_t[::1] stride = stride_arr, off = off_arr
    with nogil:
        off[0] = 0
        for j in range(k):
            size = 1
            t = start[j + 1] - 1
            while t >= start[j]:
                stride[t] = size
                size *= card[var[t]]
                t -= 1
            off[j + 1] = off[j] + size
    return stride_arr, off_arr


def crossings(const int64_t[::1] parent, const int32_t[::1] src, const int32_t[::1] target):
    """For each variable w, the messages q (as given: source bucket ``src[q]``, target
    bucket ``target[q]``, -1 for a constant) whose path in the pseudo-tree (``parent``,
    -1 at a root) from the source up to the target, the target excluded (to the root
    included for a constant), passes w: CSR (start int64[n + 1], message ids int64)."""
    cdef int64_t n = parent.shape[0], q, w
    count_arr = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] count = count_arr
    with nogil:
        for q in range(src.shape[0]):
            w = src[q]
            while w >= 0 and w != target[q]:
                count[w + 1] += 1
                w = parent[w]
        for w in range(n):
            count[w + 1] += count[w]
    ids_arr = np.empty(count[n], dtype=np.int64)
    fill_arr = count_arr[:n].copy()
    cdef int64_t[::1] ids = ids_arr, fill = fill_arr
    with nogil:
        for q in range(src.shape[0]):
            w = src[q]
            while w >= 0 and w != target[q]:
                ids[fill[w]] = q
                fill[w] += 1
                w = parent[w]
    return count_arr, ids_arr
