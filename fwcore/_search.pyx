"""Kernels of exact and anytime MAP search on factor graphs (`fwcore.oracles.search`).

Everything works on one flat layout of *functions* (tables over scopes): function k has the
variables ``f_var[f_start[k]:f_start[k + 1]]``, a stride per variable in ``f_stride`` and
its table from ``f_off[k]``, so its value at an assignment x is
``table[f_off[k] + sum_t x[f_var[t]] * f_stride[t]]``. The model's factors come first (the
"originals", m of them, their tables in ``val``), the mini-bucket messages after them
(function m + c is the message of cluster c of weighted mini-bucket's tree, its table in
``msg`` from ``f_off[m + c]``: `fwcore._wmb`'s forward messages, read in place).

- `heuristic`: weighted mini-bucket's forward messages (`fwcore._wmb.forward` on the
  tables divided by a small temperature T: the max-product messages with moment matching
  of Flerova, Ihler, Dechter & Otten 2011, "Mini-bucket elimination with moment
  matching", as T -> 0) turned back into score units, in place: `fwcore._wmb.forward`
  subtracts each message's largest entry (and adds it to the bound); the search needs the
  messages themselves.
- `Search`: depth-first AND/OR branch and bound over the pseudo-tree of the order
  (Marinescu & Dechter 2009, "AND/OR branch-and-bound search for combinatorial
  optimization in graphical models", AOBB-C), guided by the mini-bucket heuristic
  (Kask & Dechter 2001), with context caching of exact values and of upper bounds, and a
  factor-graph ICM on the search's current assignment every few milliseconds for an
  anytime incumbent. It polls a deadline and a stop flag; it runs without the GIL.

Scores are maximised; -inf marks impossible entries and is never added to +inf.
"""
import numpy as np

from libc.math cimport INFINITY, exp, log
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from ._clock cimport monotonic

cdef enum:
    # search nodes between two looks at the clock and the stop flag
    POLL = 1024
    # what `Search.run` returns
    DONE = 0
    TIMED_OUT = 1
    STOPPED = 2
    NO_MEMORY = 3
    NODE_LIMIT = 4


# -- the heuristic's messages ----------------------------------------------------------------

cdef inline int64_t _at(const int32_t* var, int64_t lo, int64_t hi, const int32_t* card,
                        const int32_t* x, int64_t v, int64_t base, int64_t* sv) noexcept nogil:
    """``base`` plus the row-major offset of x in a table over ``var[lo:hi]`` with v's term
    left out (v's stride in ``sv``, 0 when v is not in the scope)."""
    cdef int64_t k, st = 1
    sv[0] = 0
    for k in range(hi - 1, lo - 1, -1):
        if var[k] == v:
            sv[0] = st
        else:
            base += x[var[k]] * st
        st *= card[var[k]]
    return base


