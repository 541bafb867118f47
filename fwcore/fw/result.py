"""The frozen result of the Frank-Wolfe engine (FrankWolfe.jl's named-tuple result;
``scipy.optimize.OptimizeResult``), in the shared vocabulary of `fwcore.results`."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..results import Result, Status, Trace

__all__ = ["FWResult"]


@dataclass(frozen=True, repr=False)  # Result.__repr__: a short summary
class FWResult(Result):
    """Answer of a Frank-Wolfe run.

    ``x`` is the returned iterate (the last one when converged, else the one with the lowest
    primal value seen), ``atoms``/``weights`` its barycentric coordinates (``None`` for
    block-coordinate FW; a row of -1 is the interior point u0), ``primal`` = f(x), ``gap``
    the FW gap recomputed at ``x`` after the loop (so f(x) − gap ≤ min f, ``lower_bound``,
    a proof when ``certified``: the domain's lmo is exact), ``x_avg`` the weighted average
    of the iterates (BCFW with ``averaging``), ``trace`` one `Record` per iterate."""

    x: np.ndarray
    atoms: Optional[np.ndarray]
    weights: Optional[np.ndarray]
    primal: float
    gap: float
    status: Status
    n_iter: int
    n_oracle_calls: int
    time: float
    delta: float
    method: str
    certified: bool
    trace: Trace
    x_avg: Optional[np.ndarray] = None

    @property
    def lower_bound(self):
        return self.primal - self.gap
