"""Marginal inference behind one door (`api`: `infer`, and the contract and registry of
methods, `registry`): exact marginals, weighted mini-bucket elimination (`wmb`), Barrier
FW (`barrier_fw`, Alg. 2) over the TRW objective (`trw`) with its spanning-tree weights
(`rho`) and the TRW bound in tree-decomposition form (`trw_dual`), the message-passing
baselines (`bp`), the mean-field lower bound (`mean_field`), Perturb-and-MAP
(`perturb`); conditioning (`condition`), many models at once (`batch`), and the result
they share (`result`)."""
from .api import infer
from .wmb import weighted_mini_bucket
from . import barrier_fw  # noqa: F401 (registers "barrier-fw"; fwcore.barrier_fw is its function)
from .bp import loopy_bp, trbp
from .mean_field import MeanFieldResult, mean_field_lower_bound
from .perturb import PerturbResult, perturb_and_map
from .batch import infer_many
from .condition import (ConditionedResult, choose_conditioning, clamp, conditioned,
                        conditioned_anytime, fixed_by_evidence)
from .registry import MarginalMethod, available_methods, register_method
from .result import MarginalResult

__all__ = ["infer", "available_methods", "register_method", "MarginalMethod",
           "infer_many", "trbp", "loopy_bp", "perturb_and_map", "PerturbResult",
           "MarginalResult", "weighted_mini_bucket", "clamp", "fixed_by_evidence",
           "conditioned", "conditioned_anytime", "choose_conditioning", "ConditionedResult",
           "mean_field_lower_bound", "MeanFieldResult"]
