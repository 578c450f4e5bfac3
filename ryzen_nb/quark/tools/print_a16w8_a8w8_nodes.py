"""``python -m ryzen_nb.quark.tools.print_a16w8_a8w8_nodes MODEL``: the Conv, ConvTranspose, Gemm and
MatMul nodes of a mixed-precision model by activation width (int8: A8W8 and XINT8; int16: A16W8),
as Quark's tool prints them. The precisions are read from the quantizers around each node by
:mod:`ryzen_nb.npu`'s partitioner."""

import argparse
import sys
from collections.abc import Sequence

from ryzen_nb import npu
from ryzen_nb.quark.tools import _cli
from ryzen_nb.spec.operators import MAC_OPS

_WIDTH = {"XINT8": "int8", "A8W8": "int8", "A16W8": "int16"}


def a16w8_a8w8_nodes(model: str) -> tuple[list[str], list[str]]:
    """(int8-activation node names, int16-activation node names) of the MAC nodes of ``model``."""
    program = npu.compile(model)
    found: dict[str, list[str]] = {"int8": [], "int16": []}
    for node in program.nodes:
        if node.op_type in MAC_OPS and node.precision in _WIDTH:
            found[_WIDTH[node.precision]].append(node.name)
    return found["int8"], found["int16"]


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("print_a16w8_a8w8_nodes", "Print the A8W8 and A16W8 Conv/Gemm/MatMul nodes of a model.")
    _cli.add_path(p, "input", ["--input"], "the quantized model")

    def show(args: argparse.Namespace) -> None:
        int8, int16 = a16w8_a8w8_nodes(args.input)
        print("int8 activation node names:", *int8, sep="\n")
        print("int16 activation node names:", *int16, sep="\n")
        print("int8 activation node count: ", len(int8))
        print("int16 activation node count: ", len(int16))

    return _cli.run(p, show, argv, ("input",))


if __name__ == "__main__":
    sys.exit(main())
