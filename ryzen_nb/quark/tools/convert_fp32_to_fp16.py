"""``python -m ryzen_nb.quark.tools.convert_fp32_to_fp16 IN OUT [--keep_io_types]``: a float32 model
as float16, with onnxruntime's own converter (``onnxruntime.transformers.float16``)."""

import argparse
import sys
from collections.abc import Sequence

from onnxruntime.transformers.float16 import convert_float_to_float16

from ryzen_nb.graph.io import load_model, model_path_of, save_model
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("convert_fp32_to_fp16", "Convert a float32 ONNX model to float16.")
    _cli.add_path(p, "input", ["--input"], "the float32 model")
    _cli.add_path(p, "output", ["--output"], "where to write the float16 model")
    p.add_argument("--keep_io_types", action="store_true", help="keep float32 inputs and outputs")
    p.add_argument("--disable_shape_infer", action="store_true", help="skip onnx shape inference")
    p.add_argument("--save_as_external_data", action="store_true",
                   help="accepted: models above protobuf's 2 GiB limit are always saved with external data")
    p.add_argument("--all_tensors_to_one_file", action="store_true", help="accepted (external data is one file)")
    p.add_argument("--not_simplify", action="store_true", help="accepted (no simplifier runs)")

    def convert(args: argparse.Namespace) -> None:
        model = convert_float_to_float16(load_model(args.input), keep_io_types=args.keep_io_types,
                                         disable_shape_infer=args.disable_shape_infer)
        print(f"Converted {args.input} to float16: {save_model(model, args.output, protect=model_path_of(args.input))}")

    return _cli.run(p, convert, argv, ("input", "output"))


if __name__ == "__main__":
    sys.exit(main())
