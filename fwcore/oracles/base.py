"""The oracle contract, the registry of oracles by name, and the one resolver.

An oracle is built once for a model's structure (graph and cardinalities) and then asked
many times for a maximiser of other scores in the model's flat layout:

    oracle = resolve_oracle("icm", model, seed=0)
    x = oracle.argmax(scores, init=None, time_limit=None)  # int32 maximiser of <scores, mu(x)>
    kappa = oracle.upper_bound()       # certified bound on that maximum, or None
    oracle.status                      # why that call stopped (a `Status`)

Everything a caller may rely on is declared on `MapOracle` (DESIGN.md "Contracts every task
shares"): ``exact``, ``takes_seed``, ``time_limit`` (the default per call), ``status``,
``argmax`` and ``upper_bound``; LP oracles (`LPOracle`) add ``argmax_marginals``. Callers
never probe an oracle for what it can do. Scores are maximised.
"""
import abc
import inspect
from typing import Optional

import numpy as np

from ..auto import auto_oracle, exact_oracle
from ..checks import BOOL, SEED, TIME, check_model, check_params, validate_params
from ..model import PairwiseMRF
from ..results import Status, proves_optimal
from ..labelling import feasible_labelling

__all__ = ["MapOracle", "LPOracle", "FunctionOracle", "register_oracle", "resolve_oracle",
           "build_oracle",
           "available_oracles", "exact_choice"]

#: name -> oracle class; `fwcore.oracles.builtin` registers the built-in ones when the
#: package is imported
_registry: dict[str, "type[MapOracle]"] = {}
_TIME_LIMIT = {"time_limit": TIME}


class MapOracle(abc.ABC):
    """Base class of every MAP oracle. Subclasses set ``name`` (and ``exact``,
    ``takes_seed``, ``extra`` as they apply) and implement `_argmax`."""

    name: Optional[str] = None
    #: a call that finishes (status not MAX_TIME) returns a true maximiser
    exact = False
    #: the constructor takes ``seed`` (randomised oracles); `resolve_oracle` passes it
    takes_seed = False
    #: the constructor takes ``anytime``: with it, a call given a time limit keeps improving
    #: its labelling until that limit (without, a fixed effort); `resolve_oracle` passes it
    takes_anytime = False
    #: name of the optional extra a backend needs (None: numpy/scipy only)
    extra: Optional[str] = None
    #: default time limit of each call in seconds (constructors that take one set it)
    time_limit: Optional[float] = None

    def __init__(self, model):
        """``model``: a `fwcore.PairwiseMRF`, checked by whoever builds the oracle
        (`resolve_oracle`: the one model check of its call)."""
        if not isinstance(model, PairwiseMRF):
            raise TypeError(f"model must be a fwcore.PairwiseMRF; got {type(model).__name__}")
        self.model = model
        self.n_calls = 0
        #: why the last call stopped: CONVERGED (finished: exact, or its bound proves the
        #: score optimal), STALLED (a local optimum without proof), MAX_ITER or MAX_TIME
        self.status = None
        self._bound = None
        #: the last call's progress as `fwcore.results.Record`s (time since the call's
        #: start, best score, best bound); empty for oracles that record none
        self.progress = ()
        #: called with each progress record as it is made (a `fwcore.loop.Callbacks`, set
        #: by `fwcore.infer_map`; None: nobody listens); False from it stops the call as
        #: Ctrl-C does, with the best labelling so far
        self.observer = None

    def add_progress(self, record):
        """Append ``record`` to ``progress`` and hand it to the ``observer``."""
        self.progress += (record,)
        if self.observer is not None and not self.observer(record):
            raise KeyboardInterrupt

    def argmax(self, scores, init=None, time_limit=None):
        """An int32 assignment maximising ``<scores, mu(x)>`` (scores: the flat layout,
        finite or -inf). ``init`` warm-starts the methods that use one; ``time_limit``
        (seconds) bounds this call, together with the oracle's own ``time_limit``. A
        labelling scoring -inf is repaired (`fwcore.labelling.feasible_labelling`)."""
        scores = self.check_scores(scores)
        if init is not None:
            init = self.model.check_assignment(init, name="init").astype(np.int32)
        self.n_calls += 1
        x, bound, status = self._argmax(scores, init, self.call_limit(time_limit))
        x = feasible_labelling(self.model, scores, x)
        if status is None:
            proven = self.exact or (bound is not None and
                                    proves_optimal(float(self.model.score(x, scores)), bound))
            status = Status.CONVERGED if proven else Status.STALLED
        self.status, self._bound = status, None if bound is None else float(bound)
        return x

    def call_limit(self, time_limit):
        """The time limit of one call: ``time_limit`` (checked) and the oracle's own,
        whichever is shorter (None: none)."""
        limit = time_limit
        if limit is not None:
            limit = check_params(_TIME_LIMIT, time_limit=limit)["time_limit"]
        if self.time_limit is not None:
            limit = self.time_limit if limit is None else min(limit, self.time_limit)
        return limit

    def upper_bound(self):
        """Certified upper bound on the maximum score of the last `argmax` call, or None."""
        return self._bound

    def check_scores(self, scores):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 1 or scores.shape[0] != self.model.dim:
            raise ValueError(f"scores must be a 1-D array of length {self.model.dim} (the "
                             f"model's flat layout); got shape {scores.shape}")
        if scores.size and not scores.max() < np.inf:  # NaN or +inf
            raise ValueError("scores contain NaN or +inf; log-potentials must be finite or -inf")
        return scores

    @abc.abstractmethod
    def _argmax(self, scores, init, time_limit):
        """Return (assignment, upper bound or None, status or None). Status None means the
        call finished: CONVERGED when exact or the bound proves the score, else STALLED."""

    @classmethod
    def is_available(cls):
        """Is the backend installed? (False only for oracles with an ``extra``.)"""
        return True


