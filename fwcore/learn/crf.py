"""Pairwise CRFs with node and edge features on arbitrary graphs (MLE-Struct App. E.1).

An input is a `CRFExample` (or a tuple ``(node_features [n, F], edges [E, 2],
edge_features [E, G])``); its labelling is an int array of n labels in 0..L-1. The
parameters are two matrices, flattened into one vector w = (W_node [L, F], W_edge [L*L, G]):

    θ_i(a)    = Σ_f W_node[a, f] u_i[f]                   (App. E.1, θ_n = F u_n)
    θ_ij(a,b) = Σ_g W_edge[a*L + b, g] v_ij[g]            (θ_e = G v_e)

with (a, b) the labels of the edge's ends in the order the edge was given. `CRFFeatures`
maps parameters to the flat log-potentials of a `PairwiseMRF` (``scores``) and flat
marginals back to feature space (``features`` = Φᵀμ, the adjoint), the two products every
learner needs; `CRFModel` adds the rest of the `fwcore.learn.base.LearnerModel` contract:
a MAP oracle as `CRFDecoder`, the TRW entropy (`TRWEntropy`, edge weights by
`fwcore.marginals.rho.initial_rho`), the Hamming loss and marginals by FW with MAP calls
(`fw_marginals`). `CRF` is the family as a learner's ``model`` takes it.
"""
import numbers
import threading
from collections.abc import Sized
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

from .. import _kernels
from ..checks import CALLABLE, Interval, Options, check_params
from ..model import PairwiseMRF
from ..oracles import LPOracle, resolve_oracle
from ..results import Status
from ..marginals.rho import RHO_ARRAY, entropy_weights, initial_rho
from ..loop import TimeUp
from .base import BlockEntropy, LearnerModel, ModelFamily, VertexDecoder, run_tasks

__all__ = ["CRF", "CRFExample", "CRFFeatures", "CRFModel", "CRFDecoder", "TRWEntropy",
           "fw_marginals", "check_examples", "check_labels", "infer_n_labels", "top_label"]


@dataclass(frozen=True, eq=False)
class CRFExample:
    """One input: ``node_features`` [n, F], ``edges`` [E, 2], ``edge_features`` [E, G]."""

    node_features: np.ndarray
    edges: np.ndarray
    edge_features: np.ndarray


class _Prepared:
    """A validated example: its features, the model structure (zero potentials) and the
    gather index from canonical edge blocks (i < j) to the edge blocks in the order given;
    examples on the same graph share one structure and index (`_graph`)."""

    __slots__ = ("u", "v", "mrf", "eidx")

    def __init__(self, u, v, mrf, eidx):
        self.u, self.v, self.mrf, self.eidx = u, v, mrf, eidx


#: structures kept in each cache (images of one size share one)
CACHED = 16
#: the structures (`_graph`) of the training examples prepared last in this process
#: (`CRFModel.prepare`): a worker reading examples of one graph for each call builds it once
GRAPHS: dict = {}
_LOCK = threading.Lock()


def _bounded(cache):
    """Make room for one more entry in ``cache`` (the oldest goes)."""
    while len(cache) >= CACHED:
        cache.pop(next(iter(cache)), None)


def _graph(n, edges, n_labels):
    """(structure, gather index) of n nodes on ``edges`` (see `_Prepared`)."""
    block = np.arange(n_labels * n_labels).reshape(n_labels, n_labels)
    flip = edges[:, 0] > edges[:, 1]
    per_edge = np.where(flip[:, None], block.T.ravel()[None, :], block.ravel()[None, :])
    eidx = (per_edge + n_labels * n_labels * np.arange(len(edges))[:, None]).ravel()
    return _structure(n, edges, n_labels), eidx


def _structure(n, edges, n_labels):
    """The MRF of n nodes with ``n_labels`` labels on ``edges`` (any orientation), zero
    potentials, built from the flat layout: `PairwiseMRF`'s constructor checks one table per
    edge in Python (0.35 s a 64x64 grid, seconds for a training set, all counted in
    ``max_time``)."""
    canonical = np.sort(edges, axis=1)
    loops = np.flatnonzero(canonical[:, 0] == canonical[:, 1])
    if loops.size:
        e = int(loops[0])
        raise ValueError(f"edges has a self loop at row {e}: ({edges[e, 0]}, {edges[e, 1]})")
    card = np.full(n, n_labels, dtype=np.int32)
    return PairwiseMRF.from_flat(card, canonical, np.zeros(n * n_labels + len(edges) * n_labels**2))


def _as_example(x, k):
    if isinstance(x, CRFExample):
        return x.node_features, x.edges, x.edge_features
    if isinstance(x, (tuple, list)) and len(x) == 3:
        return x
    raise TypeError(f"X[{k}] must be a CRFExample or a tuple (node_features [n, F], edges [E, 2], "
                    f"edge_features [E, G]); got {type(x).__name__}")


