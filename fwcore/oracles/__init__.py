"""MAP oracles behind one interface (DESIGN.md, "MAP oracles")."""
from .base import MapOracle, available_oracles, make_oracle, register_oracle

__all__ = ["MapOracle", "available_oracles", "make_oracle", "register_oracle"]
