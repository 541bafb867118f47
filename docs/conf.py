"""Sphinx configuration: the API reference is built from fwcore's docstrings, and the
gallery runs the ``python/`` examples to draw its figures
(``python -m sphinx -W -b html docs docs/_build``)."""
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# ``python -m sphinx`` in a checkout puts the checkout first on sys.path; unless its
# kernels are built in place, document the installed fwcore (pip install ".[docs]")
if not any(p.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
           for p in (DOCS.parent / "fwcore").glob("_kernels.*")):
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != DOCS.parent]

import fwcore  # noqa: E402

project = "fwcore"
version = release = fwcore.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_member_order = "bysource"
default_role = "py:obj"
nitpicky = False
exclude_patterns = ["_build", "_gallery"]
html_theme = "alabaster"

EXAMPLES = DOCS.parent / "python"
#: gallery example -> the arguments its figure is drawn with (small sizes: seconds each)
GALLERY = {
    "clique_marginals.py": [],
    "map_portfolio.py": ["--side", "40", "--max-time", "2"],
    "large_grid.py": ["--side", "30", "--max-time", "5"],
    "paper_large_models.py": ["--size", "20", "--max-time", "3"],
    "learn_segmentation.py": [],
    "learn_matching.py": [],
}


def draw_gallery(app):
    """Run each `GALLERY` example with ``--plot docs/_gallery/NAME.png`` when its figure is
    missing or older than the script; a failing example fails the build."""
    out = DOCS / "_gallery"
    out.mkdir(exist_ok=True)
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(Path(fwcore.__file__).parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    for script, args in GALLERY.items():
        figure = out / f"{Path(script).stem}.png"
        if figure.exists() and figure.stat().st_mtime > (EXAMPLES / script).stat().st_mtime:
            continue
        run = subprocess.run([sys.executable, str(EXAMPLES / script), *args, "--plot",
                              str(figure)], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            raise RuntimeError(f"gallery example {script} failed:\n{run.stderr}")


def setup(app):
    app.connect("builder-inited", draw_gallery)
