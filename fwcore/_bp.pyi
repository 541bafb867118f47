"""Type stubs of the compiled module fwcore._bp, generated from _bp.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np

from ._graph import Graph

def beliefs(theta: np.ndarray, graph: Graph, msg_off: np.ndarray, rho: np.ndarray, logm: np.ndarray, mu: np.ndarray, node_sum: np.ndarray, n_inf: np.ndarray, work: np.ndarray) -> Any: ...

def trw_value(theta: np.ndarray, mu: np.ndarray, graph: Graph, rho: np.ndarray) -> Any: ...

def initial_messages(theta: np.ndarray, graph: Graph, msg_off: np.ndarray, neg_log: np.ndarray, logm: np.ndarray) -> Any: ...
