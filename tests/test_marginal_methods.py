"""The contract of marginal-inference methods (`fwcore.marginals.registry`): every
registered method through the one door, `fwcore.infer`, against exact answers; the
door's checks (options, the model checked once, one clock)."""
import collections
import sys
import time

import numpy as np
import pytest

import fwcore
import fwcore.checks
from fwcore.loop import Deadline
from fwcore.marginals.registry import CERTIFICATES, RUN_ARGUMENTS, register_method
from fwcore.results import Status

METHODS = list(fwcore.available_methods())


def small_models():
    """A frustrated 4x4 grid, a clique, and a factor graph with a -inf entry."""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(2, 3, 2))
    table[1, 2, 0] = -np.inf
    factor_graph = fwcore.FactorGraph([2, 3, 2, 2], [((0, 1, 2), table),
                                                     ((2, 3), rng.normal(size=(2, 2))),
                                                     ((3,), rng.normal(size=2))])
    return [fwcore.random_grid(4, 4, coupling=2.0, seed=1),
            fwcore.random_clique(5, coupling=1.5, seed=2), factor_graph]


def test_the_registry_lists_the_methods_and_declares_what_they_prove():
    assert {"exact", "wmb", "barrier-fw", "trbp", "loopy-bp", "mean-field",
            "perturb-and-map"} <= set(METHODS)
    for name, method in fwcore.available_methods().items():
        assert method.name == name and method.certifies <= CERTIFICATES
        assert method.iteration and method.summary


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("index", range(3))
def test_every_method_answers_through_infer_and_its_certificates_hold(name, index):
    model = small_models()[index]
    exact = fwcore.exact_inference(model)
    method = fwcore.available_methods()[name]
    res = fwcore.infer(model, method=name, max_time=20, seed=0)
    assert isinstance(res, fwcore.MarginalResult)
    assert res.method.split("/")[0] == name and res.time > 0
    assert len(res.node_marginals) == model.n_vars
    for p in res.node_marginals:
        assert np.isfinite(p).all() and p.min() >= 0 and p.sum() == pytest.approx(1.0)
    tol = 1e-6 * max(1.0, abs(exact.log_z))
    if "upper" in method.certifies and res.certified:
        assert res.log_z_upper >= exact.log_z - tol
    if "lower" in method.certifies:
        assert res.log_z_lower <= exact.log_z + tol
    if "exact" in method.certifies:
        assert res.log_z_upper == pytest.approx(exact.log_z, abs=tol)
        for p, q in zip(res.node_marginals, exact.node_marginals):
            np.testing.assert_allclose(p, q, atol=1e-9)
    if not {"upper", "exact"} & method.certifies:
        assert not res.certified  # an estimate is never called a bound


def test_an_option_the_method_does_not_take_is_a_type_error_naming_it():
    model = fwcore.random_grid(3, 3, seed=0)
    with pytest.raises(TypeError, match="method 'wmb' takes no option 'delta'.*'barrier-fw'"):
        fwcore.infer(model, method="wmb", delta=0.1)
    with pytest.raises(TypeError, match=r"'exact' \(chosen by method='auto'\) takes no "
                                        "option 'oracle'"):
        fwcore.infer(model, oracle="exact")  # options never change auto's choice
    with pytest.raises(TypeError, match="'time_limit' is an option of no method"):
        fwcore.infer(model, method="barrier-fw", time_limit=3)
    with pytest.raises(ValueError, match="method must be one of 'exact'"):
        fwcore.infer(model, method="no-such-method")
    with pytest.raises(ValueError, match="tol must be a number > 0"):
        fwcore.infer(model, method="barrier-fw", tol=-1.0)


def test_a_registered_table_must_match_the_run_signature():
    def run(model, budget, callbacks, *, alpha=1.0):
        raise AssertionError("never run")
    with pytest.raises(ValueError, match=r"\['beta'\] not parameters of the function"):
        register_method("bad", run, {"alpha": fwcore.checks.Interval(0.0),
                                     "beta": fwcore.checks.Interval(0.0)}, iteration="none")
    with pytest.raises(ValueError, match="certifies"):
        register_method("bad", run, {"alpha": fwcore.checks.Interval(0.0)},
                        certifies=("proof",), iteration="none")
    assert "bad" not in fwcore.available_methods() and RUN_ARGUMENTS[0] == "model"


@pytest.fixture
def counted(monkeypatch):
    """Counts of `fwcore.checks.check_model` calls, wherever it was imported."""
    calls = collections.Counter()
    original = fwcore.checks.check_model

    def counting(*args, **kwargs):
        calls["check_model"] += 1
        return original(*args, **kwargs)
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("fwcore") and \
                getattr(module, "check_model", None) is original:
            monkeypatch.setattr(module, "check_model", counting)
    return calls


@pytest.mark.parametrize("call", [
    lambda m: fwcore.infer(m, max_time=5),
    lambda m: fwcore.infer(m, method="barrier-fw", rho_updates=1),
    lambda m: fwcore.infer(m, method="trbp", rho_updates=1),
    lambda m: fwcore.infer_map(m, time_limit=1),
    lambda m: fwcore.infer_map(m, "portfolio"),
    lambda m: fwcore.barrier_fw(m, rho_updates=1),
], ids=["infer", "barrier-fw", "trbp", "infer_map", "infer_map-portfolio", "barrier_fw"])
def test_one_model_check_per_call(call, counted):
    call(fwcore.random_grid(12, 12, coupling=1.0, seed=0))
    assert counted["check_model"] == 1


def test_a_user_oracle_object_is_never_changed():
    model = fwcore.random_grid(4, 4, seed=0)
    oracle = fwcore.resolve_oracle("icm", model)
    before = dict(vars(oracle))
    fwcore.infer_map(model, oracle)
    assert oracle.observer is None and set(vars(oracle)) == set(before)


def test_a_result_times_the_whole_call_on_one_clock():
    deadline = Deadline(0.5)
    assert deadline.seconds_left() <= 0.5 and deadline.share(0.5).seconds_left() <= 0.25
    model = fwcore.random_grid(40, 40, coupling=1.0, seed=0)
    started = time.monotonic()
    res = fwcore.infer(model, max_time=1.0)
    wall = time.monotonic() - started
    assert res.status is Status.MAX_TIME and wall - 0.1 <= res.time <= wall
    assert res.trace[-1].time <= res.time
