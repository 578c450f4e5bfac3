"""Sphinx configuration of the tutorials' site (scripts/build_docs.py copies it beside the staged pages).

MyST-NB renders the notebooks with the outputs they already have (nothing is executed here); plotly
figures load the plotly.js the build copied into _static, so the pages need no network."""

from importlib.util import find_spec

project = "ryzen-nb tutorials"
author = "ryzen-nb developers"
copyright = "ryzen-nb developers, MIT licence"

extensions = ["myst_nb"]
nb_execution_mode = "off"  # the notebooks arrive executed (pytest notebooks/ or scripts/build_docs.py)
nb_merge_streams = True
myst_heading_anchors = 3  # links such as docs/npu-hardware.md#published-model-figures
myst_enable_extensions = ["html_image"]
suppress_warnings = ["myst.header", "myst.xref_missing", "misc.highlighting_failure", "toc.not_included"]
exclude_patterns = ["_build"]
master_doc = "index"

html_theme = "furo" if find_spec("furo") else "alabaster"
html_title = "ryzen-nb tutorials"
html_static_path = ["_static"]
html_js_files = ["plotly.min.js"]  # copied from the installed plotly package: no CDN
html_css_files = ["site.css"]
html_copy_source = False
html_show_sourcelink = False
