"""The TRW upper bound on log Z in its tree-decomposition form (Wainwright, Jaakkola &
Willsky 2005, Sec. 3-4), minimised by L-BFGS: a certified bound at every iterate, which
converges where TRBP does not (frustrated models).

Forests T_1..T_m over all variables carry weights w_t > 0 summing to 1; edge e appears
with probability ρ_e = Σ_{t ∋ e} w_t. Forest t has its own log-potentials φ_t (on every
node and on its edges) with Σ_t w_t φ_t = θ, so by convexity of log Z

    log Z(θ) <= Σ_t w_t A_t(φ_t)

with A_t forest t's log-partition function (exact, by `fwcore.exact.ForestLayout`).
Over φ the least value is the TRW bound at ρ; the forests then agree on their node and
edge marginals (the TRW beliefs). The ρ loop is Barrier FW Alg. 2's: the forest set grows
by the maximum spanning forest on the beliefs' mutual information, with weight
2 / (k + 3) at step k. The first forests split the edges (`_kernels.forest_partition`),
each with weight 1/m.
"""
import math

import numpy as np

from .._kernels import forest_partition
from ..exact import ForestLayout
from ..loop import Callbacks, Deadline, Stopping, run_loop
from ..results import Status
from .rho import edge_mutual_information, max_spanning_forest

__all__ = ["TreeDecomposition", "trw_dual_bound", "pass_budget"]

#: memory of L-BFGS's (s, y) pairs: 3 to 10 pairs, fewer when φ is large
_LBFGS_BYTES = 2**28
#: rho step k solves over φ to a gradient of STEP_TOL / (k + 1) (at least ``tol``)
STEP_TOL = 1e-3
#: `pass_budget`: passes over `_BUDGET_ENTRIES` node entries in all, within
#: [`_MIN_PASSES`, `_MAX_PASSES`]: about what Barrier FW's former deadline for this bound
#: (as long again as the run, at least 1 s) allowed on random_grid(n, coupling=1) with
#: oracle "trws" on an idle machine: n = 6, 64,000 passes in 1 s then, 69,000 now; n = 32
#: and 100, 1.0 and 2.6 s then. A floor of 10,000 passes took 3.2 and 43 s there.
_BUDGET_ENTRIES = 5e6
_MIN_PASSES, _MAX_PASSES = 500, 70000


def _dot(a, b):
    """a · b over a's one axis, a float for two vectors, without BLAS: the same sums on
    every machine and thread count (OpenBLAS's threaded products round differently with
    the thread count, and on a loaded 2-core machine made this bound 8x slower)."""
    out = np.einsum("i,i...->...", a, b)
    return float(out) if out.ndim == 0 else out


