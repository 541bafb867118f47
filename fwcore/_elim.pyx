# cython: language_level=3
"""Variable elimination on a clique tree (`fwcore.elimination`), one kernel call per pass.

The clique tree comes from `fwcore.elimination.EliminationPlan.clique_tree`: the elimination order,
the clique of each variable v (v, then its separator S_v in elimination order), its
children and the edges it owns (CSR: starts int64[n+1], members int32). A clique table
is never stored: for each separator assignment s (C order over S_v, which is also the
layout of v's message) the entries t(x_v, s) are summed from v's local table (θ_v plus
its owned edges, built per clique) and the children's messages, read by strides, one
block of separator assignments at a time (the fastest axes, about BLOCK entries with
x_v): each operand is added into the block through a precomputed table of offsets,
then the block is reduced over x_v in tight loops.

- `sum_product`: upward m_v(s) = log Σ_x exp t(x, s); downward in probability space:
  P_v(s), the marginal of S_v, gives the clique belief b(x, s) = P_v(s) exp(t(x, s) −
  m_v(s)) (binary v: a logistic of t(1, s) − t(0, s)), which is summed into the
  children's P_c, v's node marginal and its owned edges' marginals. Each component's
  root has P = 1, so every belief is normalised by its own component's Z.
- `max_product`: upward m_v(s) = max_x t(x, s) with the first maximiser stored (one
  byte an entry when every card <= 256), each message freed once its parent has used
  it; then x_v = argmax_v(x_{S_v}) in reverse elimination order.

−inf entries stay −inf: an all −inf slice gives m = −inf (and P = 0 below it), never NaN.
Callers validate; kernels trust their inputs. In the main thread (the only one that runs
Python's signal handlers) both passes take the GIL every POLL clique entries to run them,
so Ctrl-C stops a call within milliseconds (KeyboardInterrupt, memory freed): a 21x21
grid's elimination otherwise ran 8-36 s on. Other threads never wait for the GIL.
"""
import threading

from libc.math cimport INFINITY, exp, log
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset


cdef extern from "Python.h":
    int PyErr_CheckSignals()  # declared without ``except``: its exception stays pending

# the local marginal goes into a second accumulator every max(FLUSH, its size) separator
# entries (two-level summation: rounding error ~ (FLUSH + entries / FLUSH) ulp, not
# entries ulp, at an amortised cost of at most one addition an entry)
cdef enum:
    FLUSH = 1024
    BLOCK = 2048
    # clique entries between two checks for signals (about 10 ms of work)
    POLL = 1 << 20
    # what the passes return: done, out of memory, stopped by a signal handler's exception
    DONE = 0
    NO_MEMORY = -1
    SIGNALLED = -2


ctypedef struct Work:
    int32_t* pos                 # n: axis of each variable in the current clique
    int64_t* cards               # cards of the clique axes (axis 0 = v)
    int64_t* digit               # odometer over the outer separator axes
    int64_t* stride              # nop x ncl: each operand's stride on each clique axis
    int64_t* delta               # nop x ncl: its offset change when outer axis a steps
                                 # up and the faster outer axes wrap to 0
    int64_t* off                 # nop: each operand's offset at the current block
    int64_t* ioff                # nop x block: its offsets within a block
    double** ptr                 # nop: operand 0 = local table, then children's messages
    double** acc                 # nop: down pass targets (local marginal, children's P)
    double* t                    # card_v x block: the clique entries of a block
    double* local                # the local table
    double* lm                   # local marginal, and its second-level accumulator
    double* lm2
    int64_t* lstride             # local table strides, per local axis
    int64_t* esv                 # per owned edge: theta stride of x_v and of x_u
    int64_t* esu
    int64_t ncl, nop, size_sep, size_local, n_own, inner, block
    int64_t unpolled             # clique entries since the last check for signals


cdef void free_each(void** arrays, int64_t n) noexcept nogil:
    """Free the n arrays of ``arrays`` (NULL: nothing) and then ``arrays`` itself."""
    cdef int64_t v
    if arrays != NULL:
        for v in range(n):
            free(arrays[v])
    free(arrays)


