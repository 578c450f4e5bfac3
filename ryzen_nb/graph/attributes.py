"""Reading ONNX node attributes: the one helper every pass uses."""

from __future__ import annotations

from typing import Any

import onnx
from onnx import helper

__all__ = ["attribute", "attributes"]


def attribute(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    """The value of ``node``'s attribute ``name`` (ints, floats, lists, tensors as onnx gives
    them; strings as ``str``), or ``default`` when the node does not set it."""
    for a in node.attribute:
        if a.name == name:
            value = helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """Every attribute ``node`` sets, by name (strings as ``str``)."""
    return {a.name: attribute(node, a.name) for a in node.attribute}
