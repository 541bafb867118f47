"""Entropies and their edge weights ρ (Barrier FW Sec. 2, Alg. 2; MLE-Struct eq. 2, App. C).

The one vocabulary of every entry point that takes an entropy: ``entropy`` names the
family, ``rho`` its weights.

- ``entropy="trw"``: the reweighted entropy Σ_i c_i H(μ_i) + Σ_e ρ_e H(μ_e), c_i = 1 −
  Σ_{e∋i} ρ_e (Barrier FW eq. 1; MLE-Struct eq. 2). ``rho`` is a rule (a name in
  `RHO_RULES`, or a function model -> ρ), a number (the same ρ on every edge) or an array
  (one ρ per edge); None is the entry point's default rule (`entropy_rho`). With ρ in the
  spanning-tree polytope T it is tree-reweighted: concave, and log Z ≤ max TRW.
- ``entropy="bethe"``: ρ = 1 on every edge (exact on forests; neither concave nor a bound
  on loopy graphs). A ``rho`` given with it is an error.

Matchings reweight one ρ for every vertex instead (MLE-Struct App. C; ρ = 1 is Bethe, 1/2
the RW entropy; `fwcore.matching.inference`), so there ``rho`` is a number only.

============================  ===============  ==========================================
entry point                   entropy          rho with "trw" (None: the first)
============================  ===============  ==========================================
`fwcore.infer`                "trw"            "matrix-tree", "coupling", "uniform",
                                               "balanced-trees", a function, an array or
                                               a number, in T
`fwcore.trbp`                 "trw", "bethe"   as `fwcore.infer`
`fwcore.loopy_bp`             (is "bethe")     —
`fwcore.learn.MLEStruct`      "trw", "bethe"   as its model's family allows:
                                               `fwcore.learn.CRF` "matrix-tree",
                                               "uniform", a function, an array (ρ_e in
                                               [0, 1]) or a number in (0, 1];
                                               `fwcore.learn.Matching` a number in
                                               [0, 1] (None: 1/2)
`fwcore.matching_marginals`   "bethe", "trw"   a number in [0, 1] (None: 1/2)
============================  ===============  ==========================================

ρ_e is the probability that edge e appears in a spanning tree (a spanning forest on a
disconnected graph) drawn from some distribution over trees. The TRW bound holds for any ρ
in T; fwcore starts from the matrix-tree theorem and moves ρ towards the FW vertex of T, a
maximum-weight spanning forest on edge mutual information.
"""
import numbers

import numpy as np

from .. import _kernels
from .._linalg import selected_inverse
from ..checks import CALLABLE, Interval, Kind, Options, check_params

__all__ = ["matrix_tree_rho", "balanced_tree_rho", "coupling_weights", "max_spanning_forest",
           "check_rho", "uniform_rho", "entropy_weights", "entropy_rho", "initial_rho",
           "edge_mutual_information", "rho_direction", "ENTROPIES", "ENTROPY", "RHO_RULES",
           "RHO_ARRAY", "RHO"]

#: the entropy families (module docstring), and their constraint for `fwcore.checks`
ENTROPIES = ("trw", "bethe")
ENTROPY = Options(*ENTROPIES)
#: the named rules for ρ (`initial_rho`; the first is the default of the pairwise models)
RHO_RULES = ("matrix-tree", "coupling", "uniform", "balanced-trees")
#: a ρ given edge by edge (`check_rho` checks its values)
RHO_ARRAY = Kind(lambda v: isinstance(v, (np.ndarray, list, tuple)),
                 "an array of one rho per edge")
#: ``rho`` of the pairwise entry points (`initial_rho` checks the values)
RHO = [Options(*RHO_RULES), Interval(0.0, 1.0), CALLABLE, RHO_ARRAY, None]

_RHO_TOL = 1e-6


def _components(n, edges):
    from scipy.sparse import coo_matrix, csgraph
    g = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return csgraph.connected_components(g, directed=False)


