"""``python -m ryzen_nb.quark.tools.convert_a8w8_npu_to_a8w8_cpu``: Quark's tool of this name has no ryzen-nb counterpart;
running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = "ryzen-nb's A8W8 models are standard QDQ ONNX that runs on the CPU as it is; there is nothing to convert."


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("convert_a8w8_npu_to_a8w8_cpu", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
