"""Type stubs of the compiled module fwcore._bp, generated from _bp.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np

from ._graph import Graph
BELIEF_CHUNK: int

def node_beliefs(theta: np.ndarray, graph: Graph, msg_off: np.ndarray, rho: np.ndarray, weight: np.ndarray, logm: np.ndarray, mu: np.ndarray, node_sum: np.ndarray, n_inf: np.ndarray, value: np.ndarray, lo: int, hi: int) -> Any: ...

def edge_beliefs(theta: np.ndarray, graph: Graph, msg_off: np.ndarray, rho: np.ndarray, weight: np.ndarray, logm: np.ndarray, mu: np.ndarray, node_sum: np.ndarray, n_inf: np.ndarray, work: np.ndarray, value: np.ndarray, lo: int, hi: int) -> Any: ...

def initial_messages(theta: np.ndarray, graph: Graph, msg_off: np.ndarray, neg_log: np.ndarray, logm: np.ndarray) -> Any: ...
