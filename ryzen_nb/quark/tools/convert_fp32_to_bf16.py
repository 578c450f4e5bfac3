"""``python -m ryzen_nb.quark.tools.convert_fp32_to_bf16 --input IN --output OUT [--format with_cast]``:
a FP32 model to BFloat16, as Quark's tool of the same name."""

import sys
from collections.abc import Sequence

from ryzen_nb.quark.tools import _bf16


def main(argv: Sequence[str] | None = None) -> int:
    return _bf16.main("convert_fp32_to_bf16", "FP32", argv)


if __name__ == "__main__":
    sys.exit(main())
