"""Learning CRFs through MAP oracles (DESIGN.md "Learning"): MLE-Struct and structured SVMs
by (block-coordinate) Frank-Wolfe, scikit-learn style."""
from .crf import CRFExample, CRFFeatures
from .features import distance_profile, matching_features, shape_context
from .mle_struct import MLEStruct
from .ssvm import SSVM

__all__ = ["CRFExample", "CRFFeatures", "MLEStruct", "SSVM", "distance_profile",
           "matching_features", "shape_context"]
