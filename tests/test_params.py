"""Arguments from one source (DESIGN.md "Arguments"): every public entry point that takes
options binds its table to its signature (`fwcore.checks.validate_params`), refuses an
invalid value of each tabled argument before any work with a message naming it, and the
command line reads its choices and defaults from the same tables and signatures."""
import inspect
import math
import re

import numpy as np
import pytest

import fwcore
import fwcore.learn
import fwcore.learn.datasets
from fwcore.checks import Interval, Kind, Options, validate_params
from fwcore.cli import _parser
from fwcore.factor_graph import solves_factor_graphs
from fwcore.oracles import MapOracle, available_oracles

#: the modules whose ``__all__`` is the public API of functions and learners
PUBLIC_MODULES = (fwcore, fwcore.learn, fwcore.learn.datasets)
TINY = fwcore.PairwiseMRF([2, 2], edges=[(0, 1)])
POINTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
#: a value of each required argument of an entry point, by name: valid where the argument
#: is tabled; the others never reach the body here, which runs only once the tabled
#: arguments pass, so None stands in where a real one (a domain, a file) costs more
SAMPLES = {"model": TINY, "models": [TINY], "spec": "icm", "h": 2, "w": 2, "n": 2,
           "n_left": 1, "n_right": 1, "n_images": 1, "n_examples": 1, "points": POINTS,
           "P": POINTS, "Q": POINTS, "W": np.ones((2, 2)), "assignment": [0, 0],
           "objective": None, "domain": None, "graph": None, "path": None,
           "bound": fwcore.weighted_mini_bucket, "variables": [0], "max_time": 1.0,
           "name": "test-only", "run": None, "options": None, "iteration": "steps",
           "X": [np.zeros((1, 1))], "Y": [np.zeros(1, dtype=int)]}


def _oracle_classes():
    """The registered oracle classes: fwcore's subclasses of `MapOracle` that declare a
    registered name."""
    names, found, todo = set(available_oracles()), [], [MapOracle]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("fwcore.") and vars(cls).get("name") in names:
            found.append(cls)
    return found


def entry_points():
    """{name: entry point}: the functions and the learners (classes with ``fit``) in the
    ``__all__`` of `PUBLIC_MODULES`, and the registered oracle classes."""
    found = {}
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or (inspect.isclass(obj) and hasattr(obj, "fit")):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    for cls in _oracle_classes():
        found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def table_of(entry):
    """The table bound to a function, or to a class's constructor; None if there is none."""
    return getattr(entry.__init__ if inspect.isclass(entry) else entry, "__fwcore_params__",
                   None)


def takes_options(entry):
    return any(p.default is not p.empty for p in inspect.signature(entry).parameters.values())


def invalid_value(constraint):
    """A value every rule of ``constraint`` (one, or a list of them) refuses: outside an
    `Interval`, a string that is no member of an `Options`, a value of another type for a
    `Kind` (a type test)."""
    rules = [c for c in (constraint if isinstance(constraint, list) else [constraint])
             if c is not None]
    candidates = []
    for c in rules:
        if isinstance(c, Interval):
            candidates += [c.lo - 1, c.hi + 1, 0.5 if c.integer else math.nan]
        elif isinstance(c, Options):
            candidates.append("no such option")
        else:
            assert isinstance(c, Kind)
            candidates += [object(), []]
    return next(v for v in candidates if not any(c.accepts(v) for c in rules))


def call(entry, name, value):
    """Call ``entry`` with ``name=value`` and samples of its other required arguments."""
    if inspect.isclass(entry) and issubclass(entry, MapOracle):
        return entry(TINY, **{name: value})
    if inspect.isclass(entry):  # a learner: checked at construction or when fitted
        X, Y = fwcore.learn.datasets.synthetic_segmentation(1, size=2)
        return entry(**{name: value}).fit(X, Y)
    required = [p.name for p in inspect.signature(entry).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.name != name]
    missing = [r for r in required if r not in SAMPLES]
    assert not missing, f"add a sample of {missing} (required by {entry.__qualname__}) to SAMPLES"
    return entry(**{r: SAMPLES[r] for r in required}, **{name: value})


ENTRY_POINTS = entry_points()
TABLED = [(where, name, invalid_value(rule)) for where, entry in ENTRY_POINTS.items()
          for name, rule in (table_of(entry) or {}).items()]


def test_every_entry_point_that_takes_options_binds_its_table():
    unbound = sorted(where for where, entry in ENTRY_POINTS.items()
                     if takes_options(entry) and table_of(entry) is None)
    assert not unbound, ("these entry points take options but bind no table with "
                         "fwcore.checks.validate_params (on a class: on its __init__):\n  "
                         + "\n  ".join(unbound))


def test_the_entry_points_are_found():
    names = {where.rsplit(".", 1)[-1] for where in ENTRY_POINTS}
    assert {"infer", "infer_map", "frank_wolfe", "grid", "MLEStruct", "SSVM", "ICMOracle",
            "SwapOracle", "LocalPolytopeLP", "shape_context", "synthetic_segmentation"} <= names
    assert len(TABLED) > 50


@pytest.mark.parametrize("where, name, value", TABLED,
                         ids=[f"{where.rsplit('.', 1)[-1]}-{name}" for where, name, _ in TABLED])
def test_an_invalid_argument_is_refused_by_name(where, name, value):
    with pytest.raises((ValueError, TypeError), match=rf"^{re.escape(name)} must be "):
        call(ENTRY_POINTS[where], name, value)


