"""``python -m ryzen_nb.quark.tools.convert_nchw_to_nhwc``: Quark's tool of this name has no ryzen-nb counterpart;
running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = "NCHW to NHWC conversion is a Quark feature ryzen-nb lacks: ryzen-nb quantizes a model in the layout it has."


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("convert_nchw_to_nhwc", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
