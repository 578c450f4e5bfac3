"""From a QDQ model to an emulated model that plain onnxruntime runs with NPU arithmetic.

:func:`mark` rewrites the model into a *marked* graph: each :class:`~ryzen_nb.npu.kernels.Kernel`
becomes one ``ryzen_nb.npu:Kernel`` node (attribute ``kid``) reading integer codes (integer
kernels) or float tensors (float kernels); float-precision NPU operators get bf16 rounding of
their inputs and outputs; non-linear operators of integer models are evaluated on bf16 values.
:func:`lower` then replaces every marker with standard ONNX operators — ``ConvInteger`` /
``MatMulInteger`` (exact int32), int64 or float64 requantisation, im2col + float64 ``MatMul`` for
float kernels — so onnxruntime executes it at native speed. The numpy reference runs the same
marked graph in onnx's ReferenceEvaluator with the marker implemented in :mod:`reference`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels import Kernel, QuantRef
from ryzen_nb.npu.reference import multiplier
from ryzen_nb.spec.dpu import avgpool_factor

__all__ = ["MARKER_DOMAIN", "mark", "lower"]

MARKER_DOMAIN = "ryzen_nb.npu"
_ONNX_INT = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
             np.dtype(np.int16): TensorProto.INT16, np.dtype(np.uint16): TensorProto.UINT16}


def _bf16_round(b: GraphBuilder, x: str) -> str:
    return b.op("Cast", b.op("Cast", x, to=TensorProto.BFLOAT16), to=TensorProto.FLOAT)


# -- the marked graph ---------------------------------------------------------------------------------------
def mark(model: onnx.ModelProto, program: Any, kernels: list[Kernel]) -> onnx.ModelProto:
    graph = model.graph
    m = onnx.ModelProto()
    m.CopyFrom(model)
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for name in node.input:
            consumers.setdefault(name, []).append(i)
    graph_outputs = {o.name for o in graph.output}
    index = {id(n): i for i, n in enumerate(graph.node)}
    replaced_by: dict[int, int] = {}
    for kid, k in enumerate(kernels):
        if k.attrs.get("bf16"):
            continue  # evaluated in place on bf16 values, not replaced by a marker
        for n in k.replaced:
            replaced_by[index[id(n)]] = kid
    nonlinear = {index[id(k.node)]: k for k in kernels if k.attrs.get("bf16")}
    float_npu = {n.index for n in program.nodes
                 if n.device == "NPU" and not n.quantizer and n.precision in ("BF16", "BFP16", "MX")}
    types = _element_types(model)
    b = GraphBuilder(prefix="npu")
    new_inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    emitted: set[int] = set()
    for i, node in enumerate(graph.node):
        if i in replaced_by:
            kid = replaced_by[i]
            if kid in emitted:
                continue
            emitted.add(kid)
            k = kernels[kid]
            if k.integer:
                inputs = k.input_codes()
                outputs = [k.output.codes]
            else:
                inputs = [n for n in k.node.input]
                outputs = [k.float_output]
            nodes.append(helper.make_node("Kernel", inputs, outputs, name=f"npu_kernel_{kid}_{k.node.name}",
                                          domain=MARKER_DOMAIN, kid=kid))
            if k.integer:
                # consumers of the kernel's float result outside it read the dequantized codes
                float_out = k.attrs.get("float_output", "")
                outside = [c for c in consumers.get(float_out, []) if replaced_by.get(c) != kid]
                if float_out and (outside or float_out in graph_outputs):
                    s = numpy_helper.from_array(np.asarray(k.output.scale, np.float32), f"{float_out}_npu_scale")
                    z = numpy_helper.from_array(np.asarray(k.output.zero_point), f"{float_out}_npu_zp")
                    new_inits += [s, z]
                    nodes.append(helper.make_node("DequantizeLinear", [k.output.codes, s.name, z.name], [float_out],
                                                  name=f"{float_out}_npu_dq"))
            continue
        if i in nonlinear or i in float_npu:
            # bf16 in, bf16 out (A13 for integer models; VAIML's bf16 for float models)
            n = onnx.NodeProto()
            n.CopyFrom(node)
            start = len(b.nodes)
            for j, name in enumerate(n.input):
                if name and types.get(name) == TensorProto.FLOAT:
                    n.input[j] = _bf16_round(b, name)
            nodes.extend(b.nodes[start:])
            final = list(n.output)
            del n.output[:]
            n.output.extend(f"{o}_npu_fp32" for o in final)
            nodes.append(n)
            for raw, name in zip(n.output, final):
                start = len(b.nodes)
                _rename_output(b.nodes, _bf16_round(b, raw), name)
                nodes.extend(b.nodes[start:])
            continue
        nodes.append(node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend(new_inits)
    if not any(o.domain == MARKER_DOMAIN for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid(MARKER_DOMAIN, 1))
    del m.graph.value_info[:]
    return m


def _element_types(model: onnx.ModelProto) -> dict[str, int]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        inferred = model
    types = {t.name: t.data_type for t in model.graph.initializer}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        types.setdefault(vi.name, vi.type.tensor_type.elem_type)
    return types


# -- the fast path -------------------------------------------------------------------------------------------------
def lower(marked: onnx.ModelProto, kernels: list[Kernel], rounding: str = "half_up",
          accumulation: str = "exact") -> onnx.ModelProto:
    """Replace every marker with standard ONNX operators (onnxruntime runs the result).

    ``accumulation`` of the float (BF16/BFP16/MX) MAC kernels: "exact" sums the bf16 products in
    float64 (order-independent, what the reference computes); "fp32" in onnxruntime's float32 Conv
    / MatMul, as the NPU's FP32 accumulators do in an order of their own — at FP32 speed, within one
    bf16 unit of "exact" where a rounding flips."""
    m = onnx.ModelProto()
    m.CopyFrom(marked)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    for node in marked.graph.node:
        if node.domain != MARKER_DOMAIN:
            nodes.append(node)
            continue
        kid = next(a.i for a in node.attribute if a.name == "kid")
        k = kernels[kid]
        b = GraphBuilder(prefix=f"npu_k{kid}")
        y = (_lower_integer(b, k, list(node.input), rounding) if k.integer
             else _lower_float(b, k, list(node.input), accumulation))
        _rename_output(b.nodes, y, node.output[0])
        nodes.extend(b.nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend(inits)
    keep = [o for o in m.opset_import if o.domain != MARKER_DOMAIN]
    del m.opset_import[:]
    m.opset_import.extend(keep)
    from ryzen_nb.graph.prepare import _constants_to_initializers, prune_unused

    _constants_to_initializers(m)
    prune_unused(m)
    return m


def _rename_output(nodes: list[onnx.NodeProto], old: str, new: str) -> None:
    for node in reversed(nodes):
        for j, name in enumerate(node.output):
            if name == old:
                node.output[j] = new
                return
    raise AssertionError(f"no node writes {old}")


def _const(b: GraphBuilder, value: Any, dtype: Any) -> str:
    return b.const(np.asarray(value, dtype=dtype))


def _round(b: GraphBuilder, v: str, rounding: str) -> str:
    if rounding == "half_even":
        return b.op("Round", v)
    return b.op("Floor", b.op("Add", v, _const(b, 0.5, np.float64)))


def _channel_shape(k: Kernel, ndim: int, size: int) -> list[int]:
    shape = [1] * ndim
    shape[1 if k.op == "Conv" else ndim - 1] = size
    return shape


def _mac_integer(b: GraphBuilder, k: Kernel, x: str, x_ref: QuantRef, w_codes: str | None = None) -> str:
    """Exact Σ (x - zx)(w - zw) as int64, with ConvInteger/MatMulInteger (int16 inputs split in
    bytes); a MatMul of two activations (``w_codes``) with 16-bit codes multiplies the centred codes
    in float64, exact below 2**53 (checked)."""
    if k.dynamic_weight:
        assert w_codes is not None
        if x_ref.dtype.itemsize == 1 and k.weight.dtype.itemsize == 1:
            return b.op("Cast", b.op("MatMulInteger", *_mac_operands(b, k, x, w_codes)), to=TensorProto.INT64)
        if _mac_bound(k) >= 2.0**53:  # pragma: no cover - a reduction of 2**21 16-bit products
            raise NotImplementedError("MatMul of two 16-bit activations with a reduction beyond 2**21")
        acc = b.op("MatMul", _centred(b, x, x_ref), _centred(b, w_codes, k.weight))
        return b.op("Cast", acc, to=TensorProto.INT64)
    w, w_zp = _u8_weight(k)
    w_name, wz_name = _const(b, w, np.uint8), _const(b, w_zp, np.uint8)
    op = "ConvInteger" if k.op == "Conv" else "MatMulInteger"

    def mac(codes: str, zp: int) -> str:  # codes and zero point in uint8
        return b.op("Cast", b.op(op, codes, w_name, _const(b, zp, np.uint8), wz_name, **_conv_attrs(k)),
                    to=TensorProto.INT64)

    zx = int(np.ravel(x_ref.zero_point)[0])
    if x_ref.dtype.itemsize == 1:
        return mac(*_u8(b, x, zx, x_ref.dtype))
    # 16-bit codes: x = 256*hi + lo; Σ(x-zx)(w-zw) = 256 Σ(hi-zh)(w-zw) + Σ(lo-zl)(w-zw), exactly
    x32 = b.op("Cast", x, to=TensorProto.INT32)
    lo = b.op("BitwiseAnd", x32, _const(b, 255, np.int32))
    hi = b.op("Div", b.op("Sub", x32, lo), _const(b, 256, np.int32))  # [-128, 127] (int16) or [0, 255] (uint16)
    zl, zh = zx & 255, (zx - (zx & 255)) // 256
    if x_ref.dtype.kind == "i":  # into [0, 255], and the zero point with it (see _u8)
        hi, zh = b.op("Add", hi, _const(b, 128, np.int32)), zh + 128
    acc_hi = mac(b.op("Cast", hi, to=TensorProto.UINT8), zh)
    acc_lo = mac(b.op("Cast", lo, to=TensorProto.UINT8), zl)
    return b.op("Add", b.op("Mul", acc_hi, _const(b, 256, np.int64)), acc_lo)


def _u8(b: GraphBuilder, codes: str, zp: int, dtype: Any) -> tuple[str, int]:
    """8-bit codes (int8 or uint8) as uint8, with their zero point: int8 codes move up by 128, and
    so does the zero point, so ``x - zp`` is unchanged.

    Why every integer MAC here is uint8 x uint8: onnxruntime's uint8 x int8 kernels on x86 CPUs
    without VNNI add pairs of products in int16 with saturation (vpmaddubsw), which is not exact
    (two products of 255 x 127 overflow); its uint8 x uint8 kernels widen first and are exact."""
    if np.dtype(dtype) == np.uint8:
        return codes, zp
    widened = b.op("Cast", codes, to=TensorProto.INT16)
    return b.op("Cast", b.op("Add", widened, _const(b, 128, np.int16)), to=TensorProto.UINT8), zp + 128


def _u8_weight(k: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """A constant 8-bit weight and its zero point(s) as uint8, laid out for ConvInteger (as is) or
    MatMulInteger ([K, N]); see :func:`_u8`."""
    w = k.weight.values
    if k.op == "Gemm" and k.attrs.get("transB", 0):
        w = w.T
    zp = np.asarray(k.weight.zero_point).astype(np.int16)
    zp = zp.reshape(-1) if zp.size > 1 else zp.reshape(())
    if w.dtype.kind == "i":
        return (w.astype(np.int16) + 128).astype(np.uint8), (zp + 128).astype(np.uint8)
    return w.astype(np.uint8), zp.astype(np.uint8)


def _centred(b: GraphBuilder, codes: str, ref: QuantRef, dtype: Any = np.float64) -> str:
    to = {np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.float32): TensorProto.FLOAT}.get(np.dtype(dtype), TensorProto.INT64)
    zp = np.asarray(ref.zero_point).astype(dtype)
    return b.op("Sub", b.op("Cast", codes, to=to), _const(b, zp, dtype))


def _finish_double(b: GraphBuilder, k: Kernel, v: str, rounding: str) -> str:
    """Round (DPU_ROUND or half-even), apply the fused activation, saturate, add the zero point."""
    if k.activation is not None and k.activation[0] == "leaky":
        alpha = round(k.activation[1] * 256) / 256
        v = b.op("Where", b.op("Less", v, _const(b, 0.0, np.float64)), b.op("Mul", v, _const(b, alpha, np.float64)), v)
    y = _round(b, v, rounding)
    return _saturate_codes(b, k, y, np.float64)


def _saturate_codes(b: GraphBuilder, k: Kernel, y: str, dtype: Any) -> str:
    out = k.output
    scale = float(np.ravel(out.scale)[0])
    if k.activation is not None and k.activation[0] == "relu":
        y = b.op("Max", y, _const(b, 0, dtype))
    elif k.activation is not None and k.activation[0] == "clip":
        _, lo, hi = k.activation
        if lo is not None:
            y = b.op("Max", y, _const(b, np.ceil(lo / scale - 1e-9), dtype))
        if hi is not None:
            y = b.op("Min", y, _const(b, np.floor(hi / scale + 1e-9), dtype))
    info = np.iinfo(out.dtype)
    zp = int(np.ravel(out.zero_point)[0])
    y = b.op("Add", y, _const(b, zp, dtype))
    y = b.clip(y, info.min, info.max, dtype=dtype)
    return b.op("Cast", y, to=_ONNX_INT[out.dtype])


def _lower_integer(b: GraphBuilder, k: Kernel, inputs: list[str], rounding: str) -> str:
    if k.precision == "XINT8":
        return _lower_xint8(b, k, inputs, rounding)
    return _lower_float_scale(b, k, inputs)


def _code_bound(ref: QuantRef) -> int:
    """The largest |code - zero point| of a quantized tensor's type."""
    info = np.iinfo(ref.dtype)
    zp = int(np.ravel(ref.zero_point)[0])
    return max(abs(info.min - zp), abs(info.max - zp))


