"""Primal solvers: BCFW on the soft-constrained primal (Smooth and Strong, eq. 8, Alg. 1)
and SDCA on the smooth-and-strong primal (Sec. 4.3).

    f(μ) = μᵀθ - ‖Aμ‖² / (2λ) [ - γ/2 ‖μ‖² ],   μ_r in its simplex,
    δ_pi(μ) = (Σ_{x_p \\ x_i} μ_p - μ_i) / λ,   θ̂(μ) = θ̂ at δ(μ) (eq. 2).

Alg. 1 picks one region at a time. Two regions interact only when one contains the
other, so all edges are updated together, then all nodes, then each global factor (in a
random order of these groups every pass): the same iterates as Alg. 1 visiting the
regions of a group one by one. A global factor keeps no primal table (App. E variant):
only its node marginals m_c and its linear term <μ_c, θ_c>, which are all Alg. 1 needs.
"""
import numpy as np

from .local import factor_max, l2max, nonsmooth_dual


class _Primal:
    def __init__(self, regions, reg, gamma=0.0, projection="sort"):
        self.regions, self.reg, self.gamma, self.projection = regions, reg, gamma, projection
        # Alg. 1 line 1: start at the vertex maximising each region's own θ_r
        self.mu_n = _onehot(regions.nodes.argmax(regions.node_theta), regions.nodes.total)
        self.mu_e = _onehot(regions.edges.argmax(regions.edge_theta), regions.edges.total)
        self.mc, self.lin_c = [], []
        for f in regions.factors:
            kc = int(regions.card[f.scope].max())
            xc = f.maximize(np.zeros((f.scope.size, kc)))
            m = np.zeros((f.scope.size, kc))
            m[np.arange(f.scope.size), xc] = 1.0
            self.mc.append(m)
            self.lin_c.append(f.potential(xc))

    def messages(self):
        """δ(μ) for edges (a message vector) and for each global factor."""
        regions = self.regions
        d = (regions.edge_to_node(self.mu_e) - self.mu_n[regions.msg_node]) / self.reg
        dc = [(m - regions.factor_rows(self.mu_n, c, 0.0)) / self.reg
              for c, m in enumerate(self.mc)]
        return d, dc

    def sweep(self, rng):
        groups = ["edges", "nodes"] + list(range(len(self.regions.factors)))
        for g in rng.permutation(len(groups)):
            group = groups[g]
            d, dc = self.messages()
            if group == "edges":
                self.update_edges(d)
            elif group == "nodes":
                self.update_nodes(self.regions.node_hat(d, dc))
            else:
                self.update_factor(group, dc[group])

    def evaluate(self):
        """Primal value, dual value, the non-smooth dual g(δ(μ)) (the bound) and a decode."""
        regions, reg = self.regions, self.reg
        d, dc = self.messages()
        hn, he = regions.node_hat(d, dc), regions.edge_hat(d)
        fmax = factor_max(regions, dc)
        bound = nonsmooth_dual(regions, hn, he, fmax)
        linear = (_dot(self.mu_n, regions.node_theta) + _dot(self.mu_e, regions.edge_theta)
                  + sum(self.lin_c))
        penalty = 0.5 * reg * float((d * d).sum() + sum((m * m).sum() for m in dc))  # ‖Aμ‖²/(2λ)
        return linear - penalty, bound, hn, he, fmax, penalty

    def decode(self):
        return self.regions.decode(self.mu_n)

    def _edge_marg_norm2(self, step):
        """Σ over each edge's two ends of ‖marginal of step‖²: one value per edge."""
        regions = self.regions
        return np.bincount(regions.msg_edge, weights=regions.edge_to_node(step) ** 2,
                           minlength=regions.n_edges)


class BCFW(_Primal):
    """Smooth and Strong Alg. 1: FW vertex s_r = argmax θ̂_r(μ), analytic step
    η = λ θ̂_rᵀ(s_r - μ_r) / (P_r ‖s_r - μ_r‖² + Σ_c ‖A_rc(s_r - μ_r)‖²) clipped to [0, 1]."""

    def update_edges(self, d):
        edges = self.regions.edges
        he = self.regions.edge_hat(d)
        step = _onehot(edges.argmax(he), edges.total) - self.mu_e
        eta = _steps(edges.sum(_times(he, step)), self._edge_marg_norm2(step), self.reg)
        self.mu_e += edges.expand(eta) * step

    def update_nodes(self, hn):
        nodes = self.regions.nodes
        step = _onehot(nodes.argmax(hn), nodes.total) - self.mu_n
        eta = _steps(nodes.sum(_times(hn, step)), self.regions.n_parents * nodes.sum(step * step),
                     self.reg)
        self.mu_n += nodes.expand(eta) * step

    def update_factor(self, c, dc):
        f, m = self.regions.factors[c], self.mc[c]
        xc = f.maximize(-dc)
        rows = np.arange(m.shape[0])
        lin = f.potential(xc) - dc[rows, xc].sum() - (self.lin_c[c] - (dc * m).sum())
        step = -m.copy()
        step[rows, xc] += 1.0
        eta = _steps(np.array([lin]), np.array([(step * step).sum()]), self.reg)[0]
        m += eta * step
        self.lin_c[c] += eta * (f.potential(xc) - self.lin_c[c])

    def evaluate(self):
        primal, bound, hn, he, fmax, _ = super().evaluate()
        regions = self.regions
        gap = (regions.nodes.max(hn).sum() - _dot(self.mu_n, hn) +
               regions.edges.max(he).sum() - _dot(self.mu_e, he))
        for (_xc, vmax), m, lin, dc in zip(fmax, self.mc, self.lin_c, self.messages()[1]):
            gap += vmax - (lin - (dc * m).sum())
        return primal, bound, float(gap)


