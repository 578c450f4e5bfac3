"""Numpy reference of the NPU kernels (for tests): the arithmetic written out plainly.

Integer kernels work on integer codes and return integer codes:

* XINT8 (X1, NPU_SPEC §4.1.3, A10/A11): exact integer accumulation; the bias enters as
  ``bias * 2**shift_bias``; the sum is scaled by ``2**-shift_cut`` and rounded half toward +inf
  (DPU_ROUND; half-even selectable), the fused activation applied, then saturated.
* A8W8/A16W8 (X2, §4.2, A12): exact accumulation of zero-point-corrected products; the real
  multiplier ``s_in*s_w/s_out`` becomes an integer ``C < 2**23`` and a shift; round half to even.
* Float kernels (BF16/BFP16/MX, §4.4, A15): bf16 inputs and weights, exact accumulation, output
  rounded to float32 then to bf16 (round to nearest even).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ryzen_nb.npu.kernels import Kernel, QuantRef
from ryzen_nb.spec.dpu import avgpool_factor

__all__ = ["multiplier", "round_int", "run_kernel", "im2col", "bf16"]

MAX_MULTIPLIER = 2**23 - 1


def bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even), as float32."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def multiplier(m: float) -> tuple[int, int]:
    """``(C, shift)`` with ``C * 2**-shift`` closest to ``m`` and ``C <= 2**23 - 1`` (VOE's
    find_closest_shifted_int32, A12): the largest shift that keeps C in range."""
    if m <= 0:
        return 0, 0
    shift = int(np.floor(np.log2(MAX_MULTIPLIER / m)))
    c = int(round(m * 2.0**shift))
    while c > MAX_MULTIPLIER:
        shift -= 1
        c = int(round(m * 2.0**shift))
    return c, shift


def round_int(v: np.ndarray, rounding: str) -> np.ndarray:
    """Round exact float64 values (dyadic rationals) to integers."""
    if rounding == "half_even":
        return np.rint(v)
    return np.floor(v + 0.5)  # half toward +inf: exact, v has few fractional bits


def rne_shift(num: np.ndarray, shift: int) -> np.ndarray:
    """Round-half-even of ``num / 2**shift`` for int64 ``num`` (exact integer arithmetic)."""
    num = num.astype(np.int64)
    if shift <= 0:
        return num << (-shift)
    q = num >> shift  # floor
    rem = num - (q << shift)
    half = 1 << (shift - 1)
    up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    return q + up.astype(np.int64)


def _centred(ref: QuantRef, codes: np.ndarray) -> np.ndarray:
    return codes.astype(np.int64) - np.asarray(ref.zero_point).astype(np.int64)


def _saturate(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(y, info.min, info.max).astype(dtype)


def im2col(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int]) -> np.ndarray:
    """``[N, C, H, W]`` -> ``[N, C, kh*kw, Ho*Wo]`` (zero padding), for 2-D convolutions."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    cols = np.empty((n, c, kh * kw, ho * wo), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh : i * dh + sh * (ho - 1) + 1 : sh, j * dw : j * dw + sw * (wo - 1) + 1 : sw]
            cols[:, :, i * kw + j, :] = patch.reshape(n, c, ho * wo)
    return cols


