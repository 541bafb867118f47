"""Distributions over perfect matchings: exact permanents, reweighted Bethe entropies and
Frank-Wolfe marginal inference (MLE-Struct Sec. 4.1, App. C, D, F).

The model: p(pi) ∝ exp(sum_i W[i, pi(i)]) over the perfect matchings pi of a bipartite graph
(rows to columns; Z = perm(exp W)) or of the complete graph on n vertices (n even; each edge
{i, j} counted once with weight W[i, j] of a symmetric W). Edge marginals tau live in the
perfect-matching polytope M (the Birkhoff polytope in the bipartite case).

Flat layout (what the FW engine and the learners see): bipartite tau is ``T.ravel()`` (N^2
entries, row-major); general tau lists the edges i < j in ``np.triu_indices(n, 1)`` order.

Reweighted entropy (MLE-Struct App. C, H'_rho with the vertex terms, which vanish on perfect
matchings, dropped; one rho for every vertex, so rho_i + rho_j - 1 = 2 rho - 1):

    H_rho(tau) = sum_e (2 rho - 1) (1 - tau_e) log(1 - tau_e) - tau_e log tau_e

concave over M for rho in [0, 1] (Thm. C.1). rho = 1 is the Bethe entropy (Vontobel's
Bethe permanent): log Z_B = max_M <W, tau> + H_1 <= log Z for bipartite graphs (Gurvits),
and log Z <= log Z_B + (N/2) log 2 (Anari & Rezaei 2019). rho = 1/2 is the RW entropy
-sum tau log tau, an upper bound on the entropy of any distribution with marginals tau
(subadditivity over the rows), so log Z_RW >= log Z (MLE-Struct eq. 12); this holds for
every rho <= 1/2 and for general graphs too.

Free energy (minimised, DESIGN.md conventions): F_rho(tau) = -<W, tau> - H_rho(tau), so
-min_M F_rho = log Z_rho.
"""
import math
import time
from dataclasses import dataclass

import numpy as np

from ..fw import Domain, Objective, adaptive_delta, frank_wolfe, safeguarded_newton
from .oracles import max_weight_bipartite_matching, max_weight_perfect_matching
from ..checks import TIME, Interval, Options, check_params, validate_params
from ..loop import Callbacks, Deadline, Stopping, run_loop
from ..marginals.rho import ENTROPY, entropy_rho
from ..results import Record, Result, Status, Trace

__all__ = ["permanent", "log_permanent", "exact_matching_marginals",
           "exact_perfect_matching_marginals", "reweighted_entropy", "entropy_line_derivatives",
           "BipartiteMatchingPolytope", "PerfectMatchingPolytope", "matching_face",
           "MatchingFreeEnergy", "MatchingMarginals", "matching_marginals", "bethe_bp", "RHO",
           "DEFAULT_RHO"]

#: largest N for the exact permanent (cost O(2^N N^2))
MAX_EXACT_N = 20
#: largest n for the exact general perfect-matching distribution ((n-1)!! matchings)
MAX_EXACT_GENERAL_N = 12
_LOW_BITS = 12  # Ryser: columns enumerated in one vectorised block of 2^12 subsets


# -- validation ------------------------------------------------------------------------

def _square(W, name, allow_neg_inf):
    W = np.asarray(W)
    if W.dtype.kind not in "iuf" or W.dtype.kind == "b":
        raise TypeError(f"{name} must be a real numeric matrix; got dtype {W.dtype}")
    W = np.array(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"{name} must be a square N x N matrix; got shape {W.shape}")
    if W.shape[0] == 0:
        raise ValueError(f"{name} is empty; pass an N x N matrix with N >= 1")
    if np.isnan(W).any():
        raise ValueError(f"{name} contains NaN; every entry must be a number")
    if np.isposinf(W).any():
        raise ValueError(f"{name} contains +inf; entries must be finite")
    if not allow_neg_inf and np.isneginf(W).any():
        raise ValueError(f"{name} contains -inf; this method needs finite weights (use a large "
                         "negative weight, e.g. -50, to discourage a pair)")
    return W