def _finite_matrix(a, name):
    a = np.asarray(a)
    if a.dtype.kind not in "iuf" or a.dtype.kind == "b":
        raise TypeError(f"{name} must be numeric; got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf; features must be finite")
    return a


def check_nonempty(X):
    if isinstance(X, (CRFExample, np.ndarray)) or not isinstance(X, Sized) or len(X) == 0:
        raise ValueError("X must be a non-empty list of examples (CRFExample or tuples)")


def check_examples(X, n_labels, dims=None, first=0, graphs=None):
    """Validate inputs once: a non-empty sequence of examples sharing F and G (or ``dims``
    = (F, G) when given); errors name them X[first], X[first + 1], ... ``graphs``: a
    mapping that keeps the structures built (`_graph`) for later calls. Returns (list of
    `_Prepared`, (F, G))."""
    check_nonempty(X)
    out = []
    graphs = {} if graphs is None else graphs  # one structure per distinct graph
    for k, x in enumerate(X, first):
        u, edges, v = _as_example(x, k)
        u = _finite_matrix(u, f"X[{k}] node_features")
        if np.size(v) == 0 and np.ndim(v) != 2:
            v = np.zeros((0, dims[1] if dims else 0))
        v = _finite_matrix(v, f"X[{k}] edge_features")
        e = np.asarray(edges)
        if e.size == 0:
            e = np.zeros((0, 2), dtype=np.int64)
        if e.dtype.kind not in "iu" or e.ndim != 2 or e.shape[1] != 2:
            raise ValueError(f"X[{k}] edges must be an integer array of shape (E, 2); got "
                             f"dtype {e.dtype}, shape {e.shape}")
        if v.shape[0] != e.shape[0]:
            raise ValueError(f"X[{k}] has {e.shape[0]} edges but {v.shape[0]} rows of "
                             "edge_features")
        if u.shape[0] == 0:
            raise ValueError(f"X[{k}] has no nodes")
        if dims is None:
            dims = (u.shape[1], v.shape[1])
        if (u.shape[1], v.shape[1]) != dims:
            raise ValueError(f"X[{k}] has {u.shape[1]} node and {v.shape[1]} edge features; "
                             f"expected {dims[0]} and {dims[1]} (as in the training data)")
        e = e.astype(np.int64)
        key = (n_labels, u.shape[0], e.shape[0], e.tobytes())
        structure = graphs.get(key)
        if structure is None:
            try:
                structure = _graph(u.shape[0], e, n_labels)
            except ValueError as err:
                raise ValueError(f"X[{k}]: {err}") from None
            with _LOCK:
                _bounded(graphs)
                graphs[key] = structure
        out.append(_Prepared(u, v, *structure))
    return out, dims


def check_labels(Y, examples, n_labels, first=0):
    """Validate labellings: one int array of length n per example, values in 0..L-1
    (errors name them Y[first], ...)."""
    if not isinstance(Y, Sized) or len(Y) != len(examples):
        raise ValueError(f"Y must hold one label array per example ({len(examples)}); "
                         f"got {len(Y) if isinstance(Y, Sized) else type(Y).__name__}")
    out = []
    for k, (y, ex) in enumerate(zip(Y, examples), first):
        y = np.asarray(y)
        if y.dtype.kind not in "iu":
            raise TypeError(f"Y[{k}] must be an integer array of labels; got dtype {y.dtype}")
        if y.shape != (ex.mrf.n_vars,):
            raise ValueError(f"Y[{k}] must have shape ({ex.mrf.n_vars},), one label per node; "
                             f"got {y.shape}")
        if y.size and (y.min() < 0 or y.max() >= n_labels):
            raise ValueError(f"Y[{k}] labels must lie in 0..{n_labels - 1}; found "
                             f"{y.min()}..{y.max()}")
        out.append(np.ascontiguousarray(y, dtype=np.int32))
    return out


def top_label(Y):
    """The largest label in the labellings Y (-1 when they hold none); TypeError for
    labellings that are not integer arrays."""
    top = -1
    for k, y in enumerate(Y):
        y = np.asarray(y)
        if y.dtype.kind not in "iu":
            raise TypeError(f"Y[{k}] must be an integer array of labels; got dtype {y.dtype}")
        if y.size:
            top = max(top, int(y.max()))
    return top


def infer_n_labels(Y, n_labels):
    """``n_labels`` if given (an int >= 2), else 1 + the largest label in Y (at least 2)."""
    n_labels = check_params({"n_labels": [Interval(2, integer=True), None]},
                            n_labels=n_labels)["n_labels"]
    return max(2, top_label(Y) + 1) if n_labels is None else n_labels


