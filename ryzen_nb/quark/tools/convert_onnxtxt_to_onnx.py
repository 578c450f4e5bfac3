"""``python -m ryzen_nb.quark.tools.convert_onnxtxt_to_onnx --input_model IN --output_model OUT``: an ONNX
model between its binary form and protobuf text (what Quark calls onnxtxt), with onnx's own
``textproto`` serialization."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import onnx
from onnx.serialization import registry

from ryzen_nb.errors import ModelError
from ryzen_nb.graph.io import same_file, write_atomic
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("convert_onnxtxt_to_onnx", "Convert an onnxtxt model to onnx.")
    _cli.add_path(p, "input_model", ["--input_model"], "the onnxtxt model")
    _cli.add_path(p, "output_model", ["--output_model"], "where to write the onnx model")

    def convert(args: argparse.Namespace) -> None:
        source, out = Path(args.input_model), Path(args.output_model)
        if not source.is_file():
            raise ModelError(f"The input model {str(source)!r} does not exist.")
        if same_file(source, out):
            raise ModelError(f"The output path is the input model {str(source)!r}; choose another output path.")
        try:
            model = registry.get("textproto").deserialize_proto(source.read_bytes(), onnx.ModelProto())
        except Exception as exc:  # protobuf reports a bad file as DecodeError or ParseError
            raise ModelError(f"Could not read {str(source)!r} as an onnxtxt model ({exc}).") from exc
        write_atomic(out, registry.get("protobuf").serialize_proto(model))
        print(f"Converted {source} to onnx: {out}")

    return _cli.run(p, convert, argv, ("input_model", "output_model"))


if __name__ == "__main__":
    sys.exit(main())