cdef void work_free(Work* w) noexcept nogil:
    free(w.pos)
    free(w.cards)
    free(w.digit)
    free(w.stride)
    free(w.delta)
    free(w.off)
    free(w.ioff)
    free(w.ptr)
    free(w.acc)
    free(w.t)
    free(w.local)
    free(w.lm)
    free(w.lm2)
    free(w.lstride)
    free(w.esv)
    free(w.esu)


cdef int64_t block_axes(const Tree* g, int64_t v, int64_t* block) noexcept nogil:
    """The first inner axis of clique v: the fastest separator axes whose entries times
    card_v stay within BLOCK (at least one axis); their product goes to ``block``."""
    cdef int64_t k0 = g.clq_start[v], a = g.clq_start[v + 1] - k0, size = 1
    while a > 1 and (size == 1 or g.card[v] * size * g.card[g.clq_var[k0 + a - 1]] <= BLOCK):
        a -= 1
        size *= g.card[g.clq_var[k0 + a]]
    block[0] = size
    return a


cdef int work_alloc(const Tree* g, Work* w) noexcept nogil:
    """Scratch for the largest clique; NO_MEMORY when out of memory (w is freed by the
    caller)."""
    cdef int64_t v, k, max_cl = 1, max_ops = 1, max_local = 1, max_t = 1, max_ioff = 1
    cdef int64_t size, block
    memset(w, 0, sizeof(Work))
    for v in range(g.n):
        max_cl = max(max_cl, g.clq_start[v + 1] - g.clq_start[v])
        max_ops = max(max_ops, 1 + g.ch_start[v + 1] - g.ch_start[v])
        size = g.card[v]
        for k in range(g.own_start[v], g.own_start[v + 1]):
            size *= g.card[g.edges[2 * g.own_edge[k]] + g.edges[2 * g.own_edge[k] + 1] - v]
        max_local = max(max_local, size)
        block_axes(g, v, &block)
        max_t = max(max_t, g.card[v] * block)
        max_ioff = max(max_ioff, (1 + g.ch_start[v + 1] - g.ch_start[v]) * block)
    w.pos = <int32_t*>malloc(max(g.n, 1) * sizeof(int32_t))
    w.cards = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.digit = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.stride = <int64_t*>malloc(max_ops * max_cl * sizeof(int64_t))
    w.delta = <int64_t*>malloc(max_ops * max_cl * sizeof(int64_t))
    w.off = <int64_t*>malloc(max_ops * sizeof(int64_t))
    w.ioff = <int64_t*>malloc(max_ioff * sizeof(int64_t))
    w.ptr = <double**>malloc(max_ops * sizeof(double*))
    w.acc = <double**>malloc(max_ops * sizeof(double*))
    w.t = <double*>malloc(max_t * sizeof(double))
    w.local = <double*>malloc(max_local * sizeof(double))
    w.lm = <double*>malloc(max_local * sizeof(double))
    w.lm2 = <double*>malloc(max_local * sizeof(double))
    w.lstride = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.esv = <int64_t*>malloc(max_cl * sizeof(int64_t))
    w.esu = <int64_t*>malloc(max_cl * sizeof(int64_t))
    if (w.pos == NULL or w.cards == NULL or w.digit == NULL or w.stride == NULL
            or w.delta == NULL or w.off == NULL or w.ioff == NULL or w.ptr == NULL
            or w.acc == NULL or w.t == NULL or w.local == NULL or w.lm == NULL
            or w.lm2 == NULL or w.lstride == NULL or w.esv == NULL or w.esu == NULL):
        return NO_MEMORY
    return DONE


cdef bint signalled(const Tree* g, Work* w, int64_t entries) noexcept nogil:
    """Count ``entries`` more; in the main thread, every POLL of them, run Python's signal
    handlers (with the GIL): True when one raised (Ctrl-C), its exception left pending for
    the caller."""
    w.unpolled += entries
    if not g.main_thread or w.unpolled < POLL:
        return False
    w.unpolled = 0
    with gil:
        return PyErr_CheckSignals() != 0


cdef int raise_pending() except -1:
    """Raise the exception a signal handler left pending (`signalled`)."""
    return -1


