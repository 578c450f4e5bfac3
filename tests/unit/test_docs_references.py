"""Every reference to the NPU documentation leads somewhere: a user who clones only this repository
can follow each ``docs/<page>.md#<section>`` in the code, tests, notebooks and README, each link
between the pages, and each assumption ID (A1…, F1…) to the register in docs/npu-assumptions.md."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: generated or third-party trees: the prebuilt JupyterLab extension is built from widgets/jupyterlab
SKIP_DIRS = {".git", ".venv", "node_modules", "labextension", "__pycache__", ".hypothesis", ".ruff_cache",
             ".pytest_cache", "build", "dist", "lib", "build-test"}
SUFFIXES = {".py", ".md", ".ipynb", ".ts", ".js", ".css", ".toml", ".cfg", ".json", ".txt", ".sh"}

#: docs/<page>.md, optionally #section, as code and notebooks cite this repository's pages (lower-case
#: names); another repository's docs/ (``amd/RyzenAI-SW: .../docs/x.md``, ``docs/Devices.md``) is not ours
CITED = re.compile(r"(?<![\w/.-])docs/([a-z][a-z0-9-]*\.md)(?:#([\w-]+))?")
#: a markdown link inside the docs: (page.md#section), (page.md) or (#section)
LINKED = re.compile(r"\]\((?!https?:)([\w.-]*\.md)?(?:#([\w-]+))?\)")
#: an assumption ID where it is named as one: "assumption A12", "A12:", "(A12)", "A10/A11"
ASSUMPTION = re.compile(r"\b(?:assumptions?\s+|ryzen-nb's assumption\s+)([AF]\d{1,2})\b|[(\s/]([AF]\d{1,2})(?=[),:/;])")


@functools.lru_cache(maxsize=1)
def _texts() -> dict[Path, str]:
    """Every text file of the repository that a person reads or runs, read once for all the tests."""
    found = {}
    for path in ROOT.rglob("*"):
        if path.is_file() and path.suffix in SUFFIXES and not SKIP_DIRS.intersection(path.relative_to(ROOT).parts):
            found[path] = path.read_text(encoding="utf-8", errors="replace")
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", page.read_text(encoding="utf-8"), re.M)}


def _register() -> set[str]:
    text = (DOCS / "npu-assumptions.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| ([AF]\d{1,2}) \|", text, flags=re.M))


def test_slug_is_githubs() -> None:
    assert slug("XINT8 shift limits") == "xint8-shift-limits"
    assert slug("Microexponent formats MX4 MX6 MX9") == "microexponent-formats-mx4-mx6-mx9"
    assert slug("A8W8 / A16W8 (float scales)") == "a8w8--a16w8-float-scales"


def test_the_register_lists_every_assumption_once() -> None:
    text = (DOCS / "npu-assumptions.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([AF]\d{1,2}) \|", text, flags=re.M)
    assert len(rows) == len(set(rows)), "an assumption ID appears twice in the register"
    assert {f"A{i}" for i in range(1, 21)} <= set(rows) and {"F1", "F2"} <= set(rows)


def test_every_docs_reference_resolves() -> None:
    anchors = {page.name: _anchors(page) for page in DOCS.glob("*.md")}
    broken = []
    for path, text in _texts().items():
        for match in CITED.finditer(text):
            page, section = match.groups()
            if page not in anchors:
                broken.append(f"{path.relative_to(ROOT)}: docs/{page} does not exist")
            elif section and section not in anchors[page]:
                broken.append(f"{path.relative_to(ROOT)}: docs/{page} has no section #{section}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_links_between_the_pages_resolve(page: str) -> None:
    anchors = {p.name: _anchors(p) for p in DOCS.glob("*.md")}
    text = (DOCS / page).read_text(encoding="utf-8")
    broken = []
    for match in LINKED.finditer(text):
        target, section = match.group(1) or page, match.group(2)
        if target.startswith("..") or "/" in target:
            continue
        if target not in anchors:
            broken.append(f"{target} does not exist")
        elif section and section not in anchors[target]:
            broken.append(f"{target} has no section #{section}")
    for link in re.findall(r"\]\((\.\./[^)#]+)", text):  # links out of docs/ into the repository
        if not (DOCS / link).resolve().exists():
            broken.append(f"{link} does not exist")
    assert not broken, f"{page}: " + "; ".join(broken)


def test_every_assumption_cited_is_in_the_register() -> None:
    register = _register()
    unknown = []
    for path, text in _texts().items():
        if path.suffix not in {".py", ".md", ".ipynb"}:
            continue
        for match in ASSUMPTION.finditer(text):
            ident = match.group(1) or match.group(2)
            if ident not in register:
                unknown.append(f"{path.relative_to(ROOT)}: {ident}")
    assert not unknown, "assumption IDs missing from docs/npu-assumptions.md:\n" + "\n".join(unknown)


#: the file the facts used to live in, outside the repository (spelt so that this file does not cite it)
OLD_SPEC = re.compile(r"NPU[_]SPEC|[.][.]/shared")


def test_no_reference_to_the_old_spec_outside_the_repository() -> None:
    """The facts used to live in a spec file beside the repository, not in it: nothing may cite it."""
    stale = [str(p.relative_to(ROOT)) for p, text in _texts().items() if OLD_SPEC.search(text)]
    assert not stale, f"cite the pages in docs/ instead of the old spec file: {stale}"