def matrix_tree_rho(model, weights=None):
    """ρ_e = w_e R_e: edge appearance probabilities of the distribution over spanning trees
    that weights each tree by the product of its edge weights (uniform when ``weights`` is
    None). R_e is the effective resistance of e with conductances w (Kirchhoff's
    matrix-tree theorem); Σ_e ρ_e = n − #components, and a forest gets ρ = 1.

    Per component: sparse LDLᵀ of the grounded Laplacian (SuperLU, symmetric mode, minimum
    degree order), then the entries of its inverse on the factor's pattern by selected
    inversion (`_linalg.selected_inverse`); R_ij = Z_ii + Z_jj − 2 Z_ij.
    """
    n, edges = model.n_vars, np.asarray(model.edges, dtype=np.int64)
    w = np.ones(len(edges)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(edges),) or not np.all(np.isfinite(w)) or (w <= 0).any():
        raise ValueError("weights must be positive finite numbers, one per edge")
    rho = np.zeros(len(edges))
    if len(edges) == 0:
        return rho
    n_comp, label = _components(n, edges)
    for c in range(n_comp):
        nodes = np.flatnonzero(label == c)
        if len(nodes) < 2:
            continue
        emask = label[edges[:, 0]] == c
        local = np.empty(n, dtype=np.int64)
        local[nodes] = np.arange(len(nodes))
        rho[emask] = w[emask] * _effective_resistance(
            len(nodes), local[edges[emask, 0]], local[edges[emask, 1]], w[emask])
    return np.clip(rho, 0.0, 1.0)


def _effective_resistance(m, ei, ej, we):
    """Effective resistance of each edge (ei, ej) of a connected graph on m nodes."""
    from scipy.sparse import coo_matrix, csc_matrix, linalg
    lap = coo_matrix((np.concatenate([we, we, -we, -we]),
                      (np.concatenate([ei, ej, ei, ej]), np.concatenate([ei, ej, ej, ei]))),
                     shape=(m, m)).tocsc()
    # ground node m-1: the reduced Laplacian is positive definite, so LU = L D L^T
    lu = linalg.splu(lap[:-1, :-1].tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
              options=dict(SymmetricMode=True))
    if not np.array_equal(lu.perm_r, lu.perm_c):
        raise RuntimeError("SuperLU pivoted on a Laplacian; effective resistances unavailable")
    fac = lu.L.tocsc()
    zval, zdiag = np.zeros(fac.nnz), np.zeros(m - 1)
    selected_inverse(fac.indptr.astype(np.int64), fac.indices.astype(np.int32), fac.data,
                     lu.U.diagonal(), zval, zdiag)
    z = csc_matrix((zval, fac.indices, fac.indptr), shape=(m - 1, m - 1))
    pos = np.append(lu.perm_r, -1)          # position in the factor; -1 for the ground
    a, b = pos[ei], pos[ej]
    diag = np.append(zdiag, 0.0)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    both = lo >= 0
    off = np.zeros(len(ei))
    off[both] = np.asarray(z[hi[both], lo[both]]).ravel()
    return diag[a] + diag[b] - 2.0 * off


def balanced_tree_rho(model, n_trees=32, seed=0, time_limit=None):
    """ρ_e = the share of ``n_trees`` spanning forests that contain edge e, each forest
    Kruskal's on the edges by increasing count in the forests before it, ties in a random
    order (`fwcore._kernels.balanced_trees`, seeded with ``seed``): a convex combination of
    forests, so a point of the spanning-tree polytope (any number of them), and one whose
    edges are used about equally (on a 40x40 grid the average of t forests is within
    2-5 / t of uniform, t = 10 to 400). TRBP's bound from it matches the matrix-tree rule's and
    "uniform"'s to 0.1% on the shared UAI grids, 50 forests or 10. One forest costs a
    shuffle and a union-find pass over the edges (0.14-0.19 s on a 10^6-variable grid); the
    forests stop after ``time_limit`` seconds (None: none) with at least one drawn, and
    Ctrl-C raises KeyboardInterrupt within milliseconds."""
    n, n_edges = model.n_vars, model.n_edges
    count = np.zeros(n_edges)
    order, ranked = np.empty(n_edges, dtype=np.int32), np.empty(n_edges, dtype=np.int32)
    bucket, parent = np.empty(n_trees + 2, dtype=np.int64), np.empty(n, dtype=np.int64)
    scratch = (count, order, ranked, bucket, parent)
    done, _ = _kernels.balanced_trees(n, model.edges, n_trees, seed, *scratch,
                                      time_limit or 0.0, True)
    if done == 0:  # out of time in the first forest: finish it
        done, _ = _kernels.balanced_trees(n, model.edges, 1, seed, *scratch, 0.0, True)
    return count / done


