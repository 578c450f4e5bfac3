"""``python -m ryzen_nb.quark.tools.replace_inf_weights --input_model IN --output_model OUT
[--replace_inf_value 10000.0]``: float weights holding +inf / -inf get +value / -value, as Quark's
tool (an infinite weight makes every range, and so every scale, infinite)."""

import argparse
import sys
from collections.abc import Sequence

import numpy as np
from onnx import numpy_helper

from ryzen_nb.graph.io import load_model, model_path_of, save_model
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("replace_inf_weights", "Replace inf and -inf in the weights of an ONNX model.")
    p.add_argument("--input_model", required=True, help="the model")
    p.add_argument("--output_model", required=True, help="where to write the model")
    p.add_argument("--replace_inf_value", type=float, default=10000.0,
                   help="inf becomes this value, -inf its negative (default 10000.0, Quark's)")

    def replace(args: argparse.Namespace) -> None:
        model = load_model(args.input_model)
        changed = 0
        for i, tensor in enumerate(model.graph.initializer):
            value = numpy_helper.to_array(tensor)
            if value.dtype.kind == "f" and np.isinf(value).any():
                changed += int(np.isinf(value).sum())
                fixed = np.where(np.isinf(value), np.sign(value) * args.replace_inf_value, value).astype(value.dtype)
                model.graph.initializer[i].CopyFrom(numpy_helper.from_array(fixed, tensor.name))
        out = save_model(model, args.output_model, protect=model_path_of(args.input_model))
        print(f"Replaced {changed} infinite weight value(s): {out}")

    return _cli.run(p, replace, argv)


if __name__ == "__main__":
    sys.exit(main())