def _mac_bound(k: Kernel) -> float:
    """An upper bound of |Σ (x - zx)(w - zw)| from the code ranges and the reduction length."""
    if k.dynamic_weight:
        return float(_code_bound(k.inputs[0])) * _code_bound(k.weight) * int(k.attrs["_reduction"])
    w = k.weight.values.astype(np.int64) - np.asarray(k.weight.zero_point).astype(np.int64)
    reduction = w.size // (w.shape[0] if k.op == "Conv" else w.shape[-1])
    return float(_code_bound(k.inputs[0])) * float(np.abs(w).max(initial=0)) * reduction


def _elementwise_bound(k: Kernel) -> float:
    """An upper bound of the integer values an elementwise / pooling kernel multiplies."""
    bound = 1.0
    for r in k.inputs:
        bound_r = float(_code_bound(r))
        bound = bound * bound_r if k.op == "Mul" else max(bound, bound_r)
    if k.op in ("AveragePool", "GlobalAveragePool"):
        bound *= float(k.attrs.get("_count", 1)) * 2
    return bound * (len(k.inputs) if k.op == "Add" else 1)


def _xint8_mac_int32(b: GraphBuilder, k: Kernel, x: str, w_codes: str | None) -> str | None:
    """The XINT8 MAC requantised with integer operations only — DPU_ROUND is
    floor((acc + 2**(s-1)) / 2**s), an arithmetic right shift, done as an unsigned BitShift after
    adding an offset — or None when the shifts or ranges do not allow it."""
    p_acc = k.inputs[0].pos + k.weight.pos
    shift = p_acc - k.output.pos
    bias = np.zeros(1, np.int64)
    if k.bias is not None:
        shift_bias = p_acc - k.bias.pos
        if shift_bias < 0:
            return None
        bias = (k.bias.values.astype(np.int64) - np.asarray(k.bias.zero_point).astype(np.int64)) << shift_bias
    offset = 2**30
    if shift < 0 or k.activation and k.activation[0] == "leaky" or k.weight.dtype.itemsize != 1 or \
            _mac_bound(k) + float(np.abs(bias).max(initial=0)) + 2.0**shift >= offset:
        return None
    add = bias + (2 ** (shift - 1) if shift > 0 else 0) + offset
    add = add.reshape(_channel_shape(k, 4, add.size)) if k.op == "Conv" and add.size > 1 else add.reshape(-1 if add.size > 1 else ())
    acc = b.op("ConvInteger" if k.op == "Conv" else "MatMulInteger", *_mac_operands(b, k, x, w_codes), **_conv_attrs(k))
    shifted = b.op("BitShift", b.op("Cast", b.op("Add", acc, _const(b, add, np.int32)), to=TensorProto.UINT32),
                   _const(b, shift, np.uint32), direction="RIGHT")
    y = b.op("Sub", b.op("Cast", shifted, to=TensorProto.INT32), _const(b, offset >> shift, np.int32))
    return _saturate_codes(b, k, y, np.int32)


