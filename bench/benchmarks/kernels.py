"""Kernels of fwcore/_kernels.pyx against NumPy and pure Python (issue 3 targets).

Models: a 100x100 binary grid and a 50x50 grid with 5 labels. Targets: TRW value+gradient
>= 4x faster than its NumPy twin and within 2x of one np.log pass over D entries; line
search < 10 passes on average along FW directions; an ICM sweep >= 50x faster than pure
Python; pivot vs sort simplex projection for block sizes 10 to 10**6.
"""
import statistics
import time

import numpy as np

from fwcore import _kernels as K
from fwcore.generators import potts_grid, random_grid
from fwcore.marginals.rho import entropy_weights

from .common import QUICK

MODELS = ["grid100x100_k2", "grid50x50_k5"]


def _model(name):
    if name == "grid100x100_k2":
        return random_grid(100, coupling=4.0, field=1.0, seed=0)
    return potts_grid(50, n_labels=5, coupling=2.0, field=1.0, seed=0)


def _weights(m):
    """Per-entry entropy weights for uniform rho = (n - 1) / E (a valid edge-appearance level
    for a connected grid)."""
    return entropy_weights(m, np.full(m.n_edges, (m.n_vars - 1) / m.n_edges))


def _interleaved_ratios(fns, repeats=15 if QUICK else 61, number=5):
    """Median over repeats of time(fns[k]) / time(fns[0]), each repeat timing a batch of
    `number` calls of every function back to back (machine load then hits all alike)."""
    ratios = [[] for _ in fns[1:]]
    for _ in range(repeats):
        t = []
        for fn in fns:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            t.append(time.perf_counter() - t0)
        for out, tk in zip(ratios, t[1:]):
            out.append(tk / t[0])
    return [statistics.median(r) for r in ratios]


def _interior_point(m, seed=0):
    """Blockwise-normalised random marginals mixed with u0 (a point of M_delta-like shape)."""
    rng = np.random.default_rng(seed)
    mu = rng.random(m.dim)
    sizes = np.diff(np.concatenate([m.node_off, m.edge_off[1:]]))
    mu /= np.repeat(np.add.reduceat(mu, np.concatenate([m.node_off[:-1], m.edge_off[:-1]])),
                    sizes)
    return 0.9 * mu + 0.1 * m.uniform_marginals()


def trw_value_grad_numpy(theta, mu, Kx):
    """The NumPy twin (tests/test_kernels.py) on the per-entry weights Kx."""
    pos = mu > 0
    lg = np.where(pos, np.log(np.where(pos, mu, 1.0)), np.log(5e-324))
    return np.sum(np.where(pos, mu * (Kx * lg - theta), 0.0)), Kx * (1.0 + lg) - theta


def icm_sweep_python(theta, card, node_off, edge_off, adj_start, adj_var, adj_edge,
                     adj_first, x):
    """One ICM sweep in pure Python over lists (the baseline for the kernel)."""
    changed = False
    for v in range(len(card)):
        best, best_a, cur = -np.inf, x[v], -np.inf
        for a in range(card[v]):
            s = theta[node_off[v] + a]
            for slot in range(adj_start[v], adj_start[v + 1]):
                u, e = adj_var[slot], adj_edge[slot]
                if adj_first[slot]:
                    s += theta[edge_off[e] + a * card[u] + x[u]]
                else:
                    s += theta[edge_off[e] + x[u] * card[v] + a]
            if a == x[v]:
                cur = s
            if s > best:
                best, best_a = s, a
        if best > cur:
            x[v] = best_a
            changed = True
    return changed


