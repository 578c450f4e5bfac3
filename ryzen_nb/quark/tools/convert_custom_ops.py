"""``python -m ryzen_nb.quark.tools.convert_custom_ops``: Quark's tool of this name has no ryzen-nb counterpart;
running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = "ryzen-nb's models contain no Quark or Vitis custom operators; there is nothing to convert."


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("convert_custom_ops", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
