"""`infer`: marginals and bounds on log Z by any registered marginal-inference method,
through one door (DESIGN.md "Marginal methods behind one door").

`infer` checks the model once, makes the call's one deadline (so that the automatic
choice counts against ``max_time``), resolves the method (``method="auto"``: the rule of
`fwcore.auto.infer_method`), refuses options the method does not take, and runs it
(`fwcore.marginals.registry.run_method`). Also here: the method "exact" (exact
marginals as a `MarginalResult`, `fwcore.exact_inference`).
"""
from __future__ import annotations

from ..auto import exact_method, infer_method
from ..checks import BOOL, CALLABLE, SEED, TIME, Interval, Kind, check_model, validate_params
from ..exact import exact_result
from ..factor_graph import FactorGraph, solves_factor_graphs
from ..loop import Deadline, best_on_interrupt
from ..model import PairwiseMRF
from ..results import Record, Status, Trace
from .registry import get_method, register_method, run_method
from .result import MarginalResult, interrupted_answer

__all__ = ["infer", "EXACT"]

_PARAMS = {
    "method": Kind(lambda v: isinstance(v, str), "a method name"),
    "max_time": TIME,
    "max_iter": [Interval(0, integer=True), None],
    "callback": [CALLABLE, None],
    "verbose": BOOL,
    "seed": SEED,
}


@validate_params(_PARAMS, unchecked=("model",))
def infer(model: PairwiseMRF | FactorGraph, method: str = "auto", *,
          max_time: float | None = None, max_iter: int | None = None, callback=None,
          verbose: bool = False, seed: int | None = None, **options) -> MarginalResult:
    """Marginals and bounds on log Z: exact where that is cheap, else the approximate
    method that measured best, or the method named.

    method : "auto" (default): exact marginals (method "exact") when the model has few
        joint states, is a forest, or variable elimination takes few table entries (and
        half of ``max_time``), else "approximate" (`fwcore.auto.infer_method`, beside its
        figures). "approximate": the method that measured best past exact reach,
        weighted mini-bucket elimination ("wmb": a certified interval
        ``log_z_lower <= log Z <= log_z_upper`` and marginals). Or any name of
        ``fwcore.available_methods()``: "exact", "wmb", "barrier-fw", "trbp", "loopy-bp",
        "mean-field", "perturb-and-map".
    max_time : seconds for the whole call (the automatic choice and every part of the
        method: the run returns within it, with the best answer so far and status
        ``max_time``). max_iter : the method's iterations (passes, sweeps, FCFW iterations
        or samples, as ``fwcore.available_methods()[name].iteration`` says; None: its
        default). callback : ``callback(record)`` with each `fwcore.Record` of the run;
        False stops it (status ``interrupted``). Ctrl-C returns the best answer so far
        (status ``interrupted``). verbose : progress lines on stderr (the ``fwcore``
        logger has them anyway). seed : for the methods whose runs are random
        (``seeded``); the others are deterministic and do not use it.
    options : the chosen method's own options (its function's docstring lists them:
        `fwcore.barrier_fw`, `fwcore.weighted_mini_bucket`, `fwcore.trbp`,
        `fwcore.loopy_bp`, `fwcore.mean_field_lower_bound`, `fwcore.perturb_and_map`;
        "exact" takes ``memory_limit``); an option the method does not take is a
        TypeError naming it and the method, whether the method was named or chosen.

    Returns a `fwcore.marginals.MarginalResult`: ``method`` says which method answered,
    ``info`` holds what only that method has.
    """
    deadline = Deadline(max_time)
    checked = model if isinstance(model, FactorGraph) else check_model(model)
    name, stopped = best_on_interrupt(
        lambda: infer_method(checked, method, deadline.seconds_left()), lambda: None)
    if stopped:        # Ctrl-C in the automatic choice: no method ran
        return interrupted_answer(checked, deadline.elapsed(), method)
    chosen = get_method(name)
    options = chosen.check_options(options, chosen=method in ("auto", "approximate"))
    if chosen.seeded:
        options["seed"] = seed
    return run_method(chosen, checked, deadline=deadline, max_iter=max_iter,
                      callback=callback, verbose=verbose, options=options)


@solves_factor_graphs
def _run_exact(model, budget, callbacks, *, memory_limit=2**31):
    """Exact marginals (`fwcore.exact_inference`, its method chosen by
    `fwcore.auto.exact_method`): log_z_upper = log_z_lower = log Z, gap 0. Exact
    elimination has no partial answer: on Ctrl-C `run_method` returns uniform marginals
    with the product bound Σ_f max θ_f + Σ_v log ``|X_v|`` (status ``interrupted``)."""
    ex = exact_result(model, exact_method(model), memory_limit)
    record = Record(iteration=1, time=budget.deadline.elapsed(), primal=ex.log_z, gap=0.0,
                    bound=ex.log_z, score=ex.log_z)
    callbacks(record)
    callbacks.close()
    return MarginalResult(
        node_marginals=ex.node_marginals, edge_marginals=ex.edge_marginals, mu=ex.mu,
        log_z_upper=ex.log_z, log_z_lower=ex.log_z, certified=True, gap=0.0,
        certified_gap=0.0, status=Status.CONVERGED, n_iter=1,
        time=budget.deadline.elapsed(), method=f"exact/{ex.method}", trace=Trace([record]),
        info=dict(ex.info))


EXACT = register_method(
    "exact", _run_exact, {"memory_limit": Interval(1)}, certifies=("exact", "upper", "lower"),
    iteration="one exact elimination",
    summary="exact marginals and log Z: brute force, sum-product on a forest, or variable "
            "elimination (fwcore.exact_inference)")
