"""Learning CRFs through MAP oracles (DESIGN.md "Learning"): MLE-Struct and structured SVMs
by (block-coordinate) Frank-Wolfe, scikit-learn style, on training sets held in lists or
read on demand (`fwcore.learn.data`), serially or on any executor, a dask cluster keeping
the examples on its workers (`fwcore.learn.shards`)."""
from .base import BlockEntropy, LearnerModel, ModelFamily, VertexDecoder
from .crf import CRF, CRFExample, CRFFeatures, CRFModel
from .data import DaskBag, Dataset, ExampleFolder, InMemory, StackedArrays, write_examples
from .features import distance_profile, matching_features, shape_context
from .learner import NotFittedError
from .matching_model import Matching, MatchingModel
from .mle_struct import MLEStruct, TrainingMarginals
from .ssvm import SSVM

__all__ = ["CRF", "Matching", "ModelFamily", "CRFExample", "CRFFeatures", "CRFModel",
           "MatchingModel", "LearnerModel", "NotFittedError", "VertexDecoder", "BlockEntropy",
           "MLEStruct", "SSVM", "TrainingMarginals",
           "Dataset", "InMemory", "ExampleFolder", "StackedArrays", "DaskBag", "write_examples",
           "distance_profile", "matching_features", "shape_context"]
