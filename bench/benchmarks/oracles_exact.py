"""Exact MAP oracles on the shared UAI 2014 instances: the HiGHS integer program (`ilp`)
vs toulbar2 (`toulbar2`, optional extra: skipped when pytoulbar2 is missing), time and
score / bound minus the reference MAP score (from X.uai.MAP; 0 means solved exactly).

The scores of the approximate oracles on the same instances are in oracles_approx.py
(`OraclesUAI`).
"""
import time

import fwcore
from fwcore.oracles import resolve_oracle
from fwcore.oracles.exact_oracles import Toulbar2Oracle

from .common import INSTANCES, QUICK

#: the instances small enough for exact MAP (issue 4), in DESIGN order
UAI_MAP = ["Grids_12", "DBN_14", "Segmentation_11", "Segmentation_12", "CSP_11",
           "ObjectDetection_11", "pdb1akg"]


class ExactOraclesUAI:
    """ILP (time limit 60 s) vs toulbar2 (same limit) on each instance."""

    param_names = ["instance", "oracle"]
    params = [UAI_MAP[:3] if QUICK else UAI_MAP, ["ilp", "toulbar2"]]
    timeout = 600

    def setup(self, instance, oracle):
        path = INSTANCES / "uai2014" / f"{instance}.uai"
        if not path.exists():
            raise NotImplementedError(f"{path} not found")
        if oracle == "toulbar2" and not Toulbar2Oracle.is_available():
            raise NotImplementedError("pytoulbar2 not installed (pip install fwcore[toulbar2])")
        self.model = fwcore.read_uai(path)
        self.reference = float(self.model.score(fwcore.read_map(f"{path}.MAP")))
        self.oracle = resolve_oracle(oracle, self.model, time_limit=60)

    def _solve(self):
        """One solve, cached for the track_* methods: (seconds, score, bound)."""
        if not hasattr(self, "_result"):
            t0 = time.perf_counter()
            x = self.oracle.argmax(self.model.theta)
            seconds = time.perf_counter() - t0
            self._result = seconds, float(self.model.score(x)), self.oracle.upper_bound()
        return self._result

    def time_argmax(self, instance, oracle):
        self.oracle.argmax(self.model.theta)

    def track_seconds_one_solve(self, instance, oracle):
        return self._solve()[0]

    track_seconds_one_solve.unit = "s"

    def track_score_minus_reference(self, instance, oracle):
        return self._solve()[1] - self.reference

    def track_bound_minus_reference(self, instance, oracle):
        bound = self._solve()[2]
        return float("nan") if bound is None else bound - self.reference
