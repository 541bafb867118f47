"""Result records shared across fwcore (frozen dataclasses, scipy.optimize style)."""
import enum
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["Status", "MapResult"]


class Status(str, enum.Enum):
    """Why a solver stopped."""

    CONVERGED = "converged"      # tolerance reached, or the answer is exact
    MAX_ITER = "max_iter"        # iteration (or oracle-call) budget spent
    MAX_TIME = "max_time"        # wall-clock budget spent; best result so far
    INTERRUPTED = "interrupted"  # callback returned False or Ctrl-C; best result so far
    STALLED = "stalled"          # no further progress possible (e.g. local optimum)


@dataclass(frozen=True)
class MapResult:
    """A MAP answer: ``assignment`` maximising the log-score, its ``score``, a certified
    ``upper_bound`` on the maximum score (None when the method has none), why it stopped,
    and the wall time in seconds."""

    assignment: np.ndarray
    score: float
    upper_bound: Optional[float]
    status: Status
    time: float
    method: str
    n_iter: int = 0
    info: dict = field(default_factory=dict)

    @property
    def optimal(self):
        """True when the bound certifies the score (to 1e-9 relative)."""
        return self.upper_bound is not None and \
            self.upper_bound - self.score <= 1e-9 * max(1.0, abs(self.score))
