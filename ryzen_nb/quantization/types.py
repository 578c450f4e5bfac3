"""The enums of AMD Quark's ONNX API (and onnxruntime's), so configs move over by changing imports.

Values are plain strings; anywhere the config takes one of these it also takes the bare string
(``"QUInt8"``, ``"MinMSE"``), onnxruntime's own enum members (matched by name), or — for types —
a ryzen-nb format name such as ``"BFP16"`` or ``"MXFP4E2M1"``.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "QuantType",
    "ExtendedQuantType",
    "VitisQuantType",
    "CalibrationMethod",
    "PowerOfTwoMethod",
    "QuantFormat",
    "ExtendedQuantFormat",
    "VitisQuantFormat",
    "QUANT_TYPE_FORMATS",
]


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class QuantType(_StrEnum):
    """Tensor types (onnxruntime's QuantType plus Quark's ExtendedQuantType members)."""

    QInt4 = "QInt4"
    QUInt4 = "QUInt4"
    QInt8 = "QInt8"
    QUInt8 = "QUInt8"
    QInt16 = "QInt16"
    QUInt16 = "QUInt16"
    QInt32 = "QInt32"
    QUInt32 = "QUInt32"
    QFloat16 = "QFloat16"
    QBFloat16 = "QBFloat16"
    QFLOAT8E4M3FN = "QFLOAT8E4M3FN"
    QFLOAT8E5M2 = "QFLOAT8E5M2"
    QBFP = "QBFP"  #: AMD block floating point; which one is set by extra_options["BFPAttributes"]
    QMX = "QMX"  #: OCP microscaling; the element type is set by extra_options["MXAttributes"]


ExtendedQuantType = QuantType
VitisQuantType = QuantType

#: QuantType -> ryzen-nb format name (QBFP/QMX resolve through their attributes)
QUANT_TYPE_FORMATS = {
    "QInt4": "int4",
    "QUInt4": "uint4",
    "QInt8": "int8",
    "QUInt8": "uint8",
    "QInt16": "int16",
    "QUInt16": "uint16",
    "QInt32": "int32",
    "QUInt32": "uint32",
    "QFloat16": "float16",
    "QBFloat16": "bfloat16",
    "QFLOAT8E4M3FN": "float8_e4m3fn",
    "QFLOAT8E5M2": "float8_e5m2",
}


class CalibrationMethod(_StrEnum):
    """Float-scale calibration methods (onnxruntime names)."""

    MinMax = "MinMax"
    Entropy = "Entropy"
    Percentile = "Percentile"
    Distribution = "Distribution"


class PowerOfTwoMethod(_StrEnum):
    """Power-of-two calibration methods (Quark names), for XINT8 and the X1 compiler."""

    NonOverflow = "NonOverflow"
    MinMSE = "MinMSE"


class QuantFormat(_StrEnum):
    QDQ = "QDQ"
    QOperator = "QOperator"


ExtendedQuantFormat = QuantFormat
VitisQuantFormat = QuantFormat
