"""Fixed-point facts of the NPU's integer datapath: the constants the quantizer writes into XINT8
models and the emulator computes with, defined once.

* what the NPU computes instead of a float operation (docs/npu-numerics.md#dpu-rewrites): HardSigmoid's
  1/6 as 2731/2**14, LeakyReLU slopes on a k/256 grid, average pooling multiplying by k/2**n;
* the shift ranges the X1 compiler accepts for power-of-two positions (docs/npu-numerics.md#xint8-shift-limits);
* the largest integer multiplier of A8W8/A16W8 requantisation (docs/npu-numerics.md#a8w8-and-a16w8, A12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "HARD_SIGMOID_ALPHA",
    "HARD_SIGMOID_SHIFT",
    "HARD_SIGMOID_MULTIPLIER",
    "LEAKY_RELU_STEPS",
    "MAX_MULTIPLIER",
    "SHIFT_LIMITS",
    "ShiftLimits",
    "avgpool_factor",
    "leaky_relu_alpha",
]

#: HardSigmoid's slope 1/6 as the NPU implements it: 2731 / 2**14 (Quark's simulate_dpu.py,
#: docs/npu-numerics.md#dpu-rewrites)
HARD_SIGMOID_MULTIPLIER = 2731
HARD_SIGMOID_SHIFT = 14
HARD_SIGMOID_ALPHA = HARD_SIGMOID_MULTIPLIER / 2**HARD_SIGMOID_SHIFT

#: LeakyReLU slopes are held as k/256 (docs/npu-numerics.md#dpu-rewrites)
LEAKY_RELU_STEPS = 256

#: A8W8/A16W8 requantisation: the combined scale s_in*s_w/s_out becomes C * 2**-shift with the integer
#: C at most 2**23 - 1 (VOE's find_closest_shifted_int32, docs/npu-numerics.md#a8w8-and-a16w8, A12)
MAX_MULTIPLIER = 2**23 - 1

#: average pools whose window size has a special k/2**n in Quark's table: elements -> (k, n)
#: (docs/npu-numerics.md#dpu-rewrites)
_SPECIAL_POOL = {9: (7, 6), 25: (10, 8), 36: (7, 8), 49: (21, 10), 196: (21, 12)}
#: windows above this many elements divide exactly
_EXACT_POOL_ABOVE = 255


def leaky_relu_alpha(alpha: float) -> float:
    """A LeakyReLU slope on the NPU's k/256 grid."""
    return round(float(alpha) * LEAKY_RELU_STEPS) / LEAKY_RELU_STEPS


def avgpool_factor(kernel_elements: int) -> float:
    """The k/2**n the NPU multiplies by instead of dividing by ``kernel_elements`` (Quark's table,
    else the closest k/2**n with n < 7 + ceil(log2(N)); windows above 255 elements are exact)."""
    if kernel_elements in _SPECIAL_POOL:
        k, n = _SPECIAL_POOL[kernel_elements]
        return k / 2**n
    if kernel_elements > _EXACT_POOL_ABOVE:
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


@dataclass(frozen=True)
class ShiftLimits:
    """Ranges of the shifts between power-of-two positions (scale = 2**-pos) that the X1 compiler
    accepts (Quark's refinement, docs/npu-numerics.md#xint8-shift-limits). ``pos_w + pos_in - pos_out`` is a MAC's
    ``shift_cut``; the rest are named as in Quark."""

    shift_cut: tuple[int, int] = (0, 16)  #: Conv/Gemm/ConvTranspose/MatMul
    shift_bias_max: int = 15  #: pos_w + pos_in - pos_bias <= 15
    #: lower bound of shift_bias: min(0, -(accumulator_bits - (8 + shift_cut))); 0 before a LeakyRelu
    accumulator_bits: int = 24
    shift_read_max: int = 7  #: Add/Sub: max(pos_in) - min(pos_in)
    add_shift_write: tuple[int, int] = (-7, 25)  #: Add/Sub: min(pos_in) - pos_out
    mul_shift_write: tuple[int, int] = (0, 32)  #: Mul: sum(pos_in) - pos_out
    hard_sigmoid_input_pos: tuple[int, int] = (0, 15)
    hard_sigmoid_output_pos_min: int = 7
    hard_sigmoid_shift: tuple[int, int] = (0, 31)  #: 14 + pos_in - pos_out

    def shift_bias_min(self, shift_cut: int, before_leaky_relu: bool) -> int:
        if before_leaky_relu:
            return 0
        return min(0, -(self.accumulator_bits - (8 + shift_cut)))


SHIFT_LIMITS = ShiftLimits()
