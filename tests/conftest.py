"""Shared fixtures. Reference instances are read in place from ../shared/instances (or
$FWCORE_INSTANCES); tests that need them skip, saying why, when the folder is absent."""
import os
from pathlib import Path

import pytest

INSTANCES = Path(os.environ.get("FWCORE_INSTANCES",
                                Path(__file__).resolve().parents[2] / "shared" / "instances"))


@pytest.fixture(scope="session")
def instances():
    """Path of the shared reference instances, or skip."""
    if not INSTANCES.is_dir():
        pytest.skip(f"reference instances not found at {INSTANCES} (set FWCORE_INSTANCES)")
    return INSTANCES