#: float32 represents every integer below 2**24; one bit of margin for the +0.5 of DPU_ROUND
_F32_EXACT = 2.0**23


def _weight_l1_bound(k: Kernel) -> float:
    """max over output channels of Σ|w - zw| (the tighter bound for a constant weight)."""
    if k.dynamic_weight:
        return float(_code_bound(k.weight)) * int(k.attrs["_reduction"])
    return _l1_per_output(k, _centred_weight(k))


def _f32_mac(b: GraphBuilder, k: Kernel, x: str, w_codes: str | None, bias: np.ndarray | None,
             unit: float, margin: float = 1.0) -> tuple[str, Any] | None:
    """``(Σ (x - zx)(w - zw) + bias) * unit`` computed exactly with onnxruntime's own float32
    Conv / MatMul (MLAS: as fast as the FP32 model); returns (tensor, numpy dtype) or None.

    ``unit`` is a power of two and ``bias`` integers in accumulator units, so every product and
    partial sum is an integer times ``unit``: float32 holds them exactly, in any summation order,
    while their magnitude (times ``margin``) stays below 2**23 — then one float32 MAC does it.
    Otherwise a constant weight is split in base-16 digits, ``w = 16 w_hi + w_lo``, each digit's MAC
    exact in float32, and the pieces are summed in float64. Codes are centred by Cast and Sub, not
    DequantizeLinear: onnxruntime rewrites DequantizeLinear -> Conv -> QuantizeLinear into its own
    quantized kernels (re-quantizing the float weight on the way), with other numbers."""
    x_bound = float(_code_bound(k.inputs[0]))
    bias_max = float(np.abs(bias).max(initial=0)) if bias is not None else 0.0
    xf = _centred(b, x, k.inputs[0], np.float32)
    if (x_bound * _weight_l1_bound(k) + bias_max) * margin < _F32_EXACT:
        if k.dynamic_weight:
            wf = b.op("Mul", _centred(b, w_codes, k.weight, np.float32), _const(b, unit, np.float32))
            return _mac_node(b, k, xf, wf, None if bias is None else bias * unit, np.float32), np.float32
        return _mac_node(b, k, xf, _const(b, (_centred_weight(k) * unit).astype(np.float32), np.float32),
                         None if bias is None else bias * unit, np.float32), np.float32
    if k.dynamic_weight:
        return None
    w = _centred_weight(k).astype(np.int64)
    digits = [(16.0, np.floor_divide(w, 16)), (1.0, np.mod(w, 16))]
    for _, d in digits:
        if x_bound * _l1_per_output(k, d) >= _F32_EXACT:
            return None
    acc = None
    for place, d in digits:
        part = _mac_node(b, k, xf, _const(b, (d * (place * unit)).astype(np.float32), np.float32), None, np.float32)
        part = b.op("Cast", part, to=TensorProto.DOUBLE)
        acc = part if acc is None else b.op("Add", acc, part)
    if bias is not None:
        shape = _channel_shape(k, 4, -1) if k.op == "Conv" and np.size(bias) > 1 else np.shape(bias)
        acc = b.op("Add", acc, _const(b, (bias.astype(np.float64) * unit).reshape(shape), np.float64))
    return acc, np.float64


