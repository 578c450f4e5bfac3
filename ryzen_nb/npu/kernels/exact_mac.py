"""The exact integer multiply-accumulate Σ (x - zx)(w - zw) in ONNX, as fast as onnxruntime allows.

Three ways, fastest first, each exact where it is used:

* :func:`f32_mac` — onnxruntime's own float32 Conv / MatMul (MLAS, as fast as the FP32 model) on
  centred codes: exact while every partial sum is an integer below 2**23 (in units of a power of
  two). A larger constant weight is split in base-16 digits, ``w = 16 w_hi + w_lo``, each digit's
  MAC exact in float32, the two summed in float64.
* :func:`mac_integer` — ConvInteger / MatMulInteger (exact int32), 16-bit codes split in bytes.
* a MatMul of two 16-bit activations in float64 (exact below 2**53, checked).

The kernel (:class:`~ryzen_nb.npu.kernels.mac.IntegerMAC`) supplies the operator-specific parts:
the ONNX operator and its attributes, the weight's layout, the reduction axis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import TensorProto

from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.npu.kernels.lowering import F32_EXACT, centred, channel_shape, code_bound, const

if TYPE_CHECKING:  # annotations only (mac.py imports this module)
    from ryzen_nb.npu.kernels.mac import IntegerMAC

__all__ = ["F32_EXACT", "centred_weight", "f32_mac", "mac_bound", "mac_integer", "mac_operands", "weight_l1_bound"]

def u8(b: GraphBuilder, codes: str, zp: int, dtype: Any) -> tuple[str, int]:
    """8-bit codes (int8 or uint8) as uint8, with their zero point: int8 codes move up by 128, and
    so does the zero point, so ``x - zp`` is unchanged.

    Why every integer MAC here is uint8 x uint8: onnxruntime's uint8 x int8 kernels on x86 CPUs
    without VNNI add pairs of products in int16 with saturation (vpmaddubsw), which is not exact
    (two products of 255 x 127 overflow); its uint8 x uint8 kernels widen first and are exact."""
    if np.dtype(dtype) == np.uint8:
        return codes, zp
    widened = b.op("Cast", codes, to=TensorProto.INT16)
    return b.op("Cast", b.op("Add", widened, const(b, 128, np.int16)), to=TensorProto.UINT8), zp + 128


def u8_weight(k: IntegerMAC) -> tuple[np.ndarray, np.ndarray]:
    """A constant 8-bit weight and its zero point(s) as uint8, laid out for ConvInteger (as is) or
    MatMulInteger ([K, N]); see :func:`u8`."""
    assert k.weight is not None and k.weight.values is not None
    w = k.weight_matrix(k.weight.values)
    zp = np.asarray(k.weight.zero_point).astype(np.int16)
    # one zero point when all channels share it (ConvInteger takes no other: see IntegerConv)
    zp = zp.reshape(-1) if np.unique(zp).size > 1 else zp.reshape(-1)[0]
    if w.dtype.kind == "i":
        return (w.astype(np.int16) + 128).astype(np.uint8), (zp + 128).astype(np.uint8)
    return w.astype(np.uint8), zp.astype(np.uint8)


def mac_operands(b: GraphBuilder, k: IntegerMAC, x: str, w_codes: str | None = None) -> list[str]:
    """Inputs of ConvInteger / MatMulInteger, all uint8 (see :func:`u8`): codes, weight codes (a
    constant, or ``w_codes`` for a MatMul of two activations) and both zero points."""
    zx = int(np.ravel(k.inputs[0].zero_point)[0])
    x_u8, zx = u8(b, x, zx, k.inputs[0].dtype)
    if k.dynamic_weight:
        assert w_codes is not None and k.weight is not None
        w_u8, wz = u8(b, w_codes, int(np.ravel(k.weight.zero_point)[0]), k.weight.dtype)
        return [x_u8, w_u8, const(b, zx, np.uint8), const(b, wz, np.uint8)]
    w, wz = u8_weight(k)
    return [x_u8, const(b, w, np.uint8), const(b, zx, np.uint8), const(b, wz, np.uint8)]


def mac_integer(b: GraphBuilder, k: IntegerMAC, x: str, w_codes: str | None = None) -> str:
    """Exact Σ (x - zx)(w - zw) as int64, with ConvInteger/MatMulInteger (int16 inputs split in
    bytes); a MatMul of two activations (``w_codes``) with 16-bit codes multiplies the centred codes
    in float64, exact below 2**53 (checked)."""
    x_ref, weight = k.inputs[0], k.weight
    assert weight is not None
    if k.dynamic_weight:
        assert w_codes is not None
        if x_ref.dtype.itemsize == 1 and weight.dtype.itemsize == 1:
            return b.op("Cast", b.op("MatMulInteger", *mac_operands(b, k, x, w_codes)), to=TensorProto.INT64)
        if mac_bound(k) >= 2.0**53:  # pragma: no cover - a reduction of 2**21 16-bit products
            raise NotImplementedError("MatMul of two 16-bit activations with a reduction beyond 2**21")
        acc = b.op("MatMul", centred(b, x, x_ref), centred(b, w_codes, weight))
        return b.op("Cast", acc, to=TensorProto.INT64)
    w, w_zp = u8_weight(k)
    w_name, wz_name = const(b, w, np.uint8), const(b, w_zp, np.uint8)

    def mac(codes: str, zp: int) -> str:  # codes and zero point in uint8
        return b.op("Cast", b.op(k.mac_op, codes, w_name, const(b, zp, np.uint8), wz_name, **k.mac_attrs()),
                    to=TensorProto.INT64)

    zx = int(np.ravel(x_ref.zero_point)[0])
    if x_ref.dtype.itemsize == 1:
        return mac(*u8(b, x, zx, x_ref.dtype))
    if int(k.attrs.get("group", 1)) > 1 and 256.0 * weight_l1_bound(k) < F32_EXACT:
        # x - zx = 256 h + l (h in [-256, 255], l in [0, 255]), each half's MAC exact in one float32
        # Conv: onnxruntime's ConvInteger runs a grouped (depthwise) convolution group by group, 16x
        # slower than its float32 one on EfficientNet-Lite0 (ungrouped, ConvInteger is the faster)
        xc = centred(b, x, x_ref, np.float32)
        h = b.op("Floor", b.op("Mul", xc, const(b, 1 / 256, np.float32)))
        lo = b.op("Sub", xc, b.op("Mul", h, const(b, 256, np.float32)))
        wf = const(b, centred_weight(k).astype(np.float32), np.float32)
        acc_h, acc_l = (b.op("Cast", k.float_mac(b, t, wf, None, np.float32), to=TensorProto.INT64) for t in (h, lo))
        return b.op("Add", b.op("Mul", acc_h, const(b, 256, np.int64)), acc_l)
    # 16-bit codes: x = 256*hi + lo; Σ(x-zx)(w-zw) = 256 Σ(hi-zh)(w-zw) + Σ(lo-zl)(w-zw), exactly
    x32 = b.op("Cast", x, to=TensorProto.INT32)
    lo = b.op("BitwiseAnd", x32, const(b, 255, np.int32))
    hi = b.op("Div", b.op("Sub", x32, lo), const(b, 256, np.int32))  # [-128, 127] (int16) or [0, 255] (uint16)
    zl, zh = zx & 255, (zx - (zx & 255)) // 256
    if x_ref.dtype.kind == "i":  # into [0, 255], and the zero point with it (see u8)
        hi, zh = b.op("Add", hi, const(b, 128, np.int32)), zh + 128
    acc_hi = mac(b.op("Cast", hi, to=TensorProto.UINT8), zh)
    acc_lo = mac(b.op("Cast", lo, to=TensorProto.UINT8), zl)
    return b.op("Add", b.op("Mul", acc_hi, const(b, 256, np.int64)), acc_lo)


def centred_weight(k: IntegerMAC) -> np.ndarray:
    """Constant weight codes minus their zero point (float64), laid out for Conv (as is) or MatMul ([K, N])."""
    assert k.weight is not None and k.weight.values is not None
    return k.weight_matrix(k.weight.centred(k.weight.values).astype(np.float64))


def mac_bound(k: IntegerMAC) -> float:
    """An upper bound of |Σ (x - zx)(w - zw)| from the code ranges and the reduction length."""
    assert k.weight is not None
    if k.dynamic_weight:
        return float(code_bound(k.inputs[0])) * code_bound(k.weight) * int(k.attrs["_reduction"])
    w = centred_weight(k)
    return float(code_bound(k.inputs[0])) * float(np.abs(w).max(initial=0)) * k.reduction(w)


def weight_l1_bound(k: IntegerMAC) -> float:
    """max over outputs of Σ|w - zw| (the tighter bound for a constant weight)."""
    assert k.weight is not None
    if k.dynamic_weight:
        return float(code_bound(k.weight)) * int(k.attrs["_reduction"])
    return k.l1_per_output(centred_weight(k))


def f32_mac(b: GraphBuilder, k: IntegerMAC, x: str, w_codes: str | None, bias: np.ndarray | None,
            unit: float, margin: float = 1.0, digits: bool = True) -> tuple[str, Any] | None:
    """``(Σ (x - zx)(w - zw) + bias) * unit`` computed exactly with onnxruntime's own float32
    Conv / MatMul; returns (tensor, numpy dtype) or None.

    ``unit`` is a power of two and ``bias`` integers in accumulator units (or integers and a half,
    :func:`~ryzen_nb.npu.kernels.lowering.ties_up`), so every product and partial sum is a
    multiple of half a ``unit``: float32 holds them exactly, in any summation order, while their
    magnitude (times ``margin``) stays below 2**23 units — then one float32 MAC does it.
    Otherwise (and if ``digits``) a constant weight is split in base-16 digits, each digit's MAC
    exact in float32, and the pieces are summed in float64: two MACs, so an integer MAC
    (ConvInteger / MatMulInteger, about as fast as one float32 MAC) is preferred where it is exact. Codes are centred by Cast and Sub, not DequantizeLinear:
    onnxruntime rewrites DequantizeLinear -> Conv -> QuantizeLinear into its own quantized kernels
    (re-quantizing the float weight on the way), with other numbers."""
    x_bound = float(code_bound(k.inputs[0]))
    bias_max = float(np.abs(bias).max(initial=0)) if bias is not None else 0.0
    xf = centred(b, x, k.inputs[0], np.float32)
    scaled_bias = None if bias is None else bias * unit
    if (x_bound * weight_l1_bound(k) + bias_max) * margin < F32_EXACT:
        if k.dynamic_weight:
            assert w_codes is not None and k.weight is not None
            wf = b.op("Mul", centred(b, w_codes, k.weight, np.float32), const(b, unit, np.float32))
            return k.float_mac(b, xf, wf, scaled_bias, np.float32), np.float32
        wf = const(b, (centred_weight(k) * unit).astype(np.float32), np.float32)
        return k.float_mac(b, xf, wf, scaled_bias, np.float32), np.float32
    if k.dynamic_weight or not digits:
        return None
    w = centred_weight(k).astype(np.int64)
    digits = [(16.0, np.floor_divide(w, 16)), (1.0, np.mod(w, 16))]
    if any(x_bound * k.l1_per_output(d) >= F32_EXACT for _, d in digits):
        return None
    acc = None
    for place, d in digits:
        part = k.float_mac(b, xf, const(b, (d * (place * unit)).astype(np.float32), np.float32), None, np.float32)
        part = b.op("Cast", part, to=TensorProto.DOUBLE)
        acc = part if acc is None else b.op("Add", acc, part)
    if bias is not None:
        shape = channel_shape(4, -1, k.channel_axis) if k.lowered_rank == 4 and np.size(bias) > 1 else np.shape(bias)
        acc = b.op("Add", acc, const(b, (bias.astype(np.float64) * unit).reshape(shape), np.float64))
    return acc, np.float64