#: ``rho`` of the matching entropy: H_rho is concave over M for rho in [0, 1] (Thm. C.1);
#: 1 is Bethe, 1/2 RW
RHO = Interval(0.0, 1.0)
#: rho of entropy='trw' when rho is None: the RW entropy of MLE-Struct Sec. 4.1
DEFAULT_RHO = 0.5
_PARAMS = {
    "method": Options("fw", "bp"),
    "graph": Options("bipartite", "general"),
    "entropy": ENTROPY,
    "rho": [RHO, None],
    "tol": Interval(0.0),
    "max_iter": Interval(0, integer=True),
    "max_time": TIME,
    "delta": Interval(0.0, 0.5, lo_open=True),
}
_BETHE_BP_PARAMS = {name: _PARAMS[name] for name in ("tol", "max_iter", "max_time")}


def _check_rho(rho):
    """rho in [0, 1] (1: Bethe, 0.5: RW) as a float."""
    return check_params({"rho": RHO}, rho=rho)["rho"]


# -- exact permanents (Ryser's formula) ---------------------------------------------------

def _ryser(A, grad=False):
    """perm(A) by Ryser's formula perm A = sum_S (-1)^(N-|S|) prod_i sum_{j in S} A_ij, and
    optionally d perm / dA_ij = sum_{S ∋ j} (-1)^(N-|S|) prod_{k != i} r_k(S).

    The low k columns' 2^k subset sums are one array; the high columns are walked in
    Gray-code order, each step adding or removing one column (O(2^N N) for the value,
    O(2^N N^2) with the gradient)."""
    n = A.shape[0]
    k = min(n, _LOW_BITS)
    h = n - k
    low = np.zeros((1 << k, n))
    pc_low = np.zeros(1 << k, dtype=np.int64)
    for b in range(k):  # subset sums by doubling: subsets containing b = those without + A[:, b]
        low[1 << b: 2 << b] = low[: 1 << b] + A[:, b]
        pc_low[1 << b: 2 << b] = pc_low[: 1 << b] + 1
    member_low = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(np.float64)
    sign_low = np.where((n - pc_low) % 2 == 0, 1.0, -1.0)
    rows_high = np.zeros(n)
    in_high = np.zeros(h, dtype=bool)
    total = 0.0
    G = np.zeros((n, n)) if grad else None
    for t in range(1 << h):
        if t:  # Gray code: flip the column of the lowest set bit of t
            b = (t & -t).bit_length() - 1
            in_high[b] = not in_high[b]
            rows_high += A[:, k + b] if in_high[b] else -A[:, k + b]
        R = low + rows_high
        sign = sign_low if in_high.sum() % 2 == 0 else -sign_low
        if not grad:
            total += sign @ np.prod(R, axis=1)
            continue
        # leave-one-out products prod_{k != i} R_k by prefix and suffix products (no division)
        pre = np.cumprod(np.hstack([np.ones((R.shape[0], 1)), R[:, :-1]]), axis=1)
        suf = np.hstack([np.cumprod(R[:, :0:-1], axis=1)[:, ::-1], np.ones((R.shape[0], 1))])
        P = pre * suf * sign[:, None]
        total += P[:, 0] @ R[:, 0]
        G[:, :k] += P.T @ member_low
        G[:, k:][:, in_high] += P.sum(axis=0)[:, None]
    return total, G


def _log_scale(L):
    """Sinkhorn balancing of exp(L) in the log domain: (L', u, v) with L' = L - u_i - v_j
    nearly doubly stochastic, which bounds the cancellation in Ryser's sum (every term is
    at most 1 while perm >= N!/N^N). Any scaling is exact: perm e^L = e^(sum u + sum v) perm e^L'.
    Returns None when a row or column is all -inf (perm = 0)."""
    from scipy.special import logsumexp
    if np.isneginf(L).all(axis=1).any() or np.isneginf(L).all(axis=0).any():
        return None
    u = np.zeros(L.shape[0])
    v = np.zeros(L.shape[1])
    for _ in range(100):
        u = logsumexp(L - v, axis=1)
        v = logsumexp(L - u[:, None], axis=0)
        if np.abs(logsumexp(L - u[:, None] - v, axis=1)).max() < 1e-3:
            break
    return L - u[:, None] - v, u, v


def _log_perm_and_grad(logA, grad):
    """(log perm e^logA, P) with P_ij = A_ij perm(minor_ij) / perm (None unless grad)."""
    scaled = _log_scale(logA)
    if scaled is None:
        return -math.inf, None
    Ls, u, v = scaled
    As = np.exp(Ls)
    p, G = _ryser(As, grad)
    if p <= 0.0:
        return -math.inf, None
    marg = As * G / p if grad else None
    return math.log(p) + u.sum() + v.sum(), marg


