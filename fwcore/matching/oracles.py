"""Maximum-weight perfect matchings: the linear oracles of the bipartite and general
matching polytopes (MLE-Struct Sec. 4.1; DESIGN.md "MAP oracles").

These are not pairwise-MRF oracles: they take a weight matrix and return a matching.

- `max_weight_bipartite_matching(W)`: Hungarian method (`scipy.optimize.linear_sum_assignment`);
  ``-inf`` marks forbidden pairs.
- `max_weight_perfect_matching(W)`: Edmonds' weighted blossom algorithm, O(n^3), on the
  complete graph with symmetric finite weights (primal-dual method of Galil 1986, in the
  array formulation of J. van Rantwijk's mwmatching: vertices 0..n-1, blossoms n..2n-1).
"""
import numpy as np

__all__ = ["max_weight_bipartite_matching", "max_weight_perfect_matching"]


def _check_weights(W, name="W"):
    W = np.asarray(W)
    if W.dtype.kind not in "iuf" or W.dtype.kind == "b":
        raise TypeError(f"{name} must be a numeric matrix; got dtype {W.dtype}")
    W = W.astype(np.float64)
    if W.ndim != 2:
        raise ValueError(f"{name} must be a 2-D weight matrix; got shape {W.shape}")
    if np.isnan(W).any() or np.isposinf(W).any():
        raise ValueError(f"{name} contains NaN or +inf; weights must be finite (or -inf to "
                         "forbid a pair)")
    return W


def max_weight_bipartite_matching(W):
    """Perfect matching of rows to columns maximising Σ_i W[i, mate[i]].

    W: (n, n) weights; ``-inf`` forbids a pair. A rectangular (n, m) W with n <= m matches
    every row to a distinct column. Returns ``(mate, weight)``: int64 array of the column
    of each row, and the total weight. Raises ValueError when no such matching exists.
    """
    from scipy.optimize import linear_sum_assignment
    W = _check_weights(W)
    n, m = W.shape
    if n > m:
        raise ValueError(f"W has more rows than columns ({n} > {m}); every row cannot be "
                         "matched: pass W.T and read the matching by columns")
    try:
        rows, cols = linear_sum_assignment(W, maximize=True)
    except ValueError as err:           # scipy: "cost matrix is infeasible"
        raise ValueError("W has no perfect matching avoiding its -inf entries") from err
    mate = np.empty(n, dtype=np.int64)
    mate[rows] = cols
    return mate, float(W[rows, cols].sum())


def max_weight_perfect_matching(W):
    """Perfect matching of the complete graph on n vertices (n even) maximising the sum of
    W[i, mate[i]] over its n/2 edges.

    W: symmetric (n, n) finite weights (the diagonal is ignored). Returns ``(mate, weight)``:
    int64 array with mate[mate[i]] = i, and the total weight of the matched edges.
    """
    W = _check_weights(W)
    n = W.shape[0]
    if W.shape != (n, n):
        raise ValueError(f"W must be square; got shape {W.shape}")
    if n % 2:
        raise ValueError(f"a perfect matching needs an even number of vertices; W is {n} x {n}")
    if not np.isfinite(W).all():
        raise ValueError("W must be finite: the general matching works on the complete graph "
                         "(use a large negative weight to discourage a pair)")
    if not np.array_equal(W, W.T):
        raise ValueError("W must be symmetric: W[i, j] is the weight of the edge {i, j}")
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0.0
    # every perfect matching has n/2 edges, so a shift leaves the argmax unchanged; positive
    # weights keep the dual variables of the max-cardinality search well scaled
    off = ~np.eye(n, dtype=bool)
    shifted = W - W[off].min() + 1.0
    mate = np.array(_Blossom(shifted).solve(), dtype=np.int64)
    return mate, float(W[np.arange(n), mate].sum() / 2)