class CRFFeatures:
    """The linear feature map of App. E.1 for ``n_labels`` labels, F node and G edge
    features; parameter vectors have length ``dim`` = L F + L² G."""

    def __init__(self, n_labels, n_node_features, n_edge_features):
        self.n_labels, self.n_node, self.n_edge = n_labels, n_node_features, n_edge_features
        self.split = n_labels * n_node_features
        self.dim = self.split + n_labels * n_labels * n_edge_features

    def unpack(self, w):
        """w → (W_node [L, F], W_edge [L*L, G])."""
        L = self.n_labels
        return w[:self.split].reshape(L, self.n_node), w[self.split:].reshape(L * L, self.n_edge)

    def scores(self, ex, w):
        """θ = Φ w in the flat layout of ``ex.mrf``."""
        wn, we = self.unpack(w)
        edge = np.empty(ex.eidx.shape[0])
        edge[:] = (ex.v @ we.T).ravel()[ex.eidx]
        return np.concatenate([(ex.u @ wn.T).ravel(), edge])

    def features(self, ex, mu):
        """Φᵀμ: the expected feature vector under flat marginals μ (node part U-weighted,
        edge part V-weighted; App. E.2 eq. 23)."""
        L = self.n_labels
        k = ex.mrf.n_vars * L
        edge = np.empty(mu.shape[0] - k)
        edge[ex.eidx] = mu[k:]
        return np.concatenate([(mu[:k].reshape(-1, L).T @ ex.u).ravel(),
                               (edge.reshape(-1, L * L).T @ ex.v).ravel()])


class CRFDecoder(VertexDecoder):
    """A MAP oracle (`fwcore.oracles.resolve_oracle`) on one example's MRF returning dense
    vertices: the LP optimum μ for an `LPOracle` (the learner then moves over the local
    polytope, where that vertex is exact), else μ(argmax)."""

    def __init__(self, mrf, oracle):
        self.mrf = mrf
        self.oracle = resolve_oracle(oracle, mrf)
        self.exact = isinstance(self.oracle, LPOracle) or self.oracle.exact

    def vertex(self, scores, time_limit=None):
        if isinstance(self.oracle, LPOracle):
            mu = np.asarray(self.oracle.argmax_marginals(scores, time_limit), dtype=np.float64)
        else:
            mu = self.mrf.marginal_vector(self.oracle.argmax(scores, time_limit=time_limit))
        # stopped at this call's limit (not at a shorter one of the oracle's own)
        if (time_limit is not None and self.oracle.status is Status.MAX_TIME
                and self.oracle.call_limit(time_limit) == time_limit):
            raise TimeUp
        return mu

    def assignment(self, scores):
        """A MAP assignment; an LP optimum is rounded by the oracle's own `argmax`."""
        return self.oracle.argmax(scores)


def fw_marginals(mrf, theta, weight, decoder, tol=1e-4, max_iter=500):
    """Reweighted marginals argmin_μ −<θ, μ> − H_ρ(μ) by FW with MAP calls (MLE-Struct
    Sec. 3.2) and the kernel line search, from the uniform point; stops on the FW gap."""
    mu = mrf.uniform_marginals()
    g = np.empty_like(mu)
    for _ in range(max_iter):
        _kernels.trw_value_grad(theta, mu, weight, g)
        d = decoder.vertex(-g) - mu
        if -float(g @ d) <= tol:
            break
        gamma = _kernels.trw_line_search(theta, mu, d, weight, 1.0)[0]
        if gamma <= 0.0:
            break
        mu += gamma * d
    return mu


class TRWEntropy(BlockEntropy):
    """The block objective −<θ, μ> − H_ρ(μ) of one CRF example via the TRW kernels."""

    def __init__(self, mrf, rho):
        self.rho = initial_rho(mrf, rho, tree_polytope=False)
        self.weight = entropy_weights(mrf, self.rho)

    def value_grad(self, theta, tau):
        g = np.empty_like(tau)
        return _kernels.trw_value_grad(theta, tau, self.weight, g), g

    def line_derivs(self, theta, tau, d, t):
        return _kernels.trw_line_derivs(theta, tau, d, t, self.weight)




def _node_marginals(decoder, theta, weight, tol):
    mu = fw_marginals(decoder.mrf, theta, weight, decoder, tol=tol)
    return mu[:decoder.mrf.node_off[-1]].reshape(decoder.mrf.n_vars, -1)


