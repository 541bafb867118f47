"""Cython kernels against their plain-NumPy twins (DESIGN.md, "Kernels")."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fwcore import _kernels as K
from fwcore.generators import grid, potts_grid, random_grid
from fwcore.model import PairwiseMRF
from fwcore.marginals.rho import entropy_weights

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # twins meet inf * 0

LOG_FLOOR = np.log(5e-324)
SETTINGS = settings(max_examples=30, deadline=None)
seeds = st.integers(0, 2**32 - 1)


# -- random inputs ----------------------------------------------------------------------

def random_model(rng, neg_inf=True, scale=None):
    """A small model: cardinality-1 and multi-label blocks, potentials up to +-1e3, some
    -inf entries."""
    n = int(rng.integers(1, 6))
    card = rng.integers(1, 5, n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    sizes = np.concatenate([card, card[edges[:, 0]] * card[edges[:, 1]]]).astype(np.int64)
    scale = scale or float(rng.choice([1.0, 10.0, 1e3]))
    theta = rng.uniform(-scale, scale, int(sizes.sum()))
    if neg_inf:
        theta[rng.random(theta.size) < 0.1] = -np.inf
    return PairwiseMRF.from_flat(card, edges, theta)


def random_marginals(rng, m, zeros=True):
    """Blockwise-normalised mu with entries down to 1e-300 and (optionally) exact zeros."""
    tiny = rng.random(m.dim) < 0.3
    mu = (0.5 + rng.random(m.dim)) * np.where(tiny, 10.0 ** rng.integers(-300, 0, m.dim), 1.0)
    if zeros:
        mu[rng.random(m.dim) < 0.1] = 0.0
    offs = block_offsets(m)
    for b in range(len(offs) - 1):
        blk = mu[offs[b]:offs[b + 1]]
        if blk.sum() == 0.0:
            blk[0] = 1.0
        blk /= blk.sum()
    return mu


def random_rho(rng, m):
    """Edge weights rho, node weights c_i = 1 - sum of rho at i (by explicit loops), and the
    per-entry kernel weights."""
    rho = rng.uniform(0.0, 1.0, m.n_edges)
    c = np.ones(m.n_vars)
    for e, (i, j) in enumerate(m.edges):
        c[i] -= rho[e]
        c[j] -= rho[e]
    return rho, c, entropy_weights(m, rho)


def block_offsets(m):
    return np.concatenate([m.node_off, m.edge_off[1:]])


def close(a, b, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# -- NumPy twins ------------------------------------------------------------------------

def twin_value_grad(m, mu, Kx):
    pos = mu > 0
    lg = np.where(pos, np.log(np.where(pos, mu, 1.0)), LOG_FLOOR)
    f = np.sum(np.where(pos, mu * (Kx * lg - m.theta), 0.0))
    return f, Kx * (1.0 + lg) - m.theta


def twin_entropies(mu, off):
    t = np.where(mu > 0, -mu * np.log(np.where(mu > 0, mu, 1.0)), 0.0)
    return np.array([t[off[b]:off[b + 1]].sum() for b in range(len(off) - 1)])


def twin_mutual_information(m, mu):
    """H(row sums) + H(column sums) - H(mu_e) of each edge block."""
    out = []
    for e in range(m.n_edges):
        blk = m.pairwise(e, mu)
        h = [twin_entropies(v.ravel(), [0, v.size])[0] for v in (blk.sum(1), blk.sum(0), blk)]
        out.append(h[0] + h[1] - h[2])
    return np.array(out)


def twin_line_derivs(m, mu, d, gamma, Kx):
    x = mu + gamma * d
    nz = d != 0
    lg = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), LOG_FLOOR)
    p1 = np.sum((Kx * (1.0 + lg) - m.theta)[nz] * d[nz])
    p2 = np.sum((Kx * np.where(x > 0, d * d / np.where(x > 0, x, 1.0), 0.0))[nz])
    return (np.inf if np.isnan(p1) else p1), p2  # -inf + inf: mass enters impossible states


class SplitMix64:
    """The kernel's inline generator: splitmix64, integers in [0, m) by multiply-shift."""
    MASK = 2**64 - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def randint(self, m):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        z ^= z >> 31
        return ((z >> 32) * m) >> 32

    def shuffle(self, a, lo, hi):
        """Fisher-Yates of a[lo:hi] in place, from the last entry down."""
        for t in range(hi - 1, lo, -1):
            j = lo + self.randint(t - lo + 1)
            a[t], a[j] = a[j], a[t]


