"""Lint as part of the test suite (issue 35): ``ruff check .`` (configuration in
pyproject.toml) over the repository and ``mypy fwcore`` (the package, the stubs of its
compiled modules included) pass with no error. Each runs from the repository root on a
cold cache (mypy about 15 s on 2 cores), and skips, naming what to install, when its
tool is absent (both are in the ``test`` extra)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tool, *args):
    """(exit code, output) of ``python -m tool args`` at the repository root."""
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install {tool}, or the test extra)")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip(f"{ROOT} is not a checkout of fwcore (no pyproject.toml)")
    run = subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True,
                         text=True)
    return run.returncode, run.stdout + run.stderr


def test_ruff_finds_nothing():
    code, out = _run("ruff", "check", "--no-cache", ".")
    assert code == 0, out


def test_mypy_finds_nothing_in_the_package(tmp_path):
    code, out = _run("mypy", "--cache-dir", str(tmp_path / "cache"), "fwcore")
    assert code == 0 and out.startswith("Success:"), out  # config warnings fail it too
