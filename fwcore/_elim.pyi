"""Type stubs of the compiled module fwcore._elim, generated from _elim.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np


class CliqueTree:
    def __init__(self, card: np.ndarray, edges: np.ndarray, node_off: np.ndarray, edge_off: np.ndarray, order: np.ndarray, clq_start: np.ndarray, clq_var: np.ndarray, ch_start: np.ndarray, ch_var: np.ndarray, own_start: np.ndarray, own_edge: np.ndarray) -> None: ...

def sum_product(tree: CliqueTree, theta: np.ndarray, mu: np.ndarray) -> Any: ...

def max_product(tree: CliqueTree, theta: np.ndarray, x: np.ndarray) -> Any: ...
