"""ryzen-nb's block formats against AMD Quark's own custom operators, on the numbers Quark 0.13's
MXQuantizeDequantize and BFPQuantizeDequantize gave (tests/compat/data/quark_block_formats.npz,
written by make_quark_block_formats.py where amd-quark is installed): MX with each of its six
element types, BFP16 and MX4/MX6/MX9, on values over eight decades with ties, a zero block and
values near float32's top. The numpy reference and the ONNX lowering a plain onnxruntime runs must
both give Quark's numbers, value for value. Bit for bit but for the sign of zero: where a negative
value rounds to zero, Quark's operators write +0 and ryzen-nb writes -0, as IEEE rounding (and
onnxruntime's Cast to bfloat16 or float8) does; the test allows that difference and no other."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ryzen_nb import formats
from tests.helpers import run

QUARK = np.load(Path(__file__).with_name("data") / "quark_block_formats.npz")
#: the fixture's key -> ryzen-nb's format name
FORMATS = {"mx_fp4_e2m1": "MXFP4E2M1", "mx_fp6_e2m3": "MXFP6E2M3", "mx_fp6_e3m2": "MXFP6E3M2",
           "mx_fp8_e4m3": "MXFP8E4M3", "mx_fp8_e5m2": "MXFP8E5M2", "mx_int8": "MXINT8", "bfp16": "BFP16",
           "mx4": "MX4", "mx6": "MX6", "mx9": "MX9"}


@pytest.mark.parametrize("key", sorted(FORMATS))
def test_block_format_gives_quarks_numbers(key: str) -> None:
    x, want = QUARK["x"], QUARK[key]
    fmt = formats.get(FORMATS[key])
    for how, got in (("numpy reference", fmt.quantize_dequantize(x, axis=1)),
                     ("ONNX lowering", run(formats.qdq_model(fmt, list(x.shape), axis=1), x=x))):
        np.testing.assert_array_equal(got, want, err_msg=f"{fmt.name}: {how}")
        bits_differ = got.view(np.uint32) != want.view(np.uint32)
        # only zeros whose sign differs: -0 here for a negative value that rounds to zero, +0 in Quark's
        assert np.all(got[bits_differ] == 0) and np.all(x[bits_differ] < 0) and np.all(np.signbit(got[bits_differ]))


def test_the_fixture_holds_what_it_claims() -> None:
    """The edge cases are in the tensor, and the formats differ from each other on it (a fixture of
    copies would pass any implementation)."""
    x = QUARK["x"]
    assert (x[1, :32, 1, 1] == 0).all() and (x[1, 32:, 2, 2] > 1e37).all()
    outputs = [QUARK[k] for k in FORMATS]
    assert all(not np.array_equal(a, b) for i, a in enumerate(outputs) for b in outputs[i + 1:])
    assert all(not np.array_equal(out, x) for out in outputs)
