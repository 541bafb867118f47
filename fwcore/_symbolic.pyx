# cython: language_level=3
"""Symbolic elimination kernels over a model's CSR adjacency (``adj_start``, ``adj_var``):
the elimination game along an order (separators and clique table sizes, stopping at the
first table over a cap) and the row-sorted adjacency the bandwidth order is computed on.
Their twins are in tests/test_symbolic.py."""
import numpy as np

from libc.stdint cimport INT64_MAX, int64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy


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


cdef inline int64_t _sat_mul(int64_t a, int64_t b) noexcept nogil:
    """a * b for a, b >= 1, saturated at INT64_MAX."""
    if a > INT64_MAX // b:
        return INT64_MAX
    return a * b


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


cdef bint _load(int v, const long long[::1] adj_start, const int[::1] adj_var, int** nb,
               int64_t* nb_len, int64_t* nb_cap) noexcept nogil:
    """Copy v's neighbours from the CSR into its own list; False when out of memory."""
    cdef int64_t d = adj_start[v + 1] - adj_start[v]
    if not _reserve(&nb[v], &nb_cap[v], d):
        return False
    if d:
        memcpy(nb[v], &adj_var[adj_start[v]], d * sizeof(int))
    nb_len[v] = d
    return True


def eliminate(const long long[::1] adj_start, const int[::1] adj_var, const int[::1] card,
              const long long[::1] order, long long cap):
    """The elimination game along the permutation ``order``: eliminating v makes its
    current neighbours S_v a clique. Returns ``(sep_start, sep_var, sizes)`` for the
    steps taken: S of the k-th variable eliminated is ``sep_var[sep_start[k]:sep_start[k +
    1]]`` in elimination order, and its clique table card_v * prod(card of S) has
    ``sizes[k]`` entries (saturated at 2**63 - 1). Stops after the first table over ``cap``
    entries, before eliminating its variable. Neighbour lists are copied from the CSR on
    first use, so an early stop touches only the variables it reached."""
    cdef Py_ssize_t n = card.shape[0], k, i, j, m, steps = 0
    cdef int v, a, x
    cdef int64_t size, length, filled = 0, out_cap = 0, scratch_cap = 0, stamp = 0
    cdef int** nb = <int**>malloc(n * sizeof(int*)) if n else NULL
    cdef int64_t* nb_len = <int64_t*>malloc(n * sizeof(int64_t)) if n else NULL
    cdef int64_t* nb_cap = <int64_t*>malloc(n * sizeof(int64_t)) if n else NULL
    cdef int* out = NULL
    cdef int64_t* keys = NULL
    cdef int* sep = NULL
    cdef bint failed = n > 0 and (nb == NULL or nb_len == NULL or nb_cap == NULL)
    cdef long long[::1] pos = np.empty(n, dtype=np.int64)
    cdef long long[::1] mark = np.full(n, -1, dtype=np.int64)
    cdef long long[::1] sep_start = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] sizes = np.zeros(n, dtype=np.int64)
    cdef int[::1] sep_var
    with nogil:
        if not failed:
            for k in range(n):
                nb[k] = NULL
                nb_cap[k] = 0
                nb_len[k] = -1  # not yet copied from the CSR
                pos[order[k]] = k
        for k in range(0 if failed else n):
            v = <int>order[k]
            if nb_len[v] < 0 and not _load(v, adj_start, adj_var, nb, nb_len, nb_cap):
                failed = True
                break
            m = nb_len[v]
            if m > scratch_cap:
                scratch_cap = m
                free(keys)
                free(sep)
                keys = <int64_t*>malloc(m * sizeof(int64_t))
                sep = <int*>malloc(m * sizeof(int))
                if keys == NULL or sep == NULL:
                    failed = True
                    break
            # S_v in elimination order, and the table size
            size = card[v]
            for i in range(m):
                keys[i] = pos[nb[v][i]]
                size = _sat_mul(size, card[nb[v][i]])
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
            if size > cap:
                break
            # eliminate v: each neighbour a loses v and gains S_v \ {a}
            memcpy(sep, nb[v], m * sizeof(int))
            for i in range(m):
                a = sep[i]
                if nb_len[a] < 0 and not _load(a, adj_start, adj_var, nb, nb_len, nb_cap):
                    failed = True
                    break
                stamp += 1
                length = nb_len[a]
                j = 0
                while j < length:  # drop v, mark the others
                    if nb[a][j] == v:
                        length -= 1
                        nb[a][j] = nb[a][length]
                    else:
                        mark[nb[a][j]] = stamp
                        j += 1
                if not _reserve(&nb[a], &nb_cap[a], length + m):
                    failed = True
                    break
                for j in range(m):
                    x = sep[j]
                    if x != a and mark[x] != stamp:
                        nb[a][length] = x
                        length += 1
                nb_len[a] = length
            if failed:
                break
            free(nb[v])
            nb[v] = NULL
            nb_len[v] = 0
        if nb != NULL and nb_len != NULL and nb_cap != NULL:  # lists were initialised
            for k in range(n):
                free(nb[k])
        free(nb)
        free(nb_len)
        free(nb_cap)
        free(keys)
        free(sep)
    if failed:
        free(out)
        raise MemoryError("symbolic elimination ran out of memory")
    sep_var = np.empty(filled, dtype=np.int32)
    if filled:
        memcpy(&sep_var[0], out, filled * sizeof(int))
    free(out)
    return (np.asarray(sep_start[:steps + 1]), np.asarray(sep_var),
            np.asarray(sizes[:steps]))