cdef int64_t sep_size(const Tree* g, int64_t v) noexcept nogil:
    cdef int64_t k, size = 1
    for k in range(g.clq_start[v] + 1, g.clq_start[v + 1]):
        size *= g.card[g.clq_var[k]]
    return size


cdef void setup(const Tree* g, Work* w, int64_t v, double** msgs) noexcept nogil:
    """Operands of clique v: its local table (built here) and its children's messages,
    with their strides on the clique axes, block offsets and outer odometer steps; the
    odometer at the first block."""
    cdef int64_t a, i, o, c, u, e, s, k0 = g.clq_start[v], ncl = g.clq_start[v + 1] - k0
    cdef int64_t nl = g.own_start[v + 1] - g.own_start[v], cv = g.card[v], cu, x, y, r
    cdef int64_t inner, base
    cdef int64_t* st
    cdef int64_t* io
    cdef double* src
    cdef double* dst
    cdef double th
    w.ncl = ncl
    w.nop = 1 + g.ch_start[v + 1] - g.ch_start[v]
    w.size_sep = 1
    for a in range(ncl):
        u = g.clq_var[k0 + a]
        w.pos[u] = <int32_t>a
        w.cards[a] = g.card[u]
        w.digit[a] = 0
        if a:
            w.size_sep *= g.card[u]
    for o in range(w.nop * ncl):
        w.stride[o] = 0
    for o in range(w.nop):
        w.off[o] = 0
    # local table over (v, u_0, ..., u_{nl-1}) in C order, grown from θ_v by inserting
    # u_{nl-1}, ..., u_0 after axis 0 (each step adds along contiguous runs); edge
    # e = (i, j) is x_i-major in theta
    w.n_own = nl
    src, dst = (w.local, w.lm) if nl % 2 == 0 else (w.lm, w.local)
    for x in range(cv):
        src[x] = g.theta[g.node_off[v] + x]
    s = 1
    for i in range(nl - 1, -1, -1):
        e = g.own_edge[g.own_start[v] + i]
        u = g.edges[2 * e] + g.edges[2 * e + 1] - v
        cu = g.card[u]
        if g.edges[2 * e] == v:
            w.esv[i], w.esu[i] = cu, 1
        else:
            w.esv[i], w.esu[i] = 1, cv
        for x in range(cv):
            for y in range(cu):
                th = g.theta[g.edge_off[e] + x * w.esv[i] + y * w.esu[i]]
                for r in range(s):
                    dst[(x * cu + y) * s + r] = src[x * s + r] + th
        src, dst = dst, src
        w.lstride[i + 1] = s
        w.stride[w.pos[u]] = s
        s *= cu
    w.lstride[0] = s
    w.stride[0] = s
    w.size_local = s * cv
    w.ptr[0] = w.local
    # children: message m_c over S_c (a subset of the clique), C order
    for o in range(1, w.nop):
        c = g.ch_var[g.ch_start[v] + o - 1]
        st = w.stride + o * ncl
        s = 1
        for i in range(g.clq_start[c + 1] - 1, g.clq_start[c], -1):
            u = g.clq_var[i]
            st[w.pos[u]] = s
            s *= g.card[u]
        w.ptr[o] = msgs[c]
    # inner axes (a block) and outer odometer steps
    inner = block_axes(g, v, &w.block)
    w.inner = inner
    for o in range(w.nop):
        st = w.stride + o * ncl
        io = w.ioff + o * w.block
        io[0] = 0
        s = 1  # C order, grown from the slowest inner axis (in place, from the back)
        for a in range(inner, ncl):
            for r in range(s - 1, -1, -1):
                base = io[r]
                for y in range(w.cards[a] - 1, -1, -1):
                    io[r * w.cards[a] + y] = base + y * st[a]
            s *= w.cards[a]
        s = 0
        for a in range(inner - 1, 0, -1):
            w.delta[o * ncl + a] = st[a] - s
            s += st[a] * (w.cards[a] - 1)


