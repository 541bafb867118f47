"""bench/'s modules for the tests that use them as references, imported with the
repository on sys.path only while they are: left there, it would make a process started
later (a dask worker) import the source tree, which in a fresh clone has no compiled
extensions (the worker dies, and the test waits for it forever)."""
import importlib
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def load(name):
    """The module ``name`` of bench/ (e.g. "bench.certified_sweep"); skips when bench/ is
    absent (an installed package without it)."""
    if not (REPOSITORY / "bench").is_dir():
        pytest.skip(f"bench/ is not beside tests/ in {REPOSITORY}", allow_module_level=True)
    sys.path.insert(0, str(REPOSITORY))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPOSITORY))
