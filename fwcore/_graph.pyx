# cython: language_level=3
"""The graph arrays of a `fwcore.PairwiseMRF`'s flat layout as one unit for the kernels
(DESIGN.md "The model and its flat layout"): cardinalities, edges, node and edge offsets,
and the CSR adjacency (neighbour, edge id, 1 when the variable is the edge's first end).
Built once per model (``model.graph``); kernels take it instead of eight arrays."""
import numpy as np


cdef class Graph:
    """Typed views of the model's read-only graph arrays (see `fwcore.model`)."""

    def __init__(self, card, edges, node_off, edge_off, adj_start, adj_var, adj_edge,
                 adj_first):
        self.card, self.edges = card, edges
        self.node_off, self.edge_off = node_off, edge_off
        self.adj_start, self.adj_var = adj_start, adj_var
        self.adj_edge, self.adj_first = adj_edge, adj_first

    def __reduce__(self):
        arrays = [self.card, self.edges, self.node_off, self.edge_off, self.adj_start,
                  self.adj_var, self.adj_edge, self.adj_first]
        return Graph, tuple([np.asarray(a) for a in arrays])
