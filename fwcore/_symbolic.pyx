# cython: language_level=3
"""Symbolic elimination kernels over a model's CSR adjacency (``adj_start``, ``adj_var``),
for `fwcore.elimination.EliminationPlan`: the elimination game along an order (separators and
clique table sizes, stopping at the first table over a cap), greedy weighted min-fill,
and the reverse Cuthill-McKee order on the row-sorted adjacency. All run without the GIL;
their Python twins are in tests/test_symbolic.py. The elimination game and min-fill poll a
deadline ``stop_at`` (`time.monotonic` seconds; inf: none) and, in the main thread, Python's
signal handlers every POLL units of work (a few milliseconds): Ctrl-C raises
KeyboardInterrupt there (a 300x300 grid's elimination ran 15 s without a check)."""
import threading

import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport INT64_MAX, int64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy

from ._clock cimport monotonic


cdef extern from "Python.h":
    int PyErr_CheckSignals()  # declared without ``except``: its exception stays pending

cdef enum:
    # units of work (about a memory access each) between two polls
    POLL = 1 << 20
    # why `eliminate` stopped before the end: a running total over ``total_cap``, the
    # work ``budget`` spent, the deadline passed (a table over ``cap`` is told by its size)
    OVER_TOTAL = 1
    OVER_BUDGET = 2
    TIME_UP = 3


cdef struct Poll:
    int64_t next
    double stop_at
    bint main_thread
    bint signalled


cdef bint _poll(Poll* q, int64_t work) noexcept nogil:
    """True when the work count ``work`` has passed the next poll and either the deadline
    has passed or (in the main thread) a signal handler raised (``signalled``, its
    exception left pending)."""
    if work < q.next:
        return False
    q.next = work + POLL
    if monotonic() >= q.stop_at:
        return True
    if q.main_thread:
        with gil:
            q.signalled = PyErr_CheckSignals() != 0
        return q.signalled
    return False


cdef void _poll_init(Poll* q, int64_t work, double stop_at):
    q.next, q.stop_at, q.signalled = work, stop_at, False
    q.main_thread = threading.current_thread() is threading.main_thread()


cdef int _raise_pending() except -1:
    """Raise the exception a signal handler left pending (`_poll`)."""
    return -1


cdef int _cmp_int(const void* pa, const void* pb) noexcept nogil:
    cdef int a = (<const int*>pa)[0], b = (<const int*>pb)[0]
    return (a > b) - (a < b)


cdef int _cmp_i64(const void* pa, const void* pb) noexcept nogil:
    cdef int64_t a = (<const int64_t*>pa)[0], b = (<const int64_t*>pb)[0]
    return (a > b) - (a < b)


def sorted_neighbours(const long long[::1] adj_start, const int[::1] adj_var):
    """``adj_var`` with every variable's neighbours in increasing order (``adj_start``
    stays the row pointer): the canonical CSR of the graph."""
    cdef Py_ssize_t n = adj_start.shape[0] - 1, u, p, q
    cdef int[::1] out = np.empty(adj_var.shape[0], dtype=np.int32)
    cdef int w
    with nogil:
        if adj_var.shape[0]:
            memcpy(&out[0], &adj_var[0], adj_var.shape[0] * sizeof(int))
        for u in range(n):
            if adj_start[u + 1] - adj_start[u] > 16:
                qsort(&out[adj_start[u]], adj_start[u + 1] - adj_start[u], sizeof(int),
                      _cmp_int)
                continue
            for p in range(adj_start[u] + 1, adj_start[u + 1]):  # insertion sort
                w = out[p]
                q = p
                while q > adj_start[u] and out[q - 1] > w:
                    out[q] = out[q - 1]
                    q -= 1
                out[q] = w
    return np.asarray(out)


