"""The docs (docs/: the API reference from the docstrings, the guides, the gallery of the
python/ examples with their figures) build with no warning."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fwcore

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_docs_build_without_warnings(tmp_path):
    for extra in ("sphinx", "matplotlib"):
        pytest.importorskip(extra, reason=f"{extra} is not installed (pip install 'fwcore[docs]')")
    if not (DOCS / "conf.py").is_file():
        pytest.skip(f"no docs at {DOCS} (an installed package without its sources)")
    # document the fwcore these tests import (a checkout's sources lack the built kernels
    # when the package was installed with pip): its folder first on the path, run elsewhere
    env = {**os.environ, "PYTHONPATH": str(Path(fwcore.__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-E", "-q", "-b", "html",
                          str(DOCS), str(tmp_path / "html")], capture_output=True, text=True,
                         cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr
