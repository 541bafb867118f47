"""Perfect-matching models for the learners (MLE-Struct Sec. 4.1-4.2, App. D).

An input is a feature tensor G [n, n, F] (G[i, j] the features of matching i to j), or a
tuple ``(G, allowed)`` with a boolean [n, n] mask of the graph's edges. The label is a
matching: for ``graph='bipartite'`` a permutation (row i -> column y[i]); for
``graph='general'`` the mate array of a perfect matching of the (complete or masked)
graph on n vertices, y[y[i]] = i, with G symmetric in (i, j). Edge weights are linear in
the parameters, W_ij = <w, G[i, j]> (eq. 11, App. D), so p(y) ∝ exp(Σ_{edges of y} W_e).

Flat layout as in `fwcore.matching.inference`: bipartite edges row-major (n²), general
edges i < j in ``np.triu_indices`` order. The reweighted entropy is
`fwcore.matching.inference.reweighted_entropy` (App. C; ρ = 1 Bethe, ρ = 1/2 RW). On a
masked graph the edges in no perfect matching are clamped at 0 and those in every perfect
matching at 1, and τ starts at the average of matchings found by the oracle, one with and
one without each remaining edge (App. D.3). `Matching` is the family as a learner's
``model`` takes it.
"""
from collections.abc import Sized
from dataclasses import dataclass

import numpy as np

from ..fw import adaptive_delta
from ..matching import inference
from ..matching.inference import (BipartiteMatchingPolytope, PerfectMatchingPolytope,
                                  entropy_line_derivatives, matching_face, matching_marginals,
                                  reweighted_entropy)
from .base import BlockEntropy, LearnerModel, ModelFamily, VertexDecoder, run_tasks

__all__ = ["Matching", "MatchingModel", "MatchingDecoder", "MatchingEntropy", "GRAPHS"]

#: the matching graphs, named as in `fwcore.matching_marginals`
GRAPHS = ("bipartite", "general")
#: initial contraction of the FW vertices toward the start point, adapted by Barrier FW
#: Alg. 1 (see `MatchingEntropy`; δ_init <= 1/4, the paper's code used 1e-3)
DELTA = 1e-3


class MatchingDecoder(VertexDecoder):
    """Max-weight perfect matching of one example's graph (Hungarian or blossom oracle),
    returned as a flat 0/1 vertex (``vertex``) or a mate array (``assignment``). Picklable."""

    exact = True

    def __init__(self, graph, n, allowed):
        self.graph, self.n, self.allowed = graph, n, allowed
        self.domain = (BipartiteMatchingPolytope(n) if graph == "bipartite"
                       else PerfectMatchingPolytope(n))
        self.edges = None if allowed is None else self.domain.edge_weights(allowed) > 0

    def assignment(self, scores):
        return self.domain.argmax(np.asarray(scores, dtype=np.float64), self.edges)

    def vertex(self, scores, time_limit=None):
        """The matching as a 0/1 vertex (Hungarian and blossom finish; no ``time_limit``)."""
        x = np.zeros(self.domain.dim)
        self.domain.add(x, self.assignment(scores), 1.0)
        return x


class MatchingEntropy(BlockEntropy):
    """The block objective −<θ, τ> − H_ρ(τ) of one example (App. D.1), H_ρ over the free
    (unclamped) edges; clamped edges are constant and get zero entropy gradient.

    FW moves in the contraction M_δ = (1 − δ) M + δ τ⁰ (τ⁰ the start point, inside every
    free edge), so every free τ_e stays in (0, 1) and the entropy's gradient finite (a bare
    vertex lets the exact line search land within 1e-11 of the boundary, where the
    curvature stalls FW; D.3). δ is adaptive, Barrier FW Alg. 1 (`fwcore.fw.adaptive_delta`):
    from δ_init = ``delta`` it shrinks to min(g / (−4 g_u), δ / 2) whenever that proposal
    is below δ, with g = <−∇, v − τ> the FW gap over M and g_u = <−∇, τ⁰ − τ> the uniform
    gap, which keeps the gap over M_δ (eq. 8: (1 − δ) g + δ g_u) at least g / 2 (Lemma D.2)
    and lets the iterates approach an optimum on the boundary of M. The gap reported is g,
    over M itself. ``delta`` is δ_init; each example's δ is in its state (`fw_vertex`)."""

    def __init__(self, rho, free, start, delta=DELTA):
        self.rho, self.free, self.start, self.delta = rho, free, start, delta

    def fw_gaps(self, vertex, grad, tau):
        """(FW gap g over M, the uniform gap <−grad, τ⁰ − τ>) of Alg. 1's δ update."""
        return (*super().fw_gaps(vertex, grad, tau), float(grad @ tau) - float(grad @ self.start))

    def fw_vertex(self, vertex, gaps, state):
        """The contracted vertex (1 − δ) v + δ τ⁰ after Alg. 1's update of the example's δ
        (``state["delta"]``, from δ_init; None when the vertex is not kept: the update
        only)."""
        delta = state["delta"] = adaptive_delta(state.get("delta", self.delta), *gaps)
        if vertex is None:
            return None
        return (1.0 - delta) * vertex + delta * self.start

    def value_grad(self, theta, tau):
        h, gh = reweighted_entropy(tau[self.free], self.rho)
        g = -np.asarray(theta, dtype=np.float64).copy()
        g[self.free] -= gh
        return -float(theta @ tau) - h, g

    def line_derivs(self, theta, tau, d, t):
        """(φ', φ'') of φ(t) = −<θ, τ + t d> − H_ρ(τ + t d) (App. D.2); φ' = +inf outside
        the polytope. Clamped edges have d = 0 and drop out."""
        h1, h2 = entropy_line_derivatives(tau, d, t, self.rho)
        return -float(theta @ d) - h1, -h2