def cuthill_mckee(const long long[::1] adj_start, const int[::1] adj_var,
                  const int[::1] degree, const long long[::1] by_degree):
    """The Cuthill-McKee order (reversed, scipy.sparse.csgraph.reverse_cuthill_mckee's) on
    a canonical CSR without self loops: a breadth-first search from each component's
    first unvisited variable in ``by_degree`` (scipy's ``np.argsort(degree)``), each
    variable's unvisited neighbours appended in CSR order, then stably sorted by degree."""
    cdef Py_ssize_t n = degree.shape[0], zz, ii, jj, kk, ll, level_start, level_end, first
    cdef Py_ssize_t count = 0
    cdef long long[::1] order = np.zeros(n, dtype=np.int64)
    cdef long long[::1] keys = np.empty(n, dtype=np.int64)
    cdef long long[::1] block = np.empty(n, dtype=np.int64)
    cdef unsigned char[::1] seen = np.zeros(n, dtype=np.uint8)
    cdef long long i, j, seed, moved, low = (1LL << 32) - 1
    cdef int t
    with nogil:
        for zz in range(n):
            seed = by_degree[zz]
            if seen[seed]:
                continue
            order[count] = seed
            count += 1
            seen[seed] = 1
            level_start, level_end = count - 1, count
            while level_start < level_end:
                for ii in range(level_start, level_end):
                    i = order[ii]
                    first = count
                    for jj in range(adj_start[i], adj_start[i + 1]):
                        j = adj_var[jj]
                        if not seen[j]:
                            seen[j] = 1
                            order[count] = j
                            count += 1
                    if count - first > 32:  # (degree, place) keys: a stable sort
                        for kk in range(first, count):
                            keys[kk - first] = (<long long>degree[order[kk]] << 32) | (kk - first)
                            block[kk - first] = order[kk]
                        qsort(&keys[0], count - first, sizeof(int64_t), _cmp_i64)
                        for kk in range(first, count):
                            order[kk] = block[keys[kk - first] & low]
                        continue
                    for kk in range(first + 1, count):  # insertion sort
                        moved = order[kk]
                        t = degree[moved]
                        ll = kk - 1
                        while ll >= first and degree[order[ll]] > t:
                            order[ll + 1] = order[ll]
                            ll -= 1
                        order[ll + 1] = moved
                level_start, level_end = level_end, count
            if count == n:
                break
    return np.ascontiguousarray(np.asarray(order)[::-1])


def bfs_forest(const long long[::1] adj_start, const int[::1] adj_var,
               const long long[::1] roots):
    """A breadth-first search of every component from its first variable in ``roots`` (a
    permutation of the variables): each variable's component (numbered in the order
    their roots come) and its depth (edges from the root), int64[n] each."""
    cdef Py_ssize_t n = adj_start.shape[0] - 1, zz, head, tail = 0, p
    cdef long long[::1] label = np.full(n, -1, dtype=np.int64)
    cdef long long[::1] depth = np.zeros(n, dtype=np.int64)
    cdef long long[::1] queue = np.empty(n, dtype=np.int64)
    cdef long long i, j, root, components = 0
    with nogil:
        for zz in range(n):
            root = roots[zz]
            if label[root] >= 0:
                continue
            label[root] = components
            queue[tail] = root
            head = tail
            tail += 1
            while head < tail:
                i = queue[head]
                head += 1
                for p in range(adj_start[i], adj_start[i + 1]):
                    j = adj_var[p]
                    if label[j] < 0:
                        label[j] = components
                        depth[j] = depth[i] + 1
                        queue[tail] = j
                        tail += 1
            components += 1
    return np.asarray(label), np.asarray(depth)


cdef inline int64_t _sat_mul(int64_t a, int64_t b) noexcept nogil:
    """a * b for a, b >= 0, saturated at INT64_MAX."""
    if b and a > INT64_MAX // b:
        return INT64_MAX
    return a * b


cdef inline int64_t _sat_add(int64_t a, int64_t b) noexcept nogil:
    """a + b for a, b >= 0, saturated at INT64_MAX."""
    if a > INT64_MAX - b:
        return INT64_MAX
    return a + b