class TreeDecomposition(ForestLayout):
    """Forests given as edge masks with weights (laid out by `fwcore.exact.ForestLayout`),
    and the TRW bound of log-potentials φ: a node part (m, D) and a flat edge part with,
    for each forest, the tables of its edges."""

    def __init__(self, model, forests, weights):
        super().__init__(model, forests)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.rho = np.bincount(self.edge_of, weights=self.weights[self.forest_of],
                               minlength=model.n_edges)
        dim, theta = self.dim, model.theta
        self._node_free = np.isfinite(theta[:dim])
        # per edge-part entry k: its index among θ's edge entries, w_t, ρ_e and θ
        self._at = self.entry - dim
        self._w_at = self.weights[self.entry_forest]
        self._rho_edges = np.repeat(self.rho, np.diff(model.edge_off))
        self._rho_at = self._rho_edges[self._at]
        self._theta_at = theta[self.entry]
        self._edge_free = np.isfinite(self._theta_at)

    def start(self):
        """φ with every forest at θ's node potentials and θ_e / ρ_e on its edges (0 for
        -inf entries of θ, which `_project` restores)."""
        node = np.where(self._node_free, self.model.theta[:self.dim], 0.0)
        edge = np.where(self._edge_free, self._theta_at, 0.0) / self._rho_at
        return np.concatenate([np.tile(node, self.n_forests), edge])

    def _edge_sums(self, values):
        """Σ over the forests holding each edge entry of ``values`` (edge-part layout)."""
        return np.bincount(self._at, weights=values, minlength=self._rho_edges.size)

    def _project(self, phi):
        """φ moved onto Σ_t w_t φ_t = θ: node entries by the same shift in every forest,
        edge entries by the shift over ρ_e; -inf entries of θ are kept."""
        theta, w, m = self.model.theta[:self.dim], self.weights, self.n_forests
        node = phi[:m * self.dim].reshape(m, -1)
        node = np.where(self._node_free, node + theta - _dot(w, node), theta)
        edge = np.where(self._edge_free, phi[m * self.dim:], 0.0)
        mean = self._edge_sums(self._w_at * edge)[self._at]
        with np.errstate(invalid="ignore"):
            edge = np.where(self._edge_free, edge + (self._theta_at - mean) / self._rho_at,
                            self._theta_at)
        return node, edge

    def value_grad(self, phi):
        """(Σ_t w_t A_t at φ projected, its gradient in φ, the forests' node marginals
        (m, D), their edge marginals in the edge part's layout)."""
        w = self.weights
        node, edge = self._project(phi)
        mu, edge_mu, log_z = self.sum_product(node.ravel(), edge)
        g_node = w[:, None] * mu
        g_node = np.where(self._node_free, g_node - w[:, None] * g_node.sum(axis=0), 0.0)
        g_edge = self._w_at * edge_mu
        g_edge -= self._w_at / self._rho_at * self._edge_sums(g_edge)[self._at]
        g_edge[~self._edge_free] = 0.0
        return _dot(w, log_z), np.concatenate([g_node.ravel(), g_edge]), mu, edge_mu

    def beliefs(self, mu, edge_mu):
        """The weighted mean of the forests' marginals as a flat vector of the model's
        layout (edge e's from the forests that hold it, weighted by w_t / ρ_e)."""
        edges = self._edge_sums(self._w_at * edge_mu)
        return np.concatenate([_dot(self.weights, mu), edges / np.where(self._rho_edges > 0,
                                                                        self._rho_edges, 1.0)])


class _Spent(Exception):
    """The deadline or the budget is reached."""


def _lbfgs(fg, x, max_iter, tol, memory=10):
    """Minimise a smooth convex function by L-BFGS (two-loop recursion, Armijo
    backtracking; pairs with no positive curvature are skipped). ``fg(x)`` returns
    (value, gradient). Stops after ``max_iter`` iterations, when the largest gradient
    entry is below ``tol`` or when no step decreases the value; returns the last x."""
    f, g = fg(x)
    pairs = []
    for _ in range(max_iter):
        if not np.any(np.abs(g) > tol):
            break
        d = -g
        alphas = []
        for s, y, r in reversed(pairs):
            a = r * _dot(s, d)
            d = d - a * y
            alphas.append(a)
        if pairs:
            s, y, r = pairs[-1]
            d = d * (_dot(s, y) / _dot(y, y))
            for (s, y, r), a in zip(pairs, reversed(alphas)):
                d = d + (a - r * _dot(y, d)) * s
        else:
            d = d / max(np.abs(g).max(), 1.0)
        slope = _dot(g, d)
        if slope >= 0.0:  # not a descent direction: restart from the gradient
            pairs.clear()
            d = -g / max(np.abs(g).max(), 1.0)
            slope = _dot(g, d)
        step = 1.0
        for _ in range(40):
            x_new = x + step * d
            f_new, g_new = fg(x_new)
            if f_new <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break
        s, y = x_new - x, g_new - g
        if _dot(s, y) > 1e-16:
            pairs.append((s, y, 1.0 / _dot(s, y)))
            del pairs[:-memory]
        x, f, g = x_new, f_new, g_new
    return x


def pass_budget(model):
    """Forest passes `trw_dual_bound` may take when no time limit is given (Barrier FW
    without max_time): passes over `_BUDGET_ENTRIES` node entries in all, within
    [`_MIN_PASSES`, `_MAX_PASSES`]; module constants."""
    passes = math.ceil(_BUDGET_ENTRIES / max(int(model.node_off[-1]), 1))
    return min(_MAX_PASSES, max(_MIN_PASSES, passes))


