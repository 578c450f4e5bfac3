"""``python -m ryzen_nb.quark.tools.convert_fp16_to_fp32 --input IN --output OUT``: a float16 model
as float32, inputs and outputs included, as Quark's tool."""

import argparse
import sys
from collections.abc import Sequence

from ryzen_nb.graph.convert import float16_to_float32
from ryzen_nb.graph.io import load_model, model_path_of, save_model
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("convert_fp16_to_fp32", "Convert a float16 ONNX model to float32.")
    _cli.add_path(p, "input", ["--input"], "the float16 model")
    _cli.add_path(p, "output", ["--output"], "where to write the float32 model")
    p.add_argument("--save_as_external_data", action="store_true",
                   help="accepted: models above protobuf's 2 GiB limit are always saved with external data")

    def convert(args: argparse.Namespace) -> None:
        out = save_model(float16_to_float32(load_model(args.input), keep_io_types=False), args.output,
                         protect=model_path_of(args.input))
        print(f"Converted {args.input} to float32: {out}")

    return _cli.run(p, convert, argv, ("input", "output"))


if __name__ == "__main__":
    sys.exit(main())