cdef inline bint _reserve(int** buf, int64_t* capacity, int64_t need) noexcept nogil:
    """Grow ``buf`` (doubling) to hold ``need`` ints; False when out of memory."""
    cdef int64_t c = capacity[0]
    cdef int* grown
    if need <= c:
        return True
    while c < need:
        c = 2 * c if c else 8
    grown = <int*>realloc(buf[0], c * sizeof(int))
    if grown == NULL:
        return False
    buf[0], capacity[0] = grown, c
    return True


cdef struct Adjacency:
    # the graph under elimination: a list per variable, copied from the CSR (start, var)
    # on first use (length -1 until then); ``mark``/``stamp`` make set tests O(1); ``sep``
    # holds the neighbours of the variable being eliminated
    const long long* start
    const int* var
    int** nb
    int64_t* length
    int64_t* capacity
    int64_t* mark
    int64_t stamp
    int* sep
    int64_t sep_capacity


cdef bint _adj_init(Adjacency* g, Py_ssize_t n, const long long[::1] adj_start,
                    const int[::1] adj_var) noexcept nogil:
    """False when out of memory (free with `_adj_free` either way)."""
    cdef Py_ssize_t v
    g.start = &adj_start[0]
    g.var = &adj_var[0] if adj_var.shape[0] else NULL
    g.nb = <int**>malloc(n * sizeof(int*)) if n else NULL
    g.length = <int64_t*>malloc(n * sizeof(int64_t)) if n else NULL
    g.capacity = <int64_t*>malloc(n * sizeof(int64_t)) if n else NULL
    g.mark = <int64_t*>malloc(n * sizeof(int64_t)) if n else NULL
    g.stamp, g.sep, g.sep_capacity = 0, NULL, 0
    if n and (g.nb == NULL or g.length == NULL or g.capacity == NULL or g.mark == NULL):
        free(g.nb)
        g.nb = NULL
        return False
    for v in range(n):
        g.nb[v], g.length[v], g.capacity[v], g.mark[v] = NULL, -1, 0, 0
    return True