def coupling_weights(model, floor=1e-3):
    """Coupling strength of each edge, the weights of the paper code's initial ρ: for a
    binary edge |θ00 + θ11 − θ01 − θ10|; in general the Frobenius norm of the
    double-centred table (the same up to a factor 2 on binary edges). Weights below
    ``floor`` × the mean weight are raised to it, so no edge gets ρ = 0. Infinite
    entries are ignored."""
    w = np.empty(model.n_edges)
    for e in range(model.n_edges):
        t = model.pairwise(e)
        t = np.where(np.isfinite(t), t, 0.0)
        t = t - t.mean(axis=0, keepdims=True) - t.mean(axis=1, keepdims=True) + t.mean()
        w[e] = np.sqrt((t ** 2).sum())
    mean = w.mean() if len(w) and w.mean() > 0 else 1.0
    return np.maximum(w, floor * mean)


def uniform_rho(model):
    """The same ρ on every edge of a component: (n_c − 1) / E_c."""
    n, edges = model.n_vars, np.asarray(model.edges, dtype=np.int64)
    rho = np.zeros(len(edges))
    if len(edges) == 0:
        return rho
    n_comp, label = _components(n, edges)
    n_c = np.bincount(label, minlength=n_comp)
    e_c = np.bincount(label[edges[:, 0]], minlength=n_comp)
    lab = label[edges[:, 0]]
    return (n_c[lab] - 1) / e_c[lab]


def max_spanning_forest(n, edges, weights):
    """Indicator of a maximum-weight spanning forest over *all* edges (edges of weight zero
    are kept when they connect two trees): the FW vertex of the spanning-tree polytope for
    the linear objective ``weights`` (Barrier FW Alg. 2, line 21).

    The forest Kruskal's algorithm builds taking the edges by decreasing weight, ties in
    edge order: `scipy.sparse.csgraph.minimum_spanning_tree` on the edges' ranks in that
    order (1, 2, ...: distinct and positive, so the minimum forest is unique and is
    Kruskal's; of parallel edges only the first can join it, self-loops never do)."""
    from scipy.sparse import coo_matrix, csgraph
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    order = np.argsort(-np.asarray(weights, dtype=np.float64), kind="stable")
    a, b = edges[order, 0], edges[order, 1]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(lo * n + hi, return_index=True)
    first = first[lo[first] != hi[first]]
    ranks = coo_matrix((first + 1.0, (lo[first], hi[first])), shape=(n, n))
    forest = csgraph.minimum_spanning_tree(ranks)
    chosen = np.zeros(len(edges))
    chosen[order[forest.data.astype(np.int64) - 1]] = 1.0
    return chosen


def check_rho(model, rho, tree_polytope=True):
    """Validated float64 copy of a user ρ: one value per edge in [0, 1], and with
    ``tree_polytope`` summing to n_c − 1 on each connected component (necessary conditions
    of the spanning-tree polytope, which the TRW bound needs)."""
    rho = np.asarray(rho, dtype=np.float64)
    if rho.shape != (model.n_edges,):
        raise ValueError(f"rho must have shape ({model.n_edges},), one value per edge; "
                         f"got {rho.shape}")
    if not np.all(np.isfinite(rho)) or (rho < -_RHO_TOL).any() or (rho > 1 + _RHO_TOL).any():
        raise ValueError("rho must lie in [0, 1] on every edge (edge appearance probabilities)")
    if tree_polytope and model.n_edges:
        n_comp, label = _components(model.n_vars, np.asarray(model.edges, dtype=np.int64))
        sums = np.bincount(label[model.edges[:, 0]], weights=rho, minlength=n_comp)
        need = np.bincount(label, minlength=n_comp) - 1
        bad = np.flatnonzero(np.abs(sums - need) > _RHO_TOL * max(1, model.n_vars))
        if len(bad):
            c = bad[0]
            raise ValueError(f"rho must sum to n_c - 1 = {need[c]} over each connected component "
                             f"(spanning-tree polytope); component {c} sums to {sums[c]:.6g}")
    return np.clip(rho, 0.0, 1.0)