def conv(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """2-D convolution with exact accumulation in the dtype of ``x`` (int64 or float64)."""
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    strides = list(attrs.get("strides", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    dil = list(attrs.get("dilations", [1, 1]))
    group = int(attrs.get("group", 1))
    cols = im2col(x, kernel, strides, pads, dil)  # N, C, K, L
    n, c, k, length = cols.shape
    co = w.shape[0]
    cols = cols.reshape(n, group, (c // group) * k, length)
    wg = w.reshape(group, co // group, (c // group) * k).astype(x.dtype)
    out = np.einsum("gok,ngkl->ngol", wg, cols)
    ho = (x.shape[2] + pads[0] + pads[2] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    return out.reshape(n, co, ho, length // ho)


def _mac(k: Kernel, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    if k.op == "Conv":
        return conv(x, w, k.attrs)
    if k.op == "Gemm":
        a = x.T if k.attrs.get("transA", 0) else x
        b = w.T if k.attrs.get("transB", 0) else w
        return a @ b
    return np.matmul(x, w)


def _weight_codes(k: Kernel, inputs: list[np.ndarray]) -> np.ndarray:
    """A MAC kernel's weight codes: a constant, or the second input of a MatMul of two activations."""
    return inputs[1] if k.dynamic_weight else k.weight.values


def _bias_shape(k: Kernel, b: np.ndarray, ndim: int) -> np.ndarray:
    if k.op == "Conv":
        return b.reshape(1, -1, *([1] * (ndim - 2)))
    return b


def run_kernel(k: Kernel, inputs: list[np.ndarray], rounding: str = "half_up") -> np.ndarray:
    """The kernel's output codes (integer kernels) or values (float kernels)."""
    if k.integer:
        if k.precision == "XINT8":
            return _xint8(k, inputs, rounding)
        return _float_scale(k, inputs)
    return _float_kernel(k, inputs)


# -- XINT8 -------------------------------------------------------------------------------------------------
def _xint8(k: Kernel, inputs: list[np.ndarray], rounding: str) -> np.ndarray:
    out = k.output
    p_out = out.pos
    xs = [_centred(r, v) for r, v in zip(k.inputs, inputs)]
    if k.op in ("Conv", "Gemm", "MatMul"):
        w = _centred(k.weight, _weight_codes(k, inputs))
        acc = _mac(k, xs[0], w).astype(np.float64)
        p_acc = k.inputs[0].pos + k.weight.pos
        if k.bias is not None:
            b = _centred(k.bias, k.bias.values).astype(np.float64)
            acc = acc + _bias_shape(k, b, acc.ndim) * 2.0 ** (p_acc - k.bias.pos)  # bias << shift_bias
        v = acc * 2.0 ** (p_out - p_acc)  # >> shift_cut
    elif k.op == "Add":
        p_max = max(r.pos for r in k.inputs)
        s = sum(x.astype(np.float64) * 2.0 ** (p_max - r.pos) for r, x in zip(k.inputs, xs))
        v = s * 2.0 ** (p_out - p_max)
    elif k.op == "Mul":
        v = xs[0].astype(np.float64) * xs[1] * 2.0 ** (p_out - k.inputs[0].pos - k.inputs[1].pos)
    elif k.op in ("AveragePool", "GlobalAveragePool"):
        s, count = _window_sum(k, xs[0])
        # the NPU multiplies by k/2**n instead of dividing (§4.1.5); a DPU-rewritten model carries
        # it as the constant of the Mul after the pool (= factor * count)
        factor = k.attrs["dpu_multiplier"] / count if "dpu_multiplier" in k.attrs else avgpool_factor(count)
        v = s * factor * 2.0 ** (p_out - k.inputs[0].pos)
    elif k.op == "LeakyRelu":
        alpha = round(float(k.attrs.get("alpha", 0.01)) * 256) / 256
        x = xs[0].astype(np.float64)
        v = np.where(x < 0, x * alpha, x) * 2.0 ** (p_out - k.inputs[0].pos)
    elif k.op == "HardSigmoid":
        p_in = k.inputs[0].pos
        v = np.clip(xs[0] * 2731.0 + 3 * 2731 * 2.0**p_in, 0, 2.0**32) * 2.0 ** -(14 + p_in - p_out)
    else:  # pragma: no cover - extract_kernels only yields the ops above
        raise NotImplementedError(k.op)
    if k.activation is not None and k.activation[0] == "leaky":
        alpha = round(k.activation[1] * 256) / 256
        v = np.where(v < 0, v * alpha, v)
    y = round_int(v, rounding)
    y = _activate(k, y, out)
    zp = int(np.ravel(out.zero_point)[0])
    return _saturate(y + zp, out.dtype)  # uint8 with zero point 128 saturates as int8 does


def _activate(k: Kernel, y: np.ndarray, out: QuantRef) -> np.ndarray:
    if k.activation is None or k.activation[0] == "leaky":
        return y
    if k.activation[0] == "relu":
        return np.maximum(y, 0)
    _, lo, hi = k.activation
    scale = float(np.ravel(out.scale)[0])
    if lo is not None:
        y = np.maximum(y, np.ceil(lo / scale - 1e-9))
    if hi is not None:
        y = np.minimum(y, np.floor(hi / scale + 1e-9))
    return y


def _window_sum(k: Kernel, x: np.ndarray) -> tuple[np.ndarray, int]:
    if k.op == "GlobalAveragePool":
        return x.sum(axis=tuple(range(2, x.ndim)), keepdims=True).astype(np.float64), int(np.prod(x.shape[2:]))
    kernel = list(k.attrs["kernel_shape"])
    cols = im2col(x, kernel, list(k.attrs.get("strides", kernel)), list(k.attrs.get("pads", [0, 0, 0, 0])), [1, 1])
    n, c = x.shape[:2]
    ho = (x.shape[2] + sum(k.attrs.get("pads", [0, 0, 0, 0])[::2]) - kernel[0]) // list(k.attrs.get("strides", kernel))[0] + 1
    s = cols.sum(axis=2).reshape(n, c, ho, -1)
    return s.astype(np.float64), int(np.prod(kernel))


# -- A8W8 / A16W8 ---------------------------------------------------------------------------------------------
def _float_scale(k: Kernel, inputs: list[np.ndarray]) -> np.ndarray:
    out = k.output
    s_out = float(np.ravel(out.scale)[0])
    xs = [_centred(r, v) for r, v in zip(k.inputs, inputs)]
    if k.op in ("Conv", "Gemm", "MatMul"):
        w = _centred(k.weight, _weight_codes(k, inputs))
        acc = _mac(k, xs[0], w)
        s_in = float(np.ravel(k.inputs[0].scale)[0])
        s_w = np.ravel(k.weight.scale).astype(np.float64)
        ms = s_in * s_w / s_out
        terms = [(acc, ms)]
        if k.bias is not None:
            b = _bias_shape(k, _centred(k.bias, k.bias.values), acc.ndim)
            if k.bias.aligned_with(s_in, k.weight.scale):
                terms = [(acc + b, ms)]  # the bias adds into the accumulator
            else:
                terms.append((np.broadcast_to(b, acc.shape), np.ravel(k.bias.scale).astype(np.float64) / s_out))
        channel_axis = 1 if k.op == "Conv" else -1
        num, shift = _weighted(terms, channel_axis, acc.ndim)
    elif k.op == "Add":
        terms = [(x, np.ravel(r.scale).astype(np.float64) / s_out) for r, x in zip(k.inputs, xs)]
        num, shift = _weighted(terms, -1, max(x.ndim for x in xs))
    elif k.op == "Mul":
        m = float(np.ravel(k.inputs[0].scale)[0]) * float(np.ravel(k.inputs[1].scale)[0]) / s_out
        num, shift = _weighted([(xs[0] * xs[1], np.array([m]))], -1, max(x.ndim for x in xs))
    elif k.op in ("AveragePool", "GlobalAveragePool"):
        s, count = _window_sum(k, xs[0])
        factor = k.attrs.get("dpu_multiplier", 1.0) / count
        m = float(np.ravel(k.inputs[0].scale)[0]) * factor / s_out
        num, shift = _weighted([(s.astype(np.int64), np.array([m]))], -1, s.ndim)
    elif k.op == "LeakyRelu":
        alpha = float(k.attrs.get("alpha", 0.01))
        m = float(np.ravel(k.inputs[0].scale)[0]) / s_out
        pos = np.where(xs[0] >= 0, xs[0], 0)
        neg = np.where(xs[0] < 0, xs[0], 0)
        num, shift = _weighted([(pos, np.array([m])), (neg, np.array([m * alpha]))], -1, xs[0].ndim)
    else:
        raise NotImplementedError(k.op)
    if k.activation is not None and k.activation[0] == "leaky":
        c = int(round(k.activation[1] * 256))
        num = np.where(num < 0, num * c, num << 8)
        shift += 8
    y = rne_shift(num, shift)
    y = _activate(k, y, out)
    zp = int(np.ravel(out.zero_point)[0])
    return _saturate(y + zp, out.dtype)


def _weighted(terms: list[tuple[np.ndarray, np.ndarray]], channel_axis: int, ndim: int) -> tuple[np.ndarray, int]:
    """Σ value_i * m_i as int64 ``num`` over a common ``2**shift`` (each m_i an integer multiplier)."""
    top = max(float(np.max(m)) for _, m in terms)
    _, shift = multiplier(top)
    total = None
    for value, m in terms:
        c = np.array([int(round(mi * 2.0**shift)) for mi in np.ravel(m)], dtype=np.int64)
        if c.size > 1:
            shape = [1] * ndim
            shape[channel_axis] = c.size
            c = c.reshape(shape)
        else:
            c = c.reshape(())
        part = value.astype(np.int64) * c
        total = part if total is None else total + part
    return total, shift


# -- float kernels ---------------------------------------------------------------------------------------------
def _float_kernel(k: Kernel, inputs: list[np.ndarray]) -> np.ndarray:
    """BF16/BFP16/MX MAC kernels: bf16 (or the model's own quantization) inputs, exact
    accumulation, float32 then bf16 output."""
    x = bf16(inputs[0]).astype(np.float64) if k.precision == "BF16" else inputs[0].astype(np.float64)
    w = bf16(inputs[1]).astype(np.float64) if k.precision == "BF16" else inputs[1].astype(np.float64)
    acc = _mac(k, x, w)
    if len(inputs) > 2 and inputs[2] is not None:
        b = bf16(inputs[2]).astype(np.float64) if k.precision == "BF16" else inputs[2].astype(np.float64)
        acc = acc + _bias_shape(k, b, acc.ndim)
    return bf16(acc.astype(np.float32))