def _centred_weight(k: Kernel) -> np.ndarray:
    """Constant weight codes minus their zero point, laid out for Conv (as is) or MatMul ([K, N])."""
    zp = np.asarray(k.weight.zero_point).astype(np.float64)
    if k.op == "Conv" and zp.size > 1:
        zp = zp.reshape(_channel_shape(k, k.weight.values.ndim, -1))
    w = k.weight.values.astype(np.float64) - zp
    return w.T if k.op == "Gemm" and k.attrs.get("transB", 0) else w


def _l1_per_output(k: Kernel, w: np.ndarray) -> float:
    """max over output channels of Σ|w| for a weight laid out by :func:`_centred_weight`."""
    a = np.abs(w)
    return float((a.reshape(a.shape[0], -1).sum(axis=1) if k.op == "Conv" else a.sum(axis=0)).max(initial=0))


def _mac_node(b: GraphBuilder, k: Kernel, xf: str, wf: str, bias: np.ndarray | None, dtype: Any) -> str:
    if k.op == "Conv":
        inputs = [xf, wf]
        if bias is not None:
            channels = k.weight.values.shape[0]
            inputs.append(_const(b, np.broadcast_to(np.asarray(bias).reshape(-1), (channels,)), dtype))
        return b.op("Conv", *inputs, **_conv_attrs(k))
    y = b.op("MatMul", xf, wf)
    return b.op("Add", y, _const(b, np.asarray(bias, np.float64), dtype)) if bias is not None else y


