"""The BF16 conversion both ``convert_fp32_to_bf16`` and ``convert_fp16_to_bf16`` run, onto
:func:`ryzen_nb.quantization.bf16.convert_bf16`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ryzen_nb.quantization.bf16 import BF16_FORMATS, convert_bf16
from ryzen_nb.quark.tools import _cli

#: Quark 0.x's name of the custom-QDQ format
_ALIASES = {"vitisqdq": "customqdq"}


def main(tool: str, source: str, argv: Sequence[str] | None) -> int:
    p = _cli.parser(tool, f"Convert a {source} ONNX model to BFloat16.")
    _cli.add_path(p, "input", ["--input"], f"the {source} model")
    _cli.add_path(p, "output", ["--output"], "where to write the BF16 model")
    p.add_argument("--format", default="with_cast", choices=[*BF16_FORMATS, *_ALIASES],
                   help="with_cast (default): Cast pairs, runs on any onnxruntime; bf16: bf16 inside; simulate_bf16: "
                        "bf16 weights stored as float32; customqdq (vitisqdq): one quantizer node per tensor")
    p.add_argument("--save_as_external_data", action="store_true",
                   help="accepted: models above protobuf's 2 GiB limit are always saved with external data")

    def convert(args: argparse.Namespace) -> None:
        result = convert_bf16(args.input, args.output, _ALIASES.get(args.format, args.format))
        print(f"Converted {args.input} to BF16 ({result.format}): {result.output_path}")
        if not result.runs_on_cpu:
            print(f"Note: plain onnxruntime on CPU cannot run this model ({result.cpu_message}); --format with_cast "
                  "runs anywhere.")

    return _cli.run(p, convert, argv, ("input", "output"))
