"""``python -m ryzen_nb.quark.tools.fix_shapes``: Quark's tool of this name has no ryzen-nb
counterpart; running it says why in one line (exit code 2)."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _cli

REASON = ("ryzen-nb fixes dynamic input shapes while quantizing: pass input_shapes={'input': [1, 3, 224, 224]} to "
          "ModelQuantizer.quantize_model or ryzen_nb.quantize (ryzen-nb quantize --input-shape on the command line).")


def main(argv: Sequence[str] | None = None) -> int:
    return _cli.unavailable("fix_shapes", REASON, argv)


if __name__ == "__main__":
    sys.exit(main())
