"""The NPU's arithmetic in numpy, shared by the kernels' reference side.

Integer kernels work on integer codes and return integer codes:

* XINT8 (X1, docs/npu-numerics.md#xint8-requantization, A10/A11): exact integer accumulation; the sum is scaled by a power
  of two and rounded half toward +inf (DPU_ROUND; half-even selectable), then saturated.
* A8W8/A16W8 (X2, docs/npu-numerics.md#a8w8-and-a16w8, A12): exact accumulation of zero-point-corrected products; the
  real multiplier ``s_in*s_w/s_out`` becomes an integer ``C <= MAX_MULTIPLIER`` and a shift;
  round half to even.
* Float kernels (BF16/BFP16/MX, docs/npu-numerics.md#bf16, A15): bf16 operands, exact accumulation, output
  rounded to float32 then to bf16 (round to nearest even).

Every value here is exact: integers in int64, or dyadic rationals in float64 far from 2**53.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ryzen_nb.spec.dpu import LEAKY_RELU_STEPS, MAX_MULTIPLIER

__all__ = ["LEAKY_SHIFT", "bf16", "clip_codes", "conv2d", "im2col", "multiplier", "rne_shift", "round_int",
           "saturate", "weighted"]

#: LeakyReLU slopes are k / LEAKY_RELU_STEPS: multiplying by k and shifting right by this many bits
LEAKY_SHIFT = LEAKY_RELU_STEPS.bit_length() - 1


def bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even), as float32."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def multiplier(m: float) -> tuple[int, int]:
    """``(C, shift)`` with ``C * 2**-shift`` closest to ``m`` and ``C <= MAX_MULTIPLIER`` (VOE's
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
    """Round exact float64 values (dyadic rationals) to integers: ``"half_up"`` is DPU_ROUND
    (ties toward +inf, docs/npu-numerics.md#xint8-requantization, A11), ``"half_even"`` the provider option xlnx_enable_py3_round."""
    if rounding == "half_even":
        return np.rint(v)
    return np.floor(v + 0.5)  # exact: v has few fractional bits


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


def weighted(terms: list[tuple[np.ndarray, np.ndarray]], channel_axis: int, ndim: int) -> tuple[np.ndarray, int]:
    """Σ value_i * m_i as int64 ``num`` over a common ``2**shift``: the largest multiplier sets the
    shift (:func:`multiplier`), each m_i becomes an integer at that shift (per channel where m_i
    has several values, along ``channel_axis``)."""
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


def clip_codes(lo: float | None, hi: float | None, scale: float) -> tuple[float | None, float | None]:
    """A fused Clip's bounds in output codes (before the zero point): the codes whose value lies
    inside [lo, hi] (the 1e-9 absorbs float32 scales that divide a bound almost exactly)."""
    return (None if lo is None else float(np.ceil(lo / scale - 1e-9)),
            None if hi is None else float(np.floor(hi / scale + 1e-9)))


def saturate(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clamp to ``dtype``'s range and cast (uint8 with zero point 128 saturates as int8 does)."""
    info = np.iinfo(dtype)
    return np.clip(y, info.min, info.max).astype(dtype)


def im2col(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int]) -> np.ndarray:
    """``[N, C, H, W]`` -> ``[N, C, kh*kw, Ho*Wo]`` (zero padding), for 2-D convolutions and pools."""
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


def conv2d(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
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
