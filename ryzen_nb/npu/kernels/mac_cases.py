"""Cases of the integer MAC kernels (see :mod:`.cases`): every precision x fused activation, and the
edge cases of the arithmetic (zero points, per-channel weights, biases that do or do not align
with s_in*s_w, saturation, 16-bit activations) and of each lowering route (float32 MAC, its
base-16 digits, ConvInteger with an integer shift, the int64/float64 fallbacks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ryzen_nb.npu.kernels.cases import Case, CaseGraph

__all__ = ["conv_cases", "gemm_cases", "matmul_cases"]

_ACTIVATIONS = (None, "relu", "clip", "leaky")
_PRECISIONS = ("XINT8", "A8W8", "A16W8")
#: activations' quantization per precision: (dtype, zero point, scale); XINT8 is uint8 with zero point 128
_INPUT = {"XINT8": (np.uint8, 128, 2.0**-4), "A8W8": (np.int8, -7, 0.0371), "A16W8": (np.int16, 1200, 0.00042)}
_OUTPUT = {"XINT8": (np.uint8, 128), "A8W8": (np.int8, 5), "A16W8": (np.int16, -300)}
#: XINT8 weights: int8, position 7
_XINT8_WEIGHT_POS = 7


def _mac(name: str, precision: str, op: str, x_shape: list[int], w_shape: list[int], *, seed: int,
         attrs: dict[str, Any] | None = None, activation: str | None = None, bias: str | None = None,
         per_channel: bool = False, x_quant: tuple[Any, int, float] | None = None, dynamic: bool = False,
         saturates: bool = False, route: dict[str, int] | None = None,
         roundings: tuple[str, ...] | None = None, out_quant: tuple[Any, int] | None = None) -> Case:
    """One MAC node on seeded codes. ``bias``: None, "aligned" (scale s_in*s_w; XINT8: a coarser
    position than the accumulator), "unaligned" (A8W8/A16W8) or "finer" (XINT8: a finer position
    than the accumulator). ``dynamic``: the second operand is an activation too."""
    attrs = dict(attrs or {})
    g = CaseGraph(name, precision, seed)
    dtype, zp, s_in = x_quant or _INPUT[precision]
    x = g.codes("x", x_shape, s_in, zp, dtype)
    # the weight's output-channel axis: Conv and a transposed Gemm weight [N, K] hold them first
    axis = 0 if op == "Conv" or attrs.get("transB") else len(w_shape) - 1
    channels = w_shape[axis]
    reduction = int(np.prod(w_shape[1:])) if op == "Conv" else w_shape[1 - axis if len(w_shape) == 2 else -2]
    if dynamic:
        w_dtype, w_zp, w_scale = _INPUT[precision]
        s_w = np.array([w_scale])
        w = g.codes("w", w_shape, w_scale, w_zp, w_dtype)
        w_std = CaseGraph.code_std(w_dtype)
    else:
        if precision == "XINT8":
            s_w = np.array([2.0**-_XINT8_WEIGHT_POS])
        elif per_channel:
            s_w = g.rng.uniform(0.004, 0.02, channels).astype(np.float32).astype(np.float64)
        else:
            s_w = np.array([0.011])
        codes = g.random_codes(w_shape, np.int8)
        w = g.weight("w", codes, s_w if per_channel else s_w[0], axis=axis if per_channel else None)
        w_std = float(np.std(codes))
    acc_std = np.sqrt(reduction) * CaseGraph.code_std(dtype) * w_std
    inputs = [x, w]
    if bias is not None:
        if precision == "XINT8":
            p_acc = int(round(-np.log2(s_in))) + _XINT8_WEIGHT_POS
            p_bias = p_acc + 2 if bias == "finer" else p_acc - 5
            inputs.append(g.weight("b", g.random_codes([channels], np.int8), 2.0**-p_bias))
        else:
            # as quantizers store it: float32(s_in * s_w) (Quark's AdjustBiasScale)
            s_b = (np.float64(np.float32(s_in)) * s_w.astype(np.float32).astype(np.float64)).astype(np.float32)
            if bias == "unaligned":
                s_b = (s_b * np.float32(1.7)).astype(np.float32)
            limit = int(acc_std)
            codes = g.random_codes([channels], np.int32, -limit, limit)
            inputs.append(g.weight("b", codes, s_b if s_b.size > 1 else s_b[0], axis=0 if s_b.size > 1 else None))
    y = g.op(op, inputs, under_test=True, **attrs)
    # an output scale that puts a typical result at ±40 codes (int8; in proportion for int16), or
    # at 4x the largest code to saturate
    out_dtype, out_zp = out_quant or _OUTPUT[precision]
    top = float(np.iinfo(out_dtype).max)
    s_out = s_in * float(np.mean(s_w)) * acc_std / (4 * top if saturates else 40 * top / 127)
    if precision == "XINT8":
        s_out = 2.0 ** np.round(np.log2(s_out))
    out = g.quantize(y, s_out, out_zp, out_dtype, activation=activation)
    return g.case(out, saturates=saturates, route=route, roundings=roundings)


_PADDED_3X3 = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}


#: the lowering of a small Conv with its bias: one float32 Conv with the requantisation folded in;
#: a fused LeakyRelu's k/256 needs 8 more bits than float32 has to spare here: XINT8 splits the weight
#: in base-16 digits, A8W8 requantizes in int64; 16-bit activations go through ConvInteger byte by byte
_CONV_ROUTES = {
    ("XINT8", False): {"Conv": 1, "ConvInteger": 0}, ("XINT8", True): {"Conv": 2, "ConvInteger": 0},
    ("A8W8", False): {"Conv": 1, "ConvInteger": 0}, ("A8W8", True): {"Conv": 0, "ConvInteger": 1, "BitwiseAnd": 1},
    ("A16W8", False): {"ConvInteger": 2}, ("A16W8", True): {"ConvInteger": 2},
}


def conv_cases() -> Iterator[Case]:
    for activation in _ACTIVATIONS:
        for precision in _PRECISIONS:
            yield _mac("conv3x3", precision, "Conv", [1, 4, 6, 6], [8, 4, 3, 3], seed=20, attrs=_PADDED_3X3,
                       activation=activation, bias="aligned", per_channel=True,
                       route=_CONV_ROUTES[precision, activation == "leaky"])
    yield _mac("conv_int8_stride2", "XINT8", "Conv", [1, 3, 9, 9], [5, 3, 3, 3], seed=21,
               attrs={"kernel_shape": [3, 3], "strides": [2, 2]}, x_quant=(np.int8, 0, 2.0**-5))
    for precision in ("XINT8", "A8W8"):
        yield _mac("conv_depthwise", precision, "Conv", [1, 4, 6, 6], [4, 1, 3, 3], seed=22,
                   attrs={**_PADDED_3X3, "group": 4}, bias="aligned", per_channel=True)
        yield _mac("conv_saturating", precision, "Conv", [1, 4, 5, 5], [6, 4, 3, 3], seed=23, attrs=_PADDED_3X3,
                   bias="aligned", saturates=True)
        # 128 x 3 x 3 products of 8-bit codes pass 2**23: one ConvInteger (about as fast as one float32
        # Conv), or where its integer route does not apply (XINT8 half to even) the weight in two
        # base-16 digits, two float32 Convs
        if precision == "XINT8":
            yield _mac("conv_base16_digits", precision, "Conv", [1, 128, 4, 4], [4, 128, 3, 3], seed=24,
                       attrs=_PADDED_3X3, bias="aligned", roundings=("half_even",), route={"Conv": 2, "ConvInteger": 0})
        yield _mac("conv_beyond_float32", precision, "Conv", [1, 128, 4, 4], [4, 128, 3, 3], seed=24,
                   attrs=_PADDED_3X3, bias="aligned", roundings=("half_up",), route={"Conv": 0, "ConvInteger": 1})
    # a bias with a finer position than the accumulator: its whole part in the float32 Conv, its fraction
    # (and DPU_ROUND's half step) added by a 1x1 depthwise Conv after it
    for rounding in ("half_up", "half_even"):
        yield _mac("conv_bias_finer_than_accumulator", "XINT8", "Conv", [1, 4, 6, 6], [8, 4, 3, 3], seed=25,
                   attrs=_PADDED_3X3, bias="finer", roundings=(rounding,), route={"Conv": 2, "ConvInteger": 0})
    yield _conv_fine_bias("conv_fine_bias_ties", bias_bits=2, cut=1)
    # 2**-16 output units, the finest step float32 holds below 128: the largest values saturate exactly,
    # and a tie at 64.5 plus DPU_ROUND's 2**-17 stays above the tie; at 2**-17 (DPU_ROUND's 2**-18) float32
    # would lose that half step and round the tie to even: ConvInteger and the shifted accumulator
    yield _conv_fine_bias("conv_fine_bias_finest", bias_bits=8, cut=8, route={"Conv": 2, "ConvInteger": 0})
    yield _conv_fine_bias_tie(bias_bits=8, route={"Conv": 2, "ConvInteger": 0})
    yield _conv_fine_bias_tie(bias_bits=9, route={"Conv": 0, "ConvInteger": 1})
    # 1024 x 3 x 3 products: beyond the digits; ConvInteger with an integer shift (DPU_ROUND), or float64;
    # uint8 with zero point 128 and int8 outputs (the Cast that wraps modulo 256 must give both), fused
    # activations, saturation
    big = ([1, 1024, 3, 3], [2, 1024, 3, 3])
    yield _mac("conv_integer_shift", "XINT8", "Conv", *big, seed=26, attrs=_PADDED_3X3, bias="aligned",
               roundings=("half_up",), route={"ConvInteger": 1, "BitShift": 1})
    for activation, out_quant, saturates in ((None, (np.int8, 0), True), ("relu", (np.int8, -3), False),
                                             ("clip", (np.uint8, 128), False), ("relu", (np.uint8, 0), True)):
        yield _mac(f"conv_integer_shift_{activation}_{np.dtype(out_quant[0]).name}", "XINT8", "Conv", *big, seed=30,
                   attrs=_PADDED_3X3, bias="finer", activation=activation, out_quant=out_quant, saturates=saturates,
                   roundings=("half_up",), route={"ConvInteger": 1, "BitShift": 1})
    yield _mac("conv_integer_double", "XINT8", "Conv", *big, seed=26, attrs=_PADDED_3X3, bias="aligned",
               roundings=("half_even",), route={"ConvInteger": 1, "BitShift": 0})
    yield _mac("conv_integer_double", "A8W8", "Conv", *big, seed=26, attrs=_PADDED_3X3, bias="aligned",
               route={"ConvInteger": 1, "Round": 1, "BitwiseAnd": 0})
    for precision in _PRECISIONS:
        yield _conv_ties(precision)
    # a bias in a scale of its own is a second term of the requantisation (float64 while exact)
    yield _mac("conv_unaligned_bias", "A8W8", "Conv", [1, 4, 6, 6], [8, 4, 3, 3], seed=27, attrs=_PADDED_3X3,
               bias="unaligned", per_channel=True, route={"ConvInteger": 1, "Round": 1})
    # 16-bit codes x 4608 products x 23-bit multipliers pass 2**53: int64, shifted as uint64 with the
    # parity for half to even (two BitShift), or the exact int64 division with a fused LeakyRelu
    big = ([1, 512, 3, 3], [3, 512, 3, 3])
    for activation, out_quant, saturates in ((None, None, True), ("relu", None, False), ("clip", None, False),
                                             ("relu", (np.uint16, 30000), True), ("leaky", None, False)):
        route = {"ConvInteger": 2, "BitShift": 0 if activation == "leaky" else 2}
        yield _mac(f"conv_16bit_large_reduction_{activation}", "A16W8", "Conv", *big, seed=35, attrs=_PADDED_3X3,
                   bias="unaligned", per_channel=True, activation=activation, out_quant=out_quant,
                   saturates=saturates, route=route)
    yield _mac("conv_uint8", "A8W8", "Conv", [1, 4, 6, 6], [8, 4, 3, 3], seed=28, attrs=_PADDED_3X3,
               bias="aligned", x_quant=(np.uint8, 131, 0.0297))
    # 16-bit codes go through ConvInteger in two bytes; a depthwise convolution through two float32
    # Convs, one per byte (onnxruntime's ConvInteger runs groups one by one)
    yield _mac("conv_uint16", "A16W8", "Conv", [1, 4, 6, 6], [8, 4, 3, 3], seed=29, attrs=_PADDED_3X3,
               bias="unaligned", per_channel=True, x_quant=(np.uint16, 30000, 0.0003), route={"ConvInteger": 2})
    yield _mac("conv_depthwise_16bit", "A16W8", "Conv", [1, 6, 7, 7], [6, 1, 3, 3], seed=36,
               attrs={**_PADDED_3X3, "group": 6}, bias="aligned", per_channel=True, activation="clip",
               route={"Conv": 2, "ConvInteger": 0})


def _conv_ties(precision: str) -> Case:
    """Scales whose ratio s_in*s_w/s_out is 1/2 and small codes: half the results are ties, which
    DPU_ROUND rounds up and the rest half to even (the multiplier C*2**-shift is exactly 1/2)."""
    g = CaseGraph("conv_ties", precision, seed=34)
    dtype, zp, _ = _INPUT[precision]
    x = g.codes("x", [1, 4, 6, 6], 0.25, zp, dtype, low=zp - 8, high=zp + 8)
    w = g.weight("w", g.random_codes([8, 4, 3, 3], np.int8, -2, 2), 2.0**-6)
    y = g.op("Conv", [x, w], under_test=True, **_PADDED_3X3)
    out_dtype, out_zp = _OUTPUT[precision]
    return g.case(g.quantize(y, 2.0**-7, out_zp, out_dtype))


def _conv_fine_bias(name: str, bias_bits: int, cut: int, route: dict[str, int] | None = None) -> Case:
    """XINT8 Conv whose bias sits ``bias_bits`` finer than the accumulator, shifted right by ``cut``.
    A small cut with small codes makes ties (a bias code that is a multiple of 2**bias_bits); a cut
    of 8 with full-range codes saturates the largest outputs."""
    g = CaseGraph(name, "XINT8", seed=35)
    ties = cut < 4
    x = g.codes("x", [1, 4, 6, 6], 0.25 if ties else 2.0**-4, 128, np.uint8, *((120, 136) if ties else ()))
    w_pos = 6 if ties else _XINT8_WEIGHT_POS
    w = g.weight("w", g.random_codes([8, 4, 3, 3], np.int8, *((-2, 2) if ties else ())), 2.0**-w_pos)
    p_acc = (2 if ties else 4) + w_pos
    b = g.weight("b", g.random_codes([8], np.int8, *((-8, 8) if ties else ())), 2.0 ** -(p_acc + bias_bits))
    y = g.op("Conv", [x, w, b], under_test=True, **_PADDED_3X3)
    out = g.quantize(y, 2.0 ** -(p_acc - cut), 128, np.uint8)
    return g.case(out, route=route or {"Conv": 2, "ConvInteger": 0}, saturates=not ties)


def _conv_fine_bias_tie(bias_bits: int, route: dict[str, int]) -> Case:
    """A 1x1 XINT8 Conv cut by 8 bits whose first output is exactly 64.5 (x = 64, weights 127, 127,
    2, 2: 16512 / 256) and whose bias codes are 0 at ``bias_bits`` finer than the accumulator: only
    DPU_ROUND's half step of the finest position decides the tie."""
    g = CaseGraph(f"conv_fine_bias_tie_{bias_bits}", "XINT8", seed=36)
    x = g.codes("x", [1, 4, 3, 3], 2.0**-4, 128, np.uint8, 192, 192)
    w = g.weight("w", np.array([[127, 127, 2, 2], [127, 125, 1, 1]], np.int8).reshape(2, 4, 1, 1), 2.0**-7)
    p_acc = 4 + 7
    b = g.weight("b", np.zeros(2, np.int8), 2.0 ** -(p_acc + bias_bits))
    y = g.op("Conv", [x, w, b], under_test=True, kernel_shape=[1, 1])
    return g.case(g.quantize(y, 2.0 ** -(p_acc - 8), 128, np.uint8), route=route, roundings=("half_up",))


