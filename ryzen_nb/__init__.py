"""ryzen-nb: quantize ONNX models the way AMD Ryzen AI expects, emulate the NPU, compare in Jupyter."""

from __future__ import annotations

__version__ = "0.1.0"

from ryzen_nb import formats
from ryzen_nb.errors import FormatError, RyzenNBError, UnknownNameError

__all__ = ["FormatError", "RyzenNBError", "UnknownNameError", "__version__", "formats"]
