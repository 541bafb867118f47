"""The scikit-learn estimator base of the learners: one parameter table, the choice of
model, and their pass loop on `fwcore.loop.run_loop` (stopping rules, trace, callback,
Ctrl-C; DESIGN.md "Contracts every task shares"); each learner supplies a `DualSolver`.

The learners are scikit-learn estimators without fwcore importing scikit-learn:
``get_params`` / ``set_params``, a parameter repr, ``__sklearn_tags__`` (which imports
scikit-learn, the ``sklearn`` extra, when scikit-learn asks for it), a default ``score``
and `NotFittedError` before ``fit``; so ``sklearn.base.clone``, ``GridSearchCV`` and
``cross_val_score`` take them, with structured X and Y (lists of examples and labellings).
"""
from __future__ import annotations

import abc
import functools
import inspect
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

import numpy as np


from ..checks import (BOOL, CALLABLE, EXECUTOR, SEED, TIME, Interval, Kind, Options, bind_table,
                      check_params)
from ..loop import Callbacks, Deadline, Guard, ProgressLog, Stopping, run_loop
from ..marginals.batch import DASK_CLIENT
from ..results import Record, Status, Trace, gap_text
from .base import ModelFamily, run_tasks
from .crf import CRF
from .data import Dataset, as_dataset
from .matching_model import Matching
from .shards import placement

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["StructuredLearner", "DualSolver", "NotFittedError", "model_family", "MODELS",
           "PARAMS", "Callback", "Family", "PassProgress"]

#: the type of the learners' ``callback``: a `fwcore.results.Record` per pass; False stops
Callback = Callable[[Record], Optional[bool]]
#: the type of the learners' ``model``: a `ModelFamily` or a shorthand in `MODELS`
Family = Union[str, ModelFamily]

#: the learners' ``model`` shorthands: each names its family's default object
MODELS = {"crf": CRF(), "bipartite": Matching("bipartite"), "general": Matching("general")}

#: constraints shared by every learner (checked once in ``fit``; DESIGN.md "Arguments")
PARAMS = {
    "model": [Options(*MODELS), Kind(lambda m: isinstance(m, ModelFamily),
                                     "a fwcore.learn.ModelFamily (CRF(...), Matching(...))")],
    "reg": Interval(0.0, lo_open=True),
    "method": Options("fw", "bcfw"),
    "tol": Interval(0.0),
    "max_iter": Interval(0, integer=True),
    "max_time": TIME,
    "averaging": BOOL,
    "seed": SEED,
    "batch_size": Interval(1, integer=True),
    "executor": [EXECUTOR, DASK_CLIENT, None],
    "callback": [CALLABLE, None],
    "verbose": BOOL,
}


def model_family(model):
    """The `ModelFamily` of the learners' ``model``: the object, or the default object a
    shorthand in `MODELS` names."""
    model = check_params({"model": PARAMS["model"]}, model=model)["model"]
    return MODELS[model] if isinstance(model, str) else model


class DualSolver(abc.ABC):
    """A learner's Frank-Wolfe state over its dual, driven pass by pass by
    `StructuredLearner`: ``measure`` computes the duality gap fresh at the iterate, ``step``
    makes one pass, ``result`` gives the fitted attributes of the iterate. Both hand the
    fit's `Deadline` to every per-example call (`TimeUp` ends the fit) and run it on the
    fit's `fwcore.learn.shards.Placement` ``where`` (``where.n`` examples), in rounds of
    `ROUND` examples (BCFW: of ``batch_size`` blocks), with progress lines between them
    (`PassProgress`). ``exact``: every decoder is exact, so a measured gap is a proof
    (else a small gap is STALLED)."""

    #: the stopping test is gap <= tol * tol_scale
    tol_scale = 1.0
    #: examples per round of a gap pass (progress lines come between rounds)
    ROUND = 64

    def __init__(self, model, where, exact, p):
        self.model, self.where, self.exact, self.p = model, where, exact, p
        self.M = where.n
        self.n_oracle_calls = 0
        self.progress = PassProgress(p["verbose"])

    def rounds(self, indices, size):
        """``indices`` in consecutive rounds of ``size``."""
        for k in range(0, len(indices), size):
            yield indices[k:k + size]

    def submitted(self, fn, *args):
        """[(round, `Pending` results of ``fn`` on it)] for every example in rounds of
        `ROUND`, all submitted at once (the rounds of a gap pass are independent)."""
        return [(rnd, self.where.submit(fn, rnd, *args))
                for rnd in self.rounds(np.arange(self.M), self.ROUND)]

    @abc.abstractmethod
    def measure(self, deadline):
        """(primal, gap) at the current iterate, with fresh oracle calls."""

    @abc.abstractmethod
    def step(self, k, deadline):
        """Pass k = 1, 2, ... from the iterate just measured."""

    @abc.abstractmethod
    def result(self):
        """{fitted attribute: value} of the current iterate (copies)."""


