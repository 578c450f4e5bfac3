"""Cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization", §4.1; Quark's CLE).

Per-tensor quantization fails when one output channel of a layer spans a hundred times the range
of another: the small channels round to a handful of levels. Between two layers joined by a
positively homogeneous activation (ReLU, LeakyReLU, PReLU: ``f(x / s) = f(x) / s`` for ``s > 0``),
output channel ``i`` of the first can be divided by ``s_i`` and input channel ``i`` of the second
multiplied by it without changing what the network computes. Choosing
``s_i = sqrt(r1_i / r2_i)`` — ``r1_i`` the range of the head's output channel, ``r2_i`` of the
tail's input channel — gives both the same range ``sqrt(r1_i r2_i)``.

Pairs: Conv (group 1 or depthwise), Gemm and MatMul with constant weights, head -> [activation]
-> tail, each intermediate tensor read by nothing else. ``Clip(0, 6)`` is not homogeneous; with
``replace_clip6=True`` (Quark's ReplaceClip6Relu) it becomes a ReLU first, which changes the model
wherever activations pass 6.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.attributes import attribute
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["CLEReport", "cross_layer_equalize", "replace_clip6_with_relu"]

HOMOGENEOUS = {"Relu", "LeakyRelu", "PRelu"}
#: the MAC operators CLE rescales (a ConvTranspose's channel layout is not handled)
EQUALIZABLE = MAC_OPS - {"ConvTranspose"}


@dataclass
class CLEReport:
    """What equalization did: the pairs, how many sweeps, and how much the scales moved."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  #: (head node, tail node)
    sweeps: int = 0
    replaced_clips: list[str] = field(default_factory=list)
    #: per pair: max over channels of max(range) / min(range) of the head's output channels, before / after
    spread_before: list[float] = field(default_factory=list)
    spread_after: list[float] = field(default_factory=list)

    def table(self) -> Any:
        import pandas as pd

        return pd.DataFrame({"head": [p[0] for p in self.pairs], "tail": [p[1] for p in self.pairs],
                             "channel range spread before": self.spread_before,
                             "after": self.spread_after})

    def __repr__(self) -> str:
        return (f"<CLEReport: {len(self.pairs)} layer pair(s) equalized in {self.sweeps} sweep(s)"
                + (f", {len(self.replaced_clips)} Clip(0, 6) -> Relu" if self.replaced_clips else "") + ">")



