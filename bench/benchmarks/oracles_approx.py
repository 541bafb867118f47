"""Approximate MAP oracles: QPBO vs thinqpbo on grids, ICM throughput, and scores of
qpbo / trws / icm / maxproduct / portfolio relative to the exact optimum on the shared
instances (the exact oracles' times are in oracles_exact.py).

thinqpbo (PyPI, Kolmogorov's QPBO in C++) is a benchmark-only peer: install it with
``pip install thinqpbo``; its benchmarks are skipped when it is missing.
"""
import importlib.util
import time

import numpy as np

import fwcore
from fwcore.oracles import resolve_oracle

from .common import INSTANCES, QUICK


def _binary_grid(side, submodular, seed=0):
    """Barrier FW's grid (couplings U[-4, 4]); with ``submodular`` all made attractive."""
    model = fwcore.random_grid(side, seed=seed)
    if not submodular:
        return model
    theta = model.theta.copy()
    blocks = theta[model.edge_off[0]:].reshape(-1, 4)
    blocks[:] = np.abs(blocks[:, :1]) * np.array([1.0, -1.0, -1.0, 1.0])
    return model.with_theta(theta)


def _thinqpbo_solve(model):
    """Build Kolmogorov's QPBO graph (energies E = -scores), solve, compute weak
    persistencies. Returns (seconds of solve + persistencies only, labels)."""
    import thinqpbo
    n = model.n_vars
    q = thinqpbo.QPBODouble()
    q.add_node(n)
    un = -model.theta[:2 * n].reshape(n, 2)
    for i in range(n):
        q.add_unary_term(i, un[i, 0], un[i, 1])
    pw = -model.theta[2 * n:].reshape(-1, 4)
    for (i, j), (a, b, c, d) in zip(model.edges.tolist(), pw.tolist()):
        q.add_pairwise_term(i, j, a, b, c, d)
    t0 = time.perf_counter()
    q.solve()
    q.compute_weak_persistencies()
    seconds = time.perf_counter() - t0
    return seconds, np.array([q.get_label(i) for i in range(n)])


def _compared(key, doc):
    """A track_* method reporting one figure of `QPBOVsThinqpbo.setup`'s comparison."""
    def track(self, side, submodular):
        return self.compared[key]
    track.__doc__ = doc
    return track


class QPBOGrid:
    """fwcore's qpbo (graph build + BK max-flow + persistencies + ICM completion) on
    Barrier FW's binary grid and its attractive version."""

    param_names = ["side", "submodular"]
    params = [[100, 200] if QUICK else [100, 200, 300, 500], [True, False]]

    def setup(self, side, submodular):
        self.model = _binary_grid(side, submodular)
        self.oracle = resolve_oracle("qpbo", self.model)

    def time_fwcore_qpbo(self, side, submodular):
        self.oracle.argmax(self.model.theta)


class QPBOVsThinqpbo:
    """fwcore's qpbo vs thinqpbo's solve + weak persistencies (its Python graph-building
    loop not timed) on `QPBOGrid`'s grids: the ratio compares the best of 3 runs of each,
    and the labellings."""

    param_names, params = QPBOGrid.param_names, QPBOGrid.params

    def setup(self, side, submodular):
        if importlib.util.find_spec("thinqpbo") is None:
            raise NotImplementedError("thinqpbo not installed (pip install thinqpbo)")
        self.model = _binary_grid(side, submodular)
        self.oracle = resolve_oracle("qpbo", self.model)
        theirs, labels = min((_thinqpbo_solve(self.model) for _ in range(3)),
                             key=lambda r: r[0])
        ours = min(self._time_ours() for _ in range(3))
        mine = self.oracle.partial_labelling
        labelled = labels >= 0
        self.compared = dict(ratio=ours / theirs, theirs=theirs, ours=ours,
                             same=float(np.mean(mine[labelled] == labels[labelled])),
                             same_partial=float(np.mean(mine == np.where(labelled, labels,
                                                                         -1))),
                             unlabelled_theirs=int((~labelled).sum()),
                             unlabelled_ours=int((mine < 0).sum()))

    def _time_ours(self):
        t0 = time.perf_counter()
        self.oracle.argmax(self.model.theta)
        return time.perf_counter() - t0

    track_time_ratio_vs_thinqpbo = _compared("ratio", "our seconds / thinqpbo's")
    track_thinqpbo_seconds = _compared("theirs", "thinqpbo's seconds")
    track_same_labels_fraction = _compared(
        "same", "Fraction of thinqpbo's labelled variables where our persistent label agrees.")
    track_same_partial_labelling_fraction = _compared(
        "same_partial", "Fraction of all variables with the same persistent label or both "
                        "unlabelled.")
    track_unlabelled_ours = _compared("unlabelled_ours", "our unlabelled variables")
    track_unlabelled_thinqpbo = _compared("unlabelled_theirs", "thinqpbo's unlabelled variables")


class ICMThroughput:
    """ICM label evaluations per second (one evaluation = the local score of one state,
    summing over the variable's neighbours) from a random start."""

    param_names = ["model"]
    params = [["grid200_binary", "potts200_5labels"]]

    def setup(self, model):
        side = 100 if QUICK else 200
        self.model = (fwcore.random_grid(side, seed=0) if model.startswith("grid")
                      else fwcore.potts_grid(side, n_labels=5, seed=0))
        self.init = np.random.default_rng(0).integers(0, self.model.card)
        self.oracle = resolve_oracle("icm", self.model, max_sweeps=1000)

    def time_icm(self, model):
        self.oracle.argmax(self.model.theta, init=self.init)

    def track_label_evaluations_per_second(self, model):
        t0 = time.perf_counter()
        self.oracle.argmax(self.model.theta, init=self.init)
        seconds = time.perf_counter() - t0
        return self.oracle.n_sweeps * float(self.model.card.sum()) / seconds


_INSTANCES = ["uai2014/Grids_12", "uai2014/DBN_14", "uai2014/Segmentation_11",
              "uai2014/Segmentation_12", "uai2014/CSP_11", "uai2014/ObjectDetection_11",
              "uai2014/pdb1akg", "fw-inference/grid10x10/gridWi10Tr1"]


class OraclesUAI:
    """Score and bound of each approximate oracle relative to the exact optimum (from the
    .MAP / .MPE reference assignment) on the shared instances."""

    param_names = ["instance", "oracle"]
    params = [_INSTANCES[:2] if QUICK else _INSTANCES,
              ["qpbo", "trws", "icm", "maxproduct", "portfolio"]]

    def setup(self, instance, oracle):
        from fwcore.io.uai import read_map, read_uai
        path = INSTANCES / f"{instance}.uai"
        if not path.exists():
            raise NotImplementedError(f"{path} not found")
        self.model = read_uai(path)
        if oracle == "qpbo" and (self.model.card != 2).any():
            raise NotImplementedError("qpbo: binary models only")
        ref = path.with_name(path.name + (".MAP" if instance.startswith("uai") else ".MPE"))
        self.opt = float(self.model.score(read_map(ref)))
        self.oracle = resolve_oracle(oracle, self.model)

    def time_argmax(self, instance, oracle):
        self.oracle.argmax(self.model.theta)

    def track_score_minus_optimum(self, instance, oracle):
        return float(self.model.score(self.oracle.argmax(self.model.theta))) - self.opt

    def track_bound_minus_optimum(self, instance, oracle):
        self.oracle.argmax(self.model.theta)
        bound = self.oracle.upper_bound()
        return float("nan") if bound is None else bound - self.opt