cdef void _adj_free(Adjacency* g, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t v
    if g.nb != NULL:
        for v in range(n):
            free(g.nb[v])
    free(g.nb)
    free(g.length)
    free(g.capacity)
    free(g.mark)
    free(g.sep)


cdef inline bint _adj_load(Adjacency* g, int v) noexcept nogil:
    """Make v's list current (copy it from the CSR on first use); False when out of
    memory."""
    cdef int64_t d
    if g.length[v] >= 0:
        return True
    d = g.start[v + 1] - g.start[v]
    if not _reserve(&g.nb[v], &g.capacity[v], d):
        return False
    if d:
        memcpy(g.nb[v], &g.var[g.start[v]], d * sizeof(int))
    g.length[v] = d
    return True


cdef bint _adj_eliminate(Adjacency* g, int v) noexcept nogil:
    """Eliminate v: each neighbour a loses v and gains the rest of N(v); N(v) is left in
    ``g.sep`` (its length is ``g.length[v]``). False when out of memory."""
    cdef int64_t m = g.length[v], i, j, length
    cdef int a, x
    if not _reserve(&g.sep, &g.sep_capacity, m):
        return False
    if m:
        memcpy(g.sep, g.nb[v], m * sizeof(int))
    for i in range(m):
        a = g.sep[i]
        if not _adj_load(g, a):
            return False
        g.stamp += 1
        length = g.length[a]
        j = 0
        while j < length:  # drop v, mark the others
            if g.nb[a][j] == v:
                length -= 1
                g.nb[a][j] = g.nb[a][length]
            else:
                g.mark[g.nb[a][j]] = g.stamp
                j += 1
        if not _reserve(&g.nb[a], &g.capacity[a], length + m):
            return False
        for j in range(m):
            x = g.sep[j]
            if x != a and g.mark[x] != g.stamp:
                g.nb[a][length] = x
                length += 1
        g.length[a] = length
    free(g.nb[v])
    g.nb[v] = NULL
    g.capacity[v] = 0
    return True


def eliminate(const long long[::1] adj_start, const int[::1] adj_var, const int[::1] card,
              const long long[::1] order, long long cap, double total_cap=INFINITY,
              long long budget=INT64_MAX, double stop_at=INFINITY):
    """The elimination game along the permutation ``order``: eliminating v makes its
    current neighbours S_v a clique. Returns ``(sep_start, sep_var, sizes, stopped)`` for
    the steps taken: S of the k-th variable eliminated is ``sep_var[sep_start[k]:sep_start[k
    + 1]]`` in elimination order, and its clique table card_v * prod(card of S) has
    ``sizes[k]`` entries (saturated at 2**63 - 1). Stops after the first table over ``cap``
    entries, before eliminating its variable (``stopped`` 0, as at the end); with
    ``stopped`` OVER_TOTAL once the tables' total (in floats) exceeds ``total_cap``,
    OVER_BUDGET once the work (deg^2 + deg a step) exceeds ``budget``, TIME_UP when
    ``stop_at`` passes. Neighbour lists are copied from the CSR on first use, so an early
    stop touches only the variables it reached."""
    cdef Py_ssize_t n = card.shape[0], k, i, m, steps = 0
    cdef int v, stopped = 0
    cdef int64_t size, filled = 0, out_cap = 0, keys_cap = 0, work = 0
    cdef double total = 0.0, exact
    cdef Adjacency g
    cdef Poll q
    cdef int* out = NULL
    cdef int64_t* keys = NULL
    cdef int64_t* grown
    cdef bint failed = False
    cdef long long[::1] pos = np.empty(n, dtype=np.int64)
    cdef long long[::1] sep_start = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] sizes = np.zeros(n, dtype=np.int64)
    cdef int[::1] sep_var
    _poll_init(&q, 0, stop_at)
    with nogil:
        failed = not _adj_init(&g, n, adj_start, adj_var)
        for k in range(0 if failed else n):
            pos[order[k]] = k
        for k in range(0 if failed else n):
            if _poll(&q, work):
                stopped = TIME_UP
                break
            v = <int>order[k]
            if not _adj_load(&g, v):
                failed = True
                break
            m = g.length[v]
            if m > keys_cap:
                grown = <int64_t*>realloc(keys, m * sizeof(int64_t))
                if grown == NULL:
                    failed = True
                    break
                keys, keys_cap = grown, m
            # S_v in elimination order, and the table size
            size = card[v]
            exact = card[v]
            for i in range(m):
                keys[i] = pos[g.nb[v][i]]
                size = _sat_mul(size, card[g.nb[v][i]])
                exact *= card[g.nb[v][i]]
            qsort(keys, m, sizeof(int64_t), _cmp_i64)
            if not _reserve(&out, &out_cap, filled + m):
                failed = True
                break
            for i in range(m):
                out[filled + i] = <int>order[keys[i]]
            filled += m
            sep_start[k + 1] = filled
            sizes[k] = size
            steps = k + 1
            total += exact
            work += m * m + m + 1
            if size > cap:
                break
            if total > total_cap or work > budget:
                stopped = OVER_TOTAL if total > total_cap else OVER_BUDGET
                break
            if not _adj_eliminate(&g, v):
                failed = True
                break
        _adj_free(&g, n)
        free(keys)
    if failed or q.signalled:
        free(out)
        if q.signalled:
            _raise_pending()
        raise MemoryError("symbolic elimination ran out of memory")
    sep_var = np.empty(filled, dtype=np.int32)
    if filled:
        memcpy(&sep_var[0], out, filled * sizeof(int))
    free(out)
    return (np.asarray(sep_start[:steps + 1]), np.asarray(sep_var),
            np.asarray(sizes[:steps]), stopped)


cdef struct Entry:
    # a min-fill queue entry of variable v, ordered as the tuple (fill, size, rank[v],
    # version, exact)
    int64_t fill
    int64_t size
    int64_t rank
    int64_t v
    int64_t version
    int64_t exact


