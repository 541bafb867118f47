"""NumPy twins of the weighted mini-bucket kernels (fwcore/_wmb.pyx): the tree's partition
on Python sets, and the passes on one NumPy table a cluster (axes in the tree's scope
order, latest-eliminated first), in the form of the algorithm's statement (Liu & Ihler
2011; `fwcore.marginals.wmb`'s docstring): what the kernels compute, not how."""
import math

import numpy as np
from scipy.special import logsumexp


def mini_buckets_twin(card, scopes, fixed, order, max_vars=math.inf, max_entries=math.inf):
    """`fwcore._wmb.mini_buckets` on sets: (c_var, scopes of the clusters, c_parent,
    b_start, f_cluster)."""
    position = {v: p for p, v in enumerate(order)}
    buckets = [[] for _ in order]               # items (scope set, factor f | -1, cluster | -1)
    f_cluster = [-1] * len(scopes)
    for f, s in enumerate(scopes):
        free = frozenset(v for v in s if fixed[v] < 0)
        if free:
            buckets[min(position[v] for v in free)].append((free, f, -1))
    c_var, c_scope, c_parent, b_start = [], [], [], [0]
    for p, v in enumerate(order):
        groups = []                             # [scope, items]
        for s, f, c in sorted(buckets[p], key=lambda item: len(item[0])):
            best = None
            for g in groups:
                joined = g[0] | s
                if ((best is None or len(g[0]) < len(best[0])) and len(joined) <= max_vars
                        and math.prod(card[u] for u in joined) <= max_entries):
                    best = g
            if best is None:
                best = [s, []]
                groups.append(best)
            else:
                best[0] = best[0] | s
            best[1].append((f, c))
        for s, items in groups:
            cid = len(c_var)
            c_var.append(v)
            c_scope.append(tuple(sorted(s, key=lambda u: -position[u])))
            c_parent.append(-1)
            for f, c in items:
                if f >= 0:
                    f_cluster[f] = cid
                else:
                    c_parent[c] = cid
            rest = s - {v}
            if rest:
                buckets[min(position[u] for u in rest)].append((rest, -1, cid))
        b_start.append(len(c_var))
    return c_var, c_scope, c_parent, b_start, f_cluster


def _wlse(x, axes, w):
    with np.errstate(divide="ignore", invalid="ignore"):
        return w * logsumexp(x / w, axis=axes) if axes else x


def _aligned(table, scope, into):
    """``table`` over ``scope`` (a subset of ``into``, any order) broadcast on into's axes."""
    order = sorted(range(len(scope)), key=lambda a: into.index(scope[a]))
    t = np.transpose(table, order)
    shape, it = [], iter(t.shape)
    inside = {scope[a] for a in order}
    for u in into:
        shape.append(next(it) if u in inside else 1)
    return t.reshape(shape)