def _xint8_mac_f32(b: GraphBuilder, k: Kernel, x: str, w_codes: str | None, rounding: str) -> str | None:
    """The XINT8 MAC kernel at FP32 speed: accumulator (bias << shift_bias included) scaled by
    2**-shift_cut in the Conv itself, the fused activation, DPU_ROUND as Floor(v + 0.5) (the +0.5
    rides in the bias) or half-even, then QuantizeLinear(scale 1) adds the zero point and saturates."""
    p_acc = k.inputs[0].pos + k.weight.pos
    shift = p_acc - k.output.pos
    leaky = k.activation is not None and k.activation[0] == "leaky"
    bias = None
    if k.bias is not None:
        shift_bias = p_acc - k.bias.pos
        if shift_bias < 0:
            return None
        bias = (k.bias.values.astype(np.int64) - np.asarray(k.bias.zero_point).astype(np.int64)) * 2**shift_bias
    half = rounding == "half_up" and not leaky  # with leaky the +0.5 comes after the activation
    if half:
        bias = (np.zeros(1, np.int64) if bias is None else bias).astype(np.float64) + 2.0 ** (shift - 1)
    margin = 256.0 if leaky else 1.0  # leaky's alpha = k/256 adds 8 fractional bits
    if leaky and round(k.activation[1] * 256) > 256:
        return None
    mac = _f32_mac(b, k, x, w_codes, bias, 2.0**-shift, margin)
    if mac is None:
        return None
    v, dtype = mac
    if leaky:
        alpha = round(k.activation[1] * 256) / 256
        v = b.op("Max", v, b.op("Mul", v, _const(b, alpha, dtype)))  # v < 0: alpha * v, exact
        if rounding == "half_up":
            v = b.op("Add", v, _const(b, 0.5, dtype))
    if rounding == "half_up":
        v = b.op("Floor", v)
    return _requantize_integer_f32(b, k, v, dtype)


def _requantize_integer_f32(b: GraphBuilder, k: Kernel, y: str, dtype: Any = np.float32) -> str:
    """Integer-valued (or half-even-pending) ``y`` -> output codes: fused ReLU / clip, then
    QuantizeLinear with scale 1 (rounds half to even, adds the zero point, saturates). A float64
    ``y`` is clamped to ±2**22 and cast to float32 first (exact; nothing it clamps survives the
    saturation, and onnxruntime's Relu+Clip fusion fails on float64)."""
    out = k.output
    scale = float(np.ravel(out.scale)[0])
    if np.dtype(dtype) == np.float64:
        y = b.op("Cast", b.clip(y, -2.0**22, 2.0**22, dtype=np.float64), to=TensorProto.FLOAT)
    if k.activation is not None and k.activation[0] == "relu":
        y = b.op("Relu", y)
    elif k.activation is not None and k.activation[0] == "clip":
        _, lo, hi = k.activation
        lo_code = -np.inf if lo is None else float(np.ceil(lo / scale - 1e-9))
        hi_code = np.inf if hi is None else float(np.floor(hi / scale + 1e-9))
        y = b.clip(y, max(lo_code, -2.0**31), min(hi_code, 2.0**31))
    zp = np.asarray(np.ravel(out.zero_point)[0]).astype(out.dtype)
    return b.op("QuantizeLinear", y, _const(b, 1.0, np.float32), _const(b, zp, out.dtype))


def _conv_attrs(k: Kernel) -> dict[str, Any]:
    if k.op != "Conv":
        return {}
    return {a: k.attrs[a] for a in ("dilations", "group", "kernel_shape", "pads", "strides", "auto_pad") if a in k.attrs}


def _mac_operands(b: GraphBuilder, k: Kernel, x: str, w_codes: str | None = None) -> list[str]:
    """Inputs of ConvInteger / MatMulInteger, all uint8 (see :func:`_u8`): codes, weight codes (a
    constant, or ``w_codes`` for a MatMul of two activations) and both zero points."""
    zx = int(np.ravel(k.inputs[0].zero_point)[0])
    x_u8, zx = _u8(b, x, zx, k.inputs[0].dtype)
    if k.dynamic_weight:
        assert w_codes is not None
        w_u8, wz = _u8(b, w_codes, int(np.ravel(k.weight.zero_point)[0]), k.weight.dtype)
        return [x_u8, w_u8, _const(b, zx, np.uint8), _const(b, wz, np.uint8)]
    w, wz = _u8_weight(k)
    return [x_u8, _const(b, w, np.uint8), _const(b, zx, np.uint8), _const(b, wz, np.uint8)]