cdef inline bint _before(const Entry* a, const Entry* b) noexcept nogil:
    if a.fill != b.fill:
        return a.fill < b.fill
    if a.size != b.size:
        return a.size < b.size
    if a.rank != b.rank:
        return a.rank < b.rank
    if a.version != b.version:
        return a.version < b.version
    return a.exact < b.exact


cdef struct Heap:
    Entry* items
    int64_t size
    int64_t capacity


cdef bint _push(Heap* h, Entry e) noexcept nogil:
    """Push ``e`` (sift up); False when out of memory."""
    cdef int64_t i, parent, c
    cdef Entry* grown
    if h.size == h.capacity:
        c = 2 * h.capacity if h.capacity else 1024
        grown = <Entry*>realloc(h.items, c * sizeof(Entry))
        if grown == NULL:
            return False
        h.items, h.capacity = grown, c
    i = h.size
    h.size += 1
    while i > 0:
        parent = (i - 1) // 2
        if not _before(&e, &h.items[parent]):
            break
        h.items[i] = h.items[parent]
        i = parent
    h.items[i] = e
    return True


cdef void _sift_down(Heap* h, int64_t i, Entry e) noexcept nogil:
    """Put ``e`` at ``i`` of the heap (whose subtrees below ``i`` are heaps) and sift it
    down."""
    cdef int64_t child
    while True:
        child = 2 * i + 1
        if child >= h.size:
            break
        if child + 1 < h.size and _before(&h.items[child + 1], &h.items[child]):
            child += 1
        if not _before(&h.items[child], &e):
            break
        h.items[i] = h.items[child]
        i = child
    h.items[i] = e


cdef Entry _pop(Heap* h) noexcept nogil:
    """Remove and return the first entry of a non-empty heap (sift down)."""
    cdef Entry top = h.items[0]
    h.size -= 1
    if h.size:
        _sift_down(h, 0, h.items[h.size])
    return top