def _check_exact_size(n, name="A"):
    if n > MAX_EXACT_N:
        raise ValueError(f"{name} is {n} x {n}; the exact permanent costs O(2^N N^2) and is "
                         f"limited to N <= {MAX_EXACT_N}: use matching_marginals for larger N")


def permanent(A):
    """perm(A) = sum over permutations pi of prod_i A[i, pi(i)], by Ryser's formula with
    Gray-code updates (exact up to rounding for N <= 20). Nonnegative A is Sinkhorn-scaled
    first (see `log_permanent`); a real A with negative entries goes to Ryser directly."""
    A = _square(A, "A", allow_neg_inf=False)
    _check_exact_size(A.shape[0])
    if (A >= 0).all():
        with np.errstate(divide="ignore"):
            return math.exp(_log_perm_and_grad(np.log(A), False)[0])
    return float(_ryser(A)[0])


def log_permanent(A):
    """log perm(A) for a nonnegative A (-inf when A has no positive diagonal), computed on the
    Sinkhorn-scaled matrix so that neither overflow nor cancellation can occur."""
    A = _square(A, "A", allow_neg_inf=False)
    if (A < 0).any():
        raise ValueError("log_permanent needs a nonnegative A; use permanent(A) for signed "
                         "entries")
    _check_exact_size(A.shape[0])
    with np.errstate(divide="ignore"):
        return _log_perm_and_grad(np.log(A), False)[0]


def exact_matching_marginals(W):
    """Exact marginals of p(pi) ∝ exp(sum_i W[i, pi(i)]) over the permutations of N <= 20.

    W: N x N log-weights (-inf forbids a pair). Returns ``(marginals, log_z)``: the N x N
    matrix P(pi(i) = j) = A_ij perm(A minor_ij) / perm(A) with A = exp(W), from the
    derivative of Ryser's sum, and log Z = log perm(A)."""
    W = _square(W, "W", allow_neg_inf=True)
    _check_exact_size(W.shape[0], "W")
    log_z, marg = _log_perm_and_grad(W, True)
    if log_z == -math.inf:
        raise ValueError("W has no perfect matching avoiding its -inf entries (Z = 0)")
    return marg, log_z


def _perfect_matchings(n):
    """All perfect matchings of K_n as an int64[(n-1)!!, n] array of mates."""
    out = []

    def extend(mate, free):
        if not free:
            out.append(mate.copy())
            return
        i = free[0]
        for j in free[1:]:
            mate[i], mate[j] = j, i
            extend(mate, [f for f in free[1:] if f != j])

    extend([0] * n, list(range(n)))
    return np.array(out, dtype=np.int64).reshape(len(out), n)


def exact_perfect_matching_marginals(W):
    """Exact edge marginals and log Z of p(M) ∝ exp(sum_{{i,j} in M} W[i, j]) over the perfect
    matchings M of the complete graph on n <= 12 vertices (n even), by enumeration.

    W: symmetric n x n (diagonal ignored; -inf forbids an edge). Returns ``(marginals, log_z)``
    with marginals a symmetric n x n matrix (zero diagonal), P({i, j} in M)."""
    from scipy.special import logsumexp
    W = _check_general(W, allow_neg_inf=True)
    n = W.shape[0]
    if n > MAX_EXACT_GENERAL_N:
        raise ValueError(f"W is {n} x {n}; exact enumeration is limited to n <= "
                         f"{MAX_EXACT_GENERAL_N} ((n-1)!! matchings)")
    mates = _perfect_matchings(n)
    scores = W[np.arange(n), mates].sum(axis=1) / 2.0
    log_z = float(logsumexp(scores))
    if log_z == -math.inf:
        raise ValueError("W has no perfect matching avoiding its -inf entries (Z = 0)")
    p = np.exp(scores - log_z)
    marg = np.zeros((n, n))
    for i in range(n):
        np.add.at(marg[i], mates[:, i], p)
    return marg, log_z


def _check_general(W, allow_neg_inf):
    W = _square(W, "W", allow_neg_inf)
    n = W.shape[0]
    if n % 2:
        raise ValueError(f"a perfect matching needs an even number of vertices; W is {n} x {n}")
    off = ~np.eye(n, dtype=bool)
    if not np.array_equal(W[off], W.T[off]):
        raise ValueError("W must be symmetric for graph='general': W[i, j] weighs the edge {i, j}")
    return W


# -- reweighted matching entropy (App. C) ------------------------------------------------

