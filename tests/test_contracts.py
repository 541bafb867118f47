"""The contracts every task shares (DESIGN.md): every registered oracle through the declared
`MapOracle` contract, and every public result type through the shared result vocabulary."""
import dataclasses
import inspect
import itertools
import time

import numpy as np
import pytest

import fwcore
from fwcore import PairwiseMRF, random_clique, random_grid
from fwcore.generators import grid
from fwcore.oracles import LPOracle, MapOracle, available_oracles, exact_choice, resolve_oracle
from fwcore.model import binary_cover
from fwcore.results import Record, Result, Status, Trace

INSTALLED = sorted(name for name, ok in available_oracles().items() if ok)


def brute_max(model, scores):
    best = -np.inf
    for x in itertools.product(*[range(c) for c in model.card]):
        best = max(best, float(model.score(np.array(x), scores)))
    return best


def tiny_models():
    rng = np.random.default_rng(7)
    cycle = random_grid(2, 3, coupling=2.0, seed=3)                # binary, loopy
    multi = PairwiseMRF([3, 2, 4], [rng.normal(size=3), rng.normal(size=2), rng.normal(size=4)],
                        [(0, 1), (1, 2), (0, 2)],
                        [rng.normal(size=(3, 2)), rng.normal(size=(2, 4)),
                         rng.normal(size=(3, 4))])
    chain = grid(1, 4, unary=rng.normal(size=(4, 2)), pairwise=np.eye(2))  # a tree
    return {"cycle": cycle, "multi": multi, "chain": chain}


def make(name, model):
    if name == "qpbo" and (model.card != 2).any():
        pytest.skip("qpbo takes binary models only")
    if name == "tree" and model.n_edges != model.n_vars - model.n_components():
        pytest.skip("tree takes forests only")
    if name == "cover" and binary_cover(model) is None:
        pytest.skip("cover takes models with a binary vertex cover only")
    return resolve_oracle(name, model, seed=0)


@pytest.mark.parametrize("model_name", ["cycle", "multi", "chain"])
@pytest.mark.parametrize("name", INSTALLED)
def test_every_oracle_follows_the_contract(name, model_name):
    model = tiny_models()[model_name]
    oracle = make(name, model)
    assert isinstance(oracle, MapOracle) and isinstance(oracle.exact, bool)
    assert isinstance(oracle.takes_seed, bool)
    rng = np.random.default_rng(1)
    for trial in range(3):
        scores = model.theta + rng.normal(size=model.dim)
        init = np.array([rng.integers(c) for c in model.card], dtype=np.int32)
        x = oracle.argmax(scores, init=init if trial else None, time_limit=30.0)
        assert x.dtype == np.int32 and x.shape == (model.n_vars,)
        assert ((x >= 0) & (x < model.card)).all()
        assert isinstance(oracle.status, Status)
        score, best = float(model.score(x, scores)), brute_max(model, scores)
        assert score <= best + 1e-9
        bound = oracle.upper_bound()
        if bound is not None:  # a certified bound is at or above the optimum
            assert bound >= best - 1e-7
        if oracle.exact:  # exact ones against brute force
            assert oracle.status is Status.CONVERGED and score == pytest.approx(best, abs=1e-9)
        if oracle.status is Status.CONVERGED and not oracle.exact:  # converged means proven
            assert bound is not None and bound <= score + 1e-6 * max(1.0, abs(score))
    assert oracle.n_calls == 3
    if isinstance(oracle, LPOracle):
        mu = oracle.argmax_marginals(model.theta)
        assert (mu.shape == (model.dim,)
                and oracle.upper_bound() >= brute_max(model, model.theta) - 1e-7)


@pytest.mark.parametrize("name", INSTALLED)
def test_every_oracle_honours_a_time_limit(name):
    model = random_grid(12, 12, coupling=3.0, seed=0)
    if name in ("bruteforce", "tree", "cover"):
        pytest.skip(f"{name} refuses this model at construction")
    oracle = resolve_oracle(name, model, seed=0)
    t0 = time.perf_counter()
    x = oracle.argmax(model.theta, time_limit=0.5)
    elapsed = time.perf_counter() - t0
    assert x.shape == (model.n_vars,)
    # slack for the solvers' granularity (toulbar2 counts whole CPU seconds) and a busy
    # machine; an oracle that ignored the limit would run for minutes on this model
    assert elapsed < 0.5 + 5.0
    if oracle.status is Status.MAX_TIME:
        assert not (oracle.exact and oracle.upper_bound() is not None
                    and oracle.upper_bound() < float(model.score(x)) - 1e-9)


