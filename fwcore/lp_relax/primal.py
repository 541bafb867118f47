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
        k = regions.k
        self.mu_n = _onehot(regions.node_theta.argmax(axis=1), k)
        flat = regions.edge_theta.reshape(regions.n_edges, regions.k ** 2).argmax(axis=1)
        self.mu_e = _onehot(flat, k * k).reshape(regions.n_edges, k, k)
        self.mc, self.lin_c = [], []
        for f in regions.factors:
            kc = int(regions.card[f.scope].max())
            xc = f.maximize(np.zeros((f.scope.size, kc)))
            self.mc.append(_onehot(xc, kc))
            self.lin_c.append(f.potential(xc))

    def messages(self):
        """δ(μ) for edges (2, E, K) and for each global factor."""
        regions = self.regions
        d = (regions.edge_to_node(self.mu_e) - self.mu_n[regions.ends]) / self.reg
        dc = [(m - self.mu_n[f.scope, :m.shape[1]]) / self.reg for f, m in zip(regions.factors, self.mc)]
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
        linear = _dot(self.mu_n, regions.node_theta) + _dot(self.mu_e, regions.edge_theta) + sum(self.lin_c)
        penalty = 0.5 * reg * float((d * d).sum() + sum((m * m).sum() for m in dc))  # ‖Aμ‖²/(2λ)
        return linear - penalty, bound, hn, he, fmax, penalty

    def decode(self):
        return self.mu_n.argmax(axis=1)


class BCFW(_Primal):
    """Smooth and Strong Alg. 1: FW vertex s_r = argmax θ̂_r(μ), analytic step
    η = λ θ̂_rᵀ(s_r - μ_r) / (P_r ‖s_r - μ_r‖² + Σ_c ‖A_rc(s_r - μ_r)‖²) clipped to [0, 1]."""

    def update_edges(self, d):
        regions = self.regions
        he = regions.edge_hat(d)
        s = _onehot(he.reshape(regions.n_edges, regions.k ** 2).argmax(axis=1), regions.k ** 2).reshape(he.shape)
        self.mu_e += _steps(_dot_rows(he, s - self.mu_e), (regions.edge_to_node(s - self.mu_e) ** 2).sum(axis=(0, 2)),
                            self.reg)[:, None, None] * (s - self.mu_e)

    def update_nodes(self, hn):
        s = _onehot(hn.argmax(axis=1), self.regions.k)
        step = s - self.mu_n
        self.mu_n += _steps(_dot_rows(hn, step), self.regions.n_parents * (step * step).sum(axis=1),
                            self.reg)[:, None] * step

    def update_factor(self, c, dc):
        f, m = self.regions.factors[c], self.mc[c]
        xc = f.maximize(-dc)
        rows = np.arange(m.shape[0])
        lin = f.potential(xc) - dc[rows, xc].sum() - (self.lin_c[c] - (dc * m).sum())
        step = _onehot(xc, m.shape[1]) - m
        eta = _steps(np.array([lin]), np.array([(step * step).sum()]), self.reg)[0]
        m += eta * step
        self.lin_c[c] += eta * (f.potential(xc) - self.lin_c[c])

    def evaluate(self):
        primal, bound, hn, he, fmax, _ = super().evaluate()
        regions = self.regions
        gap = (hn.max(axis=1).sum() - _dot(self.mu_n, hn) +
               he.reshape(regions.n_edges, regions.k ** 2).max(axis=1).sum() - _dot(self.mu_e, he))
        for (xc, vmax), m, lin, dc in zip(fmax, self.mc, self.lin_c, self.messages()[1]):
            gap += vmax - (lin - (dc * m).sum())
        return primal, bound, float(gap)


class SDCA(_Primal):
    """Block ascent on the smooth-and-strong primal f(μ) - γ/2 ‖μ‖² (Sec. 4.3; the dual of
    eq. 11 plus λ/2 ‖δ‖²): per region a proximal step u = Π_Δ(μ_r + G_r / (γ + β_r/λ))
    with G_r = θ̂_r - γ μ_r and β_r ≥ ‖A_r‖² (Shalev-Shwartz and Zhang 2014), then the
    exact step along u - μ_r clipped to [0, 1] (f is quadratic along it)."""

    def _block(self, mu, h, beta, marg_norm2):
        rows, width = mu.shape[0], mu[0].size if mu.shape[0] else 0
        grad = h - self.gamma * mu
        scale = (self.gamma + beta / self.reg).reshape((rows,) + (1,) * (mu.ndim - 1))
        with np.errstate(invalid="ignore"):
            arg = np.where(np.isfinite(grad), mu + grad / scale, -np.inf)
        u = l2max(arg.reshape(rows, width), 1.0, self.projection)[1].reshape(mu.shape)
        step = u - mu
        curv = self.gamma * (step * step).reshape(rows, width).sum(axis=1) + marg_norm2(step) / self.reg
        eta = _steps(_dot_rows(grad, step), curv, 1.0)
        mu += eta.reshape(scale.shape) * step

    def update_edges(self, d):
        regions = self.regions
        beta = regions.card[regions.ends[0]] + regions.card[regions.ends[1]]
        self._block(self.mu_e, regions.edge_hat(d), beta,
                    lambda s: (regions.edge_to_node(s) ** 2).sum(axis=(0, 2)))

    def update_nodes(self, hn):
        p = self.regions.n_parents
        self._block(self.mu_n, hn, p, lambda s: p * (s * s).sum(axis=1))

    def evaluate(self):
        primal, bound, hn, he, _, penalty = super().evaluate()
        regions, gamma = self.regions, self.gamma
        primal -= 0.5 * gamma * float((self.mu_n ** 2).sum() + (self.mu_e ** 2).sum())
        dual = l2max(hn, gamma, self.projection)[0].sum() + \
            l2max(he.reshape(regions.n_edges, regions.k ** 2), gamma, self.projection)[0].sum() + penalty
        return primal, bound, float(dual - primal)


def primal_solver(regions, method, reg, gamma, projection, seed):
    """Generator of (objective, bound, x, measure) tuples (see `dual`) for "bcfw" (objective f(μ) of eq. 8) or "sdca" (objective
    f(μ) - γ/2‖μ‖² + qγ/2, shifted as the paper shifts the L2 objective)."""
    solver = BCFW(regions, reg) if method == "bcfw" else SDCA(regions, reg, gamma, projection)
    shift = 0.5 * gamma * regions.n_regions if method == "sdca" else 0.0
    rng = np.random.default_rng(seed)
    while True:
        solver.sweep(rng)
        primal, bound, gap = solver.evaluate()
        yield primal + shift, bound, solver.decode(), max(gap, 0.0) / max(1.0, abs(primal))


# -- helpers --------------------------------------------------------------------------------

def _onehot(idx, width):
    out = np.zeros((idx.shape[0], width))
    out[np.arange(idx.shape[0]), idx] = 1.0
    return out


def _dot(mu, h):
    """<μ, h> with 0 · (-inf) = 0."""
    with np.errstate(invalid="ignore"):
        return float(np.where(mu != 0, mu * h, 0.0).sum())


def _dot_rows(h, step):
    with np.errstate(invalid="ignore"):
        return np.where(step != 0, h * step, 0.0).reshape(h.shape[0], -1 if h.shape[0] else 0).sum(axis=1)


def _steps(lin, curv, weight):
    """weight·lin / curv clipped to [0, 1]; a flat direction (curv = 0) takes the full step
    when it ascends."""
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(curv > 0, weight * lin / curv, np.where(lin > 0, 1.0, 0.0))
    return np.clip(eta, 0.0, 1.0)
