"""Anytime MAP at equal time budgets (issue 14): fwcore's portfolio (anytime: annealing,
fusion moves, α-expansion, TRW-S) vs toulbar2 on the peers' hard grid, vs gco's
α-expansion on a 5-label Potts grid, and on the shared uai2014 instances.

Peers are benchmark-only: ``pip install pytoulbar2`` and ``pip install gco-wrapper`` (see
../shared/PEERS.md); their rows are skipped when they are missing. Every solve runs once,
in `setup_cache`, and the `track_*` methods read its table: these are time budgets, not
timings to repeat.
"""
import importlib.util
import time

import numpy as np

import fwcore
from fwcore.oracles import available_oracles

from .common import INSTANCES, QUICK


def _infer_map(model, method, budget, **options):
    """(score, wall seconds of the whole call, bound)."""
    start = time.perf_counter()
    res = fwcore.infer_map(model, method=method, max_time=budget, seed=0, **options)
    return res.score, time.perf_counter() - start, res.upper_bound


class HardGrid:
    """``random_grid(100, coupling=4, seed=0)`` (PEERS.md's hard model; toulbar2 reached
    31,256.9 there after 300 s): best score and seconds at each time budget. Target:
    the portfolio at 10 s >= 31,000."""

    param_names = ["budget", "method"]
    params = [[1, 10] if QUICK else [1, 10, 60], ["portfolio", "anneal", "toulbar2"]]
    timeout = 300

    def setup_cache(self):
        """{(budget, method): (score, seconds, bound)} for the methods installed."""
        model = fwcore.random_grid(100, coupling=4, seed=0)
        budgets, methods = self.params
        return {(budget, method): _infer_map(model, method, budget)
                for budget in budgets for method in methods
                if method != "toulbar2" or available_oracles()["toulbar2"]}

    def setup(self, table, budget, method):
        if (budget, method) not in table:
            raise NotImplementedError("pytoulbar2 not installed (pip install pytoulbar2)")
        self.score, self.seconds, self.bound = table[budget, method]

    def track_score(self, table, budget, method):
        return self.score

    def track_seconds(self, table, budget, method):
        return self.seconds

    def track_bound(self, table, budget, method):
        return float("nan") if self.bound is None else self.bound


def _gco_expansion(model):
    """gco's α-expansion on a Potts grid (energies E = −scores, made integer by gco's
    down-weighting): (labelling, seconds of the gco call)."""
    import gco
    k = int(model.card[0])
    unary = -model.theta[:model.node_off[-1]].reshape(-1, k)
    tables = model.theta[model.edge_off[0]:].reshape(-1, k, k)
    beta = tables[:, 0, 0]                       # θ_ij = β [x_i = x_j] = β − β [x_i ≠ x_j]
    t0 = time.perf_counter()
    x = gco.cut_general_graph(model.edges.astype(np.int32), beta, unary, 1.0 - np.eye(k),
                              algorithm="expansion")
    return np.asarray(x, dtype=np.int32), time.perf_counter() - t0


class PottsGrid:
    """``potts_grid(100, n_labels=5, coupling=1, seed=0)`` (mixed attractive and repulsive
    edges): gco's α-expansion (the seconds of its C++ call only), fwcore's ICM and
    expansion (fusion moves solved by QPBO), and the anytime portfolio given gco's time
    (``portfolio_at_gco``: it overruns that budget by TRW-S's first iteration) and 1 s
    (fwcore's seconds include building the oracle). Target: at least gco's score in no
    more than its time."""

    param_names = ["method"]
    params = [["gco", "icm", "expansion", "portfolio_at_gco", "portfolio_1s", "anneal_1s"]]
    timeout = 120

    def setup_cache(self):
        """{method: (score, seconds)}; gco's rows only when gco-wrapper is installed. Each
        run gets a new model object (fwcore caches its model checks per model)."""
        def model():
            return fwcore.potts_grid(100, n_labels=5, coupling=1, seed=0)
        # fwcore's modules loaded before anything is timed, as gco is
        fwcore.infer_map(fwcore.potts_grid(5, n_labels=5, seed=1), method="portfolio",
                         max_time=0.01, seed=0)
        table = {method: _infer_map(model(), method, None)[:2]
                 for method in ("icm", "expansion")}
        table.update({f"{name}_1s": _infer_map(model(), name, 1.0)[:2]
                      for name in ("portfolio", "anneal")})
        if importlib.util.find_spec("gco") is None:
            return table
        potts = model()
        x, seconds = _gco_expansion(potts)
        table["gco"] = float(potts.score(x)), seconds
        table["portfolio_at_gco"] = _infer_map(model(), "portfolio", seconds)[:2]
        return table

    def setup(self, table, method):
        if method not in table:
            raise NotImplementedError("gco-wrapper not installed (pip install gco-wrapper)")
        self.score, self.seconds = table[method]

    def track_score(self, table, method):
        return self.score

    def track_seconds(self, table, method):
        return self.seconds