def entropy_weights(model, rho):
    """Entropy coefficient K of every entry of the flat marginal vector (float64[D]): c_i =
    1 − Σ_{e∋i} ρ_e on node i's block, ρ_e on edge e's block, so that the TRW entropy is
    Σ_i c_i H(μ_i) + Σ_e ρ_e H(μ_e) (Barrier FW eq. 1; the `weight` of the TRW kernels)."""
    rho = np.asarray(rho, dtype=np.float64)
    c = 1.0 - np.bincount(model.edges.ravel(), np.repeat(rho, 2), minlength=model.n_vars)
    sizes = np.diff(np.concatenate([model.node_off, model.edge_off[1:]]))
    return np.repeat(np.concatenate([c, rho]), sizes)


def entropy_rho(entropy, rho, default):
    """The ``rho`` that ``entropy`` means (module docstring): 1.0 for "bethe" (a ``rho``
    given with it is a ValueError), ``rho`` for "trw", or ``default`` when it is None."""
    if entropy == "bethe":
        if rho is not None:
            raise ValueError(f"entropy='bethe' has rho = 1 on every edge; leave rho=None, or "
                             f"use entropy='trw' for rho={rho!r}")
        return 1.0
    return default if rho is None else rho


def initial_rho(model, rho=None, entropy="trw", tree_polytope=True):
    """ρ (float64[E]) of the entropy ``entropy`` with weights ``rho`` (module docstring;
    None: "matrix-tree"): the one resolver of ρ for pairwise models. Rules: "matrix-tree"
    (uniform spanning trees), "coupling" (trees weighted by edge coupling strength, the
    Barrier FW paper code's choice), "uniform" ((n_c − 1)/E_c on every edge; in T on
    grids, not on every graph), "balanced-trees" (`balanced_tree_rho`), or a function
    model -> ρ. A number is ρ on every edge. Other than the named rules, ρ is checked by
    `check_rho`: in [0, 1], and with ``tree_polytope`` (the TRW bound; not for "bethe") in
    the spanning-tree polytope, which a number is only where it equals (n_c − 1)/E_c."""
    p = check_params({"entropy": ENTROPY, "rho": RHO}, entropy=entropy, rho=rho)
    rho = entropy_rho(p["entropy"], p["rho"], RHO_RULES[0])
    if isinstance(rho, str):
        if rho == "matrix-tree":
            return matrix_tree_rho(model)
        if rho == "coupling":
            return matrix_tree_rho(model, coupling_weights(model))
        if rho == "balanced-trees":
            return balanced_tree_rho(model)
        return uniform_rho(model)
    if callable(rho):
        rho = rho(model)
    elif isinstance(rho, numbers.Real):
        rho = np.full(model.n_edges, float(rho))
    return check_rho(model, rho, tree_polytope and p["entropy"] == "trw")


def edge_mutual_information(model, mu):
    """I(μ_e) of every edge's block of the flat marginal vector ``mu`` (float64[E])."""
    mi = np.empty(model.n_edges)
    _kernels.edge_mutual_information(mu, model.graph, mi)
    return mi


def rho_direction(model, mu, rho):
    """d = v − ρ, v the FW vertex of the spanning-tree polytope for the bound's gradient:
    the maximum-weight spanning forest on edge mutual information at ``mu`` (Barrier FW
    Alg. 2 lines 20-21)."""
    return max_spanning_forest(model.n_vars, model.edges, edge_mutual_information(model, mu)) - rho
