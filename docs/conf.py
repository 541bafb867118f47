"""Sphinx configuration: the API reference is built from fwcore's docstrings
(``python -m sphinx -W -b html docs docs/_build``)."""
import fwcore

project = "fwcore"
version = release = fwcore.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_member_order = "bysource"
default_role = "py:obj"
nitpicky = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
