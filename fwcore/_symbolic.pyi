"""Type stubs of the compiled module fwcore._symbolic, generated from _symbolic.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np


def sorted_neighbours(adj_start: np.ndarray, adj_var: np.ndarray) -> Any: ...

def cuthill_mckee(adj_start: np.ndarray, adj_var: np.ndarray, degree: np.ndarray, by_degree: np.ndarray) -> Any: ...

def eliminate(adj_start: np.ndarray, adj_var: np.ndarray, card: np.ndarray, order: np.ndarray, cap: int) -> Any: ...

def min_fill(adj_start: np.ndarray, adj_var: np.ndarray, card: np.ndarray, first: np.ndarray, cap: int, budget: int, work: int) -> Any: ...
