"""The Frank-Wolfe engine shared by marginal inference, learning and MAP-LP solvers
(DESIGN.md, "Frank-Wolfe engine")."""
from .active_set import ActiveSet
from .corrective import CorrectiveStep, LocalSearch, MFWCorrection
from .domains import U0_ATOM, Domain, ProductDomain, Simplex
from .linesearch import Agnostic, ExactLineSearch, safeguarded_newton
from .objectives import Objective, Quadratic
from .result import FWResult
from .solvers import METHODS, adaptive_delta, block_coordinate_frank_wolfe, correct, frank_wolfe

__all__ = ["ActiveSet", "CorrectiveStep", "LocalSearch", "MFWCorrection", "U0_ATOM", "Domain",
           "ProductDomain", "Simplex", "Agnostic", "ExactLineSearch", "safeguarded_newton",
           "Objective", "Quadratic", "FWResult", "METHODS", "adaptive_delta",
           "block_coordinate_frank_wolfe", "correct", "frank_wolfe"]
