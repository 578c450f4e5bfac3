"""Build the tutorials' documentation site: every notebook with its outputs and figures, the learners'
index, the glossary, the timing note and the NPU pages of docs/, as static HTML that opens offline.

    python scripts/build_docs.py                 # -> build/docs-site/index.html
    python scripts/build_docs.py --out site/     # elsewhere

The notebooks' outputs come from ``build/notebooks-executed/``: ``pytest notebooks/`` (nbval, quick
mode) writes every notebook it ran without a failure there (notebooks/conftest.py), so a CI run builds
the site from the run it just checked. A notebook with no executed copy there, or whose copy is older
than its source, is executed here first (nbclient, ``RYZEN_NB_QUICK=1`` unless the environment says
otherwise), and its copy is kept for the next build.

The pages are rendered by Sphinx with MyST-NB (``pip install -e ".[docs]"``), without executing
anything (the outputs are already there). What a static page cannot hold is rewritten first:

* plotly figures (``application/vnd.plotly.v1+json``) become HTML that draws them with the plotly.js
  of the installed ``plotly`` package, copied into the site once: no CDN, the pages work offline;
* widgets (the config builder, the calibration wizard, the partition view, the dashboard) need a live
  kernel: each becomes a note naming the widget and saying to run the notebook to use it; progress
  bars, which only moved while the notebook ran, are left out.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXECUTED = ROOT / "build" / "notebooks-executed"
SITE = ROOT / "build" / "docs-site"
CONFIG = Path(__file__).resolve().parent / "docs_site"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: the pages besides the notebooks, from notebooks/ and docs/ (docs/README.md is the NPU pages' index)
PAGES = ["notebooks/README.md", "notebooks/GLOSSARY.md", "notebooks/TIMINGS.md"]


def source_hash(notebook: dict[str, Any]) -> str:
    """What a notebook says (cell types and sources), so an executed copy can be matched to its source."""
    cells = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
             for c in notebook["cells"]]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def executed_copy(path: Path, executed: Path) -> Path | None:
    """The executed copy of ``path`` in ``executed`` if it matches the notebook's current source."""
    copy = executed / path.name
    if not copy.is_file():
        return None
    meta = json.loads(copy.read_text(encoding="utf-8")).get("metadata", {}).get("ryzen_nb_docs", {})
    return copy if meta.get("source_sha256") == source_hash(json.loads(path.read_text(encoding="utf-8"))) else None


