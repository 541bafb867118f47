"""Bipartite matching marginals (MLE-Struct App. F): FW on the Bethe free energy (Hungarian
oracle) vs Huang & Jebara BP. N = 8: accuracy against exact marginals (Ryser) and against
the Bethe optimum; N = 50, 100: time; `MatchingTimeToAccuracy`: seconds to reach a max
error of 1e-2, 1e-3, 1e-4 against the converged Bethe marginals, over N and temperatures
(App. F, Table 2). W = beta * unif[0, 1] as in App. F. The App. F table without asv:

    cd bench && python -m benchmarks.matching           # FWCORE_BENCH_PROFILE=quick: small
"""
import math
import statistics
import time

import numpy as np

from fwcore.matching.inference import bethe_bp, exact_matching_marginals, matching_marginals

from .common import QUICK


def _weights(n, beta, seed=0):
    return beta * np.random.default_rng(seed).random((n, n))


class MatchingSmall:
    """N = 8: mean |marginal - exact| and max |marginal - Bethe optimum| (every setting
    solved once, in `setup_cache`), and the time of one solve. The quick profile leaves
    out tol = 1e-5 (FW runs its 10,000 iterations at beta = 10)."""

    param_names = ["beta", "method", "tol"]
    params = [[1.0, 10.0], ["fw", "bp"], [1e-2] if QUICK else [1e-2, 1e-5]]

    def setup_cache(self):
        """{(beta, method, tol): (mean error vs exact, max error vs Bethe, iterations)}."""
        betas, methods, tols = self.params
        table = {}
        for beta in betas:
            W = _weights(8, beta)
            exact, _ = exact_matching_marginals(W)
            bethe = bethe_bp(W, tol=1e-13).marginals
            for method in methods:
                for tol in tols:
                    res = matching_marginals(W, method=method, tol=tol)
                    table[beta, method, tol] = (float(np.abs(res.marginals - exact).mean()),
                                                float(np.abs(res.marginals - bethe).max()),
                                                res.n_iter)
        return table

    def setup(self, table, beta, method, tol):
        self.W = _weights(8, beta)
        self.row = table[beta, method, tol]

    def time_inference(self, table, beta, method, tol):
        matching_marginals(self.W, method=method, tol=tol)

    def track_mean_abs_error_exact(self, table, beta, method, tol):
        return self.row[0]

    def track_max_error_bethe(self, table, beta, method, tol):
        return self.row[1]

    def track_n_iter(self, table, beta, method, tol):
        return self.row[2]


class MatchingLarge:
    """N = 50, 100: time to a FW gap of 0.01 N (FW) or a message change of 1e-8 (BP)."""

    param_names = ["n", "method"]
    params = [[50] if QUICK else [50, 100], ["fw", "bp"]]

    def setup(self, n, method):
        self.W = _weights(n, 1.0)
        self.tol = 0.01 * n if method == "fw" else 1e-8
        self.bethe = bethe_bp(self.W, tol=1e-13).marginals
        self.res = matching_marginals(self.W, method=method, tol=self.tol, max_time=120)

    def time_inference(self, n, method):
        matching_marginals(self.W, method=method, tol=self.tol, max_time=120)

    def track_max_error_bethe(self, n, method):
        return float(np.abs(self.res.marginals - self.bethe).max())

    def track_gap(self, n, method):
        return float(self.res.gap)


#: the accuracy levels of `MatchingTimeToAccuracy`: max |marginal - Bethe optimum|
LEVELS = (1e-2, 1e-3, 1e-4)
#: seconds one run of a method may take (its max_time); runs stop growing past it
BUDGET = 1.0 if QUICK else 2.0
#: random instances per setting (the median of their times is reported; one when quick)
SEEDS = (0,) if QUICK else (0, 1, 2)
#: seconds of the reference BP run (at low temperature its log messages of negligible
#: entries keep changing by more than 1e-13 while the marginals have long converged)
REF_TIME = 2.0 if QUICK else 10.0


