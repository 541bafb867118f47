"""`import fwcore` and `fwcore --version` load no heavy scipy module and no optional extra:
the functions that need them import them (issue 30, "a fast import")."""
import os
import subprocess
import sys
import tempfile

import pytest

#: modules only a function may load: scipy's solvers and sparse linear algebra, and the
#: optional extras of pyproject.toml
DEFERRED = ("scipy.optimize", "scipy.sparse.linalg", "pytoulbar2", "matplotlib", "tqdm",
            "distributed", "dask", "pgmpy", "pyagrum", "pyAgrum", "networkx")

_LOADED = ("import sys; print(' '.join(m for m in sys.modules if m in "
           f"{DEFERRED!r} or m.startswith({tuple(d + '.' for d in DEFERRED)!r})))")


def _loaded_after(code):
    # run outside the checkout: `python -c` puts the current folder first on sys.path, and a
    # fresh clone's source tree there has no compiled extensions
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", f"{code}\n{_LOADED}"], env=env, check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
    return out.splitlines()[-1].split()   # the modules, printed last


@pytest.mark.parametrize("code", [
    "import fwcore",
    "import fwcore.cli\ntry:\n    fwcore.cli.main(['--version'])\nexcept SystemExit:\n    pass",
], ids=["import", "version"])
def test_nothing_deferred_is_loaded(code):
    assert _loaded_after(code) == []


def test_the_check_sees_a_deferred_module():
    assert "scipy.optimize" in _loaded_after("import fwcore\nfwcore.max_weight_bipartite_"
                                             "matching([[1.0]])")