def _lower_xint8(b: GraphBuilder, k: Kernel, inputs: list[str], rounding: str) -> str:
    f64 = lambda v: _const(b, v, np.float64)  # noqa: E731
    p_out = k.output.pos
    w_codes = inputs[1] if k.dynamic_weight else None
    if k.op in ("Conv", "Gemm", "MatMul"):
        fast = _xint8_mac_f32(b, k, inputs[0], w_codes, rounding)
        if fast is not None:
            return fast
    if k.op in ("Conv", "Gemm", "MatMul") and rounding == "half_up" and k.inputs[0].dtype.itemsize == 1:
        fast = _xint8_mac_int32(b, k, inputs[0], w_codes)
        if fast is not None:
            return fast
    if k.op in ("Conv", "Gemm", "MatMul"):
        acc = b.op("Cast", _mac_integer(b, k, inputs[0], k.inputs[0], w_codes), to=TensorProto.DOUBLE)
        p_acc = k.inputs[0].pos + k.weight.pos
        if k.bias is not None:
            bias = (k.bias.values.astype(np.int64) - np.asarray(k.bias.zero_point).astype(np.int64)).astype(np.float64)
            bias = bias * 2.0 ** (p_acc - k.bias.pos)
            acc = b.op("Add", acc, f64(bias.reshape(_channel_shape(k, 4 if k.op == "Conv" else 2, bias.size))
                                       if k.op == "Conv" else bias))
        v = b.op("Mul", acc, f64(2.0 ** (p_out - p_acc)))
    elif k.op == "Add":
        p_max = max(r.pos for r in k.inputs)
        parts = [b.op("Mul", _centred(b, x, r), f64(2.0 ** (p_max - r.pos))) for x, r in zip(inputs, k.inputs)]
        v = b.op("Mul", b.op("Add", *parts), f64(2.0 ** (p_out - p_max)))
    elif k.op == "Mul":
        a0, a1 = (_centred(b, x, r) for x, r in zip(inputs, k.inputs))
        v = b.op("Mul", b.op("Mul", a0, a1), f64(2.0 ** (p_out - k.inputs[0].pos - k.inputs[1].pos)))
    elif k.op in ("AveragePool", "GlobalAveragePool"):
        s, count = _window_sum(b, k, inputs[0])
        factor = k.attrs["dpu_multiplier"] / count if "dpu_multiplier" in k.attrs else avgpool_factor(count)
        v = b.op("Mul", s, f64(factor * 2.0 ** (p_out - k.inputs[0].pos)))
    elif k.op == "LeakyRelu":
        alpha = round(float(k.attrs.get("alpha", 0.01)) * 256) / 256
        x = _centred(b, inputs[0], k.inputs[0])
        v = b.op("Mul", b.op("Where", b.op("Less", x, f64(0.0)), b.op("Mul", x, f64(alpha)), x),
                 f64(2.0 ** (p_out - k.inputs[0].pos)))
    elif k.op == "HardSigmoid":
        p_in = k.inputs[0].pos
        x = _centred(b, inputs[0], k.inputs[0])
        t = b.op("Add", b.op("Mul", x, f64(2731.0)), f64(3 * 2731 * 2.0**p_in))
        t = b.op("Min", b.op("Max", t, f64(0.0)), f64(2.0**32))
        v = b.op("Mul", t, f64(2.0 ** -(14 + p_in - p_out)))
    else:  # pragma: no cover
        raise NotImplementedError(k.op)
    return _finish_double(b, k, v, rounding)


def _window_sum(b: GraphBuilder, k: Kernel, codes: str) -> tuple[str, int]:
    """Exact window sums of centred codes: float32 sums of small integers are exact."""
    x = b.op("Cast", _centred(b, codes, k.inputs[0], np.float64), to=TensorProto.FLOAT)
    if k.op == "GlobalAveragePool":
        s = b.op("ReduceSum", b.op("Cast", x, to=TensorProto.DOUBLE), _const(b, [2, 3], np.int64), keepdims=1)
        return s, int(k.attrs["_count"])
    kernel = list(k.attrs["kernel_shape"])
    channels = int(k.attrs["_channels"])
    ones = np.ones((channels, 1, *kernel), np.float32)
    attrs = {"kernel_shape": kernel, "group": channels, "strides": list(k.attrs.get("strides", kernel))}
    if k.attrs.get("pads"):
        attrs["pads"] = list(k.attrs["pads"])
    s = b.op("Conv", x, _const(b, ones, np.float32), **attrs)
    return b.op("Cast", s, to=TensorProto.DOUBLE), int(np.prod(kernel))


def _requant_int64(b: GraphBuilder, num: str, shift: int) -> str:
    """Round-half-even of ``num / 2**shift`` in int64 (onnxruntime's Div truncates; fix to floor)."""
    i64 = lambda v: _const(b, v, np.int64)  # noqa: E731
    if shift <= 0:
        return b.op("Mul", num, i64(2 ** (-shift)))
    d = i64(2**shift)
    q = b.op("Div", num, d)
    r = b.op("Sub", num, b.op("Mul", q, d))
    neg = b.op("Cast", b.op("Less", r, i64(0)), to=TensorProto.INT64)
    q = b.op("Sub", q, neg)
    r = b.op("Add", r, b.op("Mul", neg, d))
    half = i64(2 ** (shift - 1))
    odd = b.op("Equal", b.op("BitwiseAnd", q, i64(1)), i64(1))
    up = b.op("Or", b.op("Greater", r, half), b.op("And", b.op("Equal", r, half), odd))
    return b.op("Add", q, b.op("Cast", up, to=TensorProto.INT64))