class CRFModel(CRFFeatures, LearnerModel):
    """Pairwise CRFs with node and edge features (App. E.1) and a pairwise-MRF MAP oracle
    (``oracle``: anything `fwcore.oracles.resolve_oracle` takes)."""

    def __init__(self, n_labels, dims, oracle):
        super().__init__(n_labels, *dims)
        self.oracle = oracle
        self._caches()

    def _caches(self):
        """Per structure (the same for every example on one graph), kept for the
        `CACHED` structures used last: the decoder's exactness and the entropies (the
        structures themselves: `GRAPHS`)."""
        self._exact, self._entropies = {}, {}

    def __getstate__(self):  # the caches stay where they were built
        state = dict(vars(self))
        for name in ("_exact", "_entropies"):
            del state[name]
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._caches()

    @classmethod
    def from_data(cls, X, Y, n_labels, oracle):
        """(model, examples, labels) from training inputs and labellings, validated."""
        check_nonempty(X)
        n_labels = infer_n_labels(Y, n_labels)
        dims = check_examples(X[:1], n_labels)[1]
        model = cls(n_labels, dims, oracle)
        return (model, *model.prepare(X, Y))

    def check(self, X):
        return check_examples(X, self.n_labels, (self.n_node, self.n_edge))[0]

    def prepare(self, X, Y, first=0):
        examples = check_examples(X, self.n_labels, (self.n_node, self.n_edge), first,
                                  GRAPHS)[0]
        return examples, check_labels(Y, examples, self.n_labels, first)

    def exact(self, ex):
        key = id(ex.mrf)
        if key not in self._exact:
            exact = self.decoder(ex).exact
            with _LOCK:
                _bounded(self._exact)
                self._exact[key] = ex.mrf, exact
        return self._exact[key][1]

    def truth(self, ex, y):
        return ex.mrf.marginal_vector(y)

    def start(self, ex):
        return ex.mrf.uniform_marginals()

    def decoder(self, ex):
        return CRFDecoder(ex.mrf, self.oracle)

    def entropy(self, ex, rho):
        """The example's `TRWEntropy`, one per structure and ``rho`` (it holds no state)."""
        hashable = isinstance(rho, (str, numbers.Real))
        key = (id(ex.mrf), rho if hashable else id(rho))
        if key not in self._entropies:  # the structure is kept so that its id stays its own
            entropy = TRWEntropy(ex.mrf, rho)
            with _LOCK:
                _bounded(self._entropies)
                self._entropies[key] = ex.mrf, entropy
        return self._entropies[key][1]

    def hamming(self, ex, y):
        """+1/n on every unary entry of a wrong label."""
        a = np.zeros(ex.mrf.dim)
        n, L = ex.mrf.n_vars, self.n_labels
        a[:n * L] = 1.0 / n
        a[np.arange(n) * L + y] = 0.0
        return a

    def marginals(self, examples, w, rho, tol, executor=None):
        """Node marginals [n, L]: the reweighted free energy minimised by FW with MAP calls
        (MLE-Struct Sec. 3.2), gap <= ``tol``."""
        thetas = [self.scores(ex, w) for ex in examples]
        weights = [TRWEntropy(ex.mrf, rho).weight for ex in examples]
        return run_tasks(executor, _node_marginals, [self.decoder(ex) for ex in examples],
                         thetas, weights, [tol] * len(examples))


@dataclass(frozen=True)
class CRF(ModelFamily):
    """Pairwise CRFs with node and edge features (App. E.1), a learner's ``model``: X holds
    `CRFExample` objects (or tuples), Y labellings. ``n_labels``: labels per node (None: 1 + the
    largest label in Y, at least 2). ``oracle``: the MAP oracle, anything
    `fwcore.oracles.resolve_oracle` takes (a name in ``fwcore.oracles.available_oracles()``,
    ``(name, options)``, an oracle object or a function); "lp" (the local polytope, where
    its vertices are exact) makes the learners move over the local polytope, assignment
    oracles ("qpbo" for binary models) over the marginal polytope."""

    n_labels: Optional[int] = None
    oracle: Any = "lp"

    #: ρ_e in [0, 1] on every edge, no spanning-tree condition (`initial_rho` with
    #: ``tree_polytope=False``): "matrix-tree" (uniform spanning trees of each example's
    #: graph; convex), "uniform", a function mrf -> ρ, an array (examples on one graph), or
    #: a number in (0, 1] (the paper's 0.5 on grids, App. E.2). Not "coupling": it weighs
    #: trees by the potentials, which are what is learned.
    RHO = [Options("matrix-tree", "uniform"), Interval(0.0, 1.0, lo_open=True), CALLABLE,
           RHO_ARRAY, None]
    DEFAULT_RHO = "matrix-tree"

    def build(self, X, Y):
        return CRFModel.from_data(X, Y, self.n_labels, self.oracle)

    def summary(self, Y):
        """The largest label in Y, when ``n_labels`` is to be inferred."""
        return top_label(Y) if self.n_labels is None else None

    def settled(self, summaries):
        """This family with ``n_labels`` = 1 + the largest label (at least 2) when None."""
        if self.n_labels is not None:
            return self
        return replace(self, n_labels=max(2, max(summaries) + 1))