cdef void _drop_stale(Heap* h, const unsigned char* done,
                      const long long* version) noexcept nogil:
    """Drop the entries `min_fill` would skip (of an eliminated variable, or of an older
    version) and heapify the rest: the order of the entries popped is unchanged, and the
    heap holds at most one entry a variable."""
    cdef int64_t i, kept = 0
    for i in range(h.size):
        if not done[h.items[i].v] and h.items[i].version == version[h.items[i].v]:
            h.items[kept] = h.items[i]
            kept += 1
    h.size = kept
    for i in range(kept // 2 - 1, -1, -1):
        _sift_down(h, i, h.items[i])


cdef Entry _key(Adjacency* g, const int* card, const long long* rank, int v,
               int64_t* work) noexcept nogil:
    """The exact queue entry of v: its weighted fill (the sum of card[a] * card[b] over
    the non-adjacent pairs a, b of its neighbours) and clique table size; adds its work
    (deg * (deg + 8))."""
    cdef int64_t m = g.length[v], i, j, fill = 0, row, size = card[v]
    cdef int a, b
    cdef Entry e
    work[0] += m * (m + 8)
    for i in range(m):
        a = g.nb[v][i]
        size = _sat_mul(size, card[a])
        g.stamp += 1
        for j in range(g.length[a]):
            g.mark[g.nb[a][j]] = g.stamp
        row = 0
        for j in range(i + 1, m):
            b = g.nb[v][j]
            if g.mark[b] != g.stamp:
                row = _sat_add(row, _sat_mul(card[a], card[b]))
        fill = _sat_add(fill, row)
    e.fill, e.size, e.rank, e.v, e.version, e.exact = fill, size, rank[v], v, 0, 1
    return e


def min_fill(const long long[::1] adj_start, const int[::1] adj_var, const int[::1] card,
             const long long[::1] first, long long cap, long long budget, long long work,
             const long long[::1] rank, double stop_at=INFINITY):
    """Greedy weighted min-fill, lazily recounted (see `fwcore.elimination._min_fill_order`, which
    documents the rule, the stops and the work count; ``work`` is the count so far), ties
    broken by ``rank`` (a permutation: min-fill on the graph relabelled by it), stopping
    when ``stop_at`` passes. Fills and sizes saturate at 2**63 - 1. Returns ``(order,
    work)``."""
    cdef Py_ssize_t n = card.shape[0], k, i, j
    cdef int v, a, u
    cdef int64_t m, steps = 0, total, n_touched, lb, w = work
    cdef Adjacency g
    cdef Heap h
    cdef Entry e, lazy
    cdef bint failed = False, stopped = False
    cdef Poll q
    cdef long long[::1] order = np.empty(n, dtype=np.int64)
    cdef long long[::1] fill_lb = np.zeros(n, dtype=np.int64)
    cdef long long[::1] version = np.zeros(n, dtype=np.int64)
    cdef long long[::1] lost = np.zeros(n, dtype=np.int64)
    cdef long long[::1] touched = np.full(n, -1, dtype=np.int64)
    cdef unsigned char[::1] done = np.zeros(n, dtype=np.uint8)
    h.items, h.size, h.capacity = NULL, 0, 0
    _poll_init(&q, w, stop_at)
    with nogil:
        failed = not _adj_init(&g, n, adj_start, adj_var)
        for v in range(0 if failed else n):
            if not _adj_load(&g, v):
                failed = True
                break
        for k in range(0 if failed else first.shape[0]):
            v = <int>first[k]
            e.size = card[v]
            for i in range(g.length[v]):
                e.size = _sat_mul(e.size, card[g.nb[v][i]])
            if e.size > cap:
                stopped = True
                break
            done[v] = 1
            order[steps] = v
            steps += 1
            w += 16 * g.length[v] * g.length[v]
            if not _adj_eliminate(&g, v):
                failed = True
                break
        for v in range(0 if failed or stopped else n):
            if not done[v]:
                e = _key(&g, &card[0], &rank[0], v, &w)
                fill_lb[v] = e.fill
                if not _push(&h, e):
                    failed = True
                    break
        while not failed and not stopped and h.size and w <= budget:
            if _poll(&q, w):
                break
            e = _pop(&h)
            v = <int>e.v
            if done[v] or e.version != version[v]:
                continue
            if not e.exact:
                e = _key(&g, &card[0], &rank[0], v, &w)
                fill_lb[v] = e.fill
                e.version = version[v]
                failed = not _push(&h, e)
                continue
            if e.size > cap:
                break
            done[v] = 1
            order[steps] = v
            steps += 1
            m = g.length[v]
            for i in range(m):  # the weight of the pairs (v, x) each neighbour loses
                a = g.nb[v][i]
                total = 0
                for j in range(g.length[a]):
                    total = _sat_add(total, card[g.nb[a][j]])
                lost[a] = _sat_mul(card[v], total - card[v])
            if not _adj_eliminate(&g, v):
                failed = True
                break
            # fill counts change only around the new edges: S_v and its neighbours
            n_touched = 0
            for i in range(m):
                a = g.sep[i]
                for j in range(-1, g.length[a]):
                    u = a if j < 0 else g.nb[a][j]
                    if touched[u] == steps:
                        continue
                    touched[u] = steps
                    n_touched += 1
                    lb = fill_lb[u] - e.fill
                    fill_lb[u] = lb - lost[u] if lb > lost[u] else 0
                    version[u] += 1
                    lazy.fill, lazy.size, lazy.rank, lazy.v, lazy.version, lazy.exact = (
                        fill_lb[u], 0, rank[u], u, version[u], 0)
                    if not _push(&h, lazy):
                        failed = True
                        break
                if failed:
                    break
            for i in range(m):
                lost[g.sep[i]] = 0
            w += 16 * n_touched
            if h.size > 2 * (n - steps) + 1024:  # mostly stale: a 100x100 grid's reached 6 MB
                _drop_stale(&h, &done[0], &version[0])
        _adj_free(&g, n)
        free(h.items)
    if q.signalled:
        _raise_pending()
    if failed:
        raise MemoryError("min-fill ran out of memory")
    return np.asarray(order[:steps]).copy(), w
