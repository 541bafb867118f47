"""Pairwise CRFs with node and edge features on arbitrary graphs (MLE-Struct App. E.1).

An input is a `CRFExample` (or a tuple ``(node_features [n, F], edges [E, 2],
edge_features [E, G])``); its labelling is an int array of n labels in 0..L-1. The
parameters are two matrices, flattened into one vector w = (W_node [L, F], W_edge [L*L, G]):

    θ_i(a)    = Σ_f W_node[a, f] u_i[f]                   (App. E.1, θ_n = F u_n)
    θ_ij(a,b) = Σ_g W_edge[a*L + b, g] v_ij[g]            (θ_e = G v_e)

with (a, b) the labels of the edge's ends in the order the edge was given. `CRFFeatures`
maps parameters to the flat log-potentials of a `PairwiseMRF` (``scores``) and flat
marginals back to feature space (``features`` = Φᵀμ, the adjoint), the two products every
learner needs.
"""
from dataclasses import dataclass

import numpy as np

from ..model import PairwiseMRF

__all__ = ["CRFExample", "CRFFeatures", "check_examples", "check_labels", "infer_n_labels"]


@dataclass(frozen=True, eq=False)
class CRFExample:
    """One input: ``node_features`` [n, F], ``edges`` [E, 2], ``edge_features`` [E, G]."""

    node_features: np.ndarray
    edges: np.ndarray
    edge_features: np.ndarray


class _Prepared:
    """A validated example: the model structure (zero potentials) and the gather index
    from canonical edge blocks (i < j) to the edge blocks in the order given."""

    __slots__ = ("u", "v", "mrf", "eidx")

    def __init__(self, u, edges, v, n_labels):
        self.u, self.v = u, v
        n = u.shape[0]
        self.mrf = PairwiseMRF([n_labels] * n, edges=edges)
        block = np.arange(n_labels * n_labels).reshape(n_labels, n_labels)
        flip = edges[:, 0] > edges[:, 1]
        per_edge = np.where(flip[:, None], block.T.ravel()[None, :], block.ravel()[None, :])
        self.eidx = (per_edge + n_labels * n_labels * np.arange(len(edges))[:, None]).ravel()


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
    if isinstance(X, (CRFExample, np.ndarray)) or not hasattr(X, "__len__") or len(X) == 0:
        raise ValueError("X must be a non-empty list of examples (CRFExample or tuples)")


def check_examples(X, n_labels, dims=None):
    """Validate inputs once: a non-empty sequence of examples sharing F and G (or ``dims``
    = (F, G) when given). Returns (list of `_Prepared`, (F, G))."""
    check_nonempty(X)
    out = []
    for k, x in enumerate(X):
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
            raise ValueError(f"X[{k}] has {e.shape[0]} edges but {v.shape[0]} rows of edge_features")
        if u.shape[0] == 0:
            raise ValueError(f"X[{k}] has no nodes")
        if dims is None:
            dims = (u.shape[1], v.shape[1])
        if (u.shape[1], v.shape[1]) != dims:
            raise ValueError(f"X[{k}] has {u.shape[1]} node and {v.shape[1]} edge features; "
                             f"expected {dims[0]} and {dims[1]} (as in the training data)")
        try:
            out.append(_Prepared(u, e.astype(np.int64), v, n_labels))
        except ValueError as err:
            raise ValueError(f"X[{k}]: {err}") from None
    return out, dims


def check_labels(Y, examples, n_labels):
    """Validate labellings: one int array of length n per example, values in 0..L-1."""
    if not hasattr(Y, "__len__") or len(Y) != len(examples):
        raise ValueError(f"Y must hold one label array per example ({len(examples)}); "
                         f"got {len(Y) if hasattr(Y, '__len__') else type(Y).__name__}")
    out = []
    for k, (y, ex) in enumerate(zip(Y, examples)):
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


def infer_n_labels(Y, n_labels):
    """``n_labels`` if given (an int >= 2), else 1 + the largest label in Y (at least 2)."""
    if n_labels is None:
        try:
            top = max(int(np.max(y)) for y in Y if np.size(y))
        except (TypeError, ValueError):
            raise ValueError("cannot infer n_labels from Y; pass n_labels") from None
        return max(2, top + 1)
    if int(n_labels) != n_labels or n_labels < 2:
        raise ValueError(f"n_labels must be an integer >= 2; got {n_labels!r}")
    return int(n_labels)


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