class NotFittedError(ValueError, AttributeError):
    """A learner was asked to predict before ``fit``. When scikit-learn is loaded (code
    that catches its ``NotFittedError`` has imported it) the error raised is also an
    instance of scikit-learn's."""


@functools.cache
def _with_sklearn(sklearn_error):
    return type("NotFittedError", (NotFittedError, sklearn_error), {"__module__": __name__})


def _not_fitted_error():
    """The NotFittedError class to raise (`NotFittedError`'s docstring)."""
    sklearn = sys.modules.get("sklearn.exceptions")
    return NotFittedError if sklearn is None else _with_sklearn(sklearn.NotFittedError)


class StructuredLearner(abc.ABC):
    """scikit-learn conventions: ``__init__`` stores parameters, ``fit`` validates them and
    the data once. Subclasses declare the table of their constructor's parameters,
    ``_param_table`` (bound to ``__init__``'s signature when the class is made:
    `fwcore.checks.bind_table`; ``_unchecked`` names those checked elsewhere), and build
    their `DualSolver` in ``_solver``.

    Fitted attributes shared by the learners: ``coef_``; ``status_`` (a
    `fwcore.results.Status`: CONVERGED when the gap computed fresh at the iterate is <= the
    tolerance and every oracle call is exact, STALLED when it is small with an inexact
    oracle, MAX_ITER, MAX_TIME, or INTERRUPTED by the callback or Ctrl-C; MAX_TIME and
    INTERRUPTED keep the last measured iterate, or the start point when the time ran out
    before the first gap pass ended, with ``gap_`` and ``primal_`` None);
    ``n_iter_`` (passes), ``n_oracle_calls_``, ``gap_`` and ``primal_`` (of the last
    measured iterate) and ``trace_`` (a `fwcore.results.Trace`, one `Record` per pass).
    When the callback runs, the fitted attributes hold the iterate just measured, so it can
    call ``predict`` (e.g. for a held-out error per pass).

    ``max_time`` counts from the call of ``fit`` and is held to about 1.2 ``max_time`` +
    1 s: every per-example oracle call gets the time left as its time limit, and a pass
    that runs out of time is abandoned (`fwcore.loop.Deadline`). Validation and the
    per-example set-up (oracles, entropy weights) count but are not cut short."""

    @classmethod
    def _param_names(cls):
        """The parameters of ``__init__``, each stored under its own name."""
        return sorted(name for name in inspect.signature(cls.__init__).parameters
                      if name != "self")

    def get_params(self, deep=True):
        """{parameter: value}, as scikit-learn's ``get_params`` (so that
        ``sklearn.base.clone`` and grid searches work without fwcore depending on
        scikit-learn). ``deep`` is accepted for its signature: no parameter of a learner is
        an estimator with parameters of its own."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set parameters by name (checked at the next ``fit``, as at construction);
        returns the learner."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters: {', '.join(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        """The class and the parameters that differ from their defaults, as scikit-learn
        prints an estimator: ``SSVM(max_iter=20, reg=0.1)``."""
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{name}={value!r}" for name, value in self.get_params().items()
                   if not _is_default(value, defaults[name])]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self):
        """scikit-learn's tags: a supervised estimator (Y required) whose X and Y are lists
        of structured examples and labellings, neither a classifier (no stratified folds)
        nor a regressor."""
        try:
            from sklearn.utils import InputTags, Tags, TargetTags
        except ImportError as err:
            raise ImportError("scikit-learn is not installed: pip install 'fwcore[sklearn]'"
                              ) from err
        return Tags(estimator_type=None,
                    target_tags=TargetTags(required=True, one_d_labels=False,
                                           single_output=False),
                    input_tags=InputTags(two_d_array=False), non_deterministic=False)

    def __sklearn_is_fitted__(self):
        return "coef_" in vars(self)

    _param_table = PARAMS
    _unchecked: tuple[str, ...] = ()
    # a constructor parameter of every learner, and a fitted attribute (`_set_fitted`)
    executor: Executor | None
    coef_: np.ndarray

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        bind_table(cls.__init__, cls._param_table, cls._unchecked)
        cls.__init__.__fwcore_params__ = cls._param_table

    def _check_params(self):
        table = self._param_table
        return check_params(table, **{name: vars(self)[name] for name in table})

    def fit(self, X: Sequence[Any] | Dataset, Y: Sequence[Any] | None = None) -> Self:
        """Learn ``coef_`` from inputs X and labellings Y (see `fwcore.learn.crf` and
        `fwcore.learn.matching_model` for their forms), or from a
        `fwcore.learn.data.Dataset` X alone, whose examples are loaded where they are used
        (`fwcore.learn.shards`)."""
        t0 = time.perf_counter()
        p = self._check_params()
        deadline = Deadline(p["max_time"])
        guard = Guard()  # Ctrl-C before the first pass: this call learned nothing; status_ says so
        built = guard(self._set_up, X, Y, p)
        if guard.interrupted:
            self.status_, self.trace_, self.n_iter_, self.n_oracle_calls_ = (
                Status.INTERRUPTED, Trace(), 0, 0)
            return self
        model, solver = built
        self.features_ = model
        self._run(solver, p, t0, deadline)
        return self

    def _set_up(self, X, Y, p):
        """(model, `DualSolver`) for the data and checked parameters ``p``: the examples
        placed (`fwcore.learn.shards.placement`), the family settled on their labellings,
        its model built on the first example, every example validated where it lives."""
        dataset = as_dataset(X, Y)
        if p["method"] == "fw" and p["batch_size"] != 1:
            raise ValueError(f"batch_size={p['batch_size']} is a BCFW option (method='bcfw'); "
                             "method='fw' moves every block at once")
        where = placement(dataset, p["executor"])
        family = model_family(p["model"])
        family = family.settled([s for shard in where.each("survey", family) for s in shard])
        model = family.build(*dataset.load(0, 1))[0]
        exact = all(where.each("prepare", model))
        return model, self._solver(model, where, exact, p)

    @abc.abstractmethod
    def _solver(self, model, where, exact, p):
        """The learner's `DualSolver` for checked parameters ``p``."""

    def _run(self, solver, p, t0, deadline):
        """Passes until the fresh gap is <= tol (× ``solver.tol_scale``), ``max_iter``
        passes, the ``deadline`` (`TimeUp` from a call of a pass, or passed at the end of
        one), a callback returning False or Ctrl-C; the fitted attributes are those of the
        last measured iterate (the start point before the first)."""
        fitted = solver.result()

        def measure(k):
            nonlocal fitted
            primal, gap = solver.measure(deadline)
            record = Record(k, time.perf_counter() - t0, primal, gap, solver.n_oracle_calls)
            fitted = solver.result()
            if p["callback"] is not None:  # the callback sees the measured iterate's fit
                self._set_fitted(fitted)
            return record, gap

        outcome = run_loop(measure, lambda k: solver.step(k, deadline),
                           Stopping(p["max_iter"], p["tol"] * solver.tol_scale,
                                    deadline=deadline),
                           Callbacks(p["callback"], line=_progress_line(solver.exact),
                                     verbose=p["verbose"]), proof=solver.exact)
        solver.where.close()
        self._set_fitted(fitted)
        last = outcome.last
        self.status_, self.trace_ = outcome.status, outcome.trace
        self.n_oracle_calls_ = solver.n_oracle_calls
        self.n_iter_ = 0 if last is None else last.iteration
        self.gap_ = None if last is None else last.gap
        self.primal_ = None if last is None else last.primal

    def _set_fitted(self, fitted):
        for name, value in fitted.items():
            setattr(self, name, value)

    def _check_fitted(self, X):
        if not self.__sklearn_is_fitted__():
            raise _not_fitted_error()(f"this {type(self).__name__} is not fitted yet; call "
                                      "fit(X, Y) first")
        return self.features_.check(X)

    def score(self, X: Sequence[Any], Y: Sequence[Any]) -> float:
        """Mean over the examples of the fraction of labels ``predict`` gets right (for
        matchings: of vertices matched to their true mate), 1 − the normalised Hamming loss:
        the default score of ``GridSearchCV`` and ``cross_val_score``."""
        predicted = self.predict(X)
        if len(Y) != len(predicted):
            raise ValueError(f"Y has {len(Y)} labellings for {len(predicted)} inputs in X")
        return float(np.mean([np.mean(np.asarray(p) == np.asarray(y))
                              for p, y in zip(predicted, Y)]))

    def decision_scores(self, X: Sequence[Any]) -> list[np.ndarray]:
        """Flat log-potentials θ = Φ w of each input under ``coef_``."""
        return [self.features_.scores(ex, self.coef_) for ex in self._check_fitted(X)]

    def predict(self, X: Sequence[Any]) -> list[np.ndarray]:
        """MAP labelling (or matching) of each input under ``coef_`` with the model's oracle."""
        examples = self._check_fitted(X)
        thetas = [self.features_.scores(ex, self.coef_) for ex in examples]
        decoders = [self.features_.decoder(ex) for ex in examples]
        return run_tasks(self.executor, _assignment, decoders, thetas)


