"""Registry, metadata, and the errors bad input gets."""

from __future__ import annotations

import numpy as np
import pytest

from ryzen_nb import formats
from ryzen_nb.errors import FormatError, RyzenNBError, UnknownNameError

SPELLED = ["BFP16", "MXFP4E2M1", "MX6", "bfloat16", "int8", "uint4", "int32", "float16", "float8_e4m3fn",
           "float8_e5m2", "MXINT8", "MXFP8E4M3", "MXFP8E5M2", "MXFP6E3M2", "MXFP6E2M3", "MX4", "MX9"]


def test_names_as_documented() -> None:
    assert set(SPELLED) <= set(formats.names())
    assert len(formats.names()) == 22


def test_aliases_and_case() -> None:
    assert formats.get("bf16").name == "bfloat16"
    assert formats.get("bfp16").name == "BFP16"
    assert formats.get("fp8_e4m3").name == "float8_e4m3fn"


@pytest.mark.parametrize(
    "name,bits,block,pow2",
    [("BFP16", 9.0, 8, True), ("MX9", 9.0, 16, True), ("MX6", 6.0, 16, True), ("MX4", 4.0, 16, True),
     ("MXFP4E2M1", 4.25, 32, True), ("MXFP6E3M2", 6.25, 32, True), ("MXFP8E4M3", 8.25, 32, True),
     ("MXINT8", 8.25, 32, True), ("bfloat16", 16.0, None, None), ("int8", 8.0, None, None), ("uint4", 4.0, None, None)],
)
def test_metadata(name: str, bits: float, block, pow2) -> None:
    info = formats.get(name).info
    assert info.bits_per_element == bits
    assert info.block_size == block
    assert info.power_of_two_scale is pow2
    assert info.lowering and info.spec


def test_table_lists_every_format() -> None:
    table = formats.table()
    assert list(table.index) == formats.names()
    assert {"bits_per_element", "scale_kind", "block_size", "roundings", "lowering"} <= set(table.columns)


def test_storage_bits() -> None:
    x = np.ones((4, 64), np.float32)
    assert formats.quantize(x, "BFP16", axis=1).storage_bits() == 4 * 64 * 8 + 4 * 8 * 8
    assert formats.quantize(x, "MX6", axis=1).storage_bits() == 4 * 64 * 5 + 4 * 4 * 8 + 4 * 32 * 1
    assert formats.quantize(x, "int8", scale=0.1).storage_bits() == 4 * 64 * 8 + 32


def test_power_of_two_scales() -> None:
    fmt = formats.get("int8")
    s, zp = fmt.scale_from_range(-1.0, 3.0, power_of_two=True)
    assert formats.is_power_of_two(s) and zp == 0
    assert s == np.float32(2.0**-5)  # 3/127 = 0.0236 -> nearest power of two in the log domain: 1/32
    s8, zp8 = formats.get("uint8").scale_from_range(-1.0, 3.0, symmetric=True, power_of_two=True)
    assert zp8 == 128 and s8 == s  # XINT8 activations: uint8 with zero point 128
    formats.check_power_of_two_scale([0.5, 0.25])
    with pytest.raises(FormatError, match="powers of two"):
        formats.check_power_of_two_scale([0.5, 0.3])


# -- bad input ---------------------------------------------------------------------------------------
def test_unknown_format_lists_closest_first() -> None:
    with pytest.raises(UnknownNameError) as info:
        formats.get("MXFP4E1M2")
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, RyzenNBError)
    assert err.choices[0] == "MXFP4E2M1"
    assert "Did you mean 'MXFP4E2M1'" in str(err)
    assert set(err.choices) == set(formats.names())
    with pytest.raises(UnknownNameError, match="'bfloat16'"):
        formats.quantize_dequantize(np.ones(4, np.float32), "bfloat61")


@pytest.mark.parametrize("scale", [0.0, -0.5, np.inf, np.nan, [0.1, 0.0, 0.2]])
def test_bad_scale(scale) -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(FormatError, match="scale must be positive and finite"):
        formats.quantize_dequantize(x, "int8", scale=scale)


def test_scale_shape_and_zero_point_errors() -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(FormatError, match="scale has 2 entries but x has 3 channels along axis 1"):
        formats.quantize_dequantize(x, "int8", scale=[0.1, 0.2])
    with pytest.raises(FormatError, match="zero_point must lie in the int8 range"):
        formats.quantize_dequantize(x, "int8", scale=0.1, zero_point=200)
    with pytest.raises(FormatError, match="zero_point must hold integers"):
        formats.quantize_dequantize(x, "uint8", scale=0.1, zero_point=1.5)
    with pytest.raises(FormatError, match="zero_point has shape"):
        formats.quantize_dequantize(x, "int8", scale=[0.1, 0.2, 0.3], zero_point=[0, 0])
    with pytest.raises(FormatError, match="derives its scales from the data"):
        formats.quantize_dequantize(x, "BFP16", scale=0.1)
    with pytest.raises(FormatError, match="has no zero point"):
        formats.quantize_dequantize(x, "bfloat16", zero_point=3)


@pytest.mark.parametrize("axis", [2, -3, 7])
def test_axis_out_of_range(axis: int) -> None:
    with pytest.raises(FormatError, match=rf"axis={axis} is out of range for a tensor of rank 2"):
        formats.quantize_dequantize(np.ones((2, 3), np.float32), "BFP16", axis=axis)


@pytest.mark.parametrize("x", [np.arange(6).reshape(2, 3), np.ones(3, bool), ["a", "b"], True])
def test_non_float_input(x) -> None:
    with pytest.raises(FormatError, match="x must be a floating-point array"):
        formats.quantize_dequantize(x, "MX9")


def test_float_inputs_of_other_widths_are_accepted() -> None:
    import ml_dtypes

    for dtype in (np.float16, np.float64, ml_dtypes.bfloat16):
        y = formats.quantize_dequantize(np.ones((1, 8), dtype), "BFP16")
        assert y.dtype == np.float32 and np.all(y == 1)
    assert formats.quantize_dequantize([0.1, 0.2], "bfloat16").dtype == np.float32


def test_rounding_errors() -> None:
    x = np.ones((1, 8), np.float32)
    with pytest.raises(FormatError, match="bfloat16 supports rounding \\['half_even'\\]"):
        formats.quantize_dequantize(x, "bfloat16", rounding="half_up")
    with pytest.raises(UnknownNameError, match="rounding mode"):
        formats.quantize_dequantize(x, "BFP16", rounding="stochastic")


def test_options() -> None:
    assert formats.get("BFP16", variant="compiler").variant == "compiler"
    with pytest.raises(UnknownNameError, match="variant"):
        formats.get("BFP16", varient="compiler")
    with pytest.raises(FormatError, match="variant must be one of"):
        formats.get("BFP16", variant="hardware")
    with pytest.raises(UnknownNameError, match="takes no options"):
        formats.get("int8", variant="x")


def test_lowering_needs_constant_scale_for_integers() -> None:
    with pytest.raises(FormatError, match="needs a scale"):
        formats.qdq_model("int8", [2, 3])
