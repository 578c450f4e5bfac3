"""Quark's custom-op library (``quark.onnx.operators.custom_ops``): scripts written for Quark
register it before running a quantized model::

    sess_options.register_custom_ops_library(get_library_path())

ryzen-nb's models are standard ONNX (plus model-local functions), so they need no custom op. To
keep that line working without compiling anything, :func:`get_library_path` returns the prebuilt
operator library of ``onnxruntime-extensions`` — a library onnxruntime accepts, and which adds
only its own ``ai.onnx.contrib`` operators — when that package is installed; without it, the
call is an error telling the user to delete the line.
"""

from __future__ import annotations

from ryzen_nb.errors import ConfigError

__all__ = ["get_library_path", "_COP_DOMAIN", "_COP_VERSION", "_COP_QUANT_OP_NAME", "_COP_DEQUANT_OP_NAME",
           "_COP_BFP_OP_NAME", "_COP_MX_OP_NAME"]

# Quark's names for its operators; ryzen-nb's models never contain them
_COP_DOMAIN = "com.amd.quark"
_COP_VERSION = 1
_COP_QUANT_OP_NAME = "ExtendedQuantizeLinear"
_COP_DEQUANT_OP_NAME = "ExtendedDequantizeLinear"
_COP_BFP_OP_NAME = "BFPQuantizeDequantize"
_COP_MX_OP_NAME = "MXQuantizeDequantize"

_DEVICES = ("CPU", "CUDA", "ROCM")


def get_library_path(device: str = "CPU", lib: str = "custom_ops") -> str:
    """A custom-op library path for ``SessionOptions.register_custom_ops_library``.

    Any ``device`` gives the same library: ryzen-nb's models run on any execution provider without
    custom operators. ``lib`` (Quark's library variant) is accepted for compatibility.
    """
    if str(device).upper() not in _DEVICES:
        raise ConfigError(f"get_library_path(device={device!r}): the device is one of {', '.join(_DEVICES)}.")
    try:
        import onnxruntime_extensions  # optional: only this call needs it
    except ImportError:
        raise ConfigError(
            "ryzen-nb's models need no custom-op library: delete the register_custom_ops_library(get_library_path()) "
            "line (or `pip install onnxruntime-extensions` to keep it working unchanged).") from None
    return str(onnxruntime_extensions.get_library_path())
