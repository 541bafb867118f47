"""Shared benchmark settings. FWCORE_BENCH_PROFILE=quick picks small sizes for a fast run."""
import os
from pathlib import Path

PROFILE = os.environ.get("FWCORE_BENCH_PROFILE", "full")
QUICK = PROFILE == "quick"
INSTANCES = Path(os.environ.get("FWCORE_INSTANCES",
                                Path(__file__).resolve().parents[3] / "shared" / "instances"))


def instance_path(relative):
    """INSTANCES / ``relative``; NotImplementedError (asv's skip) when it is missing."""
    path = INSTANCES / relative
    if not path.exists():
        raise NotImplementedError(f"{path} not found")
    return path