#: the methods `MatchingTimeToAccuracy` compares: (method, fw_method) of matching_marginals
METHODS = {"fw": ("fw", "pairwise"), "fw-vanilla": ("fw", "fw"), "bp": ("bp", "pairwise")}


def seconds_to_accuracy(W, method, ref, levels=LEVELS, budget=BUDGET):
    """{level: seconds} of the fastest run of ``method`` (a key of METHODS) whose
    max |marginals - ref| is
    <= level (inf: none within the budget), as App. F measures it: runs with max_iter
    k = 0, 1, 2, 3, 5, 8, ... (x 1.5) and no tolerance, each timed once, until every level
    is reached or a run takes ``budget`` seconds (its max_time)."""
    out = dict.fromkeys(levels, math.inf)
    k = 0
    while True:
        t0 = time.perf_counter()
        res = matching_marginals(W, method=METHODS[method][0], tol=0.0, max_iter=k,
                                 max_time=budget, fw_method=METHODS[method][1])
        seconds = time.perf_counter() - t0
        err = float(np.abs(res.marginals - ref).max())
        for a in levels:
            if err <= a:
                out[a] = min(out[a], seconds)
        if all(math.isfinite(v) for v in out.values()) or seconds >= budget:
            return out
        k = max(k + 1, int(1.5 * k))


class MatchingTimeToAccuracy:
    """Median seconds over 3 random W = beta * unif[0, 1] (N x N) for FW (pairwise, the
    default, or vanilla; exact line search, adaptive delta) and BP to reach
    max |marginal - Bethe optimum| <= 1e-2, 1e-3, 1e-4 (the optimum: BP to a message
    change of 1e-13 or REF_TIME seconds); inf when a run of BUDGET seconds does not reach
    it. Everything is measured once, in ``setup_cache``."""

    param_names = ["n", "beta", "method"]
    params = [[10] if QUICK else [10, 30, 100, 300], [1.0, 10.0, 100.0], list(METHODS)]
    timeout = 3600

    def setup_cache(self):
        table = {}
        for n in self.params[0]:
            for beta in self.params[1]:
                runs = {m: [] for m in self.params[2]}
                for seed in SEEDS:
                    W = _weights(n, beta, seed)
                    ref = bethe_bp(W, tol=1e-13, max_iter=10 ** 5, max_time=REF_TIME)
                    for m in runs:
                        runs[m].append(seconds_to_accuracy(W, m, ref.marginals))
                for m, found in runs.items():
                    table[n, beta, m] = {a: statistics.median(r[a] for r in found)
                                         for a in LEVELS}
        return table

    def track_seconds_to_1e_2(self, table, n, beta, method):
        return table[n, beta, method][1e-2]

    def track_seconds_to_1e_3(self, table, n, beta, method):
        return table[n, beta, method][1e-3]

    def track_seconds_to_1e_4(self, table, n, beta, method):
        return table[n, beta, method][1e-4]


def app_f_table():
    """Print the App. F comparison: per (N, beta, level) the median seconds of FW (pairwise
    and vanilla) and BP, the ratio BP / best FW (> 1: FW faster, as App. F's Table 2) and
    the winner."""
    bench = MatchingTimeToAccuracy()
    table = bench.setup_cache()
    print(f"{'N':>4} {'beta':>6} {'max err':>8} {'FW s':>9} {'FW-van s':>9} {'BP s':>9} "
          f"{'BP/FW':>7}  winner")
    for n in bench.params[0]:
        for beta in bench.params[1]:
            for a in LEVELS:
                fw, van, bp = (table[n, beta, m][a] for m in ("fw", "fw-vanilla", "bp"))
                best = min(fw, van)
                ratio = bp / best if math.isfinite(best) and math.isfinite(bp) else math.nan
                winner = "FW" if best < bp else "BP" if bp < best else "neither"
                print(f"{n:>4} {beta:>6g} {a:>8g} {fw:>9.4f} {van:>9.4f} {bp:>9.4f} "
                      f"{ratio:>7.2f}  {winner}")


if __name__ == "__main__":
    app_f_table()
