"""XINT8 specifics of the NPU CNN flow.

* :func:`apply_dpu_rewrites` — Quark's "DPU version" rewrites (NPU_SPEC §4.1.5), applied to the
  float graph before calibration so the CPU simulation computes what the NPU computes: LeakyReLU
  slopes on a k/256 grid; Sigmoid as HardSigmoid(1/6, 0.5); HardSigmoid's 1/6 as 2731/2**14;
  average pooling and ReduceMean dividing by k/2**n instead of 1/(kh*kw).
* :func:`refine` — the shift-range legality rules the X1 compiler enforces on power-of-two
  positions ``pos`` (scale = 2**-pos), NPU_SPEC §4.1.4, iterated up to ``MaxLoopNum`` times.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.calibration.methods import QuantParams
from ryzen_nb.quantization.settings import Settings

__all__ = ["apply_dpu_rewrites", "refine", "avgpool_factor", "HARD_SIGMOID_ALPHA"]

#: the NPU's 1/6 (NPU_SPEC §4.1.5)
HARD_SIGMOID_ALPHA = 2731 / 16384
_SPECIAL_POOL = {9: (7, 6), 25: (10, 8), 36: (7, 8), 49: (21, 10), 196: (21, 12)}  # kh*kw -> (k, n)


def avgpool_factor(kernel_elements: int) -> float:
    """The k/2**n the NPU multiplies by instead of dividing by ``kernel_elements`` (Quark's table,
    else the closest k/2**n with n < 7 + ceil(log2(N)); kernels above 255 elements are exact)."""
    if kernel_elements in _SPECIAL_POOL:
        k, n = _SPECIAL_POOL[kernel_elements]
        return k / 2**n
    if kernel_elements > 255:
        return 1.0 / kernel_elements
    best, best_err = 1.0 / kernel_elements, math.inf
    for n in range(0, 7 + math.ceil(math.log2(kernel_elements))):
        k = round(2**n / kernel_elements)
        if k == 0:
            continue
        err = abs(k / 2**n - 1.0 / kernel_elements)
        if err < best_err:
            best, best_err = k / 2**n, err
    return best


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _set_attr(node: onnx.NodeProto, name: str, value: Any) -> None:
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute(name, value))


def _static_shape(model: onnx.ModelProto, name: str) -> list[int] | None:
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        if vi.name == name:
            dims = vi.type.tensor_type.shape.dim
            if all(d.HasField("dim_value") for d in dims):
                return [int(d.dim_value) for d in dims]
    return None


def apply_dpu_rewrites(model: onnx.ModelProto, flags: dict[str, bool]) -> tuple[list[str], set[str], set[str]]:
    """Rewrite ``model`` in place. Returns notes, constants to keep in float (the pooling
    correction factors), and tensors that must not be quantized (a pool's output before its
    correction: the NPU does both in one step)."""
    notes: list[str] = []
    keep_float: set[str] = set()
    fold: set[str] = set()
    graph = model.graph
    new_nodes: list[onnx.NodeProto] = []
    counts: dict[str, int] = {}
    for node in graph.node:
        new_nodes.append(node)
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "LeakyRelu" and flags.get("ConvertLeakyReluToDPUVersion"):
            alpha = float(_attr(node, "alpha", 0.01))
            _set_attr(node, "alpha", round(alpha * 256) / 256)
            counts["LeakyRelu alpha -> k/256"] = counts.get("LeakyRelu alpha -> k/256", 0) + 1
        elif node.op_type == "Sigmoid" and flags.get("ConvertSigmoidToHardSigmoid"):
            node.op_type = "HardSigmoid"
            _set_attr(node, "alpha", 1 / 6)
            _set_attr(node, "beta", 0.5)
            counts["Sigmoid -> HardSigmoid"] = counts.get("Sigmoid -> HardSigmoid", 0) + 1
        if node.op_type == "HardSigmoid" and flags.get("ConvertHardSigmoidToDPUVersion"):
            alpha = float(_attr(node, "alpha", 0.2))
            if abs(alpha - 1 / 6) < 1e-6:
                scale = HARD_SIGMOID_ALPHA / (1 / 6)
                _set_attr(node, "alpha", HARD_SIGMOID_ALPHA)
                _set_attr(node, "beta", float(_attr(node, "beta", 0.5)) * scale)
                counts["HardSigmoid 1/6 -> 2731/2^14"] = counts.get("HardSigmoid 1/6 -> 2731/2^14", 0) + 1
        kernel = None
        if node.op_type in ("AveragePool", "GlobalAveragePool") and flags.get("ConvertAvgPoolToDPUVersion"):
            if node.op_type == "AveragePool":
                kernel = int(np.prod(_attr(node, "kernel_shape", [1])))
            else:
                shape = _static_shape(model, node.input[0])
                kernel = int(np.prod(shape[2:])) if shape else None
        elif node.op_type == "ReduceMean" and flags.get("ConvertReduceMeanToDPUVersion"):
            shape = _static_shape(model, node.input[0])
            axes = list(_attr(node, "axes", []) or [])
            if len(node.input) > 1 and node.input[1]:
                init = next((t for t in graph.initializer if t.name == node.input[1]), None)
                axes = list(numpy_helper.to_array(init)) if init is not None else None
            if shape and axes is not None:
                axes = axes or list(range(len(shape)))
                kernel = int(np.prod([shape[a] for a in axes]))
        if kernel and kernel > 1:
            factor = avgpool_factor(kernel) * kernel
            if factor != 1.0:
                out = node.output[0]
                raw = f"{out}_before_dpu_scale"
                node.output[0] = raw
                const = numpy_helper.from_array(np.array(factor, np.float32), f"{out}_dpu_scale")
                graph.initializer.append(const)
                new_nodes.append(helper.make_node("Mul", [raw, const.name], [out], name=f"{node.name}_dpu_scale"))
                keep_float.add(const.name)
                fold.add(raw)
                label = f"{node.op_type} 1/{kernel} -> {factor / kernel:.6g}"
                counts[label] = counts.get(label, 0) + 1
    del graph.node[:]
    graph.node.extend(new_nodes)
    notes.extend(f"DPU rewrite: {k} ({v} node{'s' if v > 1 else ''})" for k, v in counts.items())
    return notes, keep_float, fold


# -- legality refinement ------------------------------------------------------------------------------------
def _pos(params: QuantParams) -> int:
    return int(round(-math.log2(float(params.scale))))


def refine(model: onnx.ModelProto, plan: Any, settings: Settings, max_loops: int = 5) -> list[str]:
    """Adjust positions until every shift lies in the NPU's range (NPU_SPEC §4.1.4)."""
    if not settings.npu_legality:
        return []
    tensors = plan.tensors
    group_of = {n: g for g in plan.groups for n in g}
    changes: dict[str, int] = {}

    def pos(name: str) -> int | None:
        t = tensors.get(name)
        if t is None or t.params is None or np.ndim(t.params.scale):
            return None
        return _pos(t.params)

    def set_pos(name: str, p: int, rule: str) -> None:
        members = group_of.get(name, [name])
        for m in members:
            t = tensors[m]
            t.params = replace(t.params, scale=np.asarray(np.float32(2.0**-p)))
        changes[rule] = changes.get(rule, 0) + 1

    graph = model.graph
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for n in node.input:
            consumers.setdefault(n, []).append(node)

    def out_of(node: onnx.NodeProto) -> str | None:
        """The quantized tensor the NPU writes for this node (past a folded activation)."""
        name = node.output[0]
        while name not in tensors and name in plan.folded:
            nxt = consumers.get(name, [])
            if len(nxt) != 1:
                return None
            name = nxt[0].output[0]
        return name if name in tensors else None

    for _ in range(max_loops):
        before = dict(changes)
        for i in plan.nodes:
            node = graph.node[i]
            op = node.op_type
            if op in ("Conv", "ConvTranspose", "Gemm", "MatMul") and len(node.input) > 1:
                x, w, y = node.input[0], node.input[1], out_of(node)
                px, pw, py = pos(x), pos(w), pos(y) if y else None
                if None in (px, pw, py):
                    continue
                cut = pw + px - py
                if cut > 16:
                    set_pos(w, pw - (cut - 16), "shift_cut <= 16 (coarser weights)")
                    pw -= cut - 16
                elif cut < 0:
                    set_pos(y, pw + px, "shift_cut >= 0 (coarser output)")
                    py = pw + px
                cut = pw + px - py
                if len(node.input) > 2 and node.input[2] and pos(node.input[2]) is not None:
                    pb = pos(node.input[2])
                    leaky = any(c.op_type == "LeakyRelu" for c in consumers.get(node.output[0], []))
                    lo = 0 if leaky else min(0, -(24 - (8 + cut)))
                    shift_bias = pw + px - pb
                    if shift_bias > 15:
                        set_pos(node.input[2], pw + px - 15, "shift_bias <= 15")
                    elif shift_bias < lo:
                        set_pos(node.input[2], pw + px - lo, "shift_bias lower bound")
            elif op in ("Add", "Sub"):
                ins = [n for n in node.input if pos(n) is not None]
                y = out_of(node)
                if len(ins) != 2 or y is None or pos(y) is None:
                    continue
                pa, pb = pos(ins[0]), pos(ins[1])
                if abs(pa - pb) > 7:
                    finer = ins[0] if pa > pb else ins[1]
                    set_pos(finer, min(pa, pb) + 7, "eltwise shift_read <= 7")
                low = min(pos(ins[0]), pos(ins[1]))
                shift_write = low - pos(y)
                if shift_write < -7:
                    set_pos(y, low + 7, "eltwise shift_write >= -7")
                elif shift_write > 25:
                    set_pos(y, low - 25, "eltwise shift_write <= 25")
            elif op == "Mul":
                ins = [n for n in node.input if pos(n) is not None]
                y = out_of(node)
                if len(ins) != 2 or y is None or pos(y) is None:
                    continue
                total = pos(ins[0]) + pos(ins[1])
                shift_write = total - pos(y)
                if shift_write < 0:
                    set_pos(y, total, "mul shift_write >= 0")
                elif shift_write > 32:
                    set_pos(y, total - 32, "mul shift_write <= 32")
            elif op in ("AveragePool", "GlobalAveragePool"):
                x, y = node.input[0], out_of(node)
                if y is not None and pos(x) is not None and pos(y) is not None and pos(x) != pos(y):
                    set_pos(y, pos(x), "pool output position = input position")
            elif op == "HardSigmoid":
                x, y = node.input[0], out_of(node)
                if pos(x) is None or y is None or pos(y) is None:
                    continue
                if not 0 <= pos(x) <= 15:
                    set_pos(x, min(max(pos(x), 0), 15), "hard-sigmoid input position in [0, 15]")
                if pos(y) < 7:
                    set_pos(y, 7, "hard-sigmoid output position >= 7")
                shift = 14 + pos(x) - pos(y)
                if shift < 0:
                    set_pos(y, 14 + pos(x), "shift_sigmoid >= 0")
                elif shift > 31:
                    set_pos(y, 14 + pos(x) - 31, "shift_sigmoid <= 31")
        if changes == before:
            break
    return [f"NPU legality: {rule} ({n} adjustment{'s' if n > 1 else ''})" for rule, n in changes.items()]
