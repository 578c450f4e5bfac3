"""What the tutorials promise a learner, checked on their text: every notebook has exercises, every
exercise a solution that asserts it, every published figure one source, every acronym a definition,
and the index lists every notebook with its minutes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TUTORIALS = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if "solutions" not in p.stem)
SOLUTIONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_solutions*.ipynb"))
EXERCISE = re.compile(r"### Try it · (E\d+\.\d+) — .+\((\d+) min\)")


def _cells(path: Path) -> list[tuple[str, str]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"]) for c in nb["cells"]]


def _exercises(path: Path) -> list[str]:
    return [m.group(1) for kind, text in _cells(path) if kind == "markdown" for m in EXERCISE.finditer(text)]


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_every_tutorial_has_two_exercises_with_expected_results(path: Path) -> None:
    number = int(path.stem[:2])
    found = _exercises(path)
    assert len(found) >= 2, f"{path.name}: {found}"
    assert all(e.startswith(f"E{number}.") for e in found), found
    for kind, text in _cells(path):
        if kind == "markdown" and "### Try it" in text:
            assert "Predict" in text and "<summary>Expected result</summary>" in text, text[:80]
            assert "Solution: [1" in text, f"{path.name}: an exercise without a link to its solution"


def test_every_exercise_has_a_solution_that_asserts_it() -> None:
    exercises = {e for p in TUTORIALS for e in _exercises(p)}
    solved: dict[str, str] = {}
    for path in SOLUTIONS:
        cells = _cells(path)
        for i, (kind, text) in enumerate(cells):
            for ident in re.findall(r"\*\*(E\d+\.\d+)\*\*", text) if kind == "markdown" else []:
                following = next((t for k, t in cells[i + 1:] if k == "code"), "")
                solved[ident] = following
    assert exercises == set(solved), f"without solution: {sorted(exercises - set(solved))}; unknown: {sorted(set(solved) - exercises)}"
    assert all("assert " in code for code in solved.values()), [e for e, c in solved.items() if "assert " not in c]


#: figures AMD published for whole models, as the notebooks quote them ("77.4 %", "63.7 %")
QUOTED = re.compile(r"(?:ResNet50|MobileNetV2)[^.]*?(\d\d\.\d) ?%")


def test_published_figures_have_one_source() -> None:
    source = (ROOT / "docs" / "npu-hardware.md").read_text(encoding="utf-8")
    section = source[source.index("## Published model figures"):source.index("## The targets in ryzen-nb")]
    published = set(re.findall(r"\d\d\.\d", section))
    for path in TUTORIALS:
        for kind, text in _cells(path):
            if kind != "markdown":
                continue
            for sentence in re.split(r"(?<=[.;])\s", text):
                for figure in re.findall(r"(\d\d\.\d) ?%", sentence) if QUOTED.search(sentence) else []:
                    assert figure in published, f"{path.name} quotes {figure} % that docs/npu-hardware.md does not publish"
                    assert "npu-hardware.md#published-model-figures" in text, f"{path.name}: cite the one source"


#: acronyms the tutorials use, each of which the glossary must define
ACRONYMS = ["QDQ", "EP", "VAIML", "X1", "X2", "VOE", "XIR", "DPU", "BFP", "MX", "XDNA", "AIE", "PHX", "HPT", "STX",
            "KRK", "STXH", "SQNR", "PSNR", "CLE", "MAC", "TOPS", "DDR", "DMA", "DPM", "VNNI", "GELU", "ONNX", "BF16",
            "XINT8", "A8W8", "A16W8", "RNE", "DPU_ROUND", "MinMSE", "NonOverflow", "MinMax", "Percentile", "Entropy"]


def test_the_glossary_defines_every_acronym() -> None:
    glossary = (NOTEBOOKS / "GLOSSARY.md").read_text(encoding="utf-8")
    defined = set(re.findall(r"\*\*([^*]+)\*\*", glossary))
    names = {n.strip() for d in defined for n in re.split(r",\s*", d)}
    missing = [a for a in ACRONYMS if not any(a == n or n.startswith(a + " ") or n.startswith(a + "16") for n in names)]
    assert not missing, f"define in notebooks/GLOSSARY.md: {missing}"


def test_the_index_lists_every_notebook_with_minutes() -> None:
    index = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    launcher = re.findall(r"^\|\s*(\d+)\s*\|\s*\[([^\]]+)\]\(([^)]+\.ipynb)\)\s*\|\s*(.+?)\s*\|\s*$", index, flags=re.M)
    assert {f for _, _, f, _ in launcher} == {p.name for p in NOTEBOOKS.glob("*.ipynb")}
    minutes = dict(re.findall(r"^\| (\d\d)_\w+ \| (\d+) \|", index, flags=re.M))
    assert set(minutes) == {p.stem[:2] for p in NOTEBOOKS.glob("*.ipynb")}, "student minutes for every notebook"
    for heading in ("## Prerequisites", "## Learning paths", "## Two 90-minute lab plans", "## Troubleshooting",
                    "## Teacher's guide"):
        assert heading in index, heading
