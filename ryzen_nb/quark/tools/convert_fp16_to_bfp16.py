"""``python -m ryzen_nb.quark.tools.convert_fp16_to_bfp16 --input IN --output OUT``: a FP16 model
quantized to BFP16 (blocks of 8 sharing an exponent; no calibration data needed), as Quark's tool."""

import argparse
import sys
from collections.abc import Sequence

from ryzen_nb.pipeline import quantize
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("convert_fp16_to_bfp16", "Convert a FP16 ONNX model to BFP16.")
    _cli.add_path(p, "input", ["--input"], "the FP16 model")
    _cli.add_path(p, "output", ["--output"], "where to write the BFP16 model")
    p.add_argument("--save_as_external_data", action="store_true",
                   help="accepted: models above protobuf's 2 GiB limit are always saved with external data")

    def convert(args: argparse.Namespace) -> None:
        summary = quantize(args.input, args.output, "BFP16", progress=False)
        print(f"Converted {args.input} to BFP16: {summary.output_path}")

    return _cli.run(p, convert, argv, ("input", "output"))


if __name__ == "__main__":
    sys.exit(main())
