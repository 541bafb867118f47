"""Issues 28 and 41, "a certified answer is never wrong": a seeded slice of
bench/certified_sweep.py (random small models of arity 1-5 with −inf structure, free
variables, repeated factors and evidence, against brute force) through every entry point
the registries list, under tiny ``max_time`` and ``memory_limit`` budgets. The sweep
itself: ``python bench/certified_sweep.py --models 2000 --workers 2`` (its docstring)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import fwcore

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib
from bench_files import load  # noqa: E402

sweep = load("bench.certified_sweep")

#: models of seed 0 (every kind, with and without evidence, one infeasible), less the two
#: whose unbounded runs take 4-27 s (23, 24)
MODELS = [i for i in range(40) if i not in (23, 24)]

#: wrong answers found by the sweep in files other branches own, by (entry point, kind):
#: the owner's fix (and its test) lands with their branch; drop the line then
KNOWN: dict = {}


@pytest.mark.parametrize("i", MODELS)
def test_no_certified_answer_is_wrong(i):
    names = list(sweep.entries())
    kind, feasible, out = sweep.run_model(0, i, names)
    wrong = {(name, k): line for name, (kinds, _, _) in out.items() for k, line in kinds.items()
             if (name, k) not in KNOWN}
    assert not wrong, (kind, feasible, wrong)


def test_the_sweep_reads_the_registries():
    table = sweep.entries()
    for name in fwcore.available_methods():
        assert f"infer {name}" in table
    for name, installed in fwcore.available_oracles().items():
        assert (f"infer_map {name}" in table) == installed
    for method in fwcore.lp_relax.api.METHODS:
        assert f"infer_lp {method}" in table


def test_a_method_registered_later_is_swept():
    from fwcore.marginals import registry

    def run(model, budget, callbacks, *, tol=1e-3):  # uniform marginals, the product bound
        starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]])
        bound = float(np.maximum.reduceat(model.theta, starts).sum()
                      + np.log(model.card.astype(float)).sum())
        return fwcore.MarginalResult.from_mu(
            model, model.uniform_marginals(), log_z_upper=bound, certified=True, gap=None,
            certified_gap=None, status=fwcore.Status.MAX_ITER, n_iter=0,
            time=budget.deadline.elapsed(), method="later")

    registry.register_method("later", run, {"tol": fwcore.checks.Interval(0.0)},
                             certifies=("upper",), iteration="none")
    try:
        table = sweep.entries()
        assert "infer later" in table and "later" in table["conditioned bound=*"].cycled
        kind, _, out = sweep.run_model(0, 1, ["infer later"])  # a pairwise cycle
        assert kind == "cycle" and out["infer later"][:2] == ({}, None)
    finally:
        del registry._registry["later"]