class LPOracle(MapOracle):
    """An oracle over the local polytope L: `argmax_marginals` returns the (possibly
    fractional) LP optimum and sets `upper_bound` to the LP value."""

    @abc.abstractmethod
    def argmax_marginals(self, scores, time_limit=None):
        """The LP optimum mu in L (flat layout) for ``scores``."""


class FunctionOracle(MapOracle):
    """A user function ``f(scores) -> assignment`` as an oracle: not known to be exact, no
    bound, called with the scores only (a user's object: pass its bound method)."""

    name = "function"

    def __init__(self, model, func):
        super().__init__(model)
        self.func = func

    def _argmax(self, scores, init, time_limit):
        x = self.model.check_assignment(self.func(scores), name="the oracle function's result")
        return x, None, None


def register_oracle(cls):
    """Class decorator: make an oracle selectable by its ``name``."""
    if not cls.name or cls.name in _registry:
        raise ValueError(f"oracle name {cls.name!r} is empty or already registered")
    _registry[cls.name] = cls
    return cls


def _installed(name):
    """Is the backend of the oracle registered as ``name`` installed?"""
    return _registry[name].is_available()


def exact_choice(model):
    """The name of the cheapest exact oracle for ``model`` (`fwcore.auto.exact_oracle`)."""
    return exact_oracle(model, _installed)


def _names():
    return ", ".join(["exact", "auto", *sorted(_registry)])


def _check_options(cls, spec, options):
    """Refuse (TypeError, as Python refuses a keyword) options the constructor of the
    oracle ``cls`` (named by the user's ``spec``) does not take, naming them and the ones
    it takes."""
    takes = [name for name in inspect.signature(cls).parameters if name != "model"]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        chosen = "" if spec == cls.name else f" (chosen for {spec!r})"
        raise TypeError(f"unknown option{'s' * (len(unknown) > 1)} {', '.join(unknown)} for "
                         f"oracle {cls.name!r}{chosen}; its options: {', '.join(takes) or 'none'}")


@validate_params({"seed": SEED, "anytime": [BOOL, None]}, unchecked=("spec", "model"))
def resolve_oracle(spec, model, *, seed=None, anytime=None, **options):
    """The oracle for ``model`` named by ``spec``, shared by every entry point:

    - ``"exact"``: the cheapest exact oracle (`exact_choice`);
    - ``"auto"``: that exact oracle when it is cheap or the model forbids pairs of
      states, else the approximate ``"portfolio"`` (`fwcore.auto.auto_oracle`);
    - a registered name (`available_oracles`), with keyword ``options``, or a
      ``(name, options)`` pair;
    - a `MapOracle` instance (used as it is: fwcore passes time limits per call and never
      sets its attributes), or a function ``scores -> assignment``.

    ``seed`` goes to the oracles that declare ``takes_seed``, ``anytime`` (when not None)
    to those that declare ``takes_anytime``."""
    return build_oracle(spec, check_model(model), seed=seed, anytime=anytime, **options)


def build_oracle(spec, model, *, seed=None, anytime=None, **options):
    """`resolve_oracle` for a model its caller has checked (`fwcore.checks.check_model`
    runs once per call of an entry point)."""
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        spec, extra_options = spec
        options = {**dict(extra_options), **options}
    if isinstance(spec, str):
        name = spec
        if name in ("exact", "auto"):
            name = (exact_oracle if name == "exact" else auto_oracle)(model, _installed)
        if name not in _registry:
            raise ValueError(f"unknown oracle {spec!r}; valid names: {_names()}")
        cls = _registry[name]
        if not cls.is_available():
            raise ValueError(f"oracle {name!r} needs the optional extra: "
                             f"pip install 'fwcore[{cls.extra}]'")
        if cls.takes_seed and seed is not None:
            options.setdefault("seed", seed)
        if cls.takes_anytime and anytime is not None:
            options.setdefault("anytime", anytime)
        _check_options(cls, spec, options)
        return cls(model, **options)
    if options:
        raise TypeError(f"options {sorted(options)} apply only to oracles chosen by name")
    if isinstance(spec, MapOracle):
        if spec.model.dim != model.dim or not np.array_equal(spec.model.card, model.card):
            raise ValueError("the oracle object was built for another model (its flat layout "
                             "differs); build it for this model")
        return spec
    if callable(spec):
        return FunctionOracle(model, spec)
    raise TypeError(f"oracle must be a name ({_names()}), a (name, options) pair, a "
                    f"fwcore.oracles.MapOracle or a function scores -> assignment (for an "
                    f"object, pass its bound method); got {type(spec).__name__}")


def available_oracles():
    """Mapping of every registered oracle name to whether its backend is installed."""
    return {name: cls.is_available() for name, cls in sorted(_registry.items())}
