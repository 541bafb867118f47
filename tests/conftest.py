"""Shared fixtures. Reference instances are read in place from ../shared/instances (or
$FWCORE_INSTANCES); tests that need them skip, saying why, when the folder is absent."""
import importlib.machinery
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# `python -m pytest` puts the current folder first on sys.path: run in a checkout (or an
# unpacked sdist) whose kernels are not built in place, as after `pip install .`, it would
# make `import fwcore` find the bare source tree and fail half-way through importing it.
# The installed package is the one to test then.
_TREE = Path(__file__).resolve().parents[1]
if not any(p.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
           for p in (_TREE / "fwcore").glob("_kernels.*")):
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _TREE]

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
