"""The oracle protocol and the registry of oracles by name.

An oracle is built once for a model's structure (graph and cardinalities) and then asked
many times for a maximiser of other scores in the model's flat layout:

    oracle = make_oracle("icm", model, seed=0)
    x = oracle.argmax(scores)          # int32 assignment maximising <scores, mu(x)>
    kappa = oracle.upper_bound()       # bound on max_x <scores, mu(x)> for that call, or None

Scores are maximised (DESIGN.md conventions). Exact oracles report the optimum as their
bound. A plain function ``f(scores) -> assignment`` or any object with ``argmax`` plugs in.
"""
import abc

import numpy as np

__all__ = ["MapOracle", "register_oracle", "make_oracle", "available_oracles"]

_REGISTRY = {}


class MapOracle(abc.ABC):
    """Base class: subclasses set ``name`` and ``exact`` and implement `_argmax`."""

    name = None
    exact = False
    #: name of the optional extra a backend needs (``None`` for numpy/scipy only)
    extra = None

    def __init__(self, model):
        self.model = model
        self.n_calls = 0
        self._bound = None

    def argmax(self, scores, init=None):
        """An assignment maximising ``<scores, mu(x)>``; ``init`` warm-starts local methods."""
        self.n_calls += 1
        x, self._bound = self._argmax(np.asarray(scores, dtype=np.float64), init)
        return np.ascontiguousarray(x, dtype=np.int32)

    def upper_bound(self):
        """Certified upper bound on the maximum score of the last `argmax` call, or None."""
        return self._bound

    @abc.abstractmethod
    def _argmax(self, scores, init):
        """Return (assignment, upper bound or None)."""

    @classmethod
    def is_available(cls):
        return True


class FunctionOracle(MapOracle):
    """Wraps a user function ``f(scores) -> assignment`` (no bound, not known exact)."""

    name = "function"

    def __init__(self, model, func):
        super().__init__(model)
        self.func = func

    def _argmax(self, scores, init):
        x = self.model.check_assignment(self.func(scores), name="oracle function's result")
        return x, None


class ObjectOracle(MapOracle):
    """Wraps a user object with ``argmax(scores)`` and optionally ``upper_bound()``."""

    name = "object"

    def __init__(self, model, obj):
        super().__init__(model)
        self.obj = obj
        self.exact = bool(getattr(obj, "exact", False))

    def _argmax(self, scores, init):
        x = self.model.check_assignment(self.obj.argmax(scores), name="oracle's result")
        bound = getattr(self.obj, "upper_bound", None)
        return x, (bound() if callable(bound) else None)


def register_oracle(cls):
    """Class decorator: make an oracle selectable by its ``name``."""
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"oracle name {cls.name!r} is empty or already registered")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin():
    # importing the modules registers their oracles
    from . import _builtin  # noqa: F401


def make_oracle(spec, model, **options):
    """Build an oracle from a name, ``(name, options)``, an oracle object or a function."""
    _load_builtin()
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        spec, extra_options = spec
        options = {**dict(extra_options), **options}
    if isinstance(spec, str):
        if spec not in _REGISTRY:
            raise ValueError(f"unknown oracle {spec!r}; valid names: {', '.join(sorted(_REGISTRY))}")
        cls = _REGISTRY[spec]
        if not cls.is_available():
            raise ValueError(f"oracle {spec!r} needs the optional extra: pip install 'fwcore[{cls.extra}]'")
        try:
            return cls(model, **options)
        except TypeError as err:
            raise TypeError(f"bad options for oracle {spec!r}: {err}") from None
    if options:
        raise TypeError(f"options {sorted(options)} apply only to oracles chosen by name")
    if isinstance(spec, MapOracle):
        return spec
    if hasattr(spec, "argmax"):
        return ObjectOracle(model, spec)
    if callable(spec):
        return FunctionOracle(model, spec)
    raise TypeError(f"oracle must be a name ({', '.join(sorted(_REGISTRY))}), a (name, options) "
                    f"pair, an object with argmax(scores), or a function; got {type(spec).__name__}")


def available_oracles():
    """Mapping of every registered oracle name to whether its backend is installed."""
    _load_builtin()
    return {name: cls.is_available() for name, cls in sorted(_REGISTRY.items())}