def reweighted_entropy(tau, rho=1.0):
    """H_rho(tau) = sum_e (2 rho - 1)(1 - tau_e) log(1 - tau_e) - tau_e log tau_e and its
    gradient, for edge marginals of a perfect matching (flat, any layout; MLE-Struct App. C).
    Entries must lie in [0, 1]; the gradient is -inf/+inf at 0/1. Returns ``(H, grad)``."""
    from scipy.special import xlogy
    rho = _check_rho(rho)
    tau = np.asarray(tau, dtype=np.float64)
    c = 2.0 * rho - 1.0
    one_minus = 1.0 - tau
    value = float(c * xlogy(one_minus, one_minus).sum() - xlogy(tau, tau).sum())
    with np.errstate(divide="ignore"):
        grad = -c * (np.log(one_minus) + 1.0) - (np.log(tau) + 1.0)
    return value, grad


def entropy_line_derivatives(tau, d, gamma, rho=1.0):
    """(dH/dgamma, d^2H/dgamma^2) of H_rho(tau + gamma d): the entropy part of the line search
    of MLE-Struct App. D.2 (eq. 20), whose quadratic part the learner precomputes.
    Returns (-inf, -inf) when tau + gamma d leaves (0, 1) in an entry where d != 0."""
    c = 2.0 * _check_rho(rho) - 1.0
    tau, d = np.asarray(tau, dtype=np.float64), np.asarray(d, dtype=np.float64)
    nz = d != 0.0
    return _line_derivs(tau[nz], d[nz], gamma, c)


def _line_derivs(tau, d, gamma, c):
    """entropy_line_derivatives on the entries where d != 0 (no checks)."""
    y = tau + gamma * d
    if not ((y > 0.0) & (y < 1.0)).all():
        return -math.inf, -math.inf
    one_minus = 1.0 - y
    first = -c * (d @ np.log(one_minus)) - d @ np.log(y) - (c + 1.0) * d.sum()
    second = c * (d * d) @ (1.0 / one_minus) - (d * d) @ (1.0 / y)
    return float(first), float(second)


class MatchingFreeEnergy(Objective):
    """F_rho(tau) = -<w, tau> - H_rho(tau) on flat edge marginals (an FW objective:
    ``value_grad``, ``phi_derivatives``, ``line_search``). Its minimum over the matching
    polytope is -log Z_rho."""

    def __init__(self, w, rho=1.0):
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.rho = _check_rho(rho)
        self._c = 2.0 * self.rho - 1.0

    def value_grad(self, x):
        h, gh = reweighted_entropy(x, self.rho)
        return -float(self.w @ x) - h, -self.w - gh

    def phi_derivatives(self, x, d, gamma):
        """(phi', phi'') of phi(gamma) = F(x + gamma d); phi' = +inf outside the domain."""
        nz = d != 0.0
        return self._phi(x[nz], d[nz], -float(self.w[nz] @ d[nz]), gamma)

    def _phi(self, x, d, wd, gamma):
        h1, h2 = _line_derivs(x, d, gamma, self._c)
        if not math.isfinite(h1):
            return math.inf, None
        return wd - h1, -h2

    def line_search(self, x, d, gamma_max):
        """Exact line search: safeguarded Newton on phi' over [0, gamma_max] (phi convex)."""
        nz = d != 0.0
        x, d = x[nz], d[nz]
        wd = -float(self.w[nz] @ d)
        dphi = lambda t: self._phi(x, d, wd, t)  # noqa: E731
        return safeguarded_newton(dphi, dphi(0.0)[0], gamma_max, tol=1e-12, max_iter=200)


# -- matching polytopes as FW domains ----------------------------------------------------

