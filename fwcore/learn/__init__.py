"""Learning CRFs through MAP oracles (DESIGN.md "Learning"): MLE-Struct and structured SVMs
by (block-coordinate) Frank-Wolfe, scikit-learn style."""
from .base import BlockEntropy, LearnerModel, ModelFamily, VertexDecoder
from .crf import CRF, CRFExample, CRFFeatures, CRFModel
from .features import distance_profile, matching_features, shape_context
from .learner import NotFittedError
from .matching_model import Matching, MatchingModel
from .mle_struct import MLEStruct
from .ssvm import SSVM

__all__ = ["CRF", "Matching", "ModelFamily", "CRFExample", "CRFFeatures", "CRFModel",
           "MatchingModel", "LearnerModel", "NotFittedError", "VertexDecoder", "BlockEntropy",
           "MLEStruct", "SSVM",
           "distance_profile", "matching_features", "shape_context"]