def test_a_user_oracle_object_is_used_and_left_unchanged():
    model = random_clique(6, coupling=2.0, seed=1)
    mine = resolve_oracle("trws", model, time_limit=50.0)
    before = {k: v for k, v in vars(mine).items() if isinstance(v, (int, float, str, type(None)))
              and k not in ("n_calls", "status", "_bound", "n_iter")}
    res = fwcore.barrier_fw(model, oracle=mine, max_time=5.0, rho_updates=1)
    after = {k: v for k, v in vars(mine).items() if k in before}
    assert after == before and mine.time_limit == 50.0
    assert res.n_oracle_calls == mine.n_calls > 0


def test_functions_are_wrapped_and_objects_without_the_contract_refused():
    model = random_clique(5, seed=2)
    calls = []

    def greedy(scores):
        calls.append(1)
        return np.zeros(model.n_vars, dtype=int)

    oracle = resolve_oracle(greedy, model)
    assert not oracle.exact and oracle.upper_bound() is None
    oracle.argmax(model.theta, init=np.ones(model.n_vars, dtype=int), time_limit=1.0)
    assert calls == [1] and oracle.status is Status.STALLED
    with pytest.raises(TypeError, match="MapOracle or a function"):
        resolve_oracle(object(), model)
    with pytest.raises(ValueError, match="another model"):
        resolve_oracle(resolve_oracle("icm", random_clique(4, seed=0)), model)
    with pytest.raises(ValueError, match="unknown oracle 'nope'.*exact.*auto"):
        resolve_oracle("nope", model)


def test_exact_and_auto_are_resolved_in_one_place():
    chain = tiny_models()["chain"]
    assert exact_choice(chain) == "tree"
    assert exact_choice(random_grid(3, 3, seed=0)) == "bruteforce"
    assert exact_choice(random_grid(6, 6, seed=0)) == "elimination"
    big = random_grid(40, 40, seed=0)
    assert exact_choice(big) in ("toulbar2", "ilp")
    assert resolve_oracle("auto", big).name == "portfolio"
    assert resolve_oracle("exact", big).name == exact_choice(big)
    assert fwcore.infer_map(chain, "exact").method == "tree"


# -- the result vocabulary ----------------------------------------------------------------

SHARED = ("status", "time", "n_iter", "n_oracle_calls", "method", "gap", "certified", "trace")
#: the bound each result type carries, under the shared name for what it bounds (log Z, a
#: maximum score, a minimum); None: an estimate without a bound
BOUND = {"MarginalResult": "log_z_upper", "ExactResult": "log_z_upper",
         "MatchingMarginals": "log_z_upper", "MapResult": "upper_bound",
         "LPResult": "upper_bound", "FWResult": "lower_bound", "PerturbResult": None,
         "ConditionedResult": "log_z_upper", "MeanFieldResult": "log_z_lower",
         "QueryResult": "log_z_upper", "MMAPResult": "upper_bound",
         "SampleResult": "log_z_upper"}


def small_inputs():
    """One small value for each required argument an entry point may take."""
    from fwcore.fw import ProductDomain, Quadratic, Simplex
    rng = np.random.default_rng(0)
    model = random_grid(3, 3, coupling=1.0, seed=0)
    W = rng.normal(size=(4, 4))
    A, b = rng.normal(size=(6, 4)), rng.normal(size=6)
    return {"model": model, "models": [model, random_grid(2, 2, seed=1)], "W": W + W.T,
            "objective": Quadratic.least_squares(A, b),
            "domain": ProductDomain([Simplex(2), Simplex(2)]),
            "bound": fwcore.weighted_mini_bucket, "variables": [0], "max_time": 2.0,
            "n": 10}