cdef inline bint advance(Work* w) noexcept nogil:
    """Next block: the outer axes' odometer (axis inner - 1 fastest); False after the
    last."""
    cdef int64_t a = w.inner - 1, o, nop = w.nop, ncl = w.ncl
    while a >= 1 and w.digit[a] == w.cards[a] - 1:
        w.digit[a] = 0
        a -= 1
    if a < 1:
        return False
    w.digit[a] += 1
    for o in range(nop):
        w.off[o] += w.delta[o * ncl + a]
    return True


cdef inline void fill(Work* w, int64_t cv) noexcept nogil:
    """t[x * block + r]: the clique entries of the current block."""
    cdef int64_t o, x, r, b = w.block, nop = w.nop, ncl = w.ncl
    cdef const double* p
    cdef const int64_t* io
    cdef double* t
    for x in range(cv):
        t = w.t + x * b
        p = w.ptr[0] + w.off[0] + x * w.stride[0]
        io = w.ioff
        for r in range(b):
            t[r] = p[io[r]]
        for o in range(1, nop):
            p = w.ptr[o] + w.off[o] + x * w.stride[o * ncl]
            io = w.ioff + o * b
            for r in range(b):
                t[r] += p[io[r]]


cdef inline void pair_block(Work* w, double* m, uint8_t* a8, int32_t* a32,
                            bint maximise) noexcept nogil:
    """The up pass over one block of a binary v whose clique has two operands."""
    cdef int64_t r, b = w.block, i0, i1
    cdef const int64_t* io0 = w.ioff
    cdef const int64_t* io1 = w.ioff + b
    cdef const double* l0 = w.ptr[0] + w.off[0]
    cdef const double* l1 = l0 + w.stride[0]
    cdef const double* c0 = w.ptr[1] + w.off[1]
    cdef const double* c1 = c0 + w.stride[w.ncl]
    cdef double t0, t1, hi, lo
    for r in range(b):
        i0 = io0[r]
        i1 = io1[r]
        t0 = l0[i0] + c0[i1]
        t1 = l1[i0] + c1[i1]
        if maximise:
            m[r] = t1 if t1 > t0 else t0
            if a8 != NULL:
                a8[r] = t1 > t0
            else:
                a32[r] = t1 > t0
        else:
            hi, lo = (t0, t1) if t0 >= t1 else (t1, t0)
            m[r] = hi + log(1.0 + exp(lo - hi)) if hi > -INFINITY else -INFINITY


cdef inline void reduce_block(Work* w, int64_t cv, double* m, uint8_t* a8, int32_t* a32,
                              bint maximise) noexcept nogil:
    """The block's messages (max: and first maximisers) from its entries in t."""
    cdef int64_t r, x, best, b = w.block
    cdef double hi, lo, total
    cdef const double* t = w.t
    for r in range(b):
        if maximise:
            best = 0
            hi = t[r]
            for x in range(1, cv):
                if t[x * b + r] > hi:
                    hi, best = t[x * b + r], x
            m[r] = hi
            if a8 != NULL:
                a8[r] = <uint8_t>best
            else:
                a32[r] = <int32_t>best
        elif cv == 2:
            hi, lo = t[r], t[b + r]
            if lo > hi:
                hi, lo = lo, hi
            m[r] = hi + log(1.0 + exp(lo - hi)) if hi > -INFINITY else -INFINITY
        else:
            hi = t[r]
            for x in range(1, cv):
                hi = max(hi, t[x * b + r])
            if hi == -INFINITY:
                m[r] = -INFINITY
            else:
                total = 0.0
                for x in range(cv):
                    total += exp(t[x * b + r] - hi)
                m[r] = hi + log(total)