class SDCA(_Primal):
    """Block ascent on the smooth-and-strong primal f(μ) - γ/2 ‖μ‖² (Sec. 4.3; the dual of
    eq. 11 plus λ/2 ‖δ‖²): per region a proximal step u = Π_Δ(μ_r + G_r / (γ + β_r/λ))
    with G_r = θ̂_r - γ μ_r and β_r ≥ ‖A_r‖² (Shalev-Shwartz and Zhang 2014), then the
    exact step along u - μ_r clipped to [0, 1] (f is quadratic along it)."""

    def _block(self, mu, h, segments, beta, marg_norm2):
        grad = h - self.gamma * mu
        scale = segments.expand(self.gamma + beta / self.reg)
        with np.errstate(invalid="ignore"):
            arg = np.where(np.isfinite(grad), mu + grad / scale, -np.inf)
        step = l2max(arg, 1.0, self.projection, segments)[1] - mu
        curv = self.gamma * segments.sum(step * step) + marg_norm2(step) / self.reg
        eta = _steps(segments.sum(_times(grad, step)), curv, 1.0)
        mu += segments.expand(eta) * step

    def update_edges(self, d):
        regions = self.regions
        beta = regions.card[regions.ends[0]] + regions.card[regions.ends[1]]
        self._block(self.mu_e, regions.edge_hat(d), regions.edges, beta, self._edge_marg_norm2)

    def update_nodes(self, hn):
        p, nodes = self.regions.n_parents, self.regions.nodes
        self._block(self.mu_n, hn, nodes, p, lambda s: p * nodes.sum(s * s))

    def evaluate(self):
        primal, bound, hn, he, _, penalty = super().evaluate()
        regions, gamma = self.regions, self.gamma
        primal -= 0.5 * gamma * float((self.mu_n ** 2).sum() + (self.mu_e ** 2).sum())
        dual = (l2max(hn, gamma, self.projection, regions.nodes)[0].sum() +
                l2max(he, gamma, self.projection, regions.edges)[0].sum() + penalty)
        return primal, bound, float(dual - primal)


def primal_solver(regions, method, reg, gamma, projection, seed):
    """Generator of (objective, bound, x, measure) tuples (see `dual`) for "bcfw" (objective
    f(μ) of eq. 8) or "sdca" (objective f(μ) - γ/2‖μ‖² + qγ/2, shifted as the paper shifts
    the L2 objective)."""
    solver = BCFW(regions, reg) if method == "bcfw" else SDCA(regions, reg, gamma, projection)
    shift = 0.5 * gamma * regions.n_regions if method == "sdca" else 0.0
    rng = np.random.default_rng(seed)
    while True:
        solver.sweep(rng)
        primal, bound, gap = solver.evaluate()
        yield primal + shift, bound, solver.decode(), max(gap, 0.0) / max(1.0, abs(primal))


# -- helpers --------------------------------------------------------------------------------

def _onehot(positions, size):
    out = np.zeros(size)
    out[positions] = 1.0
    return out


def _dot(mu, h):
    """<μ, h> with 0 · (-inf) = 0."""
    with np.errstate(invalid="ignore"):
        return float(np.where(mu != 0, mu * h, 0.0).sum())


def _times(h, step):
    """h · step entry by entry, 0 where step is 0 (so -inf · 0 = 0)."""
    with np.errstate(invalid="ignore"):
        return np.where(step != 0, h * step, 0.0)


def _steps(lin, curv, weight):
    """weight·lin / curv clipped to [0, 1]; a flat direction (curv = 0) takes the full step
    when it ascends."""
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(curv > 0, weight * lin / curv, np.where(lin > 0, 1.0, 0.0))
    return np.clip(eta, 0.0, 1.0)