def _float_scale_mac_double(b: GraphBuilder, k: Kernel, x: str, w_codes: str | None) -> str | None:
    """A8W8 MAC requantised in float64 — exact when |acc * C| < 2**53 and the bias has the
    scale s_in*s_w (then it adds to the int32 accumulator): acc * (C * 2**-shift), rounded half
    to even, the same numbers as the int64 route."""
    s_out = float(np.ravel(k.output.scale)[0])
    s_in = float(np.ravel(k.inputs[0].scale)[0])
    m = s_in * np.ravel(k.weight.scale).astype(np.float64) / s_out
    _, shift = multiplier(float(np.max(m)))
    c = np.array([int(round(mi * 2.0**shift)) for mi in m], np.int64)
    if k.inputs[0].dtype.itemsize != 1 or k.weight.dtype.itemsize != 1 or (k.activation and k.activation[0] == "leaky"):
        return None
    bias = None
    if k.bias is not None:
        if not k.bias.aligned_with(s_in, k.weight.scale):
            return None
        bias = k.bias.values.astype(np.int64) - np.asarray(k.bias.zero_point).astype(np.int64)
    bound = _mac_bound(k) + (float(np.abs(bias).max(initial=0)) if bias is not None else 0.0)
    if bound >= 2**31 or bound * float(c.max(initial=0)) >= 2.0**53:
        return None
    mac = _f32_mac(b, k, x, w_codes, bias, 1.0)  # the exact accumulator at FP32 speed, if it fits
    if mac is not None:
        acc = mac[0]
    else:
        acc = b.op("ConvInteger" if k.op == "Conv" else "MatMulInteger", *_mac_operands(b, k, x, w_codes), **_conv_attrs(k))
        if bias is not None:
            shape = _channel_shape(k, 4, bias.size) if k.op == "Conv" else [bias.size]
            acc = b.op("Add", acc, _const(b, bias.reshape(shape), np.int32))
    factor = c.astype(np.float64) * 2.0**-shift  # exact: a 23-bit integer times a power of two
    ndim = 4 if k.op == "Conv" else 2
    factor = factor.reshape(_channel_shape(k, ndim, factor.size)) if factor.size > 1 else factor.reshape(())
    y = b.op("Round", b.op("Mul", b.op("Cast", acc, to=TensorProto.DOUBLE), _const(b, factor, np.float64)))
    return _saturate_codes(b, k, y, np.float64)


def _lower_float_scale(b: GraphBuilder, k: Kernel, inputs: list[str]) -> str:
    """A8W8 / A16W8: integer multiplier and shift, round half to even (A12)."""
    s_out = float(np.ravel(k.output.scale)[0])
    i64 = lambda v: _const(b, v, np.int64)  # noqa: E731
    w_codes = inputs[1] if k.dynamic_weight else None
    if k.op in ("Conv", "Gemm", "MatMul"):
        fast = _float_scale_mac_double(b, k, inputs[0], w_codes)
        if fast is not None:
            return fast
    terms: list[tuple[str, np.ndarray]] = []
    if k.op in ("Conv", "Gemm", "MatMul"):
        acc = _mac_integer(b, k, inputs[0], k.inputs[0], w_codes)
        s_in = float(np.ravel(k.inputs[0].scale)[0])
        terms.append((acc, s_in * np.ravel(k.weight.scale).astype(np.float64) / s_out))
        if k.bias is not None:
            bias = k.bias.values.astype(np.int64) - np.asarray(k.bias.zero_point).astype(np.int64)
            shape = _channel_shape(k, 4, bias.size) if k.op == "Conv" else [bias.size]
            if k.bias.aligned_with(s_in, k.weight.scale):
                terms[0] = (b.op("Add", acc, i64(bias.reshape(shape))), terms[0][1])
            else:
                terms.append((i64(bias.reshape(shape)), np.ravel(k.bias.scale).astype(np.float64) / s_out))
        ndim = 4 if k.op == "Conv" else 2
    elif k.op == "Add":
        for x, r in zip(inputs, k.inputs):
            terms.append((_centred(b, x, r, np.int64), np.ravel(r.scale).astype(np.float64) / s_out))
        ndim = 1
    elif k.op == "Mul":
        a0, a1 = (_centred(b, x, r, np.int64) for x, r in zip(inputs, k.inputs))
        m = float(np.ravel(k.inputs[0].scale)[0]) * float(np.ravel(k.inputs[1].scale)[0]) / s_out
        terms.append((b.op("Mul", a0, a1), np.array([m])))
        ndim = 1
    elif k.op in ("AveragePool", "GlobalAveragePool"):
        s, count = _window_sum(b, k, inputs[0])
        factor = k.attrs.get("dpu_multiplier", 1.0) / count
        terms.append((b.op("Cast", s, to=TensorProto.INT64), np.array([float(np.ravel(k.inputs[0].scale)[0]) * factor / s_out])))
        ndim = 4
    elif k.op == "LeakyRelu":
        x = _centred(b, inputs[0], k.inputs[0], np.int64)
        zero = i64(0)
        m = float(np.ravel(k.inputs[0].scale)[0]) / s_out
        terms.append((b.op("Max", x, zero), np.array([m])))
        terms.append((b.op("Min", x, zero), np.array([m * float(k.attrs.get("alpha", 0.01))])))
        ndim = 1
    else:  # pragma: no cover
        raise NotImplementedError(k.op)
    top = max(float(np.max(mults)) for _, mults in terms)
    _, shift = multiplier(top)
    consts = [np.array([int(round(mi * 2.0**shift)) for mi in np.ravel(mults)], np.int64) for _, mults in terms]
    if k.op not in ("Conv", "Gemm", "MatMul") and not (k.activation and k.activation[0] == "leaky") and \
            _elementwise_bound(k) * float(sum(int(c.max(initial=0)) for c in consts)) < 2.0**53:
        # few terms of small integers: Σ value*C*2**-shift is exact in float64, and Round is half-even
        total = None
        for (value, _), c in zip(terms, consts):
            f = (c.astype(np.float64) * 2.0**-shift)
            f = f.reshape(_channel_shape(k, ndim, f.size)) if f.size > 1 else f.reshape(())
            part = b.op("Mul", b.op("Cast", value, to=TensorProto.DOUBLE), _const(b, f, np.float64))
            total = part if total is None else b.op("Add", total, part)
        return _saturate_codes(b, k, b.op("Round", total), np.float64)
    num = None
    for (value, _), c in zip(terms, consts):
        c = c.reshape(_channel_shape(k, ndim, c.size)) if c.size > 1 else c.reshape(())
        part = b.op("Mul", value, i64(c))
        num = part if num is None else b.op("Add", num, part)
    if k.activation is not None and k.activation[0] == "leaky":
        c = int(round(k.activation[1] * 256))
        neg = b.op("Less", num, i64(0))
        num = b.op("Where", neg, b.op("Mul", num, i64(c)), b.op("Mul", num, i64(256)))
        shift += 8
    y = _requant_int64(b, num, shift)
    return _saturate_codes(b, k, y, np.int64)


