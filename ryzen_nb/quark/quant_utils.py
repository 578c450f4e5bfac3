"""``quark.onnx.quant_utils``, where Quark 0.x (and the Ryzen AI examples) import the quant type
enums, ``PowerOfTwoMethod`` and the data readers from; the same names as
:mod:`ryzen_nb.quark.quantization.quant_utils`."""

from ryzen_nb.quark.quantization.quant_utils import (
    COP_DOMAIN,
    COP_VERSION,
    CachedDataReader,
    ExtendedQuantFormat,
    ExtendedQuantType,
    Int16Method,
    PathDataReader,
    PowerOfTwoMethod,
    RandomDataReader,
    VitisQuantFormat,
    VitisQuantType,
    create_infer_session_for_onnx_model,
    dump_model,
    is_ort_version_below,
    is_version_below,
)

__all__ = ["ExtendedQuantType", "ExtendedQuantFormat", "VitisQuantType", "VitisQuantFormat", "PowerOfTwoMethod",
           "Int16Method", "CachedDataReader", "RandomDataReader", "PathDataReader", "dump_model", "is_version_below",
           "is_ort_version_below", "create_infer_session_for_onnx_model", "COP_DOMAIN", "COP_VERSION"]
