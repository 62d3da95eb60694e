"""Sphinx configuration of arrowdev's API reference, built from the docstrings.

tests/test_docs.py builds it with warnings as errors: ``sphinx-build -W -b html docs/api <out>``.
"""

import arrowdev

project = "arrowdev"
release = version = arrowdev.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
nitpicky = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
