"""MAP LP-relaxation solvers of Smooth and Strong (Meshi, Mahdavi and Schwing, NIPS 2015)."""
from .api import METHODS, LPResult, infer_lp
from .factors import CardinalityFactor, Factor

__all__ = ["infer_lp", "LPResult", "METHODS", "Factor", "CardinalityFactor"]
