# cython: language_level=3
"""Hot loops of the approximate MAP oracles (fwcore.oracles.approximate).

- `qpbo_build` + `qpbo_maxflow`: the doubled graph of QPBO (Kolmogorov & Rother 2007,
  Sec. 2-3) and its maximum flow by Boykov-Kolmogorov (Boykov & Kolmogorov 2004), in two
  stages as in Kolmogorov's QPBO code; `bk_maxflow`: the same max-flow on any graph;
- `message_sweeps` + `decode`: one forward and one backward pass of sequential max-sum
  message passing in the order 0..n-1, which is TRW-S (Kolmogorov 2006, Fig. 3) with node
  weights gamma_s = 1/max(n_in(s), n_out(s)) and max-product BP with gamma = 1;
- `cover_enumerate`: exact MAP by enumerating the states of a binary vertex cover in Gray
  code order, the other variables (an independent set) maximised one by one.

Arguments follow `fwcore._kernels`: the arrays of a `PairwiseMRF` (card int32[n], edges
int32[E, 2], node_off/edge_off int64, adj_start int64[n+1], adj_var/adj_edge int32[2E],
adj_first int8[2E]). Callers validate; kernels trust their inputs.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs
from ._clock cimport monotonic
from libc.stdint cimport int8_t

from ._graph cimport Graph

cnp.import_array()


# -- QPBO graph --------------------------------------------------------------------------

def qpbo_build(const double[::1] energy, const int[:, ::1] edges, const int[::1] arc_start,
               int[::1] head, int[::1] sister, double[::1] r_cap, double[::1] tr_cap,
               int[::1] sub_end, int[::1] back):
    """Fill the doubled graph of the binary energy ``energy`` (flat layout, all finite).

    Nodes p = i and p̄ = n + i (p̄ stands for 1 - x_i; source side S means state 0). Each
    edge term is written E = const + (unary shifts) + w (1-x_i) x_j when submodular
    (A + D <= B + C) or w (1-x_i)(1-x_j) otherwise, w >= 0, and enters the graph twice,
    once per copy (K&R 2007, eq. 4-5): arcs p_i->p_j and p̄_j->p̄_i, or p_i->p̄_j and
    p_j->p̄_i. Unary u_i = E_i(1) - E_i(0): tr_cap[p] = u_i, tr_cap[p̄] = -u_i (positive:
    source arc, negative: sink arc). The arcs of p_i sit in slots arc_start[i]:
    arc_start[i+1] (one per incident edge), submodular ones first, up to ``sub_end[i]``;
    the arcs of p̄_i in the same slots shifted by 2E (for a submodular arc in slot k, the
    arc in slot 2E + k is the reverse of its mirror image). ``back`` (n) is a work array.
    Returns const: the minimum cut C of the doubled graph gives the roof-dual (LP) lower
    bound const + C / 2 on min E.
    """
    cdef Py_ssize_t n = tr_cap.shape[0] // 2, n_edges = edges.shape[0], m2 = 2 * n_edges
    cdef Py_ssize_t i, j, e, ki, kj, base
    cdef double c = 0.0, a, b, cc, d, w
    with nogil:
        for i in range(n):
            tr_cap[i] = energy[2 * i + 1] - energy[2 * i]
            c += energy[2 * i]
            sub_end[i] = arc_start[i]
            back[i] = arc_start[i + 1]
        for e in range(n_edges):
            i = edges[e, 0]
            j = edges[e, 1]
            base = 2 * n + 4 * e
            a = energy[base]
            b = energy[base + 1]
            cc = energy[base + 2]
            d = energy[base + 3]
            tr_cap[j] += d - cc
            if a + d <= b + cc:      # E = a + (cc-a) x_i + (d-cc) x_j + w (1-x_i) x_j
                w = (b + cc) - (a + d)
                tr_cap[i] += cc - a
                c += a
                ki = sub_end[i]
                kj = sub_end[j]
                sub_end[i] += 1
                sub_end[j] += 1
                head[ki] = <int>j
                sister[ki] = <int>kj
                head[kj] = <int>i
                sister[kj] = <int>ki
                head[m2 + kj] = <int>(n + i)
                sister[m2 + kj] = <int>(m2 + ki)
                head[m2 + ki] = <int>(n + j)
                sister[m2 + ki] = <int>(m2 + kj)
                r_cap[ki] = w
                r_cap[kj] = 0.0
                r_cap[m2 + kj] = w
                r_cap[m2 + ki] = 0.0
            else:                    # E = b+cc-d + (d-b) x_i + (d-cc) x_j + w (1-x_i)(1-x_j)
                w = (a + d) - (b + cc)
                tr_cap[i] += d - b
                c += b + cc - d
                back[i] -= 1
                back[j] -= 1
                ki = back[i]
                kj = back[j]
                head[ki] = <int>(n + j)
                sister[ki] = <int>(m2 + kj)
                head[m2 + kj] = <int>i
                sister[m2 + kj] = <int>ki
                head[kj] = <int>(n + i)
                sister[kj] = <int>(m2 + ki)
                head[m2 + ki] = <int>j
                sister[m2 + ki] = <int>kj
                r_cap[ki] = w
                r_cap[m2 + kj] = 0.0
                r_cap[kj] = w
                r_cap[m2 + ki] = 0.0
        for i in range(n):
            if tr_cap[i] < 0.0:      # u x = u + |u| (1 - x)
                c += tr_cap[i]
            tr_cap[n + i] = -tr_cap[i]
    return c


# -- Boykov-Kolmogorov max-flow ------------------------------------------------------------

cdef enum:
    FREE = -1       # parent of a node in no search tree
    TERMINAL = -2   # parent of a tree root (linked to its terminal)
    ORPHAN = -3     # parent of a node cut from its tree, awaiting adoption
    INF_DIST = 1000000000


cdef struct BK:
    const int* first   # the arcs leaving v are first[v] .. last[v] - 1
    const int* last
    const int* head
    const int* sister
    double* r_cap
    double* tr_cap
    int* parent        # arc from v to its parent in its tree, or FREE/TERMINAL/ORPHAN
    int8_t* is_sink
    long long* ts
    int* dist
    int8_t* active
    int* queue
    int* orphans
    int cap            # ring size of queue and orphans: > number of nodes
    int qh, qt, oh, ot
    long long time


cdef inline int _next(BK* g, int k) noexcept nogil:
    """The ring position after k (queue and orphans)."""
    return k + 1 if k + 1 < g.cap else 0


cdef inline void _set_active(BK* g, int v) noexcept nogil:
    if not g.active[v]:
        g.active[v] = 1
        g.queue[g.qt] = v
        g.qt = _next(g, g.qt)


cdef inline void _orphan_front(BK* g, int v) noexcept nogil:
    g.parent[v] = ORPHAN
    g.oh = (g.oh if g.oh else g.cap) - 1
    g.orphans[g.oh] = v


cdef inline void _orphan_rear(BK* g, int v) noexcept nogil:
    g.parent[v] = ORPHAN
    g.orphans[g.ot] = v
    g.ot = _next(g, g.ot)


cdef double _augment(BK* g, int middle) noexcept nogil:
    """Push the bottleneck along s -> ... -> tail(middle) -> head(middle) -> ... -> t;
    nodes whose tree arc saturates become orphans."""
    cdef int v, a
    cdef double b = g.r_cap[middle]
    v = g.head[g.sister[middle]]
    while g.parent[v] != TERMINAL:
        a = g.parent[v]
        if g.r_cap[g.sister[a]] < b:
            b = g.r_cap[g.sister[a]]
        v = g.head[a]
    if g.tr_cap[v] < b:
        b = g.tr_cap[v]
    v = g.head[middle]
    while g.parent[v] != TERMINAL:
        a = g.parent[v]
        if g.r_cap[a] < b:
            b = g.r_cap[a]
        v = g.head[a]
    if -g.tr_cap[v] < b:
        b = -g.tr_cap[v]
    g.r_cap[g.sister[middle]] += b
    g.r_cap[middle] -= b
    v = g.head[g.sister[middle]]
    while g.parent[v] != TERMINAL:
        a = g.parent[v]
        g.r_cap[a] += b
        g.r_cap[g.sister[a]] -= b
        if g.r_cap[g.sister[a]] == 0.0:
            _orphan_front(g, v)
        v = g.head[a]
    g.tr_cap[v] -= b
    if g.tr_cap[v] == 0.0:
        _orphan_front(g, v)
    v = g.head[middle]
    while g.parent[v] != TERMINAL:
        a = g.parent[v]
        g.r_cap[g.sister[a]] += b
        g.r_cap[a] -= b
        if g.r_cap[a] == 0.0:
            _orphan_front(g, v)
        v = g.head[a]
    g.tr_cap[v] += b
    if g.tr_cap[v] == 0.0:
        _orphan_front(g, v)
    return b


cdef void _adopt(BK* g, int v) noexcept nogil:
    """Find orphan v a new parent in its own tree whose path reaches the terminal (the
    shortest by the distance marks), or free it and orphan its children."""
    cdef int sink = g.is_sink[v], a0, a, j, d, d_min = INF_DIST, a0_min = FREE
    cdef double cap
    for a0 in range(g.first[v], g.last[v]):
        cap = g.r_cap[a0] if sink else g.r_cap[g.sister[a0]]
        j = g.head[a0]
        if cap == 0.0 or g.is_sink[j] != sink or g.parent[j] == FREE:
            continue
        d = 0
        while True:                     # walk to the root, or to a node marked this round
            if g.ts[j] == g.time:
                d += g.dist[j]
                break
            a = g.parent[j]
            d += 1
            if a == TERMINAL:
                g.ts[j] = g.time
                g.dist[j] = 1
                break
            if a == ORPHAN:
                d = INF_DIST
                break
            j = g.head[a]
        if d < INF_DIST:
            if d < d_min:
                a0_min = a0
                d_min = d
            j = g.head[a0]
            while g.ts[j] != g.time:    # mark the path with its distances
                g.ts[j] = g.time
                g.dist[j] = d
                d -= 1
                j = g.head[g.parent[j]]
    g.parent[v] = a0_min
    if a0_min != FREE:
        g.ts[v] = g.time
        g.dist[v] = d_min + 1
        return
    for a0 in range(g.first[v], g.last[v]):
        j = g.head[a0]
        a = g.parent[j]
        if g.is_sink[j] != sink or a == FREE:
            continue
        cap = g.r_cap[a0] if sink else g.r_cap[g.sister[a0]]
        if cap > 0.0:
            _set_active(g, j)
        if a != TERMINAL and a != ORPHAN and g.head[a] == v:
            _orphan_rear(g, j)


cdef void _bk_start(BK* g, int n_nodes) noexcept nogil:
    """Empty queues; every node with a terminal arc is an active tree root, the rest free."""
    cdef int v
    g.qh = g.qt = g.oh = g.ot = 0
    g.time = 0
    for v in range(n_nodes):
        g.active[v] = 0
        g.ts[v] = 0
        g.dist[v] = 1
        g.is_sink[v] = g.tr_cap[v] < 0.0
        if g.tr_cap[v] != 0.0:
            g.parent[v] = TERMINAL
            _set_active(g, v)
        else:
            g.parent[v] = FREE


cdef double _bk_run(BK* g) noexcept nogil:
    """Grow, augment, adopt until no active node is left; returns the flow pushed. The
    trees and active queue may come from an earlier run on a graph that gained arcs,
    provided the tails of the new arcs are active."""
    cdef int v, j, a, found, cur = -1
    cdef double flow = 0.0
    while True:
        v = cur
        if v >= 0:
            g.active[v] = 0
            if g.parent[v] == FREE:
                v = -1
        if v < 0:
            while g.qh != g.qt:
                j = g.queue[g.qh]
                g.qh = _next(g, g.qh)
                g.active[j] = 0
                if g.parent[j] != FREE:
                    v = j
                    break
            if v < 0:
                break
        found = -1                  # grow v's tree by one layer or find a path
        for a in range(g.first[v], g.last[v]):
            j = g.head[a]
            if not g.is_sink[v]:
                if g.r_cap[a] == 0.0:
                    continue
            elif g.r_cap[g.sister[a]] == 0.0:
                continue
            if g.parent[j] == FREE:
                g.is_sink[j] = g.is_sink[v]
                g.parent[j] = g.sister[a]
                g.ts[j] = g.ts[v]
                g.dist[j] = g.dist[v] + 1
                _set_active(g, j)
            elif g.is_sink[j] != g.is_sink[v]:
                found = g.sister[a] if g.is_sink[v] else a
                break
            elif g.ts[j] <= g.ts[v] and g.dist[j] > g.dist[v]:
                g.parent[j] = g.sister[a]
                g.ts[j] = g.ts[v]
                g.dist[j] = g.dist[v] + 1
        g.time += 1
        if found >= 0:
            g.active[v] = 1         # keep growing from v next round
            cur = v
            flow += _augment(g, found)
            while g.oh != g.ot:
                j = g.orphans[g.oh]
                g.oh = _next(g, g.oh)
                _adopt(g, j)
        else:
            cur = -1
    return flow


cdef void _bk_setup(BK* g, const int* first, const int* last, const int[::1] head,
                    const int[::1] sister, double[::1] r_cap, double[::1] tr_cap,
                    int[::1] parent, int8_t[::1] is_sink, long long[::1] ts, int[::1] dist,
                    int8_t[::1] active, int[::1] queue, int[::1] orphans) noexcept:
    g.first = first
    g.last = last
    g.head = &head[0] if head.shape[0] else NULL
    g.sister = &sister[0] if sister.shape[0] else NULL
    g.r_cap = &r_cap[0] if r_cap.shape[0] else NULL
    g.tr_cap = &tr_cap[0]
    g.parent = &parent[0]
    g.is_sink = &is_sink[0]
    g.ts = &ts[0]
    g.dist = &dist[0]
    g.active = &active[0]
    g.queue = &queue[0]
    g.orphans = &orphans[0]
    g.cap = queue.shape[0]


cdef inline void _read_source_side(BK* g, int n_nodes, int8_t[::1] in_source) noexcept nogil:
    cdef int v
    for v in range(n_nodes):
        in_source[v] = g.parent[v] != FREE and not g.is_sink[v]


def bk_maxflow(const int[::1] arc_start, const int[::1] head, const int[::1] sister,
               double[::1] r_cap, double[::1] tr_cap, int8_t[::1] in_source,
               int[::1] parent, int8_t[::1] is_sink, long long[::1] ts, int[::1] dist,
               int8_t[::1] active, int[::1] queue, int[::1] orphans):
    """Maximum s-t flow by Boykov & Kolmogorov (2004): two search trees grown from the
    terminals, augmentation along the path where they meet, orphan adoption.

    Arcs leave node v in slots arc_start[v]:arc_start[v+1]; ``sister[a]`` is the reverse
    arc; ``r_cap`` residual capacities and ``tr_cap`` (source capacity minus sink capacity
    per node) are updated in place. parent/is_sink/ts/dist/active (n) and queue/orphans
    (n + 1) are work arrays. Sets in_source[v] = 1 for the nodes reachable from the source
    in the final residual graph (the source side of a minimum cut); returns the flow.
    """
    cdef BK g
    cdef int n = tr_cap.shape[0]
    cdef double flow
    if n == 0:
        return 0.0
    _bk_setup(&g, &arc_start[0], &arc_start[1], head, sister, r_cap, tr_cap, parent,
              is_sink, ts, dist, active, queue, orphans)
    with nogil:
        _bk_start(&g, n)
        flow = _bk_run(&g)
        _read_source_side(&g, n, in_source)
    return flow


def qpbo_maxflow(const int[::1] arc_start, const int[::1] sub_end, const int[::1] head,
                 const int[::1] sister, double[::1] r_cap, double[::1] tr_cap,
                 int8_t[::1] in_source, int[::1] parent, int8_t[::1] is_sink,
                 long long[::1] ts, int[::1] dist, int8_t[::1] active, int[::1] queue,
                 int[::1] orphans):
    """Maximum flow of the doubled graph of `qpbo_build` in two stages (the scheme of
    Kolmogorov's QPBO code): (1) max-flow on the first copy with its submodular arcs only;
    (2) mirror flow, residuals and search trees into the second copy (the two copies
    carry the same flow, and a source tree in one is a sink tree in the other), then
    continue the max-flow on the whole graph, the tails of the non-submodular arcs made
    active. Without non-submodular edges stage 2 stops at once.

    Work arrays as in `bk_maxflow` for 2n nodes. Sets in_source (2n) to the set reachable
    from the source in the final residual graph; returns the flow.
    """
    cdef BK g
    cdef int n = tr_cap.shape[0] // 2, m2, v, k, a
    cdef double flow
    if n == 0:
        return 0.0
    m2 = arc_start[n]
    _bk_setup(&g, &arc_start[0], &sub_end[0], head, sister, r_cap, tr_cap, parent,
              is_sink, ts, dist, active, queue, orphans)
    with nogil:
        _bk_start(&g, n)
        flow = 2.0 * _bk_run(&g)
        for v in range(n):
            for k in range(arc_start[v], sub_end[v]):
                r_cap[m2 + sister[k]] = r_cap[k]
            tr_cap[n + v] = -tr_cap[v]
            a = parent[v]
            parent[n + v] = a if a == FREE or a == TERMINAL else m2 + a
            is_sink[n + v] = not is_sink[v]
            ts[n + v] = ts[v]
            dist[n + v] = dist[v]
            active[n + v] = 0
        for v in range(n):
            if sub_end[v] < arc_start[v + 1]:
                _set_active(&g, v)
                _set_active(&g, n + v)
        g.last = &arc_start[1]
        flow += _bk_run(&g)
        _read_source_side(&g, 2 * n, in_source)
    return flow


# -- sequential message passing: TRW-S and max-product -------------------------------------

cdef inline double _send(const double[::1] theta, const int[::1] card,
                         const long long[::1] edge_off, const long long[::1] msg_off,
                         double[::1] msg, const double[::1] hat, double gamma, double damping,
                         int s, int t, Py_ssize_t e, bint s_first, double[::1] buf,
                         double* change) noexcept nogil:
    """M_st(x_t) <- max_xs [gamma hat_s(x_s) - M_ts(x_s) + θ_st(x_s, x_t)] (Kolmogorov 2006,
    Fig. 3, max-sum form), shifted so its max is 0, blended with the old message when
    damping > 0. States with hat_s = -inf are dead (no finite completion) and stay -inf.
    Returns the shift (-inf when every x_t is dead)."""
    cdef int cs = card[s], ct = card[t], xs, xt
    cdef Py_ssize_t out, inc, tab = edge_off[e]
    cdef double best, val, top = -INFINITY, old, new
    if s_first:                        # s = i: M_ij at msg_off[e], M_ji after it
        out = msg_off[e]
        inc = msg_off[e] + ct
    else:
        out = msg_off[e] + cs
        inc = msg_off[e]
    for xs in range(cs):
        buf[xs] = gamma * hat[xs] - msg[inc + xs] if hat[xs] > -INFINITY else -INFINITY
    for xt in range(ct):
        best = -INFINITY
        for xs in range(cs):
            if s_first:
                val = buf[xs] + theta[tab + xs * ct + xt]
            else:
                val = buf[xs] + theta[tab + xt * cs + xs]
            if val > best:
                best = val
        buf[cs + xt] = best
        if best > top:
            top = best
    for xt in range(ct):
        new = buf[cs + xt] - top if top > -INFINITY else -INFINITY
        old = msg[out + xt]
        if damping > 0.0 and new > -INFINITY and old > -INFINITY:
            new = damping * old + (1.0 - damping) * new
        if new > -INFINITY and old > -INFINITY:
            if fabs(new - old) > change[0]:
                change[0] = fabs(new - old)
        elif (new > -INFINITY) != (old > -INFINITY):
            change[0] = INFINITY
        msg[out + xt] = new
    return top


cdef inline double _belief(const double[::1] theta, const int[::1] card,
                           const long long[::1] node_off, const long long[::1] adj_start,
                           const int[::1] adj_var, const int[::1] adj_edge,
                           const int8_t[::1] adj_first, const long long[::1] msg_off,
                           const double[::1] msg, int s, double[::1] hat) noexcept nogil:
    """hat_s = θ_s + Σ of the messages into s; returns its max."""
    cdef Py_ssize_t slot, e, base
    cdef int x, t, cs = card[s]
    cdef double top = -INFINITY
    for x in range(cs):
        hat[x] = theta[node_off[s] + x]
    for slot in range(adj_start[s], adj_start[s + 1]):
        e = adj_edge[slot]
        t = adj_var[slot]
        base = msg_off[e] + card[t] if adj_first[slot] else msg_off[e]
        for x in range(cs):
            hat[x] += msg[base + x]
    for x in range(cs):
        if hat[x] > top:
            top = hat[x]
    return top


def message_sweeps(const double[::1] theta, Graph graph, const long long[::1] msg_off,
                   double[::1] msg, const double[::1] gamma, const double[::1] node_weight,
                   double damping, double[::1] hat, double[::1] buf):
    """One forward pass (s = 0..n-1, messages to later neighbours) and one backward pass
    (s = n-1..0, messages to earlier neighbours) of sequential max-sum message passing.

    ``msg`` holds, for edge e = (i, j), M_ij (card[j]) then M_ji (card[i]) from msg_off[e].
    A node s sends with weight gamma[s] (TRW-S: 1/max(n_in, n_out); max-product: 1).
    ``hat`` and ``buf`` are work arrays of sizes max card and 2 max card.

    Returns (bound, change). bound is valid for TRW-S weights: after the backward pass,
    for every x, <θ, μ(x)> = Σ_s hat_s(x_s) + Σ_st [θ_st - M_ts - M_st](x_s, x_t) and each
    edge term plus gamma_t hat_t(x_t) of its later end t is at most the shift of the
    backward message M_ts, so max score <= Σ_st shift_ts + Σ_s node_weight[s] max hat_s
    with node_weight[s] = 1 - n_in(s) gamma[s] >= 0. change is the largest change of a
    message entry (inf when an entry became or stopped being -inf).
    """
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef int n = card.shape[0], s, t
    cdef Py_ssize_t slot
    cdef double bound = 0.0, top, change = 0.0
    with nogil:
        for s in range(n):
            _belief(theta, card, node_off, adj_start, adj_var, adj_edge, adj_first,
                    msg_off, msg, s, hat)
            for slot in range(adj_start[s], adj_start[s + 1]):
                t = adj_var[slot]
                if t > s:
                    _send(theta, card, edge_off, msg_off, msg, hat, gamma[s], damping,
                          s, t, adj_edge[slot], adj_first[slot], buf, &change)
        for s in range(n - 1, -1, -1):
            top = _belief(theta, card, node_off, adj_start, adj_var, adj_edge, adj_first,
                          msg_off, msg, s, hat)
            if node_weight[s] > 0.0:
                bound += node_weight[s] * top
            for slot in range(adj_start[s], adj_start[s + 1]):
                t = adj_var[slot]
                if t < s:
                    bound += _send(theta, card, edge_off, msg_off, msg, hat, gamma[s],
                                   damping, s, t, adj_edge[slot], adj_first[slot], buf,
                                   &change)
    return bound, change


def decode(const double[::1] theta, Graph graph, const long long[::1] msg_off,
           const double[::1] msg, bint sequential, int[::1] x, double[::1] hat):
    """x_s = argmax of θ_s + Σ_{t>s} M_ts + (sequential: Σ_{t<s} θ_ts(x_t, ·), the
    labelling of TRW-S, Kolmogorov 2006 Sec. 3.4; otherwise Σ_{t<s} M_ts, the
    max-marginal decoding of max-product), for s = 0..n-1; first maximiser on ties."""
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef int n = card.shape[0], s, t, xs, cs, best_x
    cdef Py_ssize_t slot, e, base
    cdef double best
    with nogil:
        for s in range(n):
            cs = card[s]
            for xs in range(cs):
                hat[xs] = theta[node_off[s] + xs]
            for slot in range(adj_start[s], adj_start[s + 1]):
                t = adj_var[slot]
                e = adj_edge[slot]
                if t < s and sequential:          # s is the edge's second end
                    base = edge_off[e] + x[t] * cs
                    for xs in range(cs):
                        hat[xs] += theta[base + xs]
                else:
                    base = msg_off[e] + card[t] if adj_first[slot] else msg_off[e]
                    for xs in range(cs):
                        hat[xs] += msg[base + xs]
            best = -INFINITY
            best_x = 0
            for xs in range(cs):
                if hat[xs] > best:
                    best = hat[xs]
                    best_x = xs
            x[s] = best_x


# -- exact MAP over a binary vertex cover -------------------------------------------------

cdef inline double _pair(const double[::1] theta, const int[::1] card,
                         const long long[::1] edge_off, Py_ssize_t e, bint first, int s,
                         int u, int a, int b) noexcept nogil:
    """θ_e(x_s = a, x_u = b) read from the slot of s (``first``: s is the edge's i)."""
    if first:
        return theta[edge_off[e] + a * card[u] + b]
    return theta[edge_off[e] + b * card[s] + a]


cdef double _cover_sync(const double[::1] theta, Graph graph, const int[::1] cover,
                        const int8_t[::1] in_cover, int[::1] x, double[::1] field) noexcept nogil:
    """From scratch for the cover's states in x: field (node layout) of each free variable
    r, θ_r + Σ_s θ_sr(x_s, ·) over its cover neighbours; returns the cover's own score
    (its node terms and the edges inside it)."""
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef Py_ssize_t n = card.shape[0], k, slot
    cdef int r, s, u, a
    cdef double base = 0.0
    for r in range(n):
        if not in_cover[r]:
            for a in range(card[r]):
                field[node_off[r] + a] = theta[node_off[r] + a]
    for k in range(cover.shape[0]):
        s = cover[k]
        base += theta[node_off[s] + x[s]]
        for slot in range(adj_start[s], adj_start[s + 1]):
            u = adj_var[slot]
            if in_cover[u]:
                if u > s:                # each edge inside the cover once
                    base += _pair(theta, card, edge_off, adj_edge[slot], adj_first[slot],
                                  s, u, x[s], x[u])
            else:
                for a in range(card[u]):
                    field[node_off[u] + a] += _pair(theta, card, edge_off, adj_edge[slot],
                                                    adj_first[slot], s, u, x[s], a)
    return base


cdef inline double _best(const double[::1] field, Py_ssize_t off, int c) noexcept nogil:
    cdef double top = field[off]
    cdef int a
    for a in range(1, c):
        if field[off + a] > top:
            top = field[off + a]
    return top


cdef double _free_sum(const int[::1] card, const long long[::1] node_off, const int[::1] free,
                      const double[::1] field) noexcept nogil:
    """Σ over the free variables of their best field entry."""
    cdef Py_ssize_t i
    cdef double total = 0.0
    for i in range(free.shape[0]):
        total += _best(field, node_off[free[i]], card[free[i]])
    return total


def cover_enumerate(const double[::1] theta, Graph graph, const int[::1] cover,
                    const int8_t[::1] in_cover, const int[::1] free, int[::1] x,
                    double time_limit, const long long[::1] diff_start, double[::1] field,
                    double[::1] diff):
    """Exact MAP (all theta finite) when ``cover`` (k binary variables) is a vertex cover:
    the other variables (``free``) are independent given the cover's states, so
    max score = max over the 2^k cover states of [cover score + Σ_r max_a field_r(a)].
    Enumerates the cover states in Gray code order, flipping one variable a step: its
    neighbours' fields change by a precomputed difference (``diff``, work array; the
    entries of cover[j]'s slots start at diff_start[j], card[neighbour] each), the sum of the free maxima by theirs, the cover score
    by the flipped terms: O(degree · card) a step. The incremental sums are recomputed
    from scratch every 4096 steps. time_limit (seconds, <= 0: none) is checked every
    65536 steps. Writes the best labelling found into x and returns (its score as summed,
    whether the enumeration finished).
    """
    cdef const int[::1] card = graph.card, adj_var = graph.adj_var, adj_edge = graph.adj_edge
    cdef const long long[::1] node_off = graph.node_off, edge_off = graph.edge_off
    cdef const long long[::1] adj_start = graph.adj_start
    cdef const int8_t[::1] adj_first = graph.adj_first
    cdef int k = cover.shape[0], j, s, u, a, old, new, r, c
    cdef Py_ssize_t slot, i, d, off
    cdef unsigned long long t, steps = 1ULL << k, best_code = 0, code = 0
    cdef double base, free_sum, total, best = -INFINITY, before, stop
    cdef bint finished = True
    stop = monotonic() + time_limit if time_limit > 0.0 else INFINITY
    with nogil:
        d = 0                                # diff: θ_su(1, ·) − θ_su(0, ·), slot by slot
        for j in range(k):
            s = cover[j]
            for slot in range(adj_start[s], adj_start[s + 1]):
                u = adj_var[slot]
                for a in range(card[u]):
                    diff[d + a] = (_pair(theta, card, edge_off, adj_edge[slot],
                                         adj_first[slot], s, u, 1, a)
                                   - _pair(theta, card, edge_off, adj_edge[slot],
                                           adj_first[slot], s, u, 0, a))
                d += card[u]
        for j in range(k):
            x[cover[j]] = 0
        base = _cover_sync(theta, graph, cover, in_cover, x, field)
        free_sum = _free_sum(card, node_off, free, field)
        t = 0
        while True:
            total = base + free_sum
            if total > best:
                best = total
                best_code = code
            t += 1
            if t >= steps:
                break
            if t & 65535 == 0 and monotonic() > stop:
                finished = False
                break
            j = 0                           # the bit that changes: trailing zeros of t
            while not (t >> j) & 1:
                j += 1
            code ^= 1ULL << j
            s = cover[j]
            old = x[s]
            new = 1 - old
            x[s] = new
            if t & 4095 == 0:
                base = _cover_sync(theta, graph, cover, in_cover, x, field)
                free_sum = _free_sum(card, node_off, free, field)
                continue
            base += theta[node_off[s] + new] - theta[node_off[s] + old]
            d = diff_start[j]
            for slot in range(adj_start[s], adj_start[s + 1]):
                u = adj_var[slot]
                c = card[u]
                if in_cover[u]:
                    if new:
                        base += diff[d + x[u]]
                    else:
                        base -= diff[d + x[u]]
                else:
                    off = node_off[u]
                    before = _best(field, off, c)
                    for a in range(c):
                        if new:
                            field[off + a] += diff[d + a]
                        else:
                            field[off + a] -= diff[d + a]
                    free_sum += _best(field, off, c) - before
                d += c
        for j in range(k):                  # the best cover states, then the free argmax
            x[cover[j]] = (best_code >> j) & 1
        _cover_sync(theta, graph, cover, in_cover, x, field)
        for i in range(free.shape[0]):
            r = free[i]
            x[r] = 0
            for a in range(1, card[r]):
                if field[node_off[r] + a] > field[node_off[r] + x[r]]:
                    x[r] = a
    return best, finished
