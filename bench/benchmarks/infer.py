"""Barrier FW marginal inference (fwcore.barrier_fw) on the paper's instances.

`InferFamily` is the Done-when table of issue 5: per family of /shared/instances/fw-inference
(clique theta = 0.5 / 2 / 8, 5x5 grids), mean zeta_mu = mean |mu_i(1) - p_i(1)|, mean
(log_z_upper - log Z), MAP calls and seconds per instance, for M_delta with the exact
oracle, M_delta with an approximate oracle (TRW-S or the portfolio, + ICM local search),
L_delta and TRBP, all with 10 rho updates. Each family is solved once in `setup`; the
track_* methods report the means (seconds are wall time of that single run).
`InferMedium` is issue 13's table of medium models with exact answers (`infer`'s
defaults against TRBP and loopy BP).
"""
import time

import numpy as np

import fwcore
from fwcore import infer, loopy_bp, trbp
from fwcore.uai import read_mar, read_pr, read_uai

from .common import INSTANCES, QUICK, instance_path

# the 5 instances per family that the paper code's figures (instances README) average over
_FAMILIES = {
    "clique-0.5": [f"clique10/{i}" for i in range(1, 6)],
    "clique-2": [f"clique10/{i}" for i in range(201, 206)],
    "clique-8": [f"clique10/{i}" for i in range(801, 806)],
    "grid-5x5": [f"grid5x5/gridWi5Tr{i}" for i in range(1, 6)],
}

_METHODS = {
    "M-exact": lambda m: infer(m, oracle="exact"),
    "M-exact-coupling": lambda m: infer(m, oracle="exact", rho="coupling"),
    "M-exact-fixed-step": lambda m: infer(m, oracle="exact", rho_step="fixed"),
    "M-exact-no-local-search": lambda m: infer(m, oracle="exact", local_search=False),
    "M-approx": lambda m: infer(m, oracle="trws", seed=0),
    "M-approx-portfolio": lambda m: infer(m, oracle="portfolio", seed=0),
    "L": lambda m: infer(m, domain="local"),
    "TRBP": lambda m: trbp(m),
}


def zeta_mu(result, reference):
    """Mean over variables of |mu_i(1) - p_i(1)| (Barrier FW Sec. 5)."""
    return float(np.mean([abs(a[1] - b[1]) for a, b in zip(result.node_marginals, reference)]))


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


class InferFamily:
    """The issue-5 table: zeta_mu, bound gap, MAP calls, seconds (means per instance)."""

    param_names = ["family", "method"]
    params = [list(_FAMILIES), list(_METHODS)]
    timeout = 1800

    def setup(self, family, method):
        files = _FAMILIES[family][:3] if QUICK else _FAMILIES[family]
        root = INSTANCES / "fw-inference"
        if not (root / f"{files[0]}.uai").exists():
            raise NotImplementedError(f"{root} not found")
        rows = []
        for name in files:
            path = root / f"{name}.uai"
            model = read_uai(path)
            res, seconds = _timed(_METHODS[method], model)
            rows.append((zeta_mu(res, read_mar(f"{path}.MAR")),
                         res.log_z_upper - read_pr(f"{path}.PR"), res.n_oracle_calls, seconds))
        self.means = np.mean(rows, axis=0)

    def track_zeta_mu(self, family, method):
        return float(self.means[0])

    def track_bound_gap(self, family, method):
        return float(self.means[1])

    def track_map_calls(self, family, method):
        return float(self.means[2])

    def track_seconds(self, family, method):
        return float(self.means[3])


class InferLargeGrid:
    """A 100x100 Barrier FW grid (no exact answer): M_delta with the approximate oracle
    against TRBP and loopy BP; zeta_mu is measured against TRBP's marginals."""

    param_names = ["method"]
    params = [["M-approx", "TRBP", "loopy-BP"]]
    timeout = 3600

    def setup(self, method):
        side = 30 if QUICK else 100
        model = fwcore.random_grid(side, seed=0)
        run = {"M-approx": lambda: infer(model, oracle="trws", seed=0,
                                         rho_updates=2 if QUICK else 10),
               "TRBP": lambda: trbp(model, rho_updates=2 if QUICK else 10),
               "loopy-BP": lambda: loopy_bp(model)}[method]
        self.result, self.seconds = _timed(run)
        ref = self.result if method == "TRBP" else trbp(model, rho_updates=2 if QUICK else 10)
        self.zeta = zeta_mu(self.result, ref.node_marginals)

    def track_seconds(self, method):
        return self.seconds

    def track_zeta_mu_vs_trbp(self, method):
        return self.zeta


class InferTime:
    """Wall time of one clique and one 5x5 grid with the exact oracle (the asv timing)."""

    param_names = ["instance"]
    params = [["clique10/201", "grid5x5/gridWi5Tr1"]]
    timeout = 600

    def setup(self, instance):
        self.model = read_uai(instance_path(f"fw-inference/{instance}.uai"))

    def time_infer_exact(self, instance):
        infer(self.model, oracle="exact")


def _generated(side, coupling):
    return lambda: fwcore.random_grid(side, coupling=coupling, field=1.0, seed=0)


def _shared(name):
    def load():
        path = INSTANCES / "uai2014" / f"{name}.uai"
        if not path.exists():
            raise NotImplementedError(f"{path} not found")
        return read_uai(path)
    return load


#: issue 13's medium models: exact answers by elimination
_MEDIUM = {"Grids_12": _shared("Grids_12"), "Grids_15": _shared("Grids_15"),
           "Segmentation_11": _shared("Segmentation_11"),
           "Segmentation_12": _shared("Segmentation_12"),
           "grid15-c1.5": _generated(15, 1.5), "grid20-c1.5": _generated(20, 1.5),
           "grid15-c4": _generated(15, 4.0), "grid20-c4": _generated(20, 4.0)}


class InferMedium:
    """Issue 13's medium models with exact answers: `infer` with its defaults against
    TRBP and loopy BP (their defaults), zeta_mu and seconds in the same run; the bound
    gap log_z_upper - log Z (for the BP baselines their TRW / Bethe value, no bound)."""

    param_names = ["instance", "method"]
    params = [["Grids_12", "Segmentation_11", "grid15-c1.5", "grid15-c4"] if QUICK
              else list(_MEDIUM), ["infer", "infer-portfolio", "infer-trws", "TRBP", "loopy-BP"]]
    timeout = 3600

    def setup(self, instance, method):
        model = _MEDIUM[instance]()
        ex = fwcore.exact_inference(model)
        run = {"infer": lambda: infer(model),
               "infer-portfolio": lambda: infer(model, oracle="portfolio", seed=0),
               "infer-trws": lambda: infer(model, oracle="trws", seed=0),
               "TRBP": lambda: trbp(model), "loopy-BP": lambda: loopy_bp(model)}[method]
        res, self.seconds = _timed(run)
        self.zeta = zeta_mu(res, ex.node_marginals)
        self.bound_gap = res.log_z_upper - ex.log_z
        self.certified = float(res.certified)

    def track_seconds(self, instance, method):
        return self.seconds

    def track_zeta_mu(self, instance, method):
        return self.zeta

    def track_bound_gap(self, instance, method):
        return self.bound_gap

    def track_certified(self, instance, method):
        return self.certified