def replace_clip6_with_relu(model: onnx.ModelProto, exclude: set[str] = frozenset()) -> list[str]:
    """Replace every ``Clip(0, 6)`` (ReLU6) by a ``Relu``, in place; returns the node names."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    replaced = []
    for node in model.graph.node:
        if node.op_type != "Clip" or node.name in exclude:
            continue
        lo = consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else attribute(node, "min")
        hi = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else attribute(node, "max")
        if lo is not None and hi is not None and float(np.ravel(lo)[0]) == 0.0 and float(np.ravel(hi)[0]) == 6.0:
            del node.input[1:]
            del node.attribute[:]
            node.op_type = "Relu"
            replaced.append(node.name)
    return replaced


@dataclass
class _Layer:
    node: onnx.NodeProto
    weight: str
    bias: str | None
    out_axis: int  #: axis of the weight holding output channels
    in_axis: int  #: axis of the weight holding input channels (the depthwise channel axis for depthwise)
    depthwise: bool = False


def _layer(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> _Layer | None:
    if node.op_type not in EQUALIZABLE or len(node.input) < 2 or node.input[1] not in inits:
        return None
    w = inits[node.input[1]]
    bias = node.input[2] if len(node.input) > 2 and node.input[2] in inits else None
    if node.op_type == "Conv":
        group = int(attribute(node, "group", 1))
        if group == 1:
            return _Layer(node, w.name, bias, 0, 1)
        if w.dims[1] == 1 and w.dims[0] == group:  # depthwise: output channel i reads input channel i
            return _Layer(node, w.name, bias, 0, 0, depthwise=True)
        return None
    if len(w.dims) != 2:
        return None
    if node.op_type == "Gemm":
        if attribute(node, "transA", 0) or attribute(node, "alpha", 1.0) != 1.0 or attribute(node, "beta", 1.0) != 1.0:
            return None
        return _Layer(node, w.name, bias, 0, 1) if attribute(node, "transB", 0) else _Layer(node, w.name, bias, 1, 0)
    return _Layer(node, w.name, None, 1, 0)  # MatMul [K, N]


def _pairs(model: onnx.ModelProto, exclude: set[str]) -> list[tuple[_Layer, onnx.NodeProto | None, _Layer]]:
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    used = {name: len(consumers.get(name, [])) for name in inits}
    pairs = []
    for node in graph.node:
        head = _layer(node, inits)
        if head is None or node.name in exclude or used[head.weight] != 1 or (head.bias and used[head.bias] != 1):
            continue
        t = node.output[0]
        users = consumers.get(t, [])
        act = None
        if len(users) == 1 and users[0].op_type in HOMOGENEOUS and t not in outputs:
            act = users[0]
            if act.op_type == "PRelu" and (len(act.input) < 2 or act.input[1] not in inits):
                continue
            t = act.output[0]
            users = consumers.get(t, [])
        if len(users) != 1 or t in outputs or node.output[0] in outputs:
            continue
        tail = _layer(users[0], inits)
        if tail is None or users[0].name in exclude or used[tail.weight] != 1 or users[0].input[0] != t:
            continue
        pairs.append((head, act, tail))
    return pairs


def _channel_view(w: np.ndarray, axis: int) -> np.ndarray:
    """``w`` as [channels, everything else] along ``axis``."""
    return np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)


def _range(view: np.ndarray, method: str) -> np.ndarray:
    a = np.abs(view)
    return a.max(axis=1) if method == "max" else a.mean(axis=1)


def cross_layer_equalize(model: onnx.ModelProto, *, steps: int = 1, balance_method: str = "max",
                         weight_threshold: float = 0.5, scale_append_bias: bool = True,
                         scale_use_threshold: bool = True, total_layer_diff_threshold: float = 1.9e-7,
                         replace_clip6: bool = False, exclude: list[str] | tuple[str, ...] = ()) -> tuple[onnx.ModelProto, CLEReport]:
    """Equalize the weight ranges of consecutive layers of a float model; returns a copy and a report.

    ``steps``: sweeps over all pairs (``-1``: until no scale moves by more than
    ``total_layer_diff_threshold``, at most 100). ``balance_method``: "max" or "avg" of
    ``|w|`` per channel. Channels whose two ranges sum below ``weight_threshold`` are left alone
    when ``scale_use_threshold`` (their quantization is governed by other channels anyway).
    ``scale_append_bias``: the head's bias counts in its channel ranges (it is divided too).

    >>> equalized, report = cross_layer_equalize(model)   # doctest: +SKIP
    """
    if balance_method not in ("max", "avg"):
        raise ConfigError(f"CLEBalanceMethod must be 'max' or 'avg'; got {balance_method!r}.")
    if not isinstance(steps, int) or steps == 0 or steps < -1:
        raise ConfigError(f"CLESteps must be a positive number of sweeps or -1 (adaptive); got {steps!r}.")
    m = onnx.ModelProto()
    m.CopyFrom(model)
    report = CLEReport()
    if replace_clip6:
        report.replaced_clips = replace_clip6_with_relu(m, set(exclude))
    pairs = _pairs(m, set(exclude))
    inits = {t.name: t for t in m.graph.initializer}
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    report.pairs = [(h.node.name, t.node.name) for h, _, t in pairs]
    report.spread_before = [_spread(_range(_channel_view(values[h.weight], h.out_axis), "max")) for h, _, _ in pairs]
    sweeps = steps if steps > 0 else 100
    for sweep in range(sweeps):
        moved = 0.0
        for head, _act, tail in pairs:
            hw = _channel_view(values[head.weight], head.out_axis)
            if scale_append_bias and head.bias is not None:
                b = values[head.bias].reshape(-1, 1)
                b = np.where((hw != 0).any(axis=1, keepdims=True), b, 0.0)  # a dead channel's bias does not count
                hw = np.concatenate([hw, b], axis=1)
            tw = _channel_view(values[tail.weight], tail.in_axis)
            r0, r1 = _range(hw, balance_method), _range(tw, balance_method)
            geo = np.sqrt(r0 * r1)
            scale = np.where(geo != 0, r1 / np.where(geo != 0, geo, 1.0), 1.0)  # = sqrt(r1 / r0)
            if scale_use_threshold:
                scale = np.where(np.abs(hw).max(axis=1) + np.abs(tw).max(axis=1) < weight_threshold, 1.0, scale)
            moved = max(moved, float(np.abs(scale - 1.0).mean()) if scale.size else 0.0)
            _scale_axis(values, head.weight, head.out_axis, scale)
            if head.bias is not None:
                values[head.bias] = values[head.bias] * scale.reshape(values[head.bias].shape)
            _scale_axis(values, tail.weight, tail.in_axis, 1.0 / scale)
        report.sweeps = sweep + 1
        if steps < 0 and moved < total_layer_diff_threshold:
            break
    for name, arr in values.items():
        if inits[name].data_type == onnx.TensorProto.FLOAT and any(name in (h.weight, h.bias, t.weight) for h, _, t in pairs):
            inits[name].CopyFrom(numpy_helper.from_array(arr.astype(np.float32), name))
    report.spread_after = [_spread(_range(_channel_view(values[h.weight], h.out_axis), "max")) for h, _, _ in pairs]
    return m, report


def _scale_axis(values: dict[str, np.ndarray], name: str, axis: int, scale: np.ndarray) -> None:
    shape = [1] * values[name].ndim
    shape[axis] = -1
    values[name] = values[name] * scale.reshape(shape)


def _spread(r: np.ndarray) -> float:
    nz = r[r > 0]
    return float(nz.max() / nz.min()) if nz.size else 1.0