def _progress_line(exact):
    """The progress line of a pass: the objective and the duality gap, proven when every
    oracle call is ``exact``, else an estimate, and the oracle calls per second so far."""
    def line(record):
        gaps = gap_text(record.gap if exact else None, None if exact else record.gap)
        rate = record.n_oracle_calls / max(record.time, 1e-9)
        return (f"pass {record.iteration}  {record.time:.1f} s  "
                f"objective {record.primal:.6g}  {gaps}  {rate:.3g} oracle calls/s")
    return line


class PassProgress:
    """Progress lines inside a pass (on the ``fwcore`` logger, `fwcore.loop.ProgressLog`:
    at most one a second): the examples done of the pass, a running figure (``what``:
    the gap so far, the dual objective) and the examples per second. ``start`` begins a
    pass (or its gap pass), ``__call__`` reports after a round."""

    def __init__(self, verbose):
        self.verbose, self.log = verbose, None

    def start(self, label, n, what):
        self.label, self.n, self.what = label, n, what
        self.t0, self.log = time.monotonic(), ProgressLog(self._line, self.verbose)

    def __call__(self, done, value):
        self.log((done, value, time.monotonic() - self.t0))

    def _line(self, state):
        done, value, seconds = state
        return (f"{self.label}: {done}/{self.n} examples, {self.what} {value:.6g}, "
                f"{done / max(seconds, 1e-9):.3g} examples/s")


def _is_default(value, default):
    """Whether a parameter holds its default (the same object, or an equal plain value)."""
    plain = (str, int, float, bool, type(None))
    return value is default or (type(value) is type(default) and isinstance(value, plain)
                                and value == default)


def _assignment(decoder, scores):
    return decoder.assignment(scores)
