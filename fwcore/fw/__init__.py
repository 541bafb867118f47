"""The Frank-Wolfe engine shared by marginal inference, learning and MAP-LP solvers
(DESIGN.md, "Frank-Wolfe engine")."""
from .active_set import ActiveSet
from .domains import U0_ATOM, ProductDomain, Simplex
from .linesearch import Agnostic, ClosedFormQuadratic, ExactLineSearch, safeguarded_newton
from .objectives import Quadratic
from .result import FWResult, IterationRecord, StepType
from .solvers import VARIANTS, adaptive_delta, block_coordinate_frank_wolfe, correct, frank_wolfe

__all__ = ["ActiveSet", "U0_ATOM", "ProductDomain", "Simplex", "Agnostic", "ClosedFormQuadratic",
           "ExactLineSearch", "safeguarded_newton", "Quadratic", "FWResult", "IterationRecord",
           "StepType", "VARIANTS", "adaptive_delta", "block_coordinate_frank_wolfe", "correct",
           "frank_wolfe"]
