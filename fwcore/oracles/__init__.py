"""MAP oracles behind one contract (DESIGN.md "MAP oracles", "Contracts every task shares")."""
from .base import (LPOracle, MapOracle, available_oracles, exact_choice, register_oracle,
                   resolve_oracle)
from . import builtin  # noqa: F401  (registers the built-in oracles)

__all__ = ["MapOracle", "LPOracle", "available_oracles", "exact_choice", "register_oracle",
           "resolve_oracle"]