class WMBTwin:
    """The passes on NumPy tables: ``scope[c]``, ``weight``, ``repar[c]`` (over c_var[c]),
    ``fwd[c]`` / ``bwd[c]`` (over scope[c][:-1], C order)."""

    def __init__(self, card, scopes, tables, fixed, order, tree):
        self.card, self.fixed, self.order = card, fixed, list(order)
        self.c_var, self.scope, self.parent, self.b_start, f_cluster = tree
        n_c = len(self.c_var)
        self.children = [[a for a in range(n_c) if self.parent[a] == c] for c in range(n_c)]
        self.own = [[f for f in range(len(scopes)) if f_cluster[f] == c] for c in range(n_c)]
        self.scopes, self.tables = scopes, tables
        self.weight = np.zeros(n_c)
        for p in range(len(order)):
            c0, c1 = self.b_start[p], self.b_start[p + 1]
            self.weight[c0:c1] = 1.0 / max(c1 - c0, 1)
        self.repar = [np.zeros(card[v]) for v in self.c_var]
        self.fwd = [np.zeros([card[u] for u in s[:-1]]) for s in self.scope]
        self.bwd = [np.zeros([card[u] for u in s[:-1]]) for s in self.scope]
        self.has_backward = False
        self.constant = sum(float(self._at_fixed(f)) for f in range(len(scopes))
                            if f_cluster[f] < 0)
        self.constant += sum(math.log(card[v]) for p, v in enumerate(order)
                             if self.b_start[p] == self.b_start[p + 1])

    def _at_fixed(self, f):
        """Factor f's table at the fixed variables' states (over its free ones, in order)."""
        return self.tables[f][tuple(self.fixed[v] if self.fixed[v] >= 0 else slice(None)
                                    for v in self.scopes[f])]

    def table(self, c, backward=False):
        """f_c: its factors, reparameterisation and children's forward messages."""
        s = self.scope[c]
        t = np.zeros([self.card[u] for u in s])
        for f in self.own[c]:
            free = tuple(v for v in self.scopes[f] if self.fixed[v] < 0)
            t = t + _aligned(self._at_fixed(f), free, s)
        t = t + self.repar[c]
        for a in self.children[c]:
            t = t + _aligned(self.fwd[a], self.scope[a][:-1], s)
        if backward and self.parent[c] >= 0:
            t = t + self.bwd[c][..., None]
        return t

    def _reweight(self, clusters, beliefs, eta, floor, ceiling):
        """Exponentiated gradient on a bucket's (positive) weights."""
        w = self.weight[clusters]
        h = conditional_entropies([beliefs[c] for c in clusters], w)
        new = w * np.exp(-eta * (h - (w * h).sum()))
        new = np.maximum(new / new.sum(), floor)
        self.weight[clusters] = new / new.sum()

    def forward(self, step, eta, floor, ceiling=math.inf):
        """A forward pass; no step in a bucket where a cluster of negative weight has a
        −inf belief entry (its weighted belief ∝ exp(b / w) undefined there)."""
        total = self.constant
        for p in range(len(self.order)):
            clusters = list(range(self.b_start[p], self.b_start[p + 1]))
            tables = {c: self.table(c) for c in clusters}
            beliefs = {c: tables[c] + (self.bwd[c][..., None] if self.parent[c] >= 0
                                       else 0.0) for c in clusters}
            if len(clusters) > 1 and step > 0 and not any(
                    self.weight[c] < 0 and np.isneginf(beliefs[c]).any() for c in clusters):
                if eta > 0 and self.has_backward:
                    self._reweight(clusters, beliefs, eta, floor, ceiling)
                logs = []
                for c in clusters:
                    b = beliefs[c]
                    m = _wlse(b, tuple(range(b.ndim - 1)), self.weight[c]) / self.weight[c]
                    logs.append(m - _wlse(m, (0,), 1.0) if np.isfinite(m).any() else m)
                logs = np.array(logs)
                w = self.weight[clusters][:, None]
                with np.errstate(invalid="ignore"):
                    moves = step * w * ((w * logs).sum(axis=0) - logs)
                moves[:, ~np.isfinite(logs).all(axis=0)] = 0.0
                for c, move in zip(clusters, moves):
                    self.repar[c] = self.repar[c] + move
                    tables[c] = tables[c] + move
            for c in clusters:
                msg = _wlse(tables[c], (tables[c].ndim - 1,), self.weight[c])
                if self.parent[c] < 0:
                    total += float(msg)
                    continue
                top = msg.max()
                if np.isfinite(top):
                    msg = msg - top
                total += float(top)
                self.fwd[c] = msg
        return total

    def backward(self):
        for c in reversed(range(len(self.c_var))):
            if not self.children[c]:
                continue
            belief, wc = self.table(c, backward=True), self.weight[c]
            for a in self.children[c]:
                keep = set(self.scope[a][:-1])
                drop = tuple(i for i, u in enumerate(self.scope[c]) if u not in keep)
                sums = _wlse(belief, drop, wc) * (self.weight[a] / wc)
                with np.errstate(invalid="ignore"):
                    msg = sums - self.fwd[a]
                msg[np.isnan(msg) | (msg == np.inf)] = -np.inf   # no belief there
                top = msg.max() if msg.size else 0.0
                self.bwd[a] = msg - top if np.isfinite(top) else msg
        self.has_backward = True

    def decode(self):
        x = np.where(np.asarray(self.fixed) >= 0, self.fixed, 0).astype(np.int64)
        for p in reversed(range(len(self.order))):
            v = self.order[p]
            score = np.zeros(self.card[v])
            for c in range(self.b_start[p], self.b_start[p + 1]):
                t = self.table(c)
                score = score + t[tuple(x[u] for u in self.scope[c][:-1])]
            x[v] = int(np.argmax(score))
        return x

    def read(self):
        """({v: node marginal}, {f: marginal over the free variables of factor f, in its
        scope's order}) of the normalised weighted beliefs."""
        nodes, factors = {}, {}
        for p, v in enumerate(self.order):
            total = np.zeros(self.card[v])
            for c in range(self.b_start[p], self.b_start[p + 1]):
                b = self.table(c, backward=True) / self.weight[c]
                if not np.isfinite(b.max()):
                    continue
                q = np.exp(b - b.max())
                q /= q.sum()
                s = self.scope[c]
                total += q.sum(axis=tuple(range(q.ndim - 1)))
                for f in self.own[c]:
                    free = [u for u in self.scopes[f] if self.fixed[u] < 0]
                    if len(free) >= 2:
                        kept = q.sum(axis=tuple(i for i, u in enumerate(s) if u not in free))
                        axes = [u for u in s if u in free]
                        factors[f] = np.transpose(kept, [axes.index(u) for u in free])
            nodes[v] = total / total.sum() if total.sum() > 0 else np.full(len(total),
                                                                          1 / len(total))
        return nodes, factors


def _weighted(belief, w):
    """The normalised weighted belief ∝ exp(belief / w) (zeros when it has no finite
    entry)."""
    b = belief / w
    top = b.max()
    if not np.isfinite(top):
        return np.zeros_like(b)
    q = np.exp(b - top)
    return q / q.sum()


def conditional_entropies(beliefs, weights):
    """H(x_v | the rest of the scope) under each cluster's weighted belief (x_v last)."""
    out = []
    for b, w in zip(beliefs, weights):
        q = _weighted(b, w)
        out.append(_entropy(q) - _entropy(q.sum(axis=-1)))
    return np.array(out)


def _entropy(p):
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())
