"""Every public name of Quark's ONNX API that its documentation and examples use resolves under
``ryzen_nb.quark`` with a compatible signature: the same parameter names, in the same order, with
the same defaults — or a difference listed, with its reason, in ``quark_api.json``."""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import onnxruntime.quantization as ort_quantization
import pytest

DATA = json.loads((Path(__file__).parent / "quark_api.json").read_text(encoding="utf-8"))
DIFFERENCES: dict[str, str] = DATA["differences"]
EMPTY = object()  #: None, [], (), {}: what a default "nothing" is spelled as
#: module constants Quark's defaults name
CONSTANTS = {"ORT_LIBRARY_NAME": "custom_ops"}


def _module(entry: dict[str, Any]) -> Any:
    return importlib.import_module("ryzen_nb.quark" + (f".{entry['module']}" if entry["module"] else ""))


def _quark_default(text: str) -> Any:
    """A default as Quark's source spells it, normalised for comparison."""
    if text in CONSTANTS:
        return CONSTANTS[text]
    if text.startswith("field(default_factory="):
        text = text[len("field(default_factory="):-1].removeprefix("lambda: ")
        text = "None" if text in ("list", "dict") else text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.split(".")[-1]  # an enum member or data-type class: compared by name
    return _plain(value)


def _plain(value: Any) -> Any:
    if value is None or (isinstance(value, (list, tuple, dict)) and not value):
        return EMPTY
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple):
        return list(value)
    return value


def _our_parameters(obj: Any) -> dict[str, Any]:
    """Name -> normalised default (or inspect's ``empty``) of a class's constructor or a function."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            if f.default is not dataclasses.MISSING:
                out[f.name] = _plain(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = _plain(f.default_factory())
            else:
                out[f.name] = inspect.Parameter.empty
        return out
    params = inspect.signature(obj).parameters
    return {("**" if p.kind is p.VAR_KEYWORD else "*" if p.kind is p.VAR_POSITIONAL else "") + name:
            p.default if p.default is inspect.Parameter.empty else _plain(p.default)
            for name, p in params.items() if name not in ("self", "cls")}


def _problems(where: str, ours: dict[str, Any], theirs: list[list[str]]) -> list[str]:
    problems, order = [], []
    for name, text in theirs:
        key = f"{where}.{name.lstrip('*')}"
        if name.startswith("_") or key in DIFFERENCES:
            continue
        if text == "VAR":
            if name.startswith("**") and not any(k.startswith("**") for k in ours):
                problems.append(f"{where}: Quark takes {name}; ours does not")
            continue
        if name not in ours:
            problems.append(f"{where}: no parameter {name!r}")
            continue
        order.append(list(ours).index(name))
        if text != "REQUIRED":
            mine, expected = ours[name], _quark_default(text)
            if mine is inspect.Parameter.empty:
                problems.append(f"{where}: {name} is required; Quark's defaults to {text}")
            elif mine != expected and not (isinstance(mine, float) and mine == pytest.approx(expected)):
                problems.append(f"{where}: {name} defaults to {mine!r}; Quark's to {text}")
    if order != sorted(order):
        problems.append(f"{where}: the parameters are not in Quark's order")
    return problems


@pytest.mark.parametrize("entry", DATA["entries"], ids=lambda e: f"{e['quark']}:{e['module'] or '.'}:{e['name']}")
def test_quark_name_resolves_compatibly(entry: dict[str, Any]) -> None:
    module = _module(entry)
    name = entry["name"]
    assert hasattr(module, name), f"ryzen_nb.quark.{entry['module']} has no {name} (Quark {entry['quark']} has)"
    obj = getattr(module, name)
    if entry["kind"] == "enum" or (entry["kind"] == "external" and isinstance(getattr(ort_quantization, name, None),
                                                                           type(enum.Enum))):
        members = entry.get("members") or list(getattr(ort_quantization, name).__members__)
        missing = [m for m in members if m not in obj.__members__ and f"{name}.{m}" not in DIFFERENCES]
        assert not missing, f"{name} lacks Quark's members {missing}"
    elif entry["kind"] == "external":  # onnxruntime's own class or function, re-exported as Quark does
        assert obj is getattr(ort_quantization, name, None) or obj.__module__.startswith("onnxruntime")
    elif entry["kind"] in ("class", "function"):
        problems = [f"{name} has no attribute {a}" for a in entry.get("attributes", []) if not hasattr(obj, a)]
        problems += _problems(name, _our_parameters(obj), entry["params"])
        for method, params in entry.get("methods", {}).items():
            if f"{name}.{method}()" in DIFFERENCES:
                continue
            if not hasattr(obj, method):
                problems.append(f"{name} has no method {method}()")
                continue
            problems += _problems(f"{name}.{method}", _our_parameters(getattr(obj, method)), params)
        assert not problems, "\n".join(problems)


def test_every_difference_is_still_one() -> None:
    """A listed difference that no entry needs any more is removed from the list."""
    names = {e["name"] for e in DATA["entries"]}
    stale = [key for key in DIFFERENCES if key.split(".")[0].split("(")[0] not in names]
    assert not stale, f"differences listed for names not in the surface: {stale}"