def icm_sweep_orders(order, seed, block):
    """The kernel's visiting order of each sweep: `order` itself without a seed; with one,
    the blocks of `block` consecutive entries in a fresh random order, each block's entries
    shuffled in place as it is reached (so a block keeps its entries across sweeps)."""
    order = list(order)
    if seed is None:
        while True:
            yield list(order)
    rng = SplitMix64(seed)
    blocks = list(range(-(-len(order) // block)))
    while True:
        rng.shuffle(blocks, 0, len(blocks))
        out = []
        for b in blocks:
            lo, hi = b * block, min(b * block + block, len(order))
            rng.shuffle(order, lo, hi)
            out.extend(order[lo:hi])
        yield out


def twin_icm(m, x, order, max_sweeps, seed=None, block=1024, skip_clean=False):
    """Pure-Python ICM with the kernel's rules (strict improvement, the orders of
    `icm_sweep_orders`; local scores summed node term first, then the CSR neighbours in
    order). skip_clean: skip an entry whose variable was evaluated before and none of whose
    neighbours has moved since. Returns (x, sweeps, converged, evaluations)."""
    x = x.copy()
    dirty = np.ones(m.n_vars, dtype=bool)
    evaluations = 0
    orders = icm_sweep_orders(order, seed, block)
    for sweep in range(1, max_sweeps + 1):
        changed = False
        for v in next(orders):
            if skip_clean:
                if not dirty[v]:
                    continue
                dirty[v] = False
            evaluations += 1
            scores = m.unary(v).copy()
            for slot in range(m.adj_start[v], m.adj_start[v + 1]):
                table = m.pairwise(m.adj_edge[slot])
                u = m.adj_var[slot]
                scores += table[:, x[u]] if m.adj_first[slot] else table[x[u], :]
            best = int(np.argmax(scores))
            if scores[best] > scores[x[v]]:
                x[v] = best
                changed = True
                dirty[m.adj_var[m.adj_start[v]:m.adj_start[v + 1]]] = True
        if not changed:
            return x, sweep, True, evaluations
    return x, max_sweeps, False, evaluations


def twin_project(v, offsets, z=1.0):
    """Sort-based simplex projection (Duchi et al. 2008, Fig. 1), block by block."""
    out = v.copy()
    for b in range(len(offsets) - 1):
        blk = v[offsets[b]:offsets[b + 1]]
        u = np.sort(blk)[::-1]
        css = np.cumsum(u)
        r = np.nonzero(u * np.arange(1, u.size + 1) > css - z)[0][-1]
        out[offsets[b]:offsets[b + 1]] = np.maximum(blk - (css[r] - z) / (r + 1), 0.0)
    return out


# -- TRW value, gradient, entropies, mutual information --------------------------------

@SETTINGS
@given(seeds)
def test_trw_value_grad_matches_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    mu = random_marginals(rng, m)
    w = random_rho(rng, m)[2]
    grad = np.empty(m.dim)
    f = K.trw_value_grad(m.theta, mu, w, grad)
    f_np, grad_np = twin_value_grad(m, mu, w)
    assert not np.isnan(f) and not np.isnan(grad).any()
    close(f, f_np, atol=1e-12 * np.sum(np.abs(np.nan_to_num(m.theta * mu)) + 1))
    close(grad, grad_np, atol=1e-12)


def test_trw_value_matches_definition_on_interior_point():
    """f = -(<theta, mu> + sum c_i H(mu_i) + sum rho_e H(mu_e)) from the model's views."""
    m = potts_grid(3, 4, n_labels=3, coupling=2.0, seed=1)
    rng = np.random.default_rng(0)
    mu = 0.5 * random_marginals(rng, m, zeros=False) + 0.5 * m.uniform_marginals()
    rho, c, w = random_rho(rng, m)
    nodes, edges = m.split_marginals(mu)
    H = lambda p: -np.sum(p * np.log(p))  # noqa: E731
    trw = (m.theta @ mu + sum(ci * H(p) for ci, p in zip(c, nodes))
           + sum(r * H(p) for r, p in zip(rho, edges)))
    grad = np.empty(m.dim)
    close(K.trw_value_grad(m.theta, mu, w, grad), -trw)
    # the gradient is the derivative of f: central differences on a few coordinates
    for k in rng.choice(m.dim, 5, replace=False):
        h = 1e-6 * mu[k]
        fp = K.trw_value_grad(m.theta, mu + h * (np.arange(m.dim) == k), w, np.empty(m.dim))
        fm = K.trw_value_grad(m.theta, mu - h * (np.arange(m.dim) == k), w, np.empty(m.dim))
        close((fp - fm) / (2 * h), grad[k], rtol=1e-5, atol=1e-5)


def test_trw_value_with_impossible_states():
    """(-inf) * 0 = 0 in the value; mass on an impossible state gives f = +inf."""
    m = PairwiseMRF([2], [[0.0, -np.inf]])
    grad = np.empty(2)
    w = entropy_weights(m, np.zeros(0))
    f0 = K.trw_value_grad(m.theta, np.array([1.0, 0.0]), w, grad)
    assert f0 == 0.0 and grad[0] == 1.0 and grad[1] == np.inf
    f1 = K.trw_value_grad(m.theta, np.array([0.5, 0.5]), w, grad)
    assert f1 == np.inf


@SETTINGS
@given(seeds)
def test_entropy_weights_are_blockwise_c_and_rho(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    rho, c, w = random_rho(rng, m)
    assert w.shape == (m.dim,) and w.dtype == np.float64 and w.flags.c_contiguous
    for i in range(m.n_vars):
        close(w[m.node_off[i]:m.node_off[i + 1]], c[i], atol=1e-15)
    for e in range(m.n_edges):
        assert (w[m.edge_off[e]:m.edge_off[e + 1]] == rho[e]).all()


@SETTINGS
@given(seeds)
def test_entropies_and_mutual_information_match_twins(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    mu = random_marginals(rng, m)
    close(K.block_entropies(mu, m.node_off, np.empty(m.n_vars)),
          twin_entropies(mu, m.node_off), atol=1e-13)
    close(K.block_entropies(mu, m.edge_off, np.empty(m.n_edges)),
          twin_entropies(mu, m.edge_off), atol=1e-13)
    mi = K.edge_mutual_information(mu, m.graph, np.empty(m.n_edges))
    close(mi, twin_mutual_information(m, mu), atol=1e-12)
    assert (mi >= -1e-12).all()


def test_mutual_information_of_consistent_marginals():
    """On an independent product MI = 0; on a perfectly correlated binary edge MI = log 2."""
    m = grid(1, 2)
    p, q = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    mu = np.concatenate([p, q, np.outer(p, q).ravel()])
    out = np.empty(1)
    close(K.edge_mutual_information(mu, m.graph, out), [0.0], atol=1e-15)
    mu = np.concatenate([[0.5, 0.5], [0.5, 0.5], [0.5, 0.0, 0.0, 0.5]])
    close(K.edge_mutual_information(mu, m.graph, out), [np.log(2)])


# -- line search -----------------------------------------------------------------------

def fw_direction(rng, m, mu, delta):
    """d = (1 - delta) mu(s) + delta u0 - mu for a random vertex s, and its gamma_max = 1."""
    s = rng.integers(0, m.card)
    return (1 - delta) * m.marginal_vector(s) + delta * m.uniform_marginals() - mu


def twin_line_search(m, mu, d, w, gamma_max):
    """Bisection on the sign of phi' to full precision (the reference minimiser)."""
    lo, hi = 0.0, gamma_max
    if twin_line_derivs(m, mu, d, 0.0, w)[0] >= 0:
        return 0.0
    if twin_line_derivs(m, mu, d, gamma_max, w)[0] <= 0:
        return gamma_max
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if twin_line_derivs(m, mu, d, mid, w)[0] < 0:
            lo = mid
        else:
            hi = mid
    return lo


@SETTINGS
@given(seeds)
def test_line_derivs_match_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    mu = random_marginals(rng, m)
    w = random_rho(rng, m)[2]
    d = fw_direction(rng, m, mu, float(rng.choice([0.0, 1e-3, 0.1])))
    for gamma in (0.0, float(rng.random()), 1.0):
        p1, p2 = K.trw_line_derivs(m.theta, mu, d, gamma, w)
        q1, q2 = twin_line_derivs(m, mu, d, gamma, w)
        assert not np.isnan(p1) and not np.isnan(p2)
        scale = np.sum(np.abs(np.nan_to_num(m.theta * d, posinf=0, neginf=0))) + np.sum(
            np.abs(d)) * 1e3
        if np.isfinite(q1):
            close(p1, q1, rtol=1e-12, atol=1e-12 * scale)
        else:
            assert p1 == q1
        close(p2, q2, rtol=1e-12, atol=1e-12 * abs(q2))


def test_line_derivs_are_derivatives_of_value():
    m = random_grid(3, coupling=3.0, seed=2)
    rng = np.random.default_rng(2)
    mu = random_marginals(rng, m, zeros=False)
    w = random_rho(rng, m)[2]
    d = fw_direction(rng, m, mu, 0.05)
    f = lambda g: K.trw_value_grad(m.theta, mu + g * d, w, np.empty(m.dim))  # noqa: E731
    p1, p2 = K.trw_line_derivs(m.theta, mu, d, 0.3, w)
    h = 1e-5
    close(p1, (f(0.3 + h) - f(0.3 - h)) / (2 * h), rtol=1e-6)
    close(p2, (f(0.3 + h) - 2 * f(0.3) + f(0.3 - h)) / h**2, rtol=1e-3)


@SETTINGS
@given(seeds)
def test_line_search_finds_the_minimiser(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng, neg_inf=False, scale=float(rng.choice([1.0, 10.0, 1e3])))
    delta = float(rng.choice([1e-3, 0.1]))
    u0 = m.uniform_marginals()
    mu = (1 - delta) * random_marginals(rng, m) + delta * u0  # an interior point of M_delta
    w = random_rho(rng, m)[2]
    d = fw_direction(rng, m, mu, delta)
    gamma, passes = K.trw_line_search(m.theta, mu, d, w, 1.0, rtol=1e-13)
    assert 0.0 <= gamma <= 1.0 and 1 <= passes <= 60
    ref = twin_line_search(m, mu, d, w, 1.0)
    fval = lambda g: twin_value_grad(m, mu + g * d, w)[0]  # noqa: E731
    # phi may be non-convex (c_i < 0): the kernel returns a stationary point; with a
    # bracketing search both are roots of phi', so compare values when they differ
    if abs(gamma - ref) > 1e-8:
        p1 = twin_line_derivs(m, mu, d, gamma, w)[0]
        assert abs(p1) <= 1e-8 * abs(twin_line_derivs(m, mu, d, 0.0, w)[0]) or gamma == 1.0
    assert fval(gamma) <= fval(0.0) + 1e-9 * abs(fval(0.0))


def test_line_search_boundary_cases():
    m = random_grid(2, seed=0)
    w = random_rho(np.random.default_rng(0), m)[2]
    mu = m.uniform_marginals()
    s = m.marginal_vector(np.zeros(m.n_vars, dtype=int))
    # ascent direction at gamma = 0: no step
    grad = np.empty(m.dim)
    K.trw_value_grad(m.theta, mu, w, grad)
    d_up = np.zeros(m.dim)
    d_up[np.argmax(grad)] = 1e-3
    assert K.trw_line_search(m.theta, mu, d_up, w, 1.0) == (0.0, 1)
    # huge potentials favouring s: phi' < 0 up to gamma_max < 1, which is returned
    theta = 1e3 * (2 * s - 1)
    gamma, _ = K.trw_line_search(theta, mu, s - mu, w, 0.5)
    assert gamma == 0.5
    # towards the undelta'd vertex (entries reach 0 at gamma = 1): stays strictly inside
    gamma, passes = K.trw_line_search(m.theta, mu, s - mu, w, 1.0)
    assert 0.0 < gamma < 1.0 and passes < 60


@SETTINGS
@given(seeds)
def test_add_vertices_matches_its_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    delta = float(rng.choice([0.0, 0.1]))
    atoms, alpha, x = random_correction_set(rng, m, delta)
    out = rng.random(m.dim)
    expected = out + x
    K.add_vertices(out, m.graph, atoms, alpha, m.uniform_marginals(), delta)
    close(out, expected, rtol=1e-12, atol=1e-15)


# -- MFW correction over V (Barrier FW Alg. 5) -----------------------------------------

def twin_mfw_correction(m, w, atoms, alpha, x, delta, tol, max_steps, drop_tol):
    """Barrier FW Alg. 5 on dense vertices: away-step FW over conv(V_delta) (rows of -1
    are u0) with the exact line search (`trw_line_search`, twinned above); weights <=
    drop_tol dropped after each step. Returns (steps, pFW gap, f, alpha, x)."""
    u0 = m.uniform_marginals()
    V = np.array([u0 if a[0] < 0 else (1 - delta) * m.marginal_vector(a) + delta * u0
                  for a in atoms])
    alpha, x = alpha.copy(), x.copy()
    steps = 0
    while True:
        f, g = twin_value_grad(m, x, w)
        scores = V @ g
        gap = scores[alpha > 0].max() - scores.min()
        if gap <= tol or steps == max_steps:
            return steps, gap, f, alpha, x
        i_s = int(np.argmin(scores))
        i_v = int(np.argmax(np.where(alpha > 0, scores, -np.inf)))
        gx = g @ x
        if gx - scores[i_s] >= scores[i_v] - gx or alpha[i_v] >= 1 - 1e-15:
            d = V[i_s] - x
            gamma = K.trw_line_search(m.theta, x, d, w, 1.0)[0]
            alpha *= 1 - gamma
            alpha[i_s] += gamma
        else:
            gamma_max = alpha[i_v] / (1 - alpha[i_v])
            d = x - V[i_v]
            gamma = K.trw_line_search(m.theta, x, d, w, gamma_max)[0]
            alpha *= 1 + gamma
            alpha[i_v] = 0.0 if gamma >= gamma_max else alpha[i_v] - gamma
        x = x + gamma * d
        drop = (alpha <= drop_tol) & (alpha != 0)
        if drop.any():
            total = alpha[drop].sum()
            x = (x - alpha[drop] @ V[drop]) / (1 - total)
            alpha = np.where(alpha <= drop_tol, 0.0, alpha / (1 - total))
        steps += 1


def random_correction_set(rng, m, delta):
    """Distinct assignments (and u0 when delta > 0) with random weights, and their x."""
    rows = {tuple(rng.integers(0, m.card)) for _ in range(int(rng.integers(1, 8)))}
    atoms = np.array(sorted(rows), dtype=np.int32).reshape(-1, m.n_vars)
    if delta > 0:
        atoms = np.vstack([atoms, np.full(m.n_vars, -1, dtype=np.int32)])
    alpha = rng.dirichlet(np.ones(len(atoms)))
    alpha[(rng.random(len(atoms)) < 0.2) & (alpha < alpha.max())] = 0.0
    alpha /= alpha.sum()
    u0 = m.uniform_marginals()
    x = sum(a * (u0 if r[0] < 0 else (1 - delta) * m.marginal_vector(r) + delta * u0)
            for a, r in zip(alpha, atoms))
    return np.ascontiguousarray(atoms), alpha, x


@SETTINGS
@given(seeds)
def test_mfw_correction_matches_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng, neg_inf=False, scale=float(rng.choice([1.0, 10.0])))
    delta = float(rng.choice([0.0, 1e-3, 0.1]))
    w = random_rho(rng, m)[2]
    atoms, alpha, x = random_correction_set(rng, m, delta)
    tol, max_steps = float(rng.choice([1e-6, 1e-3])), int(rng.integers(0, 12))
    steps, gap, f, a_twin, x_twin = twin_mfw_correction(m, w, atoms, alpha, x, delta, tol,
                                                        max_steps, 1e-12)
    a, y = alpha.copy(), x.copy()
    out = K.mfw_correction(m.theta, m.graph, w, atoms, a, y, m.uniform_marginals(), delta,
                           tol, max_steps, 1e-12, 0.0, np.empty(m.dim), np.empty(m.dim),
                           np.empty(len(atoms)))
    assert out[0] == steps
    scale = 1.0 + np.abs(m.theta).sum()
    close(out[1], gap, rtol=1e-7, atol=1e-9 * scale)
    close(out[2], f, rtol=1e-7, atol=1e-9 * scale)
    close(a, a_twin, atol=1e-8)
    close(y, x_twin, atol=1e-8)
    assert (a >= 0).all() and abs(a.sum() - 1) < 1e-12


def test_mfw_correction_stops_at_its_time_limit_and_on_an_infinite_value():
    m = random_grid(3, coupling=2.0, seed=1)
    w = random_rho(np.random.default_rng(1), m)[2]
    atoms, alpha, x = random_correction_set(np.random.default_rng(3), m, 0.1)
    scratch = np.empty(m.dim), np.empty(m.dim), np.empty(len(atoms))
    out = K.mfw_correction(m.theta, m.graph, w, atoms, alpha.copy(), x.copy(),
                           m.uniform_marginals(), 0.1, 0.0, 1000, 1e-12, 1e-9, *scratch)
    assert out[0] == 0 and out[1] > 0
    theta = m.theta.copy()
    theta[np.flatnonzero(x > 0)[0]] = -np.inf  # mass on an impossible state: f = +inf
    out = K.mfw_correction(theta, m.graph, w, atoms, alpha.copy(), x.copy(),
                           m.uniform_marginals(), 0.1, 0.0, 1000, 1e-12, 0.0, *scratch)
    assert out[0] == 0 and out[2] == np.inf


# -- scores of assignments -------------------------------------------------------------

@SETTINGS
@given(seeds)
def test_score_assignments_matches_its_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    atoms = np.ascontiguousarray(rng.integers(0, m.card, (4, m.n_vars)), dtype=np.int32)
    out = np.empty(4)
    K.score_assignments(m.theta, m.graph, atoms, out)
    close(out, m.score(atoms))


@SETTINGS
@given(seeds)
def test_add_assignment_matches_its_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    atom = np.ascontiguousarray(rng.integers(0, m.card), dtype=np.int32)
    x = rng.random(m.dim)
    w = float(rng.normal())
    expected = x + w * m.marginal_vector(atom)
    K.add_assignment(x, m.graph, atom, w)
    close(x, expected)


# -- ICM -------------------------------------------------------------------------------

def assert_local_optimum(m, x):
    base = m.score(x)
    slack = 1e-12 * np.abs(m.theta[np.isfinite(m.theta)]).sum()
    for v in range(m.n_vars):
        for a in range(m.card[v]):
            y = x.copy()
            y[v] = a
            assert not m.score(y) > base + slack


@SETTINGS
@given(seeds)
def test_icm_matches_twin(seed):
    """Index and seeded block orders (blocks of 1, 2, 3 entries or one block); skipping
    clean variables changes nothing: kernel and twin, with and without it, agree."""
    rng = np.random.default_rng(seed)
    m = random_model(rng)
    x0 = rng.integers(0, m.card).astype(np.int32)
    order = rng.permutation(m.n_vars).astype(np.int32)
    icm_seed = None if rng.random() < 0.3 else int(rng.integers(2**63))
    block = int(rng.choice([1, 2, 3, 1024]))
    want, want_sweeps, want_conv, _ = twin_icm(m, x0, order, 50, icm_seed, block)
    for skip in (True, False):
        x = x0.copy()
        score, sweeps, converged = K.icm(m.theta, m.graph, x, 50, order, icm_seed, block, skip)
        np.testing.assert_array_equal(x, want)
        assert (sweeps, converged) == (want_sweeps, want_conv)
    y, sweeps, converged, _ = twin_icm(m, x0, order, 50, icm_seed, block, skip_clean=True)
    np.testing.assert_array_equal(y, want)
    assert (sweeps, converged) == (want_sweeps, want_conv)
    if np.isfinite(score):
        close(score, m.score(x), atol=1e-12 * np.abs(m.theta[np.isfinite(m.theta)]).sum())
    else:
        assert np.isneginf(score) and np.isneginf(m.score(x))
    assert_local_optimum(m, x)


@pytest.mark.parametrize("block", [6, 1024])
def test_icm_seeded_order_is_reproducible_and_matches_twin(block):
    m = potts_grid(4, 5, n_labels=3, coupling=2.0, seed=3)
    x0 = np.zeros(m.n_vars, dtype=np.int32)
    runs = []
    for _ in range(2):
        x = x0.copy()
        runs.append((K.icm(m.theta, m.graph, x, 20, None, 12345, block), x))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    (score, sweeps, converged), x = runs[0]
    assert converged
    y, want_sweeps, want_conv, _ = twin_icm(m, x0, range(m.n_vars), 20, 12345, block)
    np.testing.assert_array_equal(x, y)
    assert (sweeps, converged) == (want_sweeps, want_conv)
    close(score, m.score(x))
    assert_local_optimum(m, x)


def test_icm_seeded_sweeps_visit_every_entry_once_in_block_order():
    orders = icm_sweep_orders(range(50), 7, 8)
    seen = [next(orders) for _ in range(3)]
    for sweep in seen:
        assert sorted(sweep) == list(range(50))
        runs = [[sweep[0]]]  # each block (entries 8b..8b+7) is visited in one run
        for v in sweep[1:]:
            if v // 8 == runs[-1][0] // 8:
                runs[-1].append(v)
            else:
                runs.append([v])
        assert sorted(len(r) for r in runs) == [2] + [8] * 6
    assert seen[0] != seen[1] and seen[1] != seen[2]


def test_icm_warm_start_skips_clean_variables():
    """From a perturbed local optimum later sweeps evaluate only the neighbourhoods of the
    moves; the result is the full-sweep one and a local optimum."""
    m = random_grid(12, coupling=1.0, seed=4)
    x = np.zeros(m.n_vars, dtype=np.int32)
    K.icm(m.theta, m.graph, x, 100, None, 1)
    x0 = x.copy()
    x0[np.random.default_rng(0).choice(m.n_vars, 10, replace=False)] ^= 1
    full = twin_icm(m, x0, range(m.n_vars), 100, 99, 16)
    skip = twin_icm(m, x0, range(m.n_vars), 100, 99, 16, skip_clean=True)
    np.testing.assert_array_equal(full[0], skip[0])
    assert full[1:3] == skip[1:3] and full[2] and full[1] >= 2
    assert skip[3] < m.n_vars + (full[1] - 1) * m.n_vars / 4 and skip[3] < full[3] / 2
    y = x0.copy()
    assert K.icm(m.theta, m.graph, y, 100, None, 99, 16)[1:] == full[1:3]
    np.testing.assert_array_equal(y, full[0])
    assert_local_optimum(m, y)


def test_icm_keeps_state_on_all_minus_inf_rows_and_respects_max_sweeps():
    m = PairwiseMRF([3, 2], [[-np.inf] * 3, [0.0, 1.0]], [(0, 1)], [np.full((3, 2), -np.inf)])
    x = np.array([1, 0], dtype=np.int32)
    score, sweeps, converged = K.icm(m.theta, m.graph, x, 10)
    assert np.isneginf(score) and list(x) == [1, 0] and converged and sweeps == 1
    m = random_grid(4, coupling=3.0, seed=5)
    x = np.zeros(16, dtype=np.int32)
    assert K.icm(m.theta, m.graph, x, 1)[1:] == (1, False)


# -- simplex projection ----------------------------------------------------------------

def twin_ac_decode(m, x):
    """`K.ac_decode` in NumPy: arc consistency as a fixpoint over the edges with a -inf
    entry; variables in index order, each trying x's state (else the first of highest
    local score: node term, then the CSR neighbours already set) and, when arc
    consistency empties a domain, deleting that state and trying the next; once a
    variable has no state left, the fewest -inf terms, then x's state, then the score."""
    theta, card, x = m.theta, m.card, np.array(x, dtype=np.int32)
    ok = [np.isfinite(theta[m.edge_off[e]:m.edge_off[e + 1]]).reshape(card[i], card[j])
          for e, (i, j) in enumerate(m.edges)]
    hard = [e for e in range(m.n_edges) if not ok[e].all()]

    def closure(alive):
        changed = True
        while changed:
            changed = False
            for e in hard:
                i, j = m.edges[e]
                for u, w, table in ((i, j, ok[e]), (j, i, ok[e].T)):
                    keep = alive[w] & (table & alive[u][:, None]).any(axis=0)
                    changed |= bool((keep != alive[w]).any())
                    alive[w] = keep
        return all(a.any() for a in alive)

    def local(v, a, done):
        """(number of -inf terms, finite sum) of v at state a against the set variables."""
        terms = [theta[m.node_off[v] + a]]
        for slot in range(m.adj_start[v], m.adj_start[v + 1]):
            u, e = m.adj_var[slot], m.adj_edge[slot]
            if done[u]:
                k = a * card[u] + x[u] if m.adj_first[slot] else x[u] * card[v] + a
                terms.append(theta[m.edge_off[e] + k])
        finite = [t for t in terms if t != -np.inf]
        return len(terms) - len(finite), sum(finite[1:], finite[0]) if finite else 0.0

    alive = [np.isfinite(theta[m.node_off[v]:m.node_off[v + 1]]) for v in range(m.n_vars)]
    broken = not all(a.any() for a in alive) or not closure(alive)
    done = np.zeros(m.n_vars, dtype=bool)
    for v in range(m.n_vars):
        while not broken:
            live = np.flatnonzero(alive[v])
            if alive[v][x[v]]:
                choice = x[v]
            else:
                values = [local(v, a, done)[1] for a in live]
                choice = live[int(np.argmax(values))]
            if live.size == 1:
                break
            trial = [a.copy() for a in alive]
            trial[v][:] = False
            trial[v][choice] = True
            if closure(trial):
                alive = trial
                break
            alive[v][choice] = False
            broken = not alive[v].any() or not closure(alive)
        if broken:
            keys = [local(v, a, done) for a in range(card[v])]
            fewest = min(k[0] for k in keys)
            tied = [a for a in range(card[v]) if keys[a][0] == fewest]
            choice = x[v] if x[v] in tied else tied[int(np.argmax([keys[a][1] for a in tied]))]
        x[v] = choice
        done[v] = True
    return x


def planted_model(rng, forest):
    """A model with many -inf entries around a planted feasible labelling: a forest or a
    random graph of 2-7 variables."""
    n = int(rng.integers(2, 8))
    card = rng.integers(1, 5, n)
    if forest:
        pairs = [(int(rng.integers(0, j)), j) for j in range(1, n) if rng.random() < 0.9]
    else:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    m = PairwiseMRF.from_flat(
        card, edges, np.zeros(int(card.sum() + (card[edges[:, 0]] * card[edges[:, 1]]).sum())))
    theta = rng.normal(size=m.dim)
    theta[rng.random(m.dim) < float(rng.choice([0.2, 0.5, 0.8]))] = -np.inf
    planted = rng.integers(0, card)
    theta[m.node_off[:-1] + planted] = rng.normal(size=n)
    theta[m.edge_off[:-1] + planted[edges[:, 0]] * card[edges[:, 1]] + planted[edges[:, 1]]] = 0.0
    return m.with_theta(theta), planted


@SETTINGS
@given(seeds)
def test_ac_decode_matches_twin(seed):
    rng = np.random.default_rng(seed)
    m = random_model(rng) if rng.random() < 0.3 else planted_model(rng, rng.random() < 0.3)[0]
    x0 = rng.integers(0, m.card).astype(np.int32)
    x = x0.copy()
    feasible = K.ac_decode(m.theta, m.graph, x)
    np.testing.assert_array_equal(x, twin_ac_decode(m, x0))
    assert feasible == np.isfinite(m.score(x))


def test_ac_decode_is_feasible_on_feasible_forests_and_keeps_feasible_labellings():
    for seed in range(200):
        rng = np.random.default_rng(seed)
        m, planted = planted_model(rng, forest=seed % 2 == 0)
        x = planted.astype(np.int32)
        assert K.ac_decode(m.theta, m.graph, x)
        np.testing.assert_array_equal(x, planted)
        x = rng.integers(0, m.card).astype(np.int32)
        feasible = K.ac_decode(m.theta, m.graph, x)
        assert feasible == np.isfinite(m.score(x))
        if seed % 2 == 0:  # a forest: arc consistency is backtrack-free
            assert feasible, seed


@SETTINGS
@given(seeds)
def test_projections_match_twin(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, int(rng.integers(1, 8)))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    v = rng.normal(0, float(rng.choice([1e-3, 1.0, 1e3])), offsets[-1])
    v[rng.random(v.size) < 0.2] = 0.5  # ties
    z = float(rng.choice([1.0, 0.3, 7.0]))
    want = twin_project(v, offsets, z)
    for kernel in (K.project_simplex_sort, K.project_simplex_pivot):
        w = v.copy()
        kernel(w, offsets, z)
        close(w, want, atol=1e-12 * max(1.0, np.abs(v).max()))
        sums = np.add.reduceat(w, offsets[:-1])
        close(sums, z, rtol=1e-12)
        assert (w >= 0).all()


def test_projection_is_the_nearest_point():
    """KKT: the projection of v is w = max(v - tau, 0); perturbations within the simplex
    never get closer to v."""
    rng = np.random.default_rng(7)
    v = rng.normal(size=30)
    offsets = np.array([0, 30], dtype=np.int64)
    w = v.copy()
    K.project_simplex_pivot(w, offsets, seed=3)
    for _ in range(200):
        p = rng.dirichlet(np.ones(30) * 0.3)
        assert np.sum((v - w) ** 2) <= np.sum((v - p) ** 2) + 1e-12
    one = np.array([-5.0])  # a cardinality-1 block projects to z
    K.project_simplex_sort(one, np.array([0, 1], dtype=np.int64), 2.0)
    assert one[0] == 2.0


def test_projection_rejects_bad_radius():
    with pytest.raises(ValueError, match="z must be a positive"):
        K.project_simplex_sort(np.ones(3), np.array([0, 3], dtype=np.int64), 0.0)
    with pytest.raises(ValueError, match="z must be a positive"):
        K.project_simplex_pivot(np.ones(3), np.array([0, 3], dtype=np.int64), np.nan)


def test_icm_order_subset_moves_only_listed_variables():
    m = random_grid(5, seed=3)
    x = np.zeros(m.n_vars, dtype=np.int32)
    listed = np.array([2, 7, 11], dtype=np.int32)
    K.icm(m.theta, m.graph, x, order=listed)
    others = np.setdiff1d(np.arange(m.n_vars), listed)
    assert (x[others] == 0).all()
    with pytest.raises(ValueError, match="order"):
        K.icm(m.theta, m.graph, x, order=np.array([m.n_vars], dtype=np.int32))
    with pytest.raises(ValueError, match="block"):
        K.icm(m.theta, m.graph, x, block=0)