class BipartiteMatchingPolytope(Domain):
    """The Birkhoff polytope of N x N doubly-stochastic matrices as an FW domain (flat
    row-major, dim N^2). Atom: a permutation int32[N] (row i -> column atom[i]); LMO: the
    Hungarian method (`max_weight_bipartite_matching`); u0: the uniform matrix 1/N."""

    def __init__(self, n):
        self.n = check_params({"n": Interval(1, integer=True)}, n=n)["n"]
        self.dim = self.n * self.n
        self.atom_size = self.n
        self.u0 = np.full(self.dim, 1.0 / self.n)
        self._rows = np.arange(self.n)

    def lmo(self, g):
        mate, _ = max_weight_bipartite_matching(-np.reshape(g, (self.n, self.n)))
        return mate.astype(np.int32)

    def inner(self, g, atoms):
        return np.asarray(g)[atoms + self._rows * self.n].sum(axis=1)

    def edges(self, atom):
        """The flat indices of the edges of the matching ``atom``."""
        return self._rows * self.n + atom

    def add(self, x, atom, w):
        x[self.edges(atom)] += w

    def argmax(self, scores, allowed=None):
        """A perfect matching maximising <scores, v> (flat), on the graph ``allowed`` (flat
        bool, None: complete): the mate array; ValueError when the graph has none."""
        W = self.to_matrix(scores)
        if allowed is not None:
            W = np.where(self.to_matrix(allowed), W, -np.inf)
        return max_weight_bipartite_matching(W)[0]

    def to_matrix(self, x):
        """The N x N matrix of a flat x."""
        return np.reshape(x, (self.n, self.n))

    def edge_weights(self, W):
        """The flat weight vector of an N x N W."""
        return np.ascontiguousarray(W, dtype=np.float64).ravel()


class PerfectMatchingPolytope(Domain):
    """The perfect-matching polytope of the complete graph K_n (n even, n >= 4) as an FW
    domain: flat edge marginals over i < j (dim n(n-1)/2). Atom: the mate array int32[n];
    LMO: Edmonds' blossom (`max_weight_perfect_matching`); u0: 1/(n-1) on every edge (the
    average of all perfect matchings)."""

    def __init__(self, n):
        self.n = check_params({"n": Interval(4, integer=True)}, n=n)["n"]
        if self.n % 2:
            raise ValueError(f"n must be even (a perfect matching pairs every vertex); got {n!r}")
        self.iu = np.triu_indices(self.n, 1)
        self.dim = len(self.iu[0])
        self.atom_size = self.n
        self.u0 = np.full(self.dim, 1.0 / (self.n - 1))
        self.edge_id = np.full((self.n, self.n), -1, dtype=np.int64)
        self.edge_id[self.iu] = np.arange(self.dim)
        self.edge_id[self.iu[::-1]] = np.arange(self.dim)
        self._rows = np.arange(self.n)

    def to_matrix(self, x):
        """The symmetric n x n matrix (zero diagonal) of a flat x."""
        M = np.zeros((self.n, self.n))
        M[self.iu] = x
        return M + M.T

    def edge_weights(self, W):
        """The flat weight vector (upper triangle) of a symmetric n x n W."""
        return np.ascontiguousarray(np.asarray(W, dtype=np.float64)[self.iu])

    def lmo(self, g):
        mate, _ = max_weight_perfect_matching(-self.to_matrix(g))
        return mate.astype(np.int32)

    def inner(self, g, atoms):
        return 0.5 * self.to_matrix(g)[self._rows, atoms].sum(axis=1)

    def edges(self, atom):
        """The flat indices of the edges of the matching ``atom``."""
        upper = self._rows < atom
        return self.edge_id[self._rows[upper], atom[upper]]

    def add(self, x, atom, w):
        x[self.edges(atom)] += w

    def argmax(self, scores, allowed=None):
        """A perfect matching maximising <scores, v> (flat), on the graph ``allowed`` (flat
        bool, None: complete): the mate array; ValueError when the graph has none. Blossom
        needs finite weights, so a forbidden edge costs more than all allowed ones do."""
        scores = np.asarray(scores, dtype=np.float64)
        if allowed is not None:
            big = self.n * (np.abs(scores[allowed]).max(initial=0.0) + 1.0)
            scores = np.where(allowed, scores, -big)
        mate = max_weight_perfect_matching(self.to_matrix(scores))[0]
        if allowed is not None and not allowed[self.edges(mate)].all():
            raise ValueError("the graph has no perfect matching")
        return mate


def matching_face(domain, allowed):
    """The face of ``domain`` (`BipartiteMatchingPolytope` or `PerfectMatchingPolytope`)
    spanned by the perfect matchings of the graph ``allowed`` (flat bool over the domain's
    edges), by MLE-Struct App. D.3: for each edge one matching of the graph containing it
    and one avoiding it (oracle calls with weight +1 / -1 on the edge, skipping edges
    already seen both ways). Returns ``(free, start, n_oracle_calls)``: the edges in some
    but not every perfect matching (the others are clamped at 0 or 1), the average of the
    matchings found, inside (0, 1) on every free edge, and the oracle calls made.
    ValueError when the graph has no perfect matching."""
    allowed = np.asarray(allowed, dtype=bool)
    try:
        domain.argmax(np.zeros(domain.dim), allowed)
    except ValueError as err:
        raise ValueError("the graph has no perfect matching") from err
    found = []
    seen_in = np.zeros(domain.dim, dtype=bool)
    seen_out = np.zeros(domain.dim, dtype=bool)
    for e in np.flatnonzero(allowed):
        for sign, seen in ((1.0, seen_in), (-1.0, seen_out)):
            if seen[e]:
                continue
            s = np.zeros(domain.dim)
            s[e] = sign
            v = np.zeros(domain.dim)
            domain.add(v, domain.argmax(s, allowed), 1.0)
            found.append(v)
            seen_in |= v > 0.5
            seen_out |= v < 0.5
    return seen_in & seen_out, np.mean(found, axis=0), len(found) + 1