def execute(path: Path, executed: Path, timeout: int = 600) -> Path:
    """Run a notebook top to bottom in its folder (quick mode by default) and keep the executed copy."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    env_quick = os.environ.setdefault("RYZEN_NB_QUICK", "1")
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    nb.metadata["ryzen_nb_docs"] = {"source_sha256": source_hash(json.loads(path.read_text(encoding="utf-8"))),
                                    "quick": env_quick == "1", "executed_by": "scripts/build_docs.py"}
    executed.mkdir(parents=True, exist_ok=True)
    out = executed / path.name
    nbformat.write(nb, out)
    return out


#: a tqdm progress bar's text form: "Calibrating:   0%|          | 0/64 [00:00<?, ?sample/s]"
PROGRESS = re.compile(r"\[\d\d:\d\d[<,]")


def _plain(output: dict[str, Any]) -> str:
    text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _widget_note(output: dict[str, Any]) -> str:
    text = _plain(output).strip()
    # a widget with a summary of its own ("<PartitionView ... on PHX: CPU 2, NPU 78 operators>") shows it
    what = text if text.startswith("<") else (text.split("(", 1)[0].strip() or "widget")
    return (f'<div class="widget-note"><strong>Interactive widget</strong> {html.escape(what[:200])}: it needs a '
            "running kernel — open the notebook in JupyterLab to use it.</div>")


def static_outputs(nb: dict[str, Any]) -> dict[str, int]:
    """Rewrite what a static page cannot show: plotly figures to HTML (plotly.js loaded once per page from
    the site), widget views to a note. Returns how many of each were rewritten."""
    import plotly.io as pio

    counts = {"figures": 0, "widgets": 0, "progress bars": 0}
    for cell in nb["cells"]:
        if cell.get("outputs"):
            bars = [o for o in cell["outputs"] if WIDGET_MIME in o.get("data", {}) and PROGRESS.search(_plain(o))]
            counts["progress bars"] += len(bars)
            cell["outputs"] = [o for o in cell["outputs"] if not any(o is b for b in bars)]  # they only moved while it ran
        for output in cell.get("outputs", []):
            data = output.get("data")
            if not data:
                continue
            if PLOTLY_MIME in data:
                figure = data[PLOTLY_MIME]
                page = pio.to_html(figure, include_plotlyjs=False, include_mathjax=False, full_html=False,
                                   default_width="100%", validate=False)
                # the theme loads plotly.js at the end of the page: draw once the page is parsed
                start, end = page.index("<script"), page.rindex("</script>")
                body = page.index(">", start) + 1
                page = (page[:body] + 'window.addEventListener("DOMContentLoaded", function () {'
                        + page[body:end] + "});" + page[end:])
                output["data"] = {"text/html": page}
                output["metadata"] = {}
                counts["figures"] += 1
            elif WIDGET_MIME in data:
                output["data"] = {"text/html": _widget_note(output)}
                output["metadata"] = {}
                counts["widgets"] += 1
    nb.get("metadata", {}).pop("widgets", None)
    return counts


def stage(src: Path, executed: Path, execute_missing: bool = True) -> dict[str, dict[str, Any]]:
    """Lay out the site's sources in ``src``: the executed notebooks (rewritten), the pages, the config."""
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    (src / "_static").mkdir()
    report: dict[str, dict[str, Any]] = {}
    for path in notebooks():
        copy = executed_copy(path, executed)
        ran_here = False
        if copy is None:
            if not execute_missing:
                raise FileNotFoundError(f"{path.name} has no up-to-date executed copy in {executed}; run "
                                        "`pytest notebooks/` first, or build without --no-execute")
            copy = execute(path, executed)
            ran_here = True
        nb = json.loads(copy.read_text(encoding="utf-8"))
        counts = static_outputs(nb)
        outputs = sum(len(c.get("outputs", [])) for c in nb["cells"])
        (src / "notebooks" / path.name).write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
        report[path.stem] = {"outputs": outputs, "executed_here": ran_here, **counts}
    for page in PAGES:
        shutil.copy2(ROOT / page, src / page)
    shutil.copytree(ROOT / "docs", src / "docs")
    for name in ("conf.py", "index.md"):
        shutil.copy2(CONFIG / name, src / name)
    import plotly

    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", src / "_static" / "plotly.min.js")
    shutil.copy2(CONFIG / "site.css", src / "_static" / "site.css")
    return report


def build(out: Path = SITE, executed: Path = EXECUTED, execute_missing: bool = True, quiet: bool = True) -> dict[str, Any]:
    """Stage and render the site into ``out``; returns what was built (per notebook: outputs, figures,
    widgets, whether it was executed here) and the time it took."""
    from sphinx.cmd.build import build_main

    start = time.perf_counter()
    out = Path(out)
    src = out.parent / (out.name + "-src")
    report = stage(src, Path(executed), execute_missing)
    staged = time.perf_counter() - start
    args = ["-b", "html", "-E", "-j", "1", str(src), str(out)] + (["-q"] if quiet else [])
    if build_main(args) != 0:
        raise RuntimeError(f"sphinx-build failed for {src}")
    return {"notebooks": report, "out": out, "seconds": round(time.perf_counter() - start, 1),
            "staging_seconds": round(staged, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=SITE, help=f"the site's folder (default {SITE.relative_to(ROOT)})")
    parser.add_argument("--executed", type=Path, default=EXECUTED,
                        help="executed notebooks to reuse (default build/notebooks-executed, written by pytest notebooks/)")
    parser.add_argument("--no-execute", action="store_true", help="fail instead of executing a notebook without an executed copy")
    parser.add_argument("--verbose", action="store_true", help="show Sphinx's output")
    args = parser.parse_args(argv)
    result = build(args.out, args.executed, not args.no_execute, quiet=not args.verbose)
    for name, r in result["notebooks"].items():
        print(f"  {name:38s} {r['outputs']:4d} outputs, {r['figures']:2d} figures, {r['widgets']:2d} widgets"
              + (" (executed now)" if r["executed_here"] else ""))
    print(f"site: {result['out'] / 'index.html'} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
