"""XINT8 specifics of the NPU CNN flow.

* :func:`apply_dpu_rewrites` — Quark's "DPU version" rewrites (docs/npu-numerics.md#dpu-rewrites), applied to the
  float graph before calibration so the CPU simulation computes what the NPU computes: LeakyReLU
  slopes on a k/256 grid; Sigmoid as HardSigmoid(1/6, 0.5); HardSigmoid's 1/6 as 2731/2**14;
  average pooling and ReduceMean dividing by k/2**n instead of 1/(kh*kw).
* :func:`refine` — the shift-range legality rules the X1 compiler enforces on power-of-two
  positions ``pos`` (scale = 2**-pos), docs/npu-numerics.md#xint8-shift-limits, iterated up to ``MaxLoopNum`` times.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.calibration.methods import QuantParams
from ryzen_nb.graph.attributes import attribute
from ryzen_nb.quantization.plan import TensorPlan
from ryzen_nb.quantization.settings import Settings
from ryzen_nb.spec.dpu import HARD_SIGMOID_ALPHA, HARD_SIGMOID_SHIFT, SHIFT_LIMITS, avgpool_factor, leaky_relu_alpha
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["apply_dpu_rewrites", "refine"]



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
            alpha = float(attribute(node, "alpha", 0.01))
            _set_attr(node, "alpha", leaky_relu_alpha(alpha))
            counts["LeakyRelu alpha -> k/256"] = counts.get("LeakyRelu alpha -> k/256", 0) + 1
        elif node.op_type == "Sigmoid" and flags.get("ConvertSigmoidToHardSigmoid"):
            node.op_type = "HardSigmoid"
            _set_attr(node, "alpha", 1 / 6)
            _set_attr(node, "beta", 0.5)
            counts["Sigmoid -> HardSigmoid"] = counts.get("Sigmoid -> HardSigmoid", 0) + 1
        if node.op_type == "HardSigmoid" and flags.get("ConvertHardSigmoidToDPUVersion"):
            alpha = float(attribute(node, "alpha", 0.2))
            if abs(alpha - 1 / 6) < 1e-6:
                scale = HARD_SIGMOID_ALPHA / (1 / 6)
                _set_attr(node, "alpha", HARD_SIGMOID_ALPHA)
                _set_attr(node, "beta", float(attribute(node, "beta", 0.5)) * scale)
                counts["HardSigmoid 1/6 -> 2731/2^14"] = counts.get("HardSigmoid 1/6 -> 2731/2^14", 0) + 1
        kernel = None
        if node.op_type in ("AveragePool", "GlobalAveragePool") and flags.get("ConvertAvgPoolToDPUVersion"):
            if node.op_type == "AveragePool":
                kernel = int(np.prod(attribute(node, "kernel_shape", [1])))
            else:
                shape = _static_shape(model, node.input[0])
                kernel = int(np.prod(shape[2:])) if shape else None
        elif node.op_type == "ReduceMean" and flags.get("ConvertReduceMeanToDPUVersion"):
            shape = _static_shape(model, node.input[0])
            axes = list(attribute(node, "axes", []) or [])
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
    """Adjust positions until every shift lies in the NPU's range (docs/npu-numerics.md#xint8-shift-limits)."""
    if not settings.npu_legality:
        return []
    L = SHIFT_LIMITS
    tensors = plan.tensors
    group_of: dict[str, list[str]] = {}
    for g in plan.groups:
        shared = list(g)
        for n in shared:
            group_of[n] = shared
    requantized: dict[str, list[str]] = {}  #: tensor -> the group whose position its dual quantizer takes
    reader_pos: dict[tuple[str, int], int] = {}  #: (tensor, reader) -> the position that reader sees it at
    changes: dict[str, int] = {}
    graph = model.graph

    def pos(name: str) -> int | None:
        t = tensors.get(name)
        if t is None or t.params is None or np.ndim(t.params.scale):
            return None
        return _pos(t.params)

    def scale_of(p: int) -> np.ndarray:
        return np.asarray(np.float32(2.0**-p))

    def set_pos(name: str, p: int, rule: str) -> None:
        members = group_of.get(name, [name])
        current = pos(name)
        if len(members) > 1 and current is not None and p > current:
            detach(name, p)
        else:
            for m in members:
                tensors[m].params = replace(tensors[m].params, scale=scale_of(p))
        changes[rule] = changes.get(rule, 0) + 1

    def detach(name: str, p: int) -> None:
        """``name`` leaves its group at position ``p``; its readers sharing the group's position
        read it through a requantizer (a dual quantizer) at the group's position."""
        group = group_of[name]
        group.remove(name)
        group_of[name] = [name]
        tensors[name].params = replace(tensors[name].params, scale=scale_of(p))
        readers = [i for i in plan.nodes if name in graph.node[i].input
                   and any(o in group for o in graph.node[i].output)]
        if readers and name not in plan.duals:
            t = tensors[name]
            plan.duals[name] = TensorPlan(name, "activation", t.settings, axis=t.axis, consumers=readers)
            requantized[name] = group

    def set_read_pos(name: str, reader: int, p: int, rule: str) -> None:
        """A rule on how node ``reader`` reads ``name``: finer than a shared position, only that
        reader gets a requantizer to ``p`` (the group keeps its position); else as :func:`set_pos`."""
        current = pos(name)
        if len(group_of.get(name, [name])) > 1 and current is not None and p > current and name not in plan.duals:
            t = tensors[name]
            plan.duals[name] = TensorPlan(name, "activation", t.settings, axis=t.axis, consumers=[reader],
                                          params=replace(t.params, scale=scale_of(p)))
            reader_pos[(name, reader)] = p
            changes[rule] = changes.get(rule, 0) + 1
        else:
            set_pos(name, p, rule)

    def read_pos(name: str, reader: int) -> int | None:
        return reader_pos.get((name, reader), pos(name))

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
            if op in MAC_OPS and len(node.input) > 1:
                x, w, y = node.input[0], node.input[1], out_of(node)
                px, pw, py = pos(x), pos(w), pos(y) if y else None
                if None in (px, pw, py):
                    continue
                cut = pw + px - py
                cut_min, cut_max = L.shift_cut
                if cut > cut_max:
                    set_pos(w, pw - (cut - cut_max), f"shift_cut <= {cut_max} (coarser weights)")
                    pw -= cut - cut_max
                elif cut < cut_min:
                    set_pos(y, pw + px - cut_min, f"shift_cut >= {cut_min} (coarser output)")
                    py = pw + px - cut_min
                cut = pw + px - py
                if len(node.input) > 2 and node.input[2] and pos(node.input[2]) is not None:
                    pb = pos(node.input[2])
                    leaky = any(c.op_type == "LeakyRelu" for c in consumers.get(node.output[0], []))
                    lo = L.shift_bias_min(cut, before_leaky_relu=leaky)
                    shift_bias = pw + px - pb
                    if shift_bias > L.shift_bias_max:
                        set_pos(node.input[2], pw + px - L.shift_bias_max, f"shift_bias <= {L.shift_bias_max}")
                    elif shift_bias < lo:
                        set_pos(node.input[2], pw + px - lo, "shift_bias lower bound")
            elif op in ("Add", "Sub"):
                ins = [n for n in node.input if pos(n) is not None]
                y = out_of(node)
                if len(ins) != 2 or y is None or pos(y) is None:
                    continue
                pa, pb = pos(ins[0]), pos(ins[1])
                if abs(pa - pb) > L.shift_read_max:
                    finer = ins[0] if pa > pb else ins[1]
                    set_pos(finer, min(pa, pb) + L.shift_read_max, f"eltwise shift_read <= {L.shift_read_max}")
                low = min(pos(ins[0]), pos(ins[1]))
                shift_write = low - pos(y)
                write_min, write_max = L.add_shift_write
                if shift_write < write_min:
                    set_pos(y, low - write_min, f"eltwise shift_write >= {write_min}")
                elif shift_write > write_max:
                    set_pos(y, low - write_max, f"eltwise shift_write <= {write_max}")
            elif op == "Mul":
                ins = [n for n in node.input if pos(n) is not None]
                y = out_of(node)
                if len(ins) != 2 or y is None or pos(y) is None:
                    continue
                total = pos(ins[0]) + pos(ins[1])
                shift_write = total - pos(y)
                write_min, write_max = L.mul_shift_write
                if shift_write < write_min:
                    set_pos(y, total - write_min, f"mul shift_write >= {write_min}")
                elif shift_write > write_max:
                    set_pos(y, total - write_max, f"mul shift_write <= {write_max}")
            elif op in ("AveragePool", "GlobalAveragePool"):
                x, y = node.input[0], out_of(node)
                if y is not None and pos(x) is not None and pos(y) is not None and pos(x) != pos(y):
                    set_pos(y, pos(x), "pool output position = input position")
            elif op == "HardSigmoid":
                x, y = node.input[0], out_of(node)
                if pos(x) is None or y is None or pos(y) is None:
                    continue
                in_min, in_max = L.hard_sigmoid_input_pos
                px = read_pos(x, i)
                if not in_min <= px <= in_max:
                    set_read_pos(x, i, min(max(px, in_min), in_max), f"hard-sigmoid input position in [{in_min}, {in_max}]")
                if pos(y) < L.hard_sigmoid_output_pos_min:
                    set_pos(y, L.hard_sigmoid_output_pos_min,
                            f"hard-sigmoid output position >= {L.hard_sigmoid_output_pos_min}")
                shift = HARD_SIGMOID_SHIFT + read_pos(x, i) - pos(y)
                shift_min, shift_max = L.hard_sigmoid_shift
                if shift < shift_min:
                    set_pos(y, HARD_SIGMOID_SHIFT + read_pos(x, i) - shift_min, f"shift_sigmoid >= {shift_min}")
                elif shift > shift_max:
                    set_pos(y, HARD_SIGMOID_SHIFT + read_pos(x, i) - shift_max, f"shift_sigmoid <= {shift_max}")
        if changes == before:
            break
    for name, group in requantized.items():  # the requantizers take their group's final position
        if group:
            plan.duals[name].params = tensors[group[0]].params
    plan.groups = [g for g in {id(g): g for g in group_of.values()}.values() if len(g) > 1]
    notes = [f"NPU legality: {rule} ({n} adjustment{'s' if n > 1 else ''})" for rule, n in changes.items()]
    if requantized or reader_pos:
        names = sorted(set(requantized) | {n for n, _ in reader_pos})
        notes.append(f"NPU legality: {len(names)} tensor(s) got their own position and a requantizer to the "
                     f"position they share ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}) instead of "
                     "moving the whole group finer, which would clip the others")
    return notes