class _Face(Domain):
    """A face of a matching polytope (`matching_face`) as an FW domain over its free edges
    only (the clamped ones are constant): x = tau[free], u0 = the face's start point, LMO
    = the masked Hungarian / blossom oracle."""

    def __init__(self, domain, allowed, free, start):
        self.domain, self.allowed, self.free = domain, allowed, free
        self.dim = int(free.sum())
        self.atom_size = domain.atom_size
        self.u0 = start[free]
        self._pos = np.cumsum(free) - 1  # free edge e -> its index in x

    def _full(self, g):
        out = np.zeros(self.domain.dim)
        out[self.free] = g
        return out

    def lmo(self, g):
        return self.domain.argmax(-self._full(g), self.allowed).astype(np.int32)

    def inner(self, g, atoms):
        return self.domain.inner(self._full(g), atoms)

    def add(self, x, atom, w):
        e = self.domain.edges(atom)
        x[self._pos[e[self.free[e]]]] += w


# -- marginal inference --------------------------------------------------------------------

@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class MatchingMarginals(Result):
    """Approximate marginals of a perfect-matching distribution.

    ``marginals``: N x N doubly-stochastic matrix P(i matched to j) (symmetric, zero diagonal
    for graph='general'). ``log_z`` = -F_rho(marginals) <= log Z_rho; ``gap`` the FW gap at
    the marginals (also computed for BP's output), so ``log_z_upper`` = log_z + gap is a
    certified upper bound on log Z_rho. ``certified``: log_z_upper is also a proof of an
    upper bound on log Z itself, which holds for rho <= 1/2 (MLE-Struct eq. 12; on any
    graph); with rho = 1 on a bipartite graph log_z is instead a certified lower bound on
    log Z (Gurvits). ``n_oracle_calls``: Hungarian / blossom calls (FW's LMO and, with -inf
    weights, the face search of `matching_face`; BP makes one, for its gap). ``trace``: the
    FW engine's `Record`s (method 'fw'; one per iteration), or BP's final one (``primal`` =
    F_rho, the minimised free energy, in both)."""

    marginals: np.ndarray
    log_z: float
    gap: float
    log_z_upper: float
    certified: bool
    status: Status
    n_iter: int
    n_oracle_calls: int
    time: float
    method: str
    rho: float
    graph: str
    trace: Trace = Trace()


def _result(marginals, log_z, gap, status, n_iter, n_oracle_calls, t, method, rho, graph,
            trace):
    return MatchingMarginals(marginals, float(log_z), float(gap), float(log_z + gap), rho <= 0.5,
                             status, int(n_iter), int(n_oracle_calls), t, method, rho, graph,
                             Trace(trace))