_UAI = sorted(p.stem for p in (INSTANCES / "uai2014").glob("*.uai"))


class UAI2014Portfolio:
    """The anytime portfolio with a 1 s budget on each shared uai2014 instance: its score
    minus the optimum (the .MAP file's assignment; 0 = optimal) and its seconds."""

    param_names = ["instance"]
    params = [_UAI[:2] if QUICK else _UAI]
    timeout = 120

    def setup_cache(self):
        """{instance: (score minus optimum, seconds)} for the instances present."""
        from fwcore.io.uai import read_map, read_uai
        table = {}
        for instance in self.params[0]:
            path = INSTANCES / "uai2014" / f"{instance}.uai"
            model = read_uai(path)
            optimum = float(model.score(read_map(path.with_name(path.name + ".MAP"))))
            score, seconds, _ = _infer_map(model, "portfolio", 1.0)
            table[instance] = score - optimum, seconds
        return table

    def setup(self, table, instance):
        if instance not in table:
            raise NotImplementedError(f"{INSTANCES / 'uai2014'} not found")
        self.shortfall, self.seconds = table[instance]

    def track_score_minus_optimum(self, table, instance):
        return self.shortfall

    def track_seconds(self, table, instance):
        return self.seconds


_RBM = "fw-inference/rbm/rbm_20.uai"


class RBMExact:
    """Exact MAP calls on ``fw-inference/rbm/rbm_20`` (40 binary variables, K_20,20), as
    Barrier FW makes them: median seconds of 10 calls on scores perturbed by N(0, 0.1²)
    (seed 0), and the largest shortfall of a call's score below elimination's (0: all
    exact). Target: an exact call in <= 0.25 s."""

    param_names = ["method"]
    params = [["cover", "elimination", "toulbar2"]]
    timeout = 300

    def setup_cache(self):
        """{method: (median seconds, max shortfall)} for the methods installed; empty when
        rbm_20 is absent."""
        from fwcore.oracles import resolve_oracle
        from fwcore.io.uai import read_uai
        path = INSTANCES / _RBM
        if not path.exists():
            return {}
        model = read_uai(path)
        rng = np.random.default_rng(0)
        scores = [model.theta + rng.normal(scale=0.1, size=model.dim)
                  for _ in range(3 if QUICK else 10)]
        values, table = {}, {}
        for method in self.params[0]:
            if method == "toulbar2" and not available_oracles()["toulbar2"]:
                continue
            oracle = resolve_oracle(method, model)
            seconds, values[method] = [], []
            for s in scores:
                t0 = time.perf_counter()
                x = oracle.argmax(s)
                seconds.append(time.perf_counter() - t0)
                values[method].append(float(model.score(x, s)))
            table[method] = float(np.median(seconds))
        return {method: (seconds, float(np.max(np.subtract(values["elimination"],
                                                            values[method]))))
                for method, seconds in table.items()}

    def setup(self, table, method):
        if method not in table:
            raise NotImplementedError(f"{INSTANCES / _RBM} not found, or pytoulbar2 not "
                                      "installed (pip install pytoulbar2)")
        self.seconds, self.shortfall = table[method]

    def track_median_seconds(self, table, method):
        return self.seconds

    def track_max_shortfall(self, table, method):
        return self.shortfall
