"""The tutorials' documentation site builds, offline, with a page per notebook that shows its outputs
and figures (scripts/build_docs.py; Sphinx and MyST-NB from the ``docs`` extra)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import build_docs  # noqa: E402


def _plotly_cells(path: Path) -> int:
    """Code cells whose last line shows a plotly figure (``fig``) in the notebook's source."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).rstrip().endswith("\nfig"))


# Sphinx and MyST-NB's own deprecation notices (RemovedInSphinx*Warning) are theirs to fix, not ours
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")
def test_the_site_builds_with_a_page_per_notebook(tmp_path: Path) -> None:
    assert importlib.util.find_spec("myst_nb"), 'the docs build needs the docs extra: pip install -e ".[docs]"'
    start = time.perf_counter()
    result = build_docs.build(tmp_path / "site")
    seconds = time.perf_counter() - start
    site = tmp_path / "site"
    print(f"\ndocumentation site built in {seconds:.1f} s (Sphinx {result['seconds'] - result['staging_seconds']:.1f} s); "
          f"executed here: {[n for n, r in result['notebooks'].items() if r['executed_here']] or 'none'}")

    notebooks = build_docs.notebooks()
    assert {p.stem for p in notebooks} == set(result["notebooks"])
    plotly_js = site / "_static" / "plotly.min.js"
    assert plotly_js.is_file() and plotly_js.stat().st_size > 1_000_000, "plotly.js is served by the site itself"
    for path in notebooks:
        page = site / "notebooks" / f"{path.stem}.html"
        assert page.is_file(), f"no page for {path.name}"
        text = page.read_text(encoding="utf-8")
        title = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
        title = ("".join(title) if isinstance(title, list) else title).splitlines()[0].lstrip("# ").strip()
        assert title.split(":")[0].split("(")[0].strip() in text, f"{path.name}: the page lacks its title"
        assert result["notebooks"][path.stem]["outputs"] > 0 and "cell_output" in text, f"{path.name}: no outputs"
        figures = _plotly_cells(path)
        assert result["notebooks"][path.stem]["figures"] >= figures, f"{path.name}: a figure is missing"
        if figures:
            assert text.count("Plotly.newPlot") >= figures, f"{path.name}: its figures are not drawn"
            assert "_static/plotly.min.js" in text, f"{path.name}: the page does not load the site's plotly.js"
        # offline: no script or stylesheet from another host
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert not remote, f"{path.name} loads {remote}"
    for page in ("index.html", "notebooks/README.html", "notebooks/GLOSSARY.html", "notebooks/TIMINGS.html",
                 "docs/npu-assumptions.html", "docs/npu-hardware.html"):
        assert (site / page).is_file(), page
    # the assumption register, linked from the notebooks, resolves to its page and section
    primer = (site / "notebooks" / "08_inside_the_npu_emulator.html").read_text(encoding="utf-8")
    assert "../docs/npu-assumptions.html#assumption-register" in primer
