"""``python -m ryzen_nb.quark.tools.convert_u16u8_to_u8u8``: Quark's tool of this name has no ryzen-nb counterpart;
running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = "converting a U16U8 model to U8U8 without calibration is a Quark feature ryzen-nb lacks: quantize the float model again with an 8-bit preset."


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("convert_u16u8_to_u8u8", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