@validate_params(_PARAMS, unchecked=("W", "fw_method"))
def matching_marginals(W, *, method="fw", entropy="bethe", rho=None, graph="bipartite",
                       tol=1e-6, max_iter=10000, max_time=None, fw_method="pairwise",
                       delta=1e-3):
    """Approximate marginals and log partition function of p(M) ∝ exp(<W, M>) over perfect
    matchings, by minimising the reweighted free energy F_rho over the matching polytope.

    Parameters
    ----------
    W : array
        N x N weights; symmetric with even N for graph='general' (each edge once). -inf
        forbids an edge (method 'fw'): the graph is then the finite entries, FW runs on the
        face of M its perfect matchings span (MLE-Struct App. D.3: edges in none get
        marginal 0, edges in all get 1) and a graph with no perfect matching is a
        ValueError. With rho = 1 on a general graph the Bethe entropy vanishes along even
        cycles and the optimum can be a vertex of that face, where the FW gap (still a
        valid bound) need not fall below ``tol``.
    method : str
        'fw' (MLE-Struct Sec. 3.2 / App. F: Frank-Wolfe with the Hungarian or blossom
        oracle, exact line search, over the contraction M_delta = (1 - delta) M + delta u0
        with delta adapted by Barrier FW Alg. 1 so every log stays finite) or 'bp' (Huang &
        Jebara's belief propagation, bipartite Bethe entropy and finite W only; see
        `bethe_bp`).
    entropy, rho : str, float
        'bethe' (rho = 1; a rho given with it is an error) or 'trw', the reweighted entropy
        with rho in [0, 1] (None: 1/2, the RW entropy); the vocabulary of
        `fwcore.marginals.rho`.
    tol : float
        FW gap (over M, certified) for 'fw'; largest change of a log message for 'bp'.
    max_iter, max_time : int, float
        Budgets; unless converged the best iterate is returned.
    fw_method : str
        The `frank_wolfe` method for 'fw' ('fw', 'away', 'pairwise', 'fcfw').
    delta : float
        Initial contraction for 'fw' (Barrier FW: delta_init <= 1/4; its code used 1e-3).

    Returns
    -------
    MatchingMarginals

    FW or BP (App. F, measured by ``bench/benchmarks/matching.py``, W = beta unif[0, 1],
    N = 10 to 300, beta = 1, 10, 100, max errors 1e-2 to 1e-4): BP is faster almost
    everywhere, by one to three orders of magnitude. FW wins only on small peaked problems
    (N = 10, beta = 100: certified in about 16 iterations, 25-580x faster than `bethe_bp`,
    whose Sinkhorn balancing dominates there; N = 10, beta = 10 at 1e-2 with
    fw_method='fw') and, trivially, at 1e-2 for beta = 1 and N >= 100, where its uniform
    start point is already that close. Use FW for what BP
    does not do: rho != 1, general or masked graphs, certified gaps.
    """
    rho = entropy_rho(entropy, rho, DEFAULT_RHO)
    if method == "bp":
        if graph != "bipartite" or rho != 1.0:
            raise ValueError("method='bp' computes the Bethe entropy (rho=1) of bipartite "
                             "matchings only; use method='fw' otherwise")
        return bethe_bp(W, tol=tol, max_iter=max_iter, max_time=max_time)
    if graph == "general":
        W = _check_general(W, allow_neg_inf=True)
        if W.shape[0] < 4:
            raise ValueError("graph='general' needs n >= 4 vertices (K_2 has one matching)")
        domain = PerfectMatchingPolytope(W.shape[0])
    else:
        W = _square(W, "W", allow_neg_inf=True)
        domain = BipartiteMatchingPolytope(W.shape[0])
    w = domain.edge_weights(W)
    allowed = np.isfinite(w)
    t0 = time.perf_counter()
    if allowed.all():
        if W.shape[0] == 1:
            return _trivial(W, rho)
        free, face, tau, calls = allowed, domain, np.zeros(domain.dim), 0
    else:
        try:
            free, start, calls = matching_face(domain, allowed)
        except ValueError as err:
            raise ValueError(
                "W has no perfect matching avoiding its -inf entries (Z = 0)") from err
        face, tau = _Face(domain, allowed, free, start), start.copy()
    const = float(w[~free & (tau > 0.5)].sum())  # the edges in every perfect matching
    if not free.any():  # one perfect matching: exact
        return MatchingMarginals(domain.to_matrix(tau).copy(), const, 0.0, const, True,
                                 Status.CONVERGED, 0, calls, time.perf_counter() - t0, "exact",
                                 rho, graph, Trace([Record(iteration=0, time=0.0,
                                                           primal=-const, gap=0.0)]))
    res = frank_wolfe(MatchingFreeEnergy(w[free], rho), face, method=fw_method, step="exact",
                      tol=tol, max_iter=max_iter, max_time=max_time, delta=delta,
                      delta_rule=adaptive_delta, trace=True)
    tau[free] = res.x
    return _result(domain.to_matrix(tau).copy(), const - res.primal, res.gap, res.status,
                   res.n_iter, calls + res.n_oracle_calls, time.perf_counter() - t0, "fw",
                   rho, graph, res.trace)


def _trivial(W, rho):
    """N = 1: one matching, exact (certified whatever rho)."""
    log_z = float(W[0, 0])
    return MatchingMarginals(np.ones((1, 1)), log_z, 0.0, log_z, True, Status.CONVERGED, 0, 0,
                             0.0, "exact", rho, "bipartite",
                             Trace([Record(iteration=0, time=0.0, primal=-log_z, gap=0.0)]))