def gemm_cases() -> Iterator[Case]:
    for activation in _ACTIVATIONS:
        for precision in _PRECISIONS:
            yield _mac("gemm", precision, "Gemm", [3, 16], [10, 16], seed=30, attrs={"transB": 1},
                       activation=activation, bias="aligned", per_channel=True)
    for precision in ("XINT8", "A8W8"):
        yield _mac("gemm_not_transposed", precision, "Gemm", [3, 16], [16, 10], seed=31, per_channel=True)
    yield _mac("gemm_unaligned_bias", "A8W8", "Gemm", [3, 16], [10, 16], seed=32, attrs={"transB": 1},
               bias="unaligned", route={"Round": 1})
    yield _mac("gemm_saturating", "A16W8", "Gemm", [3, 16], [10, 16], seed=33, attrs={"transB": 1},
               bias="aligned", per_channel=True, saturates=True)


def matmul_cases() -> Iterator[Case]:
    for activation in _ACTIVATIONS:
        for precision in _PRECISIONS:
            yield _mac("matmul", precision, "MatMul", [2, 3, 12], [12, 5], seed=40, activation=activation,
                       per_channel=True)
    # two activations (attention): a float32 MatMul while small, MatMulInteger beyond, float64 for 16 bits
    yield _mac("matmul_two_activations", "XINT8", "MatMul", [2, 4, 16], [2, 16, 6], seed=41, dynamic=True,
               route={"MatMul": 1, "MatMulInteger": 0})
    yield _mac("matmul_two_activations", "A8W8", "MatMul", [1, 2, 1024], [1, 1024, 3], seed=42, dynamic=True,
               route={"MatMulInteger": 1, "Round": 1})
    yield _mac("matmul_two_activations", "A16W8", "MatMul", [2, 3, 8], [2, 8, 4], seed=43, dynamic=True,
               activation="relu", route={"MatMul": 1, "MatMulInteger": 0})
    # 16384 products of 8-bit codes: too many for float32 even in digits
    for precision, route in (("XINT8", {"MatMulInteger": 1}), ("A8W8", {"MatMulInteger": 1, "Round": 1})):
        yield _mac("matmul_large_reduction", precision, "MatMul", [1, 16384], [16384, 4], seed=44, route=route)
