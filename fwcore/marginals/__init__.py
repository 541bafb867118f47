"""Marginal inference: Barrier FW (`infer`, Alg. 2) over the TRW objective (`trw`) with its
spanning-tree weights (`rho`), the TRW bound in tree-decomposition form (`trw_dual`),
weighted mini-bucket elimination (`wmb`), conditioning (`condition`), the mean-field lower
bound (`mean_field`), the message-passing baselines (`bp`), Perturb-and-MAP (`perturb`),
many models at once (`batch`), and the result they share (`result`)."""
from .barrier_fw import infer
from .batch import infer_many
from .bp import loopy_bp, trbp
from .condition import (ConditionedResult, choose_conditioning, clamp, conditioned,
                        conditioned_anytime, fixed_by_evidence)
from .mean_field import MeanFieldResult, mean_field_lower_bound
from .perturb import PerturbResult, perturb_and_map
from .result import MarginalResult
from .wmb import weighted_mini_bucket

__all__ = ["infer", "infer_many", "trbp", "loopy_bp", "perturb_and_map", "PerturbResult",
           "MarginalResult", "weighted_mini_bucket", "clamp", "fixed_by_evidence",
           "conditioned", "conditioned_anytime", "choose_conditioning", "ConditionedResult",
           "mean_field_lower_bound", "MeanFieldResult"]