class _Blossom:
    """Edmonds' weighted blossom algorithm with maximum cardinality on a dense complete
    graph. Labels: 0 free, 1 S (outer), 2 T (inner), 5 S marked during scan_blossom."""

    def __init__(self, W):
        n = W.shape[0]
        self.n = n
        self.w = W.tolist()
        maxw = float(W.max())
        self.mate = [-1] * n
        self.label = [0] * (2 * n)
        self.labeledge = [None] * (2 * n)
        self.inblossom = list(range(n))
        self.parent = [-1] * (2 * n)
        self.childs = [None] * (2 * n)
        self.edges = [None] * (2 * n)
        self.base = list(range(n)) + [-1] * n
        self.bestedge = [None] * (2 * n)
        self.bestedges = [None] * (2 * n)
        self.unused = list(range(n, 2 * n))
        self.dual = [maxw] * n + [0.0] * n
        self.allowed = set()
        self.queue = []

    def slack(self, v, w):
        return self.dual[v] + self.dual[w] - 2.0 * self.w[v][w]

    def leaves(self, b):
        if b < self.n:
            yield b
        else:
            for t in self.childs[b]:
                yield from self.leaves(t)

    def assign_label(self, w, t, v):
        """Label the top blossom of w with t, reached through edge (v, w)."""
        b = self.inblossom[w]
        self.label[w] = self.label[b] = t
        self.labeledge[w] = self.labeledge[b] = None if v is None else (v, w)
        self.bestedge[w] = self.bestedge[b] = None
        if t == 1:
            self.queue.extend(self.leaves(b))
        else:
            base = self.base[b]
            self.assign_label(self.mate[base], 1, base)

    def scan_blossom(self, v, w):
        """Trace back from S-vertices v and w; the base of a new blossom, or -1 when the
        paths reach two different roots (an augmenting path)."""
        path, base = [], -1
        while v != -1:
            b = self.inblossom[v]
            if self.label[b] & 4:
                base = self.base[b]
                break
            path.append(b)
            self.label[b] = 5
            if self.labeledge[b] is None:
                v = -1
            else:
                v = self.labeledge[b][0]
                b = self.inblossom[v]
                v = self.labeledge[b][0]
            if w != -1:
                v, w = w, v
        for b in path:
            self.label[b] = 1
        return base

    def add_blossom(self, base, v, w):
        """Shrink the odd cycle through edge (v, w) with the given base into a blossom."""
        inb = self.inblossom
        bb, bv, bw = inb[base], inb[v], inb[w]
        b = self.unused.pop()
        self.base[b], self.parent[b], self.parent[bb] = base, -1, b
        path, edgs = [], [(v, w)]
        while bv != bb:
            self.parent[bv] = b
            path.append(bv)
            edgs.append(self.labeledge[bv])
            v = self.labeledge[bv][0]
            bv = inb[v]
        path.append(bb)
        path.reverse()
        edgs.reverse()
        while bw != bb:
            self.parent[bw] = b
            path.append(bw)
            edgs.append((self.labeledge[bw][1], self.labeledge[bw][0]))
            w = self.labeledge[bw][0]
            bw = inb[w]
        self.childs[b], self.edges[b] = path, edgs
        self.label[b] = 1
        self.labeledge[b] = self.labeledge[bb]
        self.dual[b] = 0.0
        for u in self.leaves(b):
            if self.label[inb[u]] == 2:
                self.queue.append(u)        # former T-vertices become S-vertices
            inb[u] = b
        # least-slack edges from the new blossom to every other S-blossom
        best_to = {}
        for sub in path:
            if sub >= self.n and self.bestedges[sub] is not None:
                cand, self.bestedges[sub] = self.bestedges[sub], None
            else:
                cand = [(u, x) for u in self.leaves(sub) for x in range(self.n) if x != u]
            for i, j in cand:
                if inb[j] == b:
                    i, j = j, i
                bj = inb[j]
                if bj != b and self.label[bj] == 1 and (
                        bj not in best_to or self.slack(i, j) < self.slack(*best_to[bj])):
                    best_to[bj] = (i, j)
            self.bestedge[sub] = None
        self.bestedges[b] = list(best_to.values())
        self.bestedge[b] = min(self.bestedges[b], key=lambda e: self.slack(*e), default=None)

    def expand_blossom(self, b, endstage):
        """Undo blossom b (at the end of a stage, or when its dual hits zero as a T-blossom)."""
        inb = self.inblossom
        for s in self.childs[b]:
            self.parent[s] = -1
            if s < self.n:
                inb[s] = s
            elif endstage and self.dual[s] == 0:
                self.expand_blossom(s, endstage)
            else:
                for u in self.leaves(s):
                    inb[u] = s
        if not endstage and self.label[b] == 2:
            # relabel the even-length path of sub-blossoms from the entry child to the base
            childs, edges = self.childs[b], self.edges[b]
            entry = inb[self.labeledge[b][1]]
            j = childs.index(entry)
            if j & 1:
                j -= len(childs)
                jstep = 1
            else:
                jstep = -1
            v, w = self.labeledge[b]
            while j != 0:
                if jstep == 1:
                    p, q = edges[j]
                else:
                    q, p = edges[j - 1]
                self.label[w] = self.label[q] = 0
                self.assign_label(w, 2, v)
                self.allowed.update([(p, q), (q, p)])
                j += jstep
                if jstep == 1:
                    v, w = edges[j]
                else:
                    w, v = edges[j - 1]
                self.allowed.update([(v, w), (w, v)])
                j += jstep
            bw = childs[j]
            self.label[w] = self.label[bw] = 2
            self.labeledge[w] = self.labeledge[bw] = (v, w)
            self.bestedge[bw] = None
            j += jstep
            while childs[j] != entry:
                bv = childs[j]
                if self.label[bv] == 1:
                    j += jstep
                    continue
                u = next((u for u in self.leaves(bv) if self.label[u]), None)
                if u is not None:
                    self.label[u] = 0
                    self.label[self.mate[self.base[bv]]] = 0
                    self.assign_label(u, 2, self.labeledge[u][0])
                j += jstep
        self.label[b], self.labeledge[b], self.bestedge[b] = 0, None, None
        self.parent[b], self.base[b], self.dual[b] = -1, -1, 0.0
        self.childs[b] = self.edges[b] = self.bestedges[b] = None
        self.unused.append(b)

    def augment_blossom(self, b, v):
        """Swap matched/unmatched edges inside b so that vertex v becomes its base."""
        t = v
        while self.parent[t] != b:
            t = self.parent[t]
        if t >= self.n:
            self.augment_blossom(t, v)
        childs, edges = self.childs[b], self.edges[b]
        i = j = childs.index(t)
        if i & 1:
            j -= len(childs)
            jstep = 1
        else:
            jstep = -1
        while j != 0:
            j += jstep
            t = childs[j]
            if jstep == 1:
                w, x = edges[j]
            else:
                x, w = edges[j - 1]
            if t >= self.n:
                self.augment_blossom(t, w)
            j += jstep
            t = childs[j]
            if t >= self.n:
                self.augment_blossom(t, x)
            self.mate[w], self.mate[x] = x, w
        self.childs[b] = childs[i:] + childs[:i]
        self.edges[b] = edges[i:] + edges[:i]
        self.base[b] = self.base[self.childs[b][0]]

    def augment_matching(self, v, w):
        """Augment along the path through edge (v, w) between two S-vertices."""
        for s, j in ((v, w), (w, v)):
            while True:
                bs = self.inblossom[s]
                if bs >= self.n:
                    self.augment_blossom(bs, s)
                self.mate[s] = j
                if self.labeledge[bs] is None:
                    break
                t = self.labeledge[bs][0]
                bt = self.inblossom[t]
                s, j = self.labeledge[bt]
                if bt >= self.n:
                    self.augment_blossom(bt, j)
                self.mate[j] = s

    def solve(self):
        n, label, inb = self.n, self.label, self.inblossom
        for _ in range(n // 2):
            label[:] = [0] * (2 * n)
            self.labeledge[:] = [None] * (2 * n)
            self.bestedge[:] = [None] * (2 * n)
            self.bestedges[n:] = [None] * n
            self.allowed.clear()
            self.queue = []
            for v in range(n):
                if self.mate[v] == -1 and label[inb[v]] == 0:
                    self.assign_label(v, 1, None)
            augmented = False
            while not augmented:
                while self.queue and not augmented:
                    v = self.queue.pop()
                    for w in range(n):
                        bv, bw = inb[v], inb[w]
                        if w == v or bv == bw:
                            continue
                        if (v, w) not in self.allowed:
                            kslack = self.slack(v, w)
                            if kslack <= 0:
                                self.allowed.update([(v, w), (w, v)])
                        if (v, w) in self.allowed:
                            if label[bw] == 0:
                                self.assign_label(w, 2, v)
                            elif label[bw] == 1:
                                base = self.scan_blossom(v, w)
                                if base != -1:
                                    self.add_blossom(base, v, w)
                                else:
                                    self.augment_matching(v, w)
                                    augmented = True
                                    break
                            elif label[w] == 0:
                                label[w] = 2
                                self.labeledge[w] = (v, w)
                        elif label[bw] == 1:
                            if self.bestedge[bv] is None or kslack < self.slack(*self.bestedge[bv]):
                                self.bestedge[bv] = (v, w)
                        elif label[w] == 0:
                            if self.bestedge[w] is None or kslack < self.slack(*self.bestedge[w]):
                                self.bestedge[w] = (v, w)
                if augmented:
                    break
                self._dual_step()
            # blossoms with zero dual are expanded at the end of a stage
            for b in range(n, 2 * n):
                if (self.base[b] >= 0 and self.parent[b] == -1 and label[b] == 1
                        and self.dual[b] == 0):
                    self.expand_blossom(b, True)
        return self.mate

    def _dual_step(self):
        """Change the duals by the largest delta that keeps them feasible, then act on the
        constraint that became tight (Galil 1986, delta types 2-4)."""
        n, label, inb = self.n, self.label, self.inblossom
        delta, kind, edge, blossom = None, 0, None, None
        for v in range(n):
            if label[inb[v]] == 0 and self.bestedge[v] is not None:
                d = self.slack(*self.bestedge[v])
                if kind == 0 or d < delta:
                    delta, kind, edge = d, 2, self.bestedge[v]
        for b in range(2 * n):
            if ((b < n or self.base[b] >= 0) and self.parent[b] == -1 and label[b] == 1
                    and self.bestedge[b] is not None):
                d = self.slack(*self.bestedge[b]) / 2.0
                if kind == 0 or d < delta:
                    delta, kind, edge = d, 3, self.bestedge[b]
        for b in range(n, 2 * n):
            if (self.base[b] >= 0 and self.parent[b] == -1 and label[b] == 2
                    and (kind == 0 or self.dual[b] < delta)):
                delta, kind, blossom = self.dual[b], 4, b
        if kind == 0:
            raise RuntimeError("blossom algorithm found no augmenting step; please report "
                               "this weight matrix")
        delta = max(delta, 0.0)
        for v in range(n):
            if label[inb[v]] == 1:
                self.dual[v] -= delta
            elif label[inb[v]] == 2:
                self.dual[v] += delta
        for b in range(n, 2 * n):
            if self.base[b] >= 0 and self.parent[b] == -1:
                if label[b] == 1:
                    self.dual[b] += delta
                elif label[b] == 2:
                    self.dual[b] -= delta
        if kind in (2, 3):
            v, w = edge
            self.allowed.update([(v, w), (w, v)])
            self.queue.append(v)
        else:
            self.expand_blossom(blossom, False)
