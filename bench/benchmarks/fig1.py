"""Barrier FW Fig. 1 on the paper's instances: zeta_mu, zeta_logZ and MAP calls per method.

Families of /shared/instances/fw-inference: the 10-node cliques at every coupling theta
(0.5, 1, 2, ..., 8) and the 5x5 grids. Methods: M_delta with the exact oracle (10 rho
updates, and with none: the paper's "first rho"), M_delta with an approximate oracle
(TRW-S), L_delta (``domain="local"``), TRBP, loopy BP, and Perturb-and-MAP as App. G runs
it (m = 5 copies, 10 samples, marginals by conditioning), with m = 1 (H&J Cor. 1, the
upper bound in expectation) and with marginals from the sample frequencies.
zeta_logZ = |log Z value - log Z|, the value as Barrier FW Sec. 5 plots it: the certified
bound (TRW + gap) with an exact oracle, the TRW primal with the approximate one
(`PRIMAL`). `run_family` is shared with bench/paper_fig1.py, which draws the figures;
FWCORE_BENCH_PROFILE=quick uses one instance of the theta = 2 cliques and of the grids, else
every family with the 5 instances the paper code's figures average over.
"""
import numpy as np

from fwcore import PerturbResult, barrier_fw, loopy_bp, perturb_and_map, trbp
from fwcore.oracles import available_oracles
from fwcore.io.uai import read_mar, read_pr, read_uai

from .common import INSTANCES, QUICK, track_figure
from .infer import zeta_mu

THETAS = [0.5, 1, 2, 3, 4, 5, 6, 7, 8]
#: family -> instance names; clique k*100+1.. has theta = k (1.. has 0.5)
FAMILIES = {**{f"clique-{t:g}": [f"clique10/{(100 * int(t) if t >= 1 else 0) + i}"
                                 for i in range(1, 6)] for t in THETAS},
            "grid-5x5": [f"grid5x5/gridWi5Tr{i}" for i in range(1, 6)]}

METHODS = {
    "M-exact": lambda m: barrier_fw(m, oracle="exact"),
    "M-exact-first-rho": lambda m: barrier_fw(m, oracle="exact", rho_updates=0),
    "M-approx": lambda m: barrier_fw(m, oracle="trws", seed=0),
    "L": lambda m: barrier_fw(m, domain="local"),
    "TRBP": lambda m: trbp(m),
    "loopy-BP": lambda m: loopy_bp(m),
    "PAM": lambda m: perturb_and_map(m, oracle="toulbar2", seed=0),
    "PAM-m1": lambda m: perturb_and_map(m, oracle="toulbar2", inflation=1, seed=0),
    "PAM-samples": lambda m: perturb_and_map(m, oracle="toulbar2", marginals="samples",
                                             seed=0),
}


#: methods whose log Z value is the TRW primal, not primal + gap (approximate MAP oracle)
PRIMAL = {"M-approx"}


def log_z_value(method, result):
    """The method's log Z value: Perturb-and-MAP's estimate, the primal for `PRIMAL`, else
    ``log_z_upper``."""
    if isinstance(result, PerturbResult):
        return result.log_z
    return result.info["primal"] if method in PRIMAL else result.log_z_upper


def run_family(family, method, n_instances):
    """Per instance: (zeta_mu, zeta_logZ, MAP calls, seconds, result, exact log Z).
    Perturb-and-MAP runs on toulbar2, as App. G's did (NotImplementedError without
    pytoulbar2: HiGHS takes about 12 s for one MAP call on an inflated clique)."""
    if method.startswith("PAM") and not available_oracles()["toulbar2"]:
        raise NotImplementedError("Perturb-and-MAP needs pytoulbar2 (pip install pytoulbar2)")
    root = INSTANCES / "fw-inference"
    rows = []
    for name in FAMILIES[family][:n_instances]:
        path = root / f"{name}.uai"
        if not path.exists():
            raise NotImplementedError(f"{path} not found")
        res = METHODS[method](read_uai(path))
        log_z = read_pr(f"{path}.PR")
        rows.append((zeta_mu(res, read_mar(f"{path}.MAR")), abs(log_z_value(method, res) - log_z),
                     res.n_oracle_calls, res.time, res, log_z))
    return rows


class Fig1:
    """Means per instance of zeta_mu, zeta_logZ, MAP calls and seconds (every family and
    method solved once, in `setup_cache`)."""

    param_names = ["family", "method"]
    params = [["clique-2", "grid-5x5"] if QUICK else list(FAMILIES), list(METHODS)]
    timeout = 7200

    def setup_cache(self):
        """{(family, method): means}; the rows that cannot run (instances or toulbar2
        missing) are left out."""
        n = 1 if QUICK else 5
        means = {}
        for family in self.params[0]:
            for method in METHODS:
                try:
                    means[family, method] = np.mean([r[:4] for r in
                                                     run_family(family, method, n)], axis=0)
                except NotImplementedError:
                    continue
        return means

    def setup(self, means, family, method):
        if (family, method) not in means:
            raise NotImplementedError(f"{INSTANCES / 'fw-inference'} not found, or pytoulbar2 "
                                      "not installed (Perturb-and-MAP)")
        self.figures = means[family, method]

    track_zeta_mu = track_figure(0)
    track_zeta_log_z = track_figure(1)
    track_map_calls = track_figure(2)
    track_seconds = track_figure(3, unit="s")
