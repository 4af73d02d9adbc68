"""Sphinx configuration of benchy's documentation site (``docs/``).

Built in CI (``.ci/run``) with ``sphinx-build -W --keep-going``: any warning, such as a link to a
missing page or heading, a page left out of every table of contents, or a docstring that does not
parse, fails the build. The pages are Markdown (MyST); the configuration, output-line and JSON
references are generated from the code at each build (``_ext/benchy_reference.py``), and the API
reference from the docstrings (autodoc).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout's package, where it is not installed

from benchy import __version__  # noqa: E402

project = "benchy"
author = "the benchy developers"
copyright = "2026, the benchy developers"
version = release = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "benchy_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "reference/_generated", "**/README.md"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True}

html_theme = "furo"
html_title = f"benchy {release}"
html_static_path: list = []
html_show_sourcelink = False
