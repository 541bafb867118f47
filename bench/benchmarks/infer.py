"""Barrier FW marginal inference (fwcore.marginals.barrier_fw) on the paper's instances.

`InferFamily` is the Done-when table of issue 5: per family of /shared/instances/fw-inference
(clique theta = 0.5 / 2 / 8, 5x5 grids), mean zeta_mu = mean |mu_i(1) - p_i(1)|, mean
(log_z_upper - log Z), MAP calls and seconds per instance, for M_delta with the exact
oracle, M_delta with an approximate oracle (TRW-S or the portfolio, + ICM local search),
L_delta and TRBP, all with 10 rho updates. Every family is solved by every method once,
in `setup_cache` (asv runs it once per class, not once per track_* method); the track_*
methods report the means (seconds are wall time of that single run).
`InferMedium` is issue 13's table of medium models with exact answers (`infer`'s
defaults against TRBP and loopy BP).
FWCORE_BENCH_PROFILE=quick: InferFamily on the first instance of the theta = 2 cliques and
of the grids, InferMedium on Grids_12 and the 15x15 grid at coupling 4.
"""
import time

import numpy as np

import fwcore
from fwcore import barrier_fw, infer, loopy_bp, trbp
from fwcore.io.uai import read_mar, read_pr, read_uai

from .common import INSTANCES, QUICK, instance_path, track_figure

# the 5 instances per family that the paper code's figures (instances README) average over
_FAMILIES = {
    "clique-0.5": [f"clique10/{i}" for i in range(1, 6)],
    "clique-2": [f"clique10/{i}" for i in range(201, 206)],
    "clique-8": [f"clique10/{i}" for i in range(801, 806)],
    "grid-5x5": [f"grid5x5/gridWi5Tr{i}" for i in range(1, 6)],
}

_METHODS = {
    "M-exact": lambda m: barrier_fw(m, oracle="exact"),
    "M-exact-coupling": lambda m: barrier_fw(m, oracle="exact", rho="coupling"),
    "M-exact-fixed-step": lambda m: barrier_fw(m, oracle="exact", rho_step="fixed"),
    "M-exact-no-local-search": lambda m: barrier_fw(m, oracle="exact", local_search=False),
    "M-approx": lambda m: barrier_fw(m, oracle="trws", seed=0),
    "M-approx-portfolio": lambda m: barrier_fw(m, oracle="portfolio", seed=0),
    "L": lambda m: barrier_fw(m, domain="local"),
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
    params = [["clique-2", "grid-5x5"] if QUICK else list(_FAMILIES), list(_METHODS)]
    timeout = 3600  # also the limit of setup_cache, which solves the whole table

    def setup_cache(self):
        """{(family, method): means of (zeta_mu, bound gap, MAP calls, seconds)}; empty
        when the instances are absent."""
        root = INSTANCES / "fw-inference"
        table = {}
        for family in self.params[0]:
            names = _FAMILIES[family]
            paths = [root / f"{name}.uai" for name in (names[:1] if QUICK else names)]
            if not paths[0].exists():
                continue
            models = [read_uai(path) for path in paths]
            for method, run in _METHODS.items():
                rows = []
                for path, model in zip(paths, models):
                    res, seconds = _timed(run, model)
                    rows.append((zeta_mu(res, read_mar(f"{path}.MAR")),
                                 res.log_z_upper - read_pr(f"{path}.PR"), res.n_oracle_calls,
                                 seconds))
                table[family, method] = np.mean(rows, axis=0)
        return table

    def setup(self, table, family, method):
        if (family, method) not in table:
            raise NotImplementedError(f"{INSTANCES / 'fw-inference'} not found")
        self.figures = table[family, method]

    track_zeta_mu = track_figure(0)
    track_bound_gap = track_figure(1)
    track_map_calls = track_figure(2)
    track_seconds = track_figure(3, unit="s")


class InferLargeGrid:
    """A 100x100 Barrier FW grid (no exact answer): M_delta with the approximate oracle
    against TRBP and loopy BP; zeta_mu is measured against TRBP's marginals."""

    param_names = ["method"]
    params = [["M-approx", "TRBP", "loopy-BP"]]
    timeout = 3600

    def setup_cache(self):
        """{method: (seconds, zeta_mu against TRBP)}, every method run once."""
        side, updates = (30, 2) if QUICK else (100, 10)
        model = fwcore.random_grid(side, seed=0)
        runs = {"M-approx": lambda: barrier_fw(model, oracle="trws", seed=0, rho_updates=updates),
                "TRBP": lambda: trbp(model, rho_updates=updates),
                "loopy-BP": lambda: loopy_bp(model)}
        results = {method: _timed(run) for method, run in runs.items()}
        ref = results["TRBP"][0].node_marginals
        return {method: (seconds, zeta_mu(res, ref)) for method, (res, seconds) in results.items()}

    def track_seconds(self, table, method):
        return table[method][0]

    def track_zeta_mu_vs_trbp(self, table, method):
        return table[method][1]


class InferTime:
    """Wall time of one clique and one 5x5 grid with the exact oracle (the asv timing)."""

    param_names = ["instance"]
    params = [["clique10/201", "grid5x5/gridWi5Tr1"]]
    timeout = 600

    def setup(self, instance):
        self.model = read_uai(instance_path(f"fw-inference/{instance}.uai"))

    def time_infer_exact(self, instance):
        barrier_fw(self.model, oracle="exact")


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
    params = [["Grids_12", "grid15-c4"] if QUICK
              else list(_MEDIUM), ["infer", "infer-portfolio", "infer-trws", "TRBP", "loopy-BP"]]
    timeout = 3600

    def setup_cache(self):
        """{(instance, method): (seconds, zeta_mu, bound gap, certified)}, every instance
        solved exactly once and by every method once; shared instances that are absent
        are left out."""
        instances, methods = self.params
        table = {}
        for instance in instances:
            try:
                model = _MEDIUM[instance]()
            except NotImplementedError:
                continue
            ex = fwcore.exact_inference(model)
            runs = {"infer": lambda: infer(model),
                    "infer-portfolio": lambda: barrier_fw(model, oracle="portfolio", seed=0),
                    "infer-trws": lambda: barrier_fw(model, oracle="trws", seed=0),
                    "TRBP": lambda: trbp(model), "loopy-BP": lambda: loopy_bp(model)}
            for method in methods:
                res, seconds = _timed(runs[method])
                table[instance, method] = (seconds, zeta_mu(res, ex.node_marginals),
                                           res.log_z_upper - ex.log_z, float(res.certified))
        return table

    def setup(self, table, instance, method):
        if (instance, method) not in table:
            raise NotImplementedError(f"{instance} not found in {INSTANCES / 'uai2014'}")

    def track_seconds(self, table, instance, method):
        return table[instance, method][0]

    def track_zeta_mu(self, table, instance, method):
        return table[instance, method][1]

    def track_bound_gap(self, table, instance, method):
        return table[instance, method][2]

    def track_certified(self, table, instance, method):
        return table[instance, method][3]
