"""Argument checks shared by every entry point (DESIGN.md "Arguments").

Each entry point declares a table ``{argument: constraint}`` (scikit-learn's
``_parameter_constraints`` habit) and calls `check_params` once; a constraint is an
`Interval`, an `Options`, a `Kind`, or a list of them of which one must hold (``None`` in
the list allows None). Messages name the argument, the allowed values and what was given.
Also here: the one model check, the seed check and the one finite penalty for impossible
states.
"""
import math
import numbers
from concurrent.futures import Executor

import numpy as np

from .model import PairwiseMRF

__all__ = ["Interval", "Options", "Kind", "check_params", "check_model", "check_seed",
           "finite_penalty", "CALLABLE", "EXECUTOR", "TIME", "SEED"]


class Interval:
    """A real (or, with ``integer=True``, whole) number in [lo, hi]; ``lo_open`` /
    ``hi_open`` exclude an end. Returns it as float (int)."""

    def __init__(self, lo=-math.inf, hi=math.inf, *, lo_open=False, hi_open=False,
                 integer=False):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        self.integer = integer

    def of_type(self, v):
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    def accepts(self, v):
        if not self.of_type(v) or not math.isfinite(v):
            return False
        if self.integer and int(v) != v:
            return False
        above = self.lo < v if self.lo_open else self.lo <= v
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def convert(self, v):
        return int(v) if self.integer else float(v)

    def describe(self):
        text = "an integer" if self.integer else "a number"
        if self.lo > -math.inf:
            text += f" {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi < math.inf:
            text += f"{' and' if self.lo > -math.inf else ''} {'<' if self.hi_open else '<='} {self.hi:g}"
        return text


class Options:
    """One of a fixed set of strings."""

    def __init__(self, *values):
        self.values = values

    def of_type(self, v):
        return isinstance(v, str)

    def accepts(self, v):
        return isinstance(v, str) and v in self.values

    def convert(self, v):
        return v

    def describe(self):
        return "one of " + ", ".join(map(repr, self.values))


class Kind:
    """Anything for which ``test(value)`` holds (a type test)."""

    def __init__(self, test, description):
        self.test, self.description = test, description

    def of_type(self, v):
        return self.accepts(v)

    def accepts(self, v):
        return bool(self.test(v))

    def convert(self, v):
        return v

    def describe(self):
        return self.description


CALLABLE = Kind(callable, "a callable")
#: threads, processes, or a cluster's (dask.distributed ``Client.get_executor()``)
EXECUTOR = Kind(lambda e: isinstance(e, Executor), "a concurrent.futures.Executor")
#: a time budget in seconds
TIME = [Interval(0.0, lo_open=True), None]
SEED = [Kind(lambda s: isinstance(s, (int, np.integer)) and not isinstance(s, bool),
             "an int"), None]


def check_params(table, **values):
    """Check ``values`` against ``table`` (argument -> constraint or list of constraints);
    return the converted values in a dict. A value of no allowed type raises TypeError,
    one of an allowed type but out of range ValueError; both name the argument."""
    out = {}
    for name, value in values.items():
        allowed = table[name] if isinstance(table[name], list) else [table[name]]
        if value is None and None in allowed:
            out[name] = None
            continue
        for c in allowed:
            if c is not None and c.accepts(value):
                out[name] = c.convert(value)
                break
        else:
            rules = [c for c in allowed if c is not None]
            text = " or ".join(c.describe() for c in rules) + (" or None" if None in allowed else "")
            error = ValueError if any(c.of_type(value) for c in rules) else TypeError
            shown = type(value).__name__ if error is TypeError else repr(value)
            raise error(f"{name} must be {text}; got {shown}")
    return out


def check_model(model, name="model"):
    """The one model check: a `fwcore.PairwiseMRF` (TypeError naming the argument otherwise)."""
    if not isinstance(model, PairwiseMRF):
        raise TypeError(f"{name} must be a fwcore.PairwiseMRF (build one with "
                        f"fwcore.PairwiseMRF(...) or fwcore.read_uai); got {type(model).__name__}")
    return model


def check_seed(seed):
    """A `numpy.random.Generator` from an int seed or None (TypeError otherwise)."""
    return np.random.default_rng(check_params({"seed": SEED}, seed=seed)["seed"])


def finite_penalty(model, scores, margin):
    """``scores`` (flat layout) with each −inf entry replaced by the least finite entry of
    its block minus R + ``margin``, R = Σ_blocks (max − min of the finite entries): any
    assignment that uses a replaced entry then scores at least ``margin`` below every
    assignment that does not. So the maximisers are unchanged (margin > 0), and with
    margin = 50 + log(#assignments) log Z rises by at most e^-50: bounds computed on the
    penalised scores stay bounds for the given ones. Blocks with no finite entry get 0
    minus R + margin."""
    bad = np.isneginf(scores)
    if not bad.any():
        return scores
    starts = np.concatenate([model.node_off[:-1], model.edge_off[:-1]])
    sizes = np.diff(np.concatenate([starts, [model.dim]]))
    finite = np.where(bad, np.nan, scores)
    block = np.repeat(np.arange(starts.size), sizes)
    empty = np.add.reduceat(~bad, starts) == 0
    with np.errstate(all="ignore"):
        lo = np.where(empty, 0.0, np.fmin.reduceat(np.where(bad, np.inf, finite), starts))
        hi = np.where(empty, 0.0, np.fmax.reduceat(np.where(bad, -np.inf, finite), starts))
    spread = float((hi - lo).sum())
    return np.where(bad, (lo - spread - margin)[block], scores)
