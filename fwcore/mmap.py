"""Marginal MAP: the most likely joint state of some variables, the others summed out,

    q* = argmax_q Σ_r p(q, r | e)

(the UAI competitions' and Merlin's MMAP task: ``--query-file``). Exact by constrained
variable elimination (Dechter 1999, bucket elimination for MAP; Park & Darwiche 2004):
the summed variables are eliminated first, then the query variables by max-product,
whose maximisers are read back in reverse order (`fwcore.queries.MessageTree`,
`fwcore._query.up_pass` and ``backtrack``). The order is the exact planner's with the
query variables moved to the end, so its cliques can be larger than plain elimination's
(the constrained induced width). Past exact reach `infer_mmap` raises a ValueError naming
the model's size: the anytime methods (mixed max/sum weighted mini-bucket with search)
will plug in through ``method``.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .checks import INFEASIBLE, TIME, Options, validate_params
from .factor_graph import FactorGraph
from .io.uai import apply_evidence
from .loop import Deadline
from .model import PairwiseMRF
from .queries import _MEMORY, MEMORY_LIMIT, MessageTree, pairwise_form, variables_of
from .results import MapResult, Record, Status, Trace

__all__ = ["MMAPResult", "infer_mmap"]


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class MMAPResult(MapResult):
    """A marginal MAP answer: ``assignment`` (int64), the states of ``variables``
    (indices, in their order); ``score`` = log Σ_r exp(score(q*, r)) with the evidence,
    the log-mass of the answer; ``upper_bound`` the certified bound on the maximum of
    that (= score when exact); ``log_z`` (the log-mass of all states, so ``probability``
    = P(q* | e)); ``names`` and ``states`` of the query variables when the model has
    them."""

    variables: tuple = ()
    log_z: float | None = None
    names: tuple | None = None
    states: tuple | None = None

    @property
    def probability(self):
        """P(q* | e) = exp(score − log Z) (None without log Z)."""
        return None if self.log_z is None else math.exp(self.score - self.log_z)

    def named(self):
        """``{name: state}`` of the answer: names (or indices) of the query variables,
        states by name when the model has state names."""
        keys = self.names if self.names is not None else self.variables
        if self.states is None:
            return dict(zip(keys, self.assignment.tolist()))
        return {k: s[x] for k, s, x in zip(keys, self.states, self.assignment.tolist())}


@validate_params({"method": Options("exact"), "max_time": TIME, "memory_limit": _MEMORY},
                 unchecked=("model", "variables", "evidence"))
def infer_mmap(model: PairwiseMRF | FactorGraph, variables, evidence=None, *,
               method: str = "exact", max_time: float | None = None,
               memory_limit: float = MEMORY_LIMIT) -> MMAPResult:
    """Marginal MAP of the query ``variables`` (names or indices) given ``evidence``
    (`fwcore.apply_evidence`: hard or soft), the other variables summed out (the module
    docstring). ``method``: "exact" (constrained elimination; past exact reach a
    ValueError names the model's size). ``max_time`` (seconds): an exact answer has no
    partial form, so an elimination still running then raises TimeoutError (as Ctrl-C
    raises KeyboardInterrupt). ``memory_limit`` (bytes) bounds the elimination."""
    t0 = time.perf_counter()
    deadline = Deadline(max_time)
    if evidence:
        model = apply_evidence(model, evidence)
    q = variables_of(model, variables)
    pm = pairwise_form(model)
    tree = MessageTree(pm, q, n_max=len(q), memory_limit=memory_limit, what="marginal MAP")
    try:
        score = tree.up(deadline)
        if score == -np.inf:
            raise ValueError(INFEASIBLE)
        x = tree.backtrack()[list(q)]
        log_z = tree.up(deadline, maximise=False)
    except TimeoutError:
        raise TimeoutError(f"exact marginal MAP did not finish within max_time={max_time:g} "
                           f"s (its constrained elimination has induced width "
                           f"{tree.info['induced_width']}); an exact answer has no partial "
                           "form, and no anytime method is available yet") from None
    seconds = time.perf_counter() - t0
    return MMAPResult(
        assignment=x, score=float(score), upper_bound=float(score), status=Status.CONVERGED,
        time=seconds, method="exact", n_oracle_calls=0, info=tree.info, variables=q,
        log_z=float(log_z), names=tuple(model.names[v] for v in q) if model.names else None,
        states=tuple(model.states[v] for v in q) if model.states else None,
        trace=Trace([Record(iteration=1, time=seconds, primal=float(score), gap=0.0,
                            bound=float(score), score=float(score))]))
