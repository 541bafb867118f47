"""Matchings: their distributions (marginals by FW on the Bethe free energy, Bethe BP,
exact marginals and permanents: `inference`) and their MAP oracles (max-weight bipartite
and perfect matchings: `oracles`)."""
from .inference import (MatchingMarginals, bethe_bp, exact_matching_marginals, log_permanent,
                        matching_marginals, permanent)
from .oracles import max_weight_bipartite_matching, max_weight_perfect_matching

__all__ = ["MatchingMarginals", "bethe_bp", "exact_matching_marginals", "log_permanent",
           "matching_marginals", "permanent", "max_weight_bipartite_matching",
           "max_weight_perfect_matching"]