cdef int up_pass(const Tree* g, Work* w, double** msgs, void** args, bint maximise,
                 bint narrow) noexcept nogil:
    """Messages of every variable in elimination order (max: with argmaxes, children's
    messages freed); NO_MEMORY or SIGNALLED when stopped."""
    cdef int64_t step, v, j, cv, o, c, b
    cdef double* m
    cdef uint8_t* a8
    cdef int32_t* a32
    for step in range(g.n):
        v = g.order[step]
        setup(g, w, v, msgs)
        cv = g.card[v]
        b = w.block
        m = <double*>malloc(w.size_sep * sizeof(double))
        if m == NULL:
            return NO_MEMORY
        msgs[v] = m
        if maximise:
            args[v] = malloc(w.size_sep * (sizeof(uint8_t) if narrow else sizeof(int32_t)))
            if args[v] == NULL:
                return NO_MEMORY
        a8 = <uint8_t*>args[v] if maximise else NULL
        a32 = <int32_t*>args[v] if maximise else NULL
        j = 0
        while True:
            if cv == 2 and w.nop == 2:  # a local table and one child: fused
                pair_block(w, m + j, a8 + j if maximise and narrow else NULL,
                           a32 + j if maximise and not narrow else NULL, maximise)
            else:
                fill(w, cv)
                reduce_block(w, cv, m + j, a8 + j if maximise and narrow else NULL,
                             a32 + j if maximise and not narrow else NULL, maximise)
            j += b
            if signalled(g, w, cv * b):
                return SIGNALLED
            if not advance(w):
                break
        if maximise:
            for o in range(1, w.nop):
                c = g.ch_var[g.ch_start[v] + o - 1]
                free(msgs[c])
                msgs[c] = NULL
    return DONE


cdef double root_sum(const Tree* g, double** msgs) noexcept nogil:
    """Σ of the roots' messages: log Z (sum) or the maximum score (max)."""
    cdef int64_t v
    cdef double total = 0.0
    for v in range(g.n):
        if g.clq_start[v + 1] - g.clq_start[v] == 1:
            total += msgs[v][0]
    return total


cdef void flush(Work* w) noexcept nogil:
    cdef int64_t i
    for i in range(w.size_local):
        w.lm2[i] += w.lm[i]
        w.lm[i] = 0.0


cdef void local_marginals(const Tree* g, Work* w, int64_t v, double* mu) noexcept nogil:
    """Node v's and its owned edges' marginals from its local marginal (in lm2, over
    (v, u_0, ..., u_{nl-1})): for i = nl-1, ..., 0 the edge (v, u_i) sums the middle
    axes out, then u_i is summed out in place; what is left is v's marginal."""
    cdef int64_t i, e, x, y, a, r, cv = g.card[v], cu, inner, outer
    cdef double* t = w.lm2
    cdef double total
    outer = w.size_local // cv  # entries per x of the current table
    for i in range(w.n_own - 1, -1, -1):
        e = g.own_edge[g.own_start[v] + i]
        cu = g.card[g.edges[2 * e] + g.edges[2 * e + 1] - v]
        inner = outer // cu  # the middle axes u_0 .. u_{i-1}
        for x in range(cv):
            for y in range(cu):
                total = 0.0
                for a in range(inner):
                    total += t[(x * inner + a) * cu + y]
                mu[g.edge_off[e] + x * w.esv[i] + y * w.esu[i]] = total
        for r in range(cv * inner):
            total = 0.0
            for y in range(cu):
                total += t[r * cu + y]
            t[r] = total
        outer = inner
    for x in range(cv):
        mu[g.node_off[v] + x] = t[x]


cdef inline void pair_beliefs(Work* w, const double* pv) noexcept nogil:
    """The down pass over one block of a binary v whose clique has two operands: the
    beliefs (a logistic of d = t1 - t0, its exp argument <= 0) go straight into the
    local marginal and the child's P."""
    cdef int64_t r, b = w.block, i0, i1
    cdef const int64_t* io0 = w.ioff
    cdef const int64_t* io1 = w.ioff + b
    cdef const double* l0 = w.ptr[0] + w.off[0]
    cdef const double* c0 = w.ptr[1] + w.off[1]
    cdef int64_t sl = w.stride[0], sc = w.stride[w.ncl]
    cdef double* a0 = w.acc[0] + w.off[0]
    cdef double* a1 = w.acc[1] + w.off[1]
    cdef double p, d, q, b0, b1
    for r in range(b):
        p = pv[r]
        if p == 0.0:
            continue
        i0 = io0[r]
        i1 = io1[r]
        d = (l0[i0 + sl] + c0[i1 + sc]) - (l0[i0] + c0[i1])
        if d <= 0.0:
            q = exp(d)
            b0 = p / (1.0 + q)
            b1 = b0 * q
        else:
            q = exp(-d)
            b1 = p / (1.0 + q)
            b0 = b1 * q
        a0[i0] += b0
        a0[i0 + sl] += b1
        a1[i1] += b0
        a1[i1 + sc] += b1


