"""Writes quark_block_formats.npz: AMD Quark 0.13's own custom operators (MXQuantizeDequantize,
BFPQuantizeDequantize, from ``quark.onnx.get_library_path``) on one tensor, for
tests/compat/test_block_formats_vs_quark.py. Run where amd-quark is installed (ryzen-nb never
imports it): ``python tests/compat/data/make_quark_block_formats.py``.

The attributes are those of Quark's presets (docs/quark.md#built-in-configs): MX with blocks of 32
along axis 1; BFP16 to_bfp, 16 bits, blocks of 8; MX4/MX6/MX9 to_bfp_prime, 11/13/16 bits, blocks
of 16, sub-blocks of 2, one shift bit; rounding_mode 2 (half to even) everywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import helper
from quark.onnx import get_library_path

QUARK_DOMAIN = "com.amd.quark"


def tensor() -> np.ndarray:
    """Values over eight decades, per channel, with ties, a zero block and values near float32's top."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 64, 4, 4)) * np.exp(rng.uniform(-4, 4, (2, 64, 1, 1)))).astype(np.float32)
    x[0, :8, 0, 0] = [0.75, 1.25, -2.5, 3.0, 0.0, 1e-30, -0.375, 6.0]
    x[1, :32, 1, 1] = 0.0
    x[1, 32:, 2, 2] = np.float32(3e37)
    return x


def quark_op(x: np.ndarray, op: str, **attributes) -> np.ndarray:
    node = helper.make_node(op, ["x"], ["y"], domain=QUARK_DOMAIN, **attributes)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", 1, list(x.shape))],
                              [helper.make_tensor_value_info("y", 1, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(QUARK_DOMAIN, 1)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.register_custom_ops_library(get_library_path("CPU"))
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def main() -> None:
    x = tensor()
    out = {"x": x}
    for element in ("fp4_e2m1", "fp6_e2m3", "fp6_e3m2", "fp8_e4m3", "fp8_e5m2", "int8"):
        out[f"mx_{element}"] = quark_op(x, "MXQuantizeDequantize", axis=1, block_size=32, element_dtype=element,
                                        rounding_mode=2)
    out["bfp16"] = quark_op(x, "BFPQuantizeDequantize", bfp_method="to_bfp", axis=1, bit_width=16, block_size=8,
                            rounding_mode=2)
    for name, bits in (("mx4", 11), ("mx6", 13), ("mx9", 16)):
        out[name] = quark_op(x, "BFPQuantizeDequantize", bfp_method="to_bfp_prime", axis=1, bit_width=bits,
                             block_size=16, sub_block_size=2, sub_block_shift_bits=1, rounding_mode=2)
    np.savez_compressed(Path(__file__).with_name("quark_block_formats.npz"), **out)


if __name__ == "__main__":
    main()