def _lower_float(b: GraphBuilder, k: Kernel, inputs: list[str], accumulation: str = "exact") -> str:
    """BF16/BFP16/MX MAC kernels: bf16 inputs and weights, exact (float64) or float32
    accumulation, bf16 out."""
    if accumulation == "fp32":
        operands = [_bf16_round(b, t) if t else "" for t in inputs]
        if k.op == "Conv":
            y = b.op("Conv", *operands, **_conv_attrs(k))
        else:
            w = operands[1]
            if k.op == "Gemm" and k.attrs.get("transB", 0):
                w = b.op("Transpose", w, perm=[1, 0])
            y = b.op("MatMul", operands[0], w)
            if len(operands) > 2 and operands[2]:
                y = b.op("Add", y, operands[2])
        return _bf16_round(b, y)
    x = b.op("Cast", _bf16_round(b, inputs[0]), to=TensorProto.DOUBLE)
    w = b.op("Cast", _bf16_round(b, inputs[1]), to=TensorProto.DOUBLE)
    bias = b.op("Cast", _bf16_round(b, inputs[2]), to=TensorProto.DOUBLE) if len(inputs) > 2 and inputs[2] else None
    if k.op == "Conv":
        y = _conv_double(b, k, x, w)
        if bias is not None:
            y = b.op("Add", y, b.op("Reshape", bias, _const(b, [1, -1, 1, 1], np.int64)))
    else:
        if k.op == "Gemm" and k.attrs.get("transB", 0):
            w = b.op("Transpose", w, perm=[1, 0])
        y = b.op("MatMul", x, w)
        if bias is not None:
            y = b.op("Add", y, bias)
    return _bf16_round(b, b.op("Cast", y, to=TensorProto.FLOAT))


def _conv_double(b: GraphBuilder, k: Kernel, x: str, w: str) -> str:
    """2-D convolution in float64 by im2col (Pad, strided Slices, Concat) and a batched MatMul."""
    shape = k.attrs["_x_shape"]
    w_shape = k.attrs["_w_shape"]
    n, c, h, wd = shape
    co, _, kh, kw = w_shape
    strides = list(k.attrs.get("strides", [1, 1]))
    pads = list(k.attrs.get("pads", [0, 0, 0, 0]))
    dil = list(k.attrs.get("dilations", [1, 1]))
    group = int(k.attrs.get("group", 1))
    ho = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    wo = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    i64 = lambda v: _const(b, v, np.int64)  # noqa: E731
    if kh == kw == 1 and not any(pads) and strides == [1, 1] and group == 1:
        wm = b.op("Reshape", w, i64([co, c]))
        y = b.op("MatMul", wm, b.op("Reshape", x, i64([n, c, h * wd])))
        return b.op("Reshape", y, i64([n, co, h, wd]))
    if any(pads):
        x = b.op("Pad", x, i64([0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]]))
    patches = []
    for i in range(kh):
        for j in range(kw):
            start = [i * dil[0], j * dil[1]]
            end = [start[0] + strides[0] * (ho - 1) + 1, start[1] + strides[1] * (wo - 1) + 1]
            p = b.op("Slice", x, i64(start), i64(end), i64([2, 3]), i64(strides))
            patches.append(b.op("Reshape", p, i64([n, c, 1, ho * wo])))
    cols = patches[0] if len(patches) == 1 else b.op("Concat", *patches, axis=2)  # N, C, K, L
    cols = b.op("Reshape", cols, i64([n, group, (c // group) * kh * kw, ho * wo]))
    wg = b.op("Reshape", w, i64([1, group, co // group, (c // group) * kh * kw]))
    y = b.op("MatMul", wg, cols)  # N, G, Co/G, L
    return b.op("Reshape", y, i64([n, co, ho, wo]))