class _Example:
    __slots__ = ("G", "n", "allowed", "free", "start", "decoder")


def _check_nonempty(X):
    if isinstance(X, np.ndarray) or not isinstance(X, Sized) or len(X) == 0:
        raise ValueError("X must be a non-empty list of feature arrays [n, n, F] (or "
                         "(features, allowed) tuples)")


def _as_pair(x, k):
    if isinstance(x, tuple):
        if len(x) != 2:
            raise TypeError(f"X[{k}] must be a feature array [n, n, F] or a tuple (features, "
                            f"allowed [n, n] bool); got a tuple of {len(x)}")
        return x
    return x, None


class MatchingModel(LearnerModel):
    """Linear edge features over perfect matchings (App. D): ``scores`` W = G w, ``features``
    Φᵀτ = Gᵀτ, plus the oracle, entropy, start point and Hamming loss of each example."""

    def __init__(self, graph, n_features):
        if graph not in GRAPHS:
            raise ValueError(f"graph must be one of {GRAPHS}; got {graph!r}")
        self.graph, self.dim = graph, int(n_features)

    @classmethod
    def from_data(cls, X, Y, graph):
        """(model, examples, labels) from training inputs X and matchings Y, validated."""
        _check_nonempty(X)
        first = np.asarray(_as_pair(X[0], 0)[0])
        model = cls(graph, first.shape[-1] if first.ndim == 3 else 0)
        return (model, *model.prepare(X, Y))

    def check(self, X, first=0):
        """Validate inputs: feature arrays [n, n, F] with this model's F (symmetric for
        'general'), optional boolean masks; returns the prepared examples (errors name
        them X[first], ...)."""
        _check_nonempty(X)
        return [self._prepare(*_as_pair(x, k), k) for k, x in enumerate(X, first)]

    def prepare(self, X, Y, first=0):
        examples = self.check(X, first)
        if not isinstance(Y, Sized) or len(Y) != len(examples):
            raise ValueError(f"Y must hold one matching per example ({len(examples)}); got "
                             f"{len(Y) if isinstance(Y, Sized) else type(Y).__name__}")
        labels = [self._check_label(y, ex, k)
                  for k, (y, ex) in enumerate(zip(Y, examples), first)]
        for ex in examples:
            self._clamp(ex)
        return examples, labels

    def _prepare(self, G, allowed, k):
        G = np.asarray(G)
        if G.dtype.kind not in "iuf":
            raise TypeError(f"X[{k}] features must be numeric; got dtype {G.dtype}")
        G = G.astype(np.float64)
        if G.ndim != 3 or G.shape[0] != G.shape[1]:
            raise ValueError(f"X[{k}] features must have shape (n, n, F), square in the first "
                             f"two axes; got {G.shape}")
        n = G.shape[0]
        if G.shape[2] != self.dim:
            raise ValueError(f"X[{k}] has {G.shape[2]} features; expected {self.dim} (as in "
                             "the training data)")
        if not np.isfinite(G).all():
            raise ValueError(f"X[{k}] features contain NaN or inf; features must be finite")
        if self.graph == "general":
            if n < 4 or n % 2:
                raise ValueError(f"X[{k}]: graph='general' needs an even n >= 4; got n = {n}")
            if not np.allclose(G, G.transpose(1, 0, 2), rtol=0, atol=1e-12):
                raise ValueError(f"X[{k}] features must be symmetric, G[i, j] = G[j, i], for "
                                 "graph='general' (each edge {i, j} has one feature vector)")
        elif n < 1:
            raise ValueError(f"X[{k}] is empty")
        if allowed is not None:
            allowed = np.asarray(allowed)
            if allowed.dtype != bool or allowed.shape != (n, n):
                raise ValueError(f"X[{k}] allowed must be a boolean ({n}, {n}) mask; got dtype "
                                 f"{allowed.dtype}, shape {allowed.shape}")
            if self.graph == "general" and not np.array_equal(allowed, allowed.T):
                raise ValueError(f"X[{k}] allowed must be symmetric for graph='general'")
            if allowed.all() or (self.graph == "general"
                                 and allowed[~np.eye(n, dtype=bool)].all()):
                allowed = None
        ex = _Example()
        ex.n, ex.allowed = n, allowed
        ex.decoder = MatchingDecoder(self.graph, n, allowed)
        dom = ex.decoder.domain
        if allowed is not None:
            try:
                ex.decoder.assignment(np.zeros(dom.dim))
            except ValueError:
                raise ValueError(f"X[{k}] allowed admits no perfect matching: every vertex "
                                 "must be matched within the mask") from None
        ex.G = G.reshape(n * n, -1) if self.graph == "bipartite" else G[dom.iu]
        ex.free = np.ones(dom.dim, dtype=bool)
        ex.start = dom.u0
        return ex

    def _check_label(self, y, ex, k):
        y = np.asarray(y)
        if y.dtype.kind not in "iu":
            raise TypeError(f"Y[{k}] must be an integer array (the matching); got dtype {y.dtype}")
        n = ex.n
        if y.shape != (n,):
            raise ValueError(f"Y[{k}] must have shape ({n},), the mate of each of the {n} "
                             f"vertices; got {y.shape}")
        if self.graph == "bipartite":
            if not np.array_equal(np.sort(y), np.arange(n)):
                raise ValueError(f"Y[{k}] must be a permutation of 0..{n - 1} (row i matched to "
                                 f"column Y[i]); got {y}")
        elif (y.min() < 0 or y.max() >= n or (y == np.arange(n)).any()
              or not np.array_equal(y[y], np.arange(n))):
            raise ValueError(f"Y[{k}] must be a perfect matching: a mate array with "
                             f"Y[Y[i]] = i != i; got {y}")
        if ex.allowed is not None and not ex.allowed[np.arange(n), y].all():
            raise ValueError(f"Y[{k}] uses an edge outside the graph (allowed is False there)")
        return y.astype(np.int64)

    def _clamp(self, ex):
        """App. D.3 on a masked graph (`fwcore.matching.inference.matching_face`): edges in
        no / every perfect matching are clamped, the average of the matchings found is the
        start point."""
        if ex.allowed is not None:
            ex.free, ex.start, _ = matching_face(ex.decoder.domain, ex.decoder.edges)

    def scores(self, ex, w):
        """Flat edge weights W = G w."""
        return ex.G @ w

    def features(self, ex, mu):
        """Gᵀμ, the expected features under edge marginals μ (App. D.1)."""
        return ex.G.T @ mu

    def truth(self, ex, y):
        x = np.zeros(ex.decoder.domain.dim)
        ex.decoder.domain.add(x, y, 1.0)
        return x

    def start(self, ex):
        return np.array(ex.start, dtype=np.float64)

    def decoder(self, ex):
        return ex.decoder

    def entropy(self, ex, rho):
        return MatchingEntropy(rho, ex.free, ex.start)

    def hamming(self, ex, y):
        """a with <a, μ(y')> = the fraction of vertices (rows) whose mate differs from y."""
        per_edge = 1.0 if self.graph == "bipartite" else 2.0
        return (1.0 - self.truth(ex, y)) * per_edge / ex.n

    def marginals(self, examples, w, rho, tol, executor=None):
        """Edge marginals [n, n] by `fwcore.matching.inference.matching_marginals` at W = G w,
        with W = -inf outside a mask (0 there; FW on the face of the graph's matchings)."""
        Ws = [ex.decoder.domain.to_matrix(self.scores(ex, w)) for ex in examples]
        Ws = [W if ex.allowed is None else np.where(ex.allowed, W, -np.inf)
              for W, ex in zip(Ws, examples)]
        n = len(Ws)
        return run_tasks(executor, _marginals, Ws, [self.graph] * n, [rho] * n, [tol] * n)


def _marginals(W, graph, rho, tol):
    return matching_marginals(W, graph=graph, entropy="trw", rho=rho, tol=tol).marginals


@dataclass(frozen=True)
class Matching(ModelFamily):
    """Distributions over the perfect matchings of a graph with linear edge features (App.
    D), a learner's ``model``: ``graph`` "bipartite" (X: features [N, N, F], Y:
    permutations; Hungarian oracle) or "general" (X: symmetric [n, n, F], Y: mate arrays;
    blossom oracle); either with optional masks (module docstring)."""

    graph: str = "bipartite"

    #: ρ of the matching entropy, one for every vertex (App. C): a number in [0, 1]
    #: (`fwcore.matching.inference.RHO`), None = 1/2 (the RW entropy)
    RHO = [inference.RHO, None]
    DEFAULT_RHO = inference.DEFAULT_RHO

    def build(self, X, Y):
        return MatchingModel.from_data(X, Y, self.graph)
