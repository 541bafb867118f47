"""Per-iteration records and the frozen result of the Frank-Wolfe engine
(FrankWolfe.jl ``CallbackState`` and named-tuple result; ``scipy.optimize.OptimizeResult``)."""
import enum
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..results import Status

__all__ = ["StepType", "IterationRecord", "FWResult"]


class StepType(str, enum.Enum):
    """How the iterate of a record was reached."""

    INIT = "init"              # the starting point
    FW = "fw"                  # towards the Frank-Wolfe vertex
    AWAY = "away"              # away from the worst active atom
    DROP = "drop"              # an away or pairwise step that removed an atom
    PAIRWISE = "pairwise"      # weight moved from the away atom to the FW vertex
    CORRECTION = "correction"  # a FW step followed by a correction over the active set
    BLOCK = "block"            # one pass of block-coordinate FW steps


@dataclass(frozen=True)
class IterationRecord:
    """The state after ``iteration`` steps: what a callback receives and the trace stores.

    ``gap`` is the Frank-Wolfe gap freshly computed at this iterate over the polytope being
    optimised (see `frank_wolfe`), ``delta`` the contraction in force."""

    iteration: int
    time: float
    primal: float
    gap: float
    delta: float
    step: StepType
    n_active: int
    n_oracle_calls: int


@dataclass(frozen=True)
class FWResult:
    """Answer of a Frank-Wolfe run.

    ``x`` is the returned iterate (the last one when converged, else the one with the lowest
    primal value seen), ``atoms``/``weights`` its barycentric coordinates (``None`` for
    block-coordinate FW; a row of -1 is the interior point u0), ``primal`` = f(x), ``gap``
    the FW gap recomputed at ``x`` after the loop, ``x_avg`` the weighted average of the
    iterates (BCFW with ``averaging``), ``trace`` one `IterationRecord` per iterate."""

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
    variant: str
    trace: tuple
    x_avg: Optional[np.ndarray] = None

    @property
    def converged(self):
        return self.status is Status.CONVERGED
