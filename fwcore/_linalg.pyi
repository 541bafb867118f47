"""Type stubs of the compiled module fwcore._linalg, generated from _linalg.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np


def selected_inverse(colptr: np.ndarray, rowind: np.ndarray, lval: np.ndarray, diag: np.ndarray, zval: np.ndarray, zdiag: np.ndarray) -> Any: ...
