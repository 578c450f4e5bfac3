"""``python -m ryzen_nb.quark.tools.convert_bias_int32_to_int16``: Quark's tool of this name has no ryzen-nb counterpart;
running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = "int16 biases are a Quark feature ryzen-nb lacks (Int16Bias): ryzen-nb writes int32 biases."


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("convert_bias_int32_to_int16", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