# -- the decorator -------------------------------------------------------------------------

def _scaled(model, steps, scale=1.0, *, verbose=False, **options):
    """A stand-in entry point."""
    return steps, scale, verbose, options


def test_a_table_that_differs_from_the_signature_is_refused():
    table = {"steps": Interval(1, integer=True), "scale": Interval(0.0)}
    bind = validate_params(table, unchecked=("model", "verbose"))
    assert bind(_scaled).__fwcore_params__ is table
    for wrong, unchecked, words in [
            ({"steps": Interval(1)}, ("model", "verbose"), r"\['scale'\] in neither"),
            ({**table, "step": Interval(1)}, ("model", "verbose"), r"\['step'\] not parameters"),
            (table, ("model", "verbose", "steps"), r"\['steps'\] both in the table"),
            (table, ("model",), r"\['verbose'\] in neither")]:
        with pytest.raises(ValueError, match=r"the table of _scaled: .*" + words):
            validate_params(wrong, unchecked=unchecked)(_scaled)


def test_the_body_gets_converted_values_and_the_signature_is_kept():
    checked = validate_params({"steps": Interval(1, integer=True), "scale": Interval(0.0)},
                              unchecked=("model", "verbose"))(_scaled)
    assert checked(TINY, 3.0, 2, extra="x") == (3, 2.0, False, {"extra": "x"})
    assert type(checked(TINY, 3.0)[0]) is int and type(checked(TINY, 3)[1]) is float
    assert (checked.__name__, checked.__doc__) == ("_scaled", "A stand-in entry point.")
    assert inspect.signature(checked) == inspect.signature(_scaled)
    with pytest.raises(ValueError, match="^steps must be an integer >= 1; got 0$"):
        checked(TINY, 0)
    with pytest.raises(TypeError, match=r"^_scaled\(\) missing a required argument: 'steps'$"):
        checked(TINY)
    with pytest.raises(TypeError, match=r"^_scaled\(\) too many positional arguments$"):
        checked(TINY, 1, 1.0, True)


def _named(model, steps, scale=1.0, *, verbose=False):
    """A stand-in entry point whose parameters are all named (bound by a dict)."""
    return steps, scale, verbose


def test_named_parameters_bind_as_python_binds_them():
    checked = validate_params({"steps": Interval(1, integer=True), "scale": Interval(0.0)},
                              unchecked=("model", "verbose"))(_named)
    assert checked(TINY, 3.0) == (3, 1.0, False)
    assert checked(TINY, 2, 5, verbose=True) == (2, 5.0, True)
    assert checked(model=TINY, scale=2, steps=4) == (4, 2.0, False)
    for args, kwargs, words in [((TINY,), {}, "missing a required argument: 'steps'"),
                                ((TINY, 1), {"steps": 2}, "multiple values for argument 'steps'"),
                                ((TINY, 1), {"scal": 2},
                                 "got an unexpected keyword argument 'scal'"),
                                ((TINY, 1, 2.0, True), {}, "too many positional arguments")]:
        with pytest.raises(TypeError, match=rf"^_named\(\) {words}$"):
            checked(*args, **kwargs)


def _brute_map(model, time_limit=None):
    """MAP by brute force."""
    return fwcore.infer_map(model, "bruteforce", max_time=time_limit)


@pytest.mark.parametrize("checks_outside", [True, False])
def test_it_composes_with_solves_factor_graphs(checks_outside):
    check = validate_params({"time_limit": [Interval(0.0, lo_open=True), None]},
                            unchecked=("model",))
    entry = (check(solves_factor_graphs(_brute_map)) if checks_outside else
             solves_factor_graphs(check(_brute_map)))
    assert inspect.signature(entry) == inspect.signature(_brute_map)
    assert (entry.__name__, entry.__doc__) == ("_brute_map", "MAP by brute force.")
    assert list(entry.__fwcore_params__) == ["time_limit"]
    graph = fwcore.FactorGraph([2, 2, 2], [((0, 1, 2), np.arange(8.0).reshape(2, 2, 2))])
    np.testing.assert_array_equal(entry(graph, time_limit=10.0).assignment, [1, 1, 1])
    with pytest.raises(ValueError, match="^time_limit must be"):
        entry(graph, time_limit=0.0)


# -- the command line reads the tables and the signatures -------------------------------

def test_the_command_line_defaults_and_choices_are_the_library_ones(capsys):
    parse = _parser().parse_args
    args = parse(["infer", "model.uai"])
    assert args.method == inspect.signature(fwcore.infer).parameters["method"].default
    for name, method in fwcore.available_methods().items():  # a flag per option, unset
        for option in set(method.options) - {"seed", "executor"}:
            assert getattr(args, option) is None, (name, option)
    assert parse(["infer", "model.uai", "--rho-updates", "3"]).rho_updates == 3
    assert parse(["infer", "model.uai", "--local-search", "false"]).local_search is False
    for method in ("auto", "approximate", *fwcore.available_methods()):
        assert parse(["infer", "model.uai", "--method", method]).method == method
    with pytest.raises(SystemExit):
        parse(["infer", "model.uai", "--method", "no-such-method"])
    assert "invalid choice" in capsys.readouterr().err
    method = inspect.signature(fwcore.infer_map).parameters["method"].default
    assert parse(["map", "model.uai"]).method == method
    memory_limit = inspect.signature(fwcore.exact_inference).parameters["memory_limit"].default
    assert parse(["exact", "model.uai"]).memory_limit * 2**20 == memory_limit
