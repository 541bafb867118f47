"""The API reference (docs/) builds from the docstrings with no warning."""
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="sphinx is not installed (pip install 'fwcore[docs]')")
    if not (DOCS / "conf.py").is_file():
        pytest.skip(f"no docs at {DOCS} (an installed package without its sources)")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-E", "-q", "-b", "html",
                          str(DOCS), str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
