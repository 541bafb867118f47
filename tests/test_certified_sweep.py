"""Issue 28, "a certified answer is never wrong": a few models of bench/certified_sweep.py
(random small models with -inf rows, columns and scattered entries: forests, cycles,
random graphs and factor graphs, some binary, one infeasible) through every entry point
and oracle that claims ``certified`` or ``converged``, against brute force. The sweep
itself runs 1,000 models (``python bench/certified_sweep.py``)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from bench_files import load  # noqa: E402

sweep = load("bench.certified_sweep")

#: models of seed 0: a forest, a cycle, a random graph and a factor graph; a binary cycle
#: and random graph; a factor graph of 3-state variables; an infeasible forest
MODELS = [0, 1, 2, 3, 9, 26, 11, 24]


@pytest.mark.parametrize("i", MODELS)
def test_no_certified_answer_is_wrong(i):
    kind, feasible, out = sweep.run_model(0, i, list(sweep._calls()))
    wrong = {name: kinds for name, kinds in out.items() if kinds}
    assert not wrong, (kind, feasible, wrong)