def trw_dual_bound(model, rho_updates=40, max_iter=200, tol=1e-6, deadline=None,
                   max_passes=None):
    """The TRW bound on log Z minimised over φ (L-BFGS, at most ``max_iter`` iterations
    per ρ step, down to a gradient of STEP_TOL / (k + 1) at step k; the last step ten
    times as many, down to ``tol``) and over ρ (``rho_updates`` steps of Barrier FW
    Alg. 2, each a step of `fwcore.loop.run_loop`); module docstring. Measured with a
    15 s limit against TRBP's value: 0.38 below on a 20x20 5-label Potts grid, 0.41 below
    on a 15x15 grid with couplings U[-4, 4], 0.45 above (0.5%) on a 10-clique at coupling
    8, where L-BFGS stalls. Returns (the least bound evaluated, the beliefs there as a flat
    vector, number of evaluations: each a sum-product pass over every forest, the
    `Status` of the run: ``interrupted`` after Ctrl-C, ``max_time`` at ``deadline``, a
    `fwcore.loop.Deadline`, ``max_iter`` after ``max_passes`` forest passes, e.g.
    `pass_budget`, or the ρ steps, ``stalled`` when L-BFGS stops before them); every
    evaluated point is a valid bound, and the least one so far is returned at every
    stop. Without a deadline no clock is read: the answer does not depend on the
    machine's load."""
    deadline = Deadline() if deadline is None else deadline
    forest, m = forest_partition(model.n_vars, model.edges) if model.n_edges else (
        np.zeros(0, np.int32), 1)
    state = {"forests": [forest == t for t in range(m)], "weights": np.full(m, 1.0 / m),
             "old": None, "passes": 0, "done": False}
    best = [np.inf, None, 0]

    def spent():
        return deadline.passed() or (max_passes is not None and state["passes"] >= max_passes)

    def step(k):
        """ρ step k − 1: φ by L-BFGS at the current forests' weights, then (but after the
        last) the FW step on the weights towards the maximum-information forest."""
        k -= 1
        forests, weights = state["forests"], state["weights"]
        dec = TreeDecomposition(model, forests, weights)
        phi = dec.start()
        if state["old"] is not None:  # the forests held before keep their potentials
            old_dec, old_phi = state["old"]
            n_node = old_dec.n_forests * old_dec.dim
            phi[:n_node] = old_phi[:n_node]
            phi[dec.n_forests * dec.dim:][:old_phi.size - n_node] = old_phi[n_node:]

        def f(x):
            if best[2] and spent():
                raise _Spent
            value, grad, mu, edge_mu = dec.value_grad(x)
            best[2] += 1
            state["passes"] += dec.n_forests
            if value < best[0]:
                best[:2] = value, dec.beliefs(mu, edge_mu)
            return value, grad

        memory = int(np.clip(_LBFGS_BYTES // (16 * max(phi.size, 1)), 3, 10))
        last = k == rho_updates
        try:
            phi = _lbfgs(f, phi, max_iter * (10 if last else 1),
                         tol if last else max(tol, STEP_TOL / (k + 1)), memory)
        except _Spent:
            state["done"] = True
            return
        if last or not model.n_edges or spent():
            state["done"] = True
            return
        state["old"] = dec, phi
        nu = dec.beliefs(*dec.value_grad(phi)[2:])
        new = max_spanning_forest(model.n_vars, model.edges,
                                  edge_mutual_information(model, nu)) > 0.5
        gamma = 2.0 / (k + 3.0)
        weights = (1.0 - gamma) * weights
        same = [t for t, held in enumerate(forests) if np.array_equal(held, new)]
        if same:  # a forest already held gains the weight
            weights[same[0]] += gamma
        else:
            forests.append(new)
            weights = np.append(weights, gamma)
        state["weights"] = weights

    outcome = run_loop(lambda k: (None, 0.0 if state["done"] else math.inf), step,
                       Stopping(rho_updates + 1, deadline=Deadline()), Callbacks(trace=False),
                       measure_start=False, proof=False)
    status = outcome.status
    if status is not Status.INTERRUPTED and state["done"]:
        status = (Status.MAX_TIME if deadline.passed() else
                  Status.MAX_ITER if max_passes is not None and state["passes"] >= max_passes
                  else Status.STALLED)
    return best[0], best[1], best[2], status