class TRWValueGrad:
    """The kernel, its NumPy twin and one np.log pass over D entries; the track_* ratios
    time all three interleaved in one run (targets: numpy_over_cython >= 4,
    cython_over_np_log <= 2)."""
    param_names = ["model"]
    params = [MODELS]

    def setup(self, name):
        m = self.m = _model(name)
        self.weight = _weights(m)
        self.mu = _interior_point(m)
        self.grad = np.empty(m.dim)
        self._ratios = None

    def time_cython(self, name):
        K.trw_value_grad(self.m.theta, self.mu, self.weight, self.grad)

    def time_numpy_twin(self, name):
        trw_value_grad_numpy(self.m.theta, self.mu, self.weight)

    def time_np_log(self, name):
        np.log(self.mu)

    def ratios(self, name):
        if self._ratios is None:
            twin, lg = _interleaved_ratios([lambda: self.time_cython(name),
                                            lambda: self.time_numpy_twin(name),
                                            lambda: self.time_np_log(name)])
            self._ratios = twin, 1.0 / lg
        return self._ratios

    def track_numpy_over_cython(self, name):
        return self.ratios(name)[0]
    track_numpy_over_cython.unit = "x"

    def track_cython_over_np_log(self, name):
        return self.ratios(name)[1]
    track_cython_over_np_log.unit = "x"


class LineSearch:
    """Exact line search along FW directions of Barrier FW Alg. 2 over M_delta (delta =
    1e-3), vertices from ICM on theta~ = -grad f warm-started at the last vertex (Alg. 6)."""
    param_names = ["model"]
    params = [MODELS]
    n_steps = 10 if QUICK else 40
    delta = 1e-3

    def setup(self, name):
        m = self.m = _model(name)
        self.weight = _weights(m)
        mu = m.uniform_marginals()
        grad = np.empty(m.dim)
        s = np.zeros(m.n_vars, dtype=np.int32)
        u0 = m.uniform_marginals()
        self.passes = []
        for _ in range(self.n_steps):
            K.trw_value_grad(m.theta, mu, self.weight, grad)
            K.icm(-grad, m.graph, s, 20)
            d = (1 - self.delta) * m.marginal_vector(s) + self.delta * u0 - mu
            gamma, passes = K.trw_line_search(m.theta, mu, d, self.weight, 1.0)
            self.passes.append(passes)
            self.mu, self.d = mu.copy(), d
            mu += gamma * d

    def time_line_search(self, name):
        K.trw_line_search(self.m.theta, self.mu, self.d, self.weight, 1.0)

    def time_one_pass(self, name):
        K.trw_line_derivs(self.m.theta, self.mu, self.d, 0.5, self.weight)

    def track_one_pass_over_np_log(self, name):
        return 1.0 / _interleaved_ratios([lambda: self.time_one_pass(name),
                                          lambda: np.log(self.mu)])[0]
    track_one_pass_over_np_log.unit = "x"

    def track_mean_passes(self, name):
        return float(np.mean(self.passes))
    track_mean_passes.unit = "passes"

    def track_max_passes(self, name):
        return int(np.max(self.passes))
    track_max_passes.unit = "passes"


class ICMSweep:
    param_names = ["model"]
    params = [MODELS]

    def setup(self, name):
        m = self.m = _model(name)
        self.x0 = np.random.default_rng(0).integers(0, m.card).astype(np.int32)
        self.lists = [a.tolist() for a in (m.theta, m.card, m.node_off, m.edge_off,
                                           m.adj_start, m.adj_var, m.adj_edge, m.adj_first)]

    def time_cython_sweep(self, name):
        m = self.m
        K.icm(m.theta, m.graph, self.x0.copy(), 1)

    def time_python_sweep(self, name):
        icm_sweep_python(*self.lists, self.x0.tolist())


class SimplexProjection:
    """10**6 entries (10**5 in the quick profile) split into equal blocks."""
    param_names = ["block_size"]
    params = [[10, 100, 1000, 10**4, 10**5] + ([] if QUICK else [10**6])]

    def setup(self, size):
        total = 10**5 if QUICK else 10**6
        if size > total:
            raise NotImplementedError("block larger than the benchmark vector")
        self.v = np.random.default_rng(0).normal(size=total)
        self.offsets = np.arange(0, total + 1, size, dtype=np.int64)
        self.w = np.empty_like(self.v)

    def time_sort(self, size):
        self.w[:] = self.v
        K.project_simplex_sort(self.w, self.offsets)

    def time_pivot(self, size):
        self.w[:] = self.v
        K.project_simplex_pivot(self.w, self.offsets, 1.0, 1)
