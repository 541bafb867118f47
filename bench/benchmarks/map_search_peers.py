"""MAP on models of any arity at equal time (issue 37): fwcore's default, toulbar2 and
Merlin's jglp side by side on the shared higher-order and beyond-reach models, at 10 s and
60 s: best score, bound and seconds to the best score, per solver.

The solves are those of the plain runner `bench/map_search.py` (which also prints issue
37's checks); peers come from $TOULBAR2_PYTHON (a venv with pytoulbar2) and $MERLIN, and
their rows are skipped without them. Every solve runs once, in `setup_cache`.
"""
import importlib.util
import os
from pathlib import Path

from .common import INSTANCES, QUICK

_RUNNER = Path(__file__).resolve().parents[1] / "map_search.py"
_MODELS = sorted(p for s in ("uai2014-higher-order", "uai2014-beyond")
                 for p in (INSTANCES / s).glob("*.uai"))


def _runner():
    spec = importlib.util.spec_from_file_location("map_search_runner", _RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MapSearchPeers:
    """Score, bound and seconds to the best score of each solver at each budget."""

    param_names = ["model", "budget", "solver"]
    params = [[p.stem for p in _MODELS[:2]] if QUICK else [p.stem for p in _MODELS],
              [10] if QUICK else [10, 60], ["fwcore:auto", "toulbar2", "merlin:jglp"]]
    timeout = 7200

    def setup_cache(self):
        """{(model, budget, solver): row} for the solvers installed."""
        runner = _runner()
        python, merlin = os.environ.get("TOULBAR2_PYTHON"), os.environ.get("MERLIN")
        models, budgets, solvers = self.params
        table = {}
        for name, path, model in runner.cases([p for p in _MODELS if p.stem in models]):
            for budget in budgets:
                table[name, budget, "fwcore:auto"] = runner.run_fwcore(model, budget, "auto")
                if python:
                    table[name, budget, "toulbar2"] = runner.run_toulbar2(model, budget, python)
                if merlin:
                    table[name, budget, "merlin:jglp"] = runner.run_merlin(
                        path, budget, merlin, "jglp", 10, model)
        return table

    def setup(self, table, model, budget, solver):
        if (model, budget, solver) not in table:
            raise NotImplementedError(f"{solver} not run (no $TOULBAR2_PYTHON / $MERLIN, or "
                                      f"{INSTANCES} absent)")
        self.row = table[model, budget, solver]

    def track_score(self, table, model, budget, solver):
        return float("nan") if self.row["score"] is None else self.row["score"]

    def track_bound(self, table, model, budget, solver):
        return float("nan") if self.row["bound"] is None else self.row["bound"]

    def track_seconds_to_best(self, table, model, budget, solver):
        return float("nan") if self.row["to_best"] is None else self.row["to_best"]