cdef inline void beliefs_block(Work* w, int64_t cv, const double* pv,
                               const double* mv) noexcept nogil:
    """The block's beliefs b(x, s) = P_v(s) p(x | s) (in t, in place), added into the
    operands' targets: the local marginal and the children's P."""
    cdef int64_t r, x, o, b = w.block, ncl = w.ncl
    cdef double p, d, q
    cdef double* t = w.t
    cdef double* dst
    cdef const int64_t* io
    for r in range(b):
        p = pv[r]
        if p == 0.0:
            for x in range(cv):
                t[x * b + r] = 0.0
        elif cv == 2:  # the logistic of d = t1 - t0, its exp argument <= 0
            d = t[b + r] - t[r]
            if d <= 0.0:
                q = exp(d)
                t[r] = p / (1.0 + q)
                t[b + r] = t[r] * q
            else:
                q = exp(-d)
                t[b + r] = p / (1.0 + q)
                t[r] = t[b + r] * q
        else:
            for x in range(cv):
                t[x * b + r] = p * exp(t[x * b + r] - mv[r])
    for o in range(w.nop):
        io = w.ioff + o * b
        for x in range(cv):
            dst = w.acc[o] + w.off[o] + x * w.stride[o * ncl]
            for r in range(b):
                dst[io[r]] += t[x * b + r]


cdef int down_pass(const Tree* g, Work* w, double** msgs, double** prob,
                   double* mu) noexcept nogil:
    """Marginals in reverse elimination order (see the module docstring); frees every
    message and P on the way; NO_MEMORY or SIGNALLED when stopped."""
    cdef int64_t step, v, j, cv, o, c, nop, since, b
    cdef double one = 1.0
    cdef double* pv
    for step in range(g.n - 1, -1, -1):
        v = g.order[step]
        setup(g, w, v, msgs)
        cv = g.card[v]
        nop, b = w.nop, w.block
        pv = prob[v] if prob[v] != NULL else &one
        w.acc[0] = w.lm
        for o in range(1, nop):
            c = g.ch_var[g.ch_start[v] + o - 1]
            prob[c] = <double*>calloc(sep_size(g, c), sizeof(double))
            if prob[c] == NULL:
                return NO_MEMORY
            w.acc[o] = prob[c]
        memset(w.lm, 0, w.size_local * sizeof(double))
        memset(w.lm2, 0, w.size_local * sizeof(double))
        j = 0
        since = 0
        while True:
            if cv == 2 and nop == 2:  # a local table and one child: fused
                pair_beliefs(w, pv + j)
            else:
                fill(w, cv)
                beliefs_block(w, cv, pv + j, msgs[v] + j)
            j += b
            since += b
            if since >= FLUSH and since >= w.size_local:
                flush(w)
                since = 0
            if signalled(g, w, cv * b):
                return SIGNALLED
            if not advance(w):
                break
        flush(w)
        local_marginals(g, w, v, mu)
        free(msgs[v])
        msgs[v] = NULL
        free(prob[v])
        prob[v] = NULL
    return DONE


cdef void backtrack(const Tree* g, void** args, bint narrow, int64_t* x) noexcept nogil:
    cdef int64_t step, v, k, j
    for step in range(g.n - 1, -1, -1):
        v = g.order[step]
        j = 0
        for k in range(g.clq_start[v] + 1, g.clq_start[v + 1]):
            j = j * g.card[g.clq_var[k]] + x[g.clq_var[k]]
        x[v] = (<uint8_t*>args[v])[j] if narrow else (<int32_t*>args[v])[j]


