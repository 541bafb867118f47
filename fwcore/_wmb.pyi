"""Type stubs of the compiled module fwcore._wmb, generated from _wmb.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np

MAX_AXES: Any

def exp_nonpositive(x: np.ndarray, out: np.ndarray) -> Any: ...

def short_rows(x: np.ndarray, w: float, top: np.ndarray, total: np.ndarray) -> Any: ...

def weighted_logsumexp(x: np.ndarray, shape: np.ndarray, out_stride: np.ndarray, w: float, out: np.ndarray) -> Any: ...
