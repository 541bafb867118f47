"""Issue 37, item 4: every MAP solver logs progress on the ``fwcore`` logger (score and
bound), and Ctrl-C returns the best labelling with the best bound the call had."""
import logging
import os
import sys

import pytest

import fwcore
from fwcore.results import Status

sys.path.insert(0, os.path.dirname(__file__))
from test_faults_ctrlc import _sigint  # noqa: E402


def _lines(caplog, call):
    with caplog.at_level(logging.INFO, logger="fwcore"):
        res = call()
    return res, [r.getMessage() for r in caplog.records if r.name == "fwcore"]


@pytest.mark.parametrize("method, options", [
    ("anneal", {"max_time": 1.2, "seed": 0}), ("ilp", {"max_time": 3.0}),
    ("trws", {}), ("maxproduct", {}), ("icm", {}), ("portfolio", {"max_time": 1.2}),
    ("aobb", {"max_time": 1.2}), ("qpbo", {}), ("expansion", {})])
def test_every_solver_logs_its_score(method, options, caplog):
    model = fwcore.random_grid(20, 20, coupling=3, seed=1)
    res, lines = _lines(caplog, lambda: fwcore.infer_map(model, method, **options))
    assert lines and all("score" in line for line in lines), lines
    assert f"score {res.score:.6f}" in lines[-1] or res.status is Status.MAX_TIME, lines
    if res.upper_bound is not None:
        assert "bound" in lines[-1]
    if res.status is Status.MAX_TIME and res.time >= 1.2:  # the first line at once, then
        assert len(lines) >= 2, lines                      # one a second


def test_ilp_logs_highs_score_and_bound(caplog):
    model = fwcore.random_grid(30, 30, coupling=3, seed=1)
    res, lines = _lines(caplog, lambda: fwcore.infer_map(model, "ilp", max_time=3.0))
    assert any("bound" in line and "-inf" not in line for line in lines), lines
    assert res.trace[-1].bound is not None


def test_sigint_keeps_the_portfolio_bound():
    # before: "upper bound = none" after Ctrl-C although the portfolio had one
    call = ("r = fwcore.infer_map(m, 'portfolio', max_time=60, seed=0)\n"
            "    print(r.status.value, r.upper_bound, r.score, flush=True)")
    latency, line, _, err = _sigint("m = fwcore.random_grid(60, coupling=4, seed=0)", call, 4.0)
    status, bound, score = line.split()
    assert status == "interrupted" and latency < 2.0, (line, err)
    assert bound != "None" and float(bound) >= float(score)


def test_sigint_to_aobb_returns_its_best_and_bound():
    setup = ("m = fwcore.FactorGraph([3] * 60, [((i, (i + 1) % 60, (i + 7) % 60), "
             "__import__('numpy').random.default_rng(i).normal(size=(3, 3, 3)) * 3) "
             "for i in range(60)])")
    call = ("r = fwcore.infer_map(m, 'aobb', cap=8)\n"
            "    print(r.status.value, r.upper_bound, r.score, flush=True)")
    latency, line, _, err = _sigint(setup, call, 3.0)
    status, bound, score = line.split()
    assert status == "interrupted" and latency < 2.0, (line, err)
    assert float(bound) >= float(score) > float("-inf")