def required(func):
    return [p.name for p in inspect.signature(func).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def declares_a_result(func):
    """Whether ``func``'s return annotation is a result class."""
    annotation = inspect.signature(func).return_annotation
    if isinstance(annotation, str):  # postponed annotations
        annotation = getattr(fwcore, annotation, None)
    return isinstance(annotation, type) and Result in annotation.__mro__


PUBLIC = {name: getattr(fwcore, name) for name in fwcore.__all__}
FUNCTIONS = {name: f for name, f in PUBLIC.items() if inspect.isfunction(f)}
#: the public functions that take only (small) inputs of `small_inputs`
ON_SMALL_INPUTS = sorted(name for name, f in FUNCTIONS.items()
                         if required(f) and set(required(f)) <= set(small_inputs()))
RESULT_TYPES = {obj for obj in PUBLIC.values()
                if isinstance(obj, type) and Result in obj.__mro__ and obj is not Result}
LEARNERS = sorted(name for name, obj in PUBLIC.items()
                  if isinstance(obj, type) and callable(getattr(obj, "fit", None)))


def results_of(value):
    """The results in an entry point's answer (a result, or a list of results)."""
    items = value if isinstance(value, list) else [value]
    return [r for r in items if isinstance(r, Result)]


@pytest.fixture(scope="module")
def answers():
    """Every public function of ON_SMALL_INPUTS called on the small inputs, with a callback
    when it takes one (the records it saw are kept beside the answer)."""
    inputs, out = small_inputs(), {}
    for name in ON_SMALL_INPUTS:
        func, seen = FUNCTIONS[name], []
        kwargs = {p: inputs[p] for p in required(func)}
        if "callback" in inspect.signature(func).parameters:
            kwargs["callback"] = seen.append
        try:
            out[name] = (func(**kwargs), seen)
        except ImportError:  # an optional extra that is not installed (to_pgmpy)
            out[name] = (None, seen)
    return out


def test_every_entry_point_is_found(answers):
    """An entry point is a public function whose answer on small inputs is a result, or
    whose annotation says so; every result type of ``fwcore`` comes from one."""
    entry = {name for name, (value, _) in answers.items() if results_of(value)}
    for name, func in FUNCTIONS.items():
        if declares_a_result(func):
            assert name in entry, f"{name} returns a result but takes inputs small_inputs lacks"
    produced = {type(r) for name in entry for r in results_of(answers[name][0])}
    assert RESULT_TYPES <= produced, f"no entry point found for {RESULT_TYPES - produced}"
    assert {t.__name__ for t in RESULT_TYPES} == set(BOUND)
    assert "perturb_and_map" in entry


@pytest.mark.parametrize("name", ON_SMALL_INPUTS)
def test_every_result_carries_the_shared_fields(name, answers):
    value, seen = answers[name]
    for res in results_of(value):
        assert isinstance(res, Result) and dataclasses.is_dataclass(res)
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.status = Status.CONVERGED
        for field in SHARED:
            assert hasattr(res, field), f"{type(res).__name__} lacks {field}"
        bound = BOUND[type(res).__name__]
        if bound is None:  # without a bound a result proves nothing
            assert not res.certified and res.gap is None
        else:
            assert hasattr(res, bound), f"{type(res).__name__} lacks {bound}"
        assert isinstance(res.status, Status) and isinstance(res.certified, bool)
        assert res.converged is (res.status is Status.CONVERGED)
        assert res.success is (res.status in (Status.CONVERGED, Status.STALLED) or (
            res.status in (Status.MAX_TIME, Status.MAX_ITER) and res.certified))
        assert res.message.startswith(f"{res.status.value}: ")
        text = repr(res)  # a summary: no array's entries, the trace as a count
        assert text.startswith(type(res).__name__) and len(text) < 1024
        assert "Record(" not in text and f"{len(res.trace)} record" in text
        assert isinstance(res.method, str) and res.time >= 0
        assert isinstance(res.n_iter, int) and res.n_iter >= 0
        assert isinstance(res.n_oracle_calls, int) and res.n_oracle_calls >= 0
        assert res.gap is None or isinstance(res.gap, float)
        assert isinstance(res.trace, Trace) and all(isinstance(r, Record) for r in res.trace)
        cols = res.trace.columns()
        assert set(cols) == {f.name for f in dataclasses.fields(Record)}
        assert all(len(c) == len(res.trace) for c in cols.values())
        assert cols["time"].dtype == float and np.all(np.diff(cols["time"]) >= 0)
        if seen:  # the callback saw every record of the trace, in order
            assert seen == list(res.trace)
    if not results_of(value):
        assert not declares_a_result(FUNCTIONS[name])


@pytest.mark.parametrize("name", [n for n in ON_SMALL_INPUTS
                                  if "callback" in inspect.signature(FUNCTIONS[n]).parameters])
def test_a_callback_returning_false_stops_the_run(name):
    """A run stopped by its callback at its first record keeps that record only, with
    status interrupted unless the record already ended the run."""
    func, inputs, seen = FUNCTIONS[name], small_inputs(), []
    res = func(**{p: inputs[p] for p in required(func)},
               callback=lambda r: seen.append(r) or False)
    if seen:
        assert seen == list(res.trace)
        assert res.status in (Status.INTERRUPTED, Status.CONVERGED, Status.STALLED,
                              Status.MAX_ITER)
        assert len(seen) == 1


@pytest.mark.parametrize("name", LEARNERS)
def test_learners_carry_the_shared_fitted_attributes(name):
    from fwcore.learn.datasets import synthetic_segmentation
    X, Y = synthetic_segmentation(3, size=5, seed=0)
    seen = []
    learner = PUBLIC[name]().set_params(max_iter=3, callback=seen.append).fit(X, Y)
    for attr in ("status_", "n_iter_", "n_oracle_calls_", "trace_", "gap_", "primal_"):
        assert hasattr(learner, attr)
    assert isinstance(learner.status_, Status) and learner.n_iter_ == 3
    assert isinstance(learner.trace_, Trace) and seen == list(learner.trace_)
    cols = learner.trace_.columns()
    assert len(cols["gap"]) == len(learner.trace_) == 4 and np.all(np.diff(cols["time"]) >= 0)
    assert learner.gap_ == learner.trace_[-1].gap