def heuristic(dict t, double temperature):
    """The max-product mini-bucket messages in score units, in place on ``t["fwd"]`` (``t``:
    a `fwcore._wmb.Tree`'s arrays, right after `fwcore._wmb.forward` on the tables divided
    by ``temperature``).

    That pass sent cluster c the message λ_c - top_c, top_c its largest entry (computed from
    its children's messages as sent), and added top_c to the bound; a root's whole value
    went to the bound. Here top_c is recovered from one row (at an entry of λ_c - top_c
    equal to 0, the row over c's variable: its factors, its reparameterisation, its
    children's messages, reduced by w_c log-sum-exp), a[c] = top_c + Σ_{children d} a[d]
    (a root's value plus its children's), and every message becomes
    temperature · (λ_c - top_c + a[c]): the message computed from the children's messages
    in full; a root's single entry temperature · a[c]. Returns the sum of the roots'
    entries (the bound, without the tree's constant)."""
    cdef const int32_t[::1] card = t["card"], c_var = t["c_var"], c_scope = t["c_scope"]
    cdef const int32_t[::1] c_parent = t["c_parent"], ch_list = t["ch_list"]
    cdef const int32_t[::1] own_list = t["own_list"], f_var = t["f_var"]
    cdef const int64_t[::1] c_start = t["c_start"], ch_start = t["ch_start"]
    cdef const int64_t[::1] own_start = t["own_start"], f_start = t["f_start"]
    cdef const int64_t[::1] f_off = t["f_off"], msg_off = t["msg_off"], rep_off = t["rep_off"]
    cdef const double[::1] f_tab = t["f_tab"], weight = t["weight"], repar = t["repar"]
    cdef double[::1] fwd = t["fwd"]
    cdef const int32_t[::1] fixed = t["fixed"]
    cdef int64_t nc = c_var.shape[0], n = card.shape[0], c, v, K, j, best, r, a, k, f
    cdef int64_t base, sv, u, xv
    cdef double top, s, total = 0.0
    cdef double[::1] add = np.zeros(max(nc, 1))
    cdef int32_t[::1] x = np.zeros(max(n, 1), dtype=np.int32)
    cdef double[::1] row = np.empty(max(int(np.max(card, initial=1)), 1))
    with nogil:
        for u in range(n):        # a fixed variable at its state throughout
            x[u] = fixed[u] if fixed[u] >= 0 else 0
        for c in range(nc):       # top_c (a root: its value)
            v = c_var[c]
            K = card[v]
            if c_parent[c] >= 0:
                best = msg_off[c]
                for j in range(msg_off[c], msg_off[c + 1]):
                    if fwd[j] > fwd[best]:
                        best = j
                if fwd[best] == -INFINITY:  # an empty message: the bound is -inf already
                    add[c] = -INFINITY
                    continue
                r = best - msg_off[c]   # its variables' states (C order: the last fastest)
                for k in range(c_start[c + 1] - 2, c_start[c] - 1, -1):
                    u = c_scope[k]
                    x[u] = <int32_t> (r % card[u])
                    r = r // card[u]
            for xv in range(K):
                row[xv] = repar[rep_off[c] + xv]
            for k in range(own_start[c], own_start[c + 1]):
                f = own_list[k]
                base = _at(&f_var[0], f_start[f], f_start[f + 1], &card[0], &x[0], v,
                           f_off[f], &sv)
                for xv in range(K):
                    row[xv] += f_tab[base + xv * sv]
            for k in range(ch_start[c], ch_start[c + 1]):
                a = ch_list[k]
                base = _at(&c_scope[0], c_start[a], c_start[a + 1] - 1, &card[0], &x[0], v,
                           msg_off[a], &sv)
                for xv in range(K):
                    row[xv] += fwd[base + xv * sv]
            top = -INFINITY
            for xv in range(K):
                if row[xv] > top:
                    top = row[xv]
            if top > -INFINITY and weight[c] > 0.0:
                s = 0.0
                for xv in range(K):
                    s += exp((row[xv] - top) / weight[c])
                top += weight[c] * log(s)
            add[c] = top
        for c in range(nc):       # children first: the messages in full
            for k in range(ch_start[c], ch_start[c + 1]):
                add[c] += add[ch_list[k]]
            if c_parent[c] >= 0:
                for j in range(msg_off[c], msg_off[c + 1]):
                    fwd[j] = temperature * (fwd[j] + add[c])
            else:
                fwd[msg_off[c]] = temperature * add[c]
                total += fwd[msg_off[c]]
    return total


# -- evaluation of functions at an assignment ------------------------------------------------

cdef struct Tables:
    const int32_t* card
    const int64_t* f_start
    const int32_t* f_var
    const int64_t* f_stride
    const int64_t* f_off
    const double* val     # the originals' tables
    const double* msg     # the messages'

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
          const int64_t[::1] f_stride, const int64_t[::1] f_off, const double[::1] val, int64_t m,
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
        const int64_t[::1] f_stride, const int64_t[::1] f_off, const double[::1] val,
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
    double constant              # the originals in no bucket (their variables fixed)
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
                h[c * cv + a] += s.tb.msg[i + a * vs]
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
    """The AND node over the pseudo-tree's roots: their values summed, with the originals
    outside every bucket (``constant``), when the total beats the incumbent (x then holds
    the solution), else -inf (the incumbent is optimal)."""
    cdef int64_t k, j, t
    cdef double val = s.constant, rest, vc
    for k in range(s.n_roots):
        hr[k] = 0.0
        for t in range(s.cross_start[s.roots[k]], s.cross_start[s.roots[k] + 1]):
            hr[k] += s.tb.msg[s.tb.f_off[s.cross_fun[t]]]
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
    mini-bucket tree; `run`, `lns` and `greedy` search the tables set by `tables`."""

    cdef S s
    cdef object keep      # the arrays the struct points into
    cdef object tabs      # and the tables (`tables`)
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

    def tables(self, const double[::1] val, const double[::1] msg, double constant):
        """Search the originals' tables ``val`` and the messages' ``msg`` from now on (kept
        alive with the object), forgetting the cached values; ``constant``: the value of
        the originals in no bucket (the variables of each fixed in x throughout)."""
        self.s.tb.val = &val[0]
        self.s.tb.msg = &msg[0]
        self.s.constant = constant
        self.tabs = (val, msg)
        self.cache_flag[:] = 0

    cdef int _ready(self) except -1:
        if self.tabs is None:
            raise ValueError("Search: give the tables first (Search.tables(val, msg))")
        return 0

    def greedy(self, const int64_t[::1] preorder, int32_t[::1] x):
        """The greedy labelling of the heuristic: variables parents first, each at the
        state of largest f (`_values`), in place on x."""
        cdef int64_t k, v, a, best, width = 1, nc
        for k in range(self.s.n):
            width = max(width, self.s.tb.card[k])
        cdef double[::1] work = np.empty(width * (self.s.n + 3) + 1)
        cdef double* cost = &work[0]
        cdef double* f
        self._ready()
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

    def lns(self, int32_t[::1] x, int32_t[::1] xbest, double best,
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
        self._ready()
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

    def run(self, int32_t[::1] x, int32_t[::1] xbest, double best,
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
        self._ready()
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
