"""Type stubs of the compiled module fwcore._graph, generated from _graph.pyx by
tests/test_stubs.py (do not edit by hand)."""
from typing import Any

import numpy as np


class Graph:
    card: np.ndarray
    edges: np.ndarray
    node_off: np.ndarray
    edge_off: np.ndarray
    adj_start: np.ndarray
    adj_var: np.ndarray
    adj_edge: np.ndarray
    adj_first: np.ndarray
    def __init__(self, card: Any, edges: Any, node_off: Any, edge_off: Any, adj_start: Any, adj_var: Any, adj_edge: Any, adj_first: Any) -> None: ...
    def __reduce__(self) -> Any: ...