cdef class CliqueTree:
    """A model's layout and its elimination plan's clique tree (`fwcore.elimination`),
    held for `sum_product` and `max_product` (and `fwcore._query`'s passes); the
    log-potentials come with each call."""

    def __init__(self, const int[::1] card, const int[:, ::1] edges,
                 const int64_t[::1] node_off, const int64_t[::1] edge_off,
                 const int64_t[::1] order, const int64_t[::1] clq_start,
                 const int[::1] clq_var, const int64_t[::1] ch_start, const int[::1] ch_var,
                 const int64_t[::1] own_start, const int[::1] own_edge):
        self.card, self.edges, self.node_off, self.edge_off = card, edges, node_off, edge_off
        self.order, self.clq_start, self.clq_var = order, clq_start, clq_var
        self.ch_start, self.ch_var, self.own_start, self.own_edge = \
            ch_start, ch_var, own_start, own_edge


cdef Tree make_tree(CliqueTree t, const double[::1] theta):
    cdef Tree g
    g.n = t.card.shape[0]
    g.main_thread = threading.current_thread() is threading.main_thread()
    g.theta = &theta[0]
    g.card = <const int32_t*>&t.card[0]
    g.edges = <const int32_t*>&t.edges[0, 0] if t.edges.shape[0] else NULL
    g.node_off = &t.node_off[0]
    g.edge_off = &t.edge_off[0]
    g.order = &t.order[0]
    g.clq_start = &t.clq_start[0]
    g.clq_var = <const int32_t*>&t.clq_var[0]
    g.ch_start = &t.ch_start[0]
    g.ch_var = <const int32_t*>&t.ch_var[0] if t.ch_var.shape[0] else NULL
    g.own_start = &t.own_start[0]
    g.own_edge = <const int32_t*>&t.own_edge[0] if t.own_edge.shape[0] else NULL
    return g


cdef int eliminate(const Tree* g, bint maximise, bint narrow, double* mu, int64_t* x,
                   double* value) noexcept nogil:
    """The upward pass, then ``value`` = log Z (sum) or the maximum score (max), and,
    unless it is −inf, the marginals added into ``mu`` (sum) or a maximiser written into
    ``x`` (max); NO_MEMORY or SIGNALLED when stopped (every table freed)."""
    cdef Work w
    cdef int status = work_alloc(g, &w)
    cdef double** msgs = <double**>calloc(g.n, sizeof(double*))
    cdef void** below = <void**>calloc(g.n, sizeof(void*))  # max: argmaxes; sum: P_v
    value[0] = -INFINITY
    if msgs == NULL or below == NULL:
        status = NO_MEMORY
    if status == DONE:
        status = up_pass(g, &w, msgs, below if maximise else NULL, maximise, narrow)
    if status == DONE:
        value[0] = root_sum(g, msgs)
        if value[0] > -INFINITY:
            if maximise:
                backtrack(g, below, narrow, x)
            else:
                status = down_pass(g, &w, msgs, <double**>below, mu)
    work_free(&w)
    free_each(<void**>msgs, g.n)
    free_each(below, g.n)
    return status


def sum_product(CliqueTree tree, const double[::1] theta, double[::1] mu):
    """log Z, and the node and edge marginals added into ``mu`` (zeros, the model's
    layout) unless log Z = −inf. n >= 1 variables."""
    cdef Tree g = make_tree(tree, theta)
    cdef double log_z
    cdef int status
    with nogil:
        status = eliminate(&g, False, False, &mu[0], NULL, &log_z)
    if status == SIGNALLED:
        raise_pending()
    if status == NO_MEMORY:
        raise MemoryError("variable elimination ran out of memory")
    return log_z


def max_product(CliqueTree tree, const double[::1] theta, int64_t[::1] x):
    """The maximum score; a maximiser written into ``x`` unless it is −inf (first
    maximiser of each clique slice). n >= 1 variables."""
    cdef Tree g = make_tree(tree, theta)
    cdef double best
    cdef int status
    cdef int64_t v
    cdef bint narrow = True
    for v in range(g.n):
        narrow = narrow and g.card[v] <= 256
    with nogil:
        status = eliminate(&g, True, narrow, NULL, &x[0], &best)
    if status == SIGNALLED:
        raise_pending()
    if status == NO_MEMORY:
        raise MemoryError("variable elimination ran out of memory")
    return best