# -- Huang & Jebara belief propagation (the baseline of App. F) ----------------------------

def _loo_logsumexp(L, axis):
    """log sum_{l != j} exp(L_l) along ``axis`` for every j (leave one out), stable: the
    maximum's own entry is recomputed without it, the others subtract from the full sum."""
    from scipy.special import logsumexp
    L = np.moveaxis(L, axis, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = L.max(axis=1, keepdims=True)
        e = np.exp(L - m)
        s = e.sum(axis=1, keepdims=True)
        out = m + np.log(np.maximum(s - e, 0.0))
        arg = L.argmax(axis=1)
        rows = np.arange(L.shape[0])
        rest = L.copy()
        rest[rows, arg] = -np.inf
        out[rows, arg] = logsumexp(rest, axis=1)
    return np.moveaxis(out, 1, axis)


def _sinkhorn_log(L, tol=1e-13, max_iter=1000):
    """Doubly-stochastic balancing exp(L - u_i - v_j) of a positive matrix."""
    from scipy.special import logsumexp
    for _ in range(max_iter):
        L = L - logsumexp(L, axis=0)
        r = logsumexp(L, axis=1)
        L = L - r[:, None]
        if np.abs(r).max() <= tol:
            break
    return np.exp(L)


class _BetheMessages:
    """The log row-to-column messages ``lr`` of `bethe_bp` on `fwcore.loop.run_loop`: each
    step is a sweep; the criterion is its largest change of a log message."""

    def __init__(self, W):
        from scipy.special import logsumexp
        self.W = W
        self.lr = W - logsumexp(W, axis=1, keepdims=True)
        self.change = math.inf

    def sweep(self, k):
        W = self.W
        lc = W - _loo_logsumexp(self.lr, axis=1)
        new = W - _loo_logsumexp(lc, axis=0)
        new -= new.max()  # messages are defined up to scale; keep them bounded
        self.change = np.abs(new - self.lr).max()
        self.lr = new

    def measure(self, k):
        """No record per sweep (the result's one record is made at the end)."""
        return None, self.change


@validate_params(_BETHE_BP_PARAMS, unchecked=("W",))
def bethe_bp(W, *, tol=1e-10, max_iter=10000, max_time=None) -> MatchingMarginals:
    """Belief propagation for the Bethe permanent (Huang & Jebara 2009), in the log domain.

    Scalar messages per edge (row-to-column c, column-to-row r)::

        c_ij = A_ij / sum_{l != j} r_il,    r_ij = A_ij / sum_{l != i} c_lj,    A = exp(W);

    beliefs tau_ij ∝ r_ij over row i. Its fixed points are the stationary points of the Bethe
    free energy, which is convex over the Birkhoff polytope, so BP and FW solve the same
    problem (MLE-Struct App. F). Stops when no log message changes by more than ``tol``.
    The beliefs are Sinkhorn-balanced to exact double stochasticity (a change of the size of
    the remaining residual); the returned gap is the certified FW gap of that point (one
    Hungarian call), or inf when a belief has underflowed to 0 or rounded to 1 (at low
    temperature), where the entropy's gradient is infinite."""
    W = _square(W, "W", allow_neg_inf=False)
    n = W.shape[0]
    if n == 1:
        return _trivial(W, 1.0)
    t0 = time.perf_counter()
    messages = _BetheMessages(W)
    outcome = run_loop(messages.measure, messages.sweep,
                       Stopping(max_iter, tol, deadline=Deadline(max_time)),
                       Callbacks(trace=False))
    status, k = outcome.status, outcome.n_iter
    domain = BipartiteMatchingPolytope(n)
    tau = _sinkhorn_log(messages.lr).ravel()
    objective = MatchingFreeEnergy(W.ravel(), 1.0)
    f, g = objective.value_grad(tau)
    calls, gap = 0, math.inf  # a belief rounded to 0 or 1: infinite gradient, no certificate
    if ((tau > 0.0) & (tau < 1.0)).all():
        s = domain.lmo(g)
        calls, gap = 1, float(g @ tau) - float(domain.inner(g, s[None, :])[0])
    elapsed = time.perf_counter() - t0
    return _result(tau.reshape(n, n), -f, gap, status, k, calls, elapsed, "bp", 1.0,
                   "bipartite", [Record(iteration=k, time=elapsed, primal=float(f), gap=gap,
                                        n_oracle_calls=calls)])
