"""Shared fixtures. Reference instances are read in place from ../shared/instances (or
$FWCORE_INSTANCES); tests that need them skip, saying why, when the folder is absent."""
import os
from pathlib import Path

import pytest
from hypothesis import settings

INSTANCES = Path(os.environ.get("FWCORE_INSTANCES",
                                Path(__file__).resolve().parents[2] / "shared" / "instances"))


@pytest.fixture(scope="session")
def instances():
    """Path of the shared reference instances, or skip."""
    if not INSTANCES.is_dir():
        pytest.skip(f"reference instances not found at {INSTANCES} (set FWCORE_INSTANCES)")
    return INSTANCES


# Property tests draw the same examples on every run (CI included): a failure found once
# is found again, and a run never fails on a draw nobody can reproduce.
settings.register_profile("fwcore", derandomize=True, print_blob=True)
settings.load_profile("fwcore")
