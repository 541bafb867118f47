"""The contract of marginal-inference methods and their registry (DESIGN.md "Marginal
methods behind one door"), as MAP oracles have theirs (`fwcore.oracles.base`).

A method is registered once, with:

- ``name``: what ``fwcore.infer(model, method=name)`` and ``fwcore infer --method``
  call it;
- ``run(model, budget, callbacks, **options)``: the run. ``model`` is a `PairwiseMRF`
  or a `FactorGraph` checked by the caller (the method never checks it again),
  ``budget`` a `fwcore.loop.Budget` (the call's deadline, counted from the call's
  start, and ``max_iter``: the method's iterations, ``None`` for its default),
  ``callbacks`` the run's `fwcore.loop.Callbacks` (trace, progress line, the user's
  callback); returns a `fwcore.marginals.MarginalResult`;
- ``options``: the table of its options (`fwcore.checks`), bound to ``run``'s
  signature when it is registered (a table and a signature that disagree are refused);
- ``certifies``: what its result proves when the run finishes: "upper" (``log_z_upper``
  is a bound whenever ``certified``), "lower" (``log_z_lower`` is a bound), "exact"
  (log Z and the marginals themselves);
- ``iteration``: what ``max_iter`` counts (passes, sweeps, FCFW iterations, samples);
- ``seeded``: its runs are random and take ``seed``.

`available_methods()` lists them, `get_method` finds one by name, `run_method` runs one
on a checked model with its options checked: the public entry points (`fwcore.infer`,
`fwcore.trbp`, `fwcore.weighted_mini_bucket`, ...) are thin wrappers around it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..checks import BOOL, Kind, bind_table, check_params, validate_params
from ..loop import Budget, Callbacks, Deadline
from ..results import Status
from .result import MarginalResult, progress_line

__all__ = ["MarginalMethod", "register_method", "available_methods", "get_method",
           "run_method", "CERTIFICATES", "RUN_ARGUMENTS"]

#: what a method's result may prove (`MarginalMethod.certifies`)
CERTIFICATES = frozenset({"upper", "lower", "exact"})
#: the arguments every run takes before its options
RUN_ARGUMENTS = ("model", "budget", "callbacks")

_registry: dict[str, MarginalMethod] = {}
_TEXT = Kind(lambda v: isinstance(v, str), "a str")


@dataclass(frozen=True)
class MarginalMethod:
    """A registered marginal-inference method (module docstring)."""

    name: str
    run: Callable
    options: Mapping
    certifies: frozenset
    iteration: str
    seeded: bool = False
    summary: str = ""

    def check_options(self, options, chosen=False):
        """``options`` checked against the method's table: TypeError naming an option it
        does not take, the methods that take it and the ones it takes (``chosen``: the
        method was chosen by method="auto"), else `fwcore.checks.check_params`."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            name = unknown[0]
            takers = [m for m, method in _registry.items() if name in method.options]
            which = (f"an option of {', '.join(map(repr, takers))}: name the method, e.g. "
                     f"method={takers[0]!r}" if takers else "an option of no method")
            how = " (chosen by method='auto')" if chosen else ""
            takes = ", ".join(sorted(self.options)) or "none"
            raise TypeError(f"method {self.name!r}{how} takes no option {name!r} (its "
                            f"options: {takes}); {name!r} is {which}")
        return check_params(self.options, **options)


@validate_params({"name": _TEXT, "certifies": Kind(lambda v: isinstance(v, (tuple, list,
                                                                         frozenset, set)),
                                                     "a collection of certificates"),
                  "iteration": _TEXT, "seeded": BOOL, "summary": _TEXT},
                 unchecked=("run", "options"))
def register_method(name: str, run: Callable, options: Mapping, *, certifies=(),
                    iteration: str, seeded: bool = False, summary: str = "") -> MarginalMethod:
    """Register ``run`` as the method ``name`` (module docstring). ``options`` must name
    exactly the parameters of ``run`` after `RUN_ARGUMENTS` (ValueError otherwise, when
    it is registered), and ``certifies`` be a subset of `CERTIFICATES`."""
    certifies = frozenset(certifies)
    if not certifies <= CERTIFICATES:
        raise ValueError(f"certifies must be a subset of {sorted(CERTIFICATES)}; got "
                         f"{sorted(certifies)}")
    bind_table(run, options, unchecked=RUN_ARGUMENTS)
    method = MarginalMethod(name, run, dict(options), certifies, iteration, seeded, summary)
    _registry[name] = method
    return method


def available_methods() -> dict[str, MarginalMethod]:
    """The registered methods by name, in the order they were registered."""
    return dict(_registry)


def get_method(name: str) -> MarginalMethod:
    """The method registered as ``name``: ValueError listing the names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"method must be a str naming a method; got {type(name).__name__}")
    if name not in _registry:
        raise ValueError(f"method must be one of {', '.join(map(repr, _registry))} (or "
                         f"'auto'); got {name!r}")
    return _registry[name]


def run_method(method: MarginalMethod, model, *, deadline: Deadline, max_iter=None,
               callback=None, verbose=False, options: Mapping):
    """``method``'s run on the checked ``model`` with checked ``options``, within
    ``deadline`` (made at the start of the call, so that the result's ``time`` is the
    whole call), ``max_iter`` of its iterations (None: its default), the user's
    ``callback`` and the progress line (on stderr with ``verbose``). A model without
    variables has log Z = 0 whatever the method: answered at once."""
    if model.n_vars == 0:  # log Z = 0, nothing to optimise, whatever the method
        return MarginalResult(
            node_marginals=[], edge_marginals=[], mu=np.zeros(0), log_z_upper=0.0,
            log_z_lower=0.0, certified=True, gap=0.0, certified_gap=0.0,
            status=Status.CONVERGED, n_iter=0, time=deadline.elapsed(), method=method.name)
    callbacks = Callbacks(callback, line=progress_line, verbose=verbose)
    result = method.run(model, Budget(deadline, max_iter), callbacks, **options)
    return replace(result, time=deadline.elapsed())  # the whole call, its result built
