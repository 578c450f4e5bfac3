"""The code's shape, checked: imports only go down the pipeline (docs/architecture.md), no import
hides a cycle inside a function, and no module grows past what a newcomer reads at a sitting."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ryzen_nb"
MAX_MODULE_LINES = 620  # "no module over ~600 lines"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return contract


def _layers(contract: dict) -> list[grimp.Layer]:
    return [grimp.Layer(*[f"{name.strip()}" for name in layer.split("|")], independent=True)
            for layer in contract["layers"]]


def _illegal(graph: grimp.ImportGraph, contract: dict) -> set:
    return graph.find_illegal_dependencies_for_layers(layers=_layers(contract), containers=set(contract["containers"]))


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("ryzen_nb", cache_dir=None)


def test_imports_only_go_down_the_pipeline(graph: grimp.ImportGraph) -> None:
    illegal = _illegal(graph, _contract())
    assert not illegal, "imports against the layering of docs/architecture.md:\n" + "\n".join(
        f"  {d.importer} -> {d.imported}: {[list(r.chain) for r in d.routes][:2]}" for d in illegal)


def test_every_package_is_in_a_layer() -> None:
    """A new package or top-level module must be placed in the contract, or it escapes the check."""
    listed = {name.strip() for layer in _contract()["layers"] for name in layer.split("|")}
    present = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert present <= listed, f"not in the import-linter layers of pyproject.toml: {sorted(present - listed)}"


def test_the_contract_catches_an_upward_import(graph: grimp.ImportGraph) -> None:
    """The check is not vacuous: an emulator module reaching up into the widgets is reported."""
    graph.add_import(importer="ryzen_nb.npu.compile", imported="ryzen_nb.ui.partition")
    try:
        illegal = _illegal(graph, _contract())
    finally:
        graph.remove_import(importer="ryzen_nb.npu.compile", imported="ryzen_nb.ui.partition")
    assert any(d.importer == "ryzen_nb.npu" and d.imported == "ryzen_nb.ui" for d in illegal)


def _function_level_imports(path: Path) -> list[tuple[int, str]]:
    """(line, statement) of every ``ryzen_nb`` import inside a function, without a comment saying why."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if not any(n == "ryzen_nb" or n.startswith("ryzen_nb.") for n in names):
                continue
            here, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
            if "#" not in here and not above.strip().startswith("#"):
                found.append((node.lineno, here.strip()))
    return found


def test_no_function_level_import_hides_a_cycle() -> None:
    """A ryzen_nb import inside a function is allowed only to defer a heavy optional dependency, and
    a comment on it (or just above) says so."""
    offenders = {str(p.relative_to(ROOT)): hits for p in sorted(PACKAGE.rglob("*.py"))
                 if (hits := _function_level_imports(p))}
    assert not offenders, "function-level ryzen_nb imports without a reason: " + "; ".join(
        f"{path}:{line} {text}" for path, hits in offenders.items() for line, text in hits)


def test_no_module_is_too_long_to_read() -> None:
    long = {str(p.relative_to(ROOT)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"


def test_the_sweep_sits_on_top_and_its_executor_at_the_bottom() -> None:
    """ryzen_nb.sweeps orchestrates quantization, the emulator and evaluation, so it is an entry point;
    ryzen_nb.executor is imported by the algorithms (sensitivity analysis) and the graph layer (threads
    per worker), so it sits below them (docs/architecture.md)."""
    layers = [{name.strip() for name in layer.split("|")} for layer in _contract()["layers"]]
    position = {name: i for i, layer in enumerate(layers) for name in layer}  # 0 is the top
    for below in ("pipeline", "npu", "evaluation", "quantization"):
        assert position["sweeps"] < position[below], below
    for above in ("graph", "algorithms", "evaluation"):
        assert position["executor"] > position[above], above
    assert position["executor"] < position["errors"]
