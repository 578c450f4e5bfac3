"""The enums of AMD Quark's ONNX API (and onnxruntime's), so configs move over by changing imports.

Values are plain strings; anywhere the config takes one of these it also takes the bare string
(``"QUInt8"``, ``"MinMSE"``), onnxruntime's own enum members (matched by name), or — for types —
a ryzen-nb format name such as ``"BFP16"`` or ``"MXFP4E2M1"``.

Quark defines ``ExtendedQuantType`` and the deprecated ``VitisQuantType`` as two enums with the
same members; here both are :class:`QuantType`, which holds onnxruntime's members and Quark's.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "QuantType",
    "ExtendedQuantType",
    "VitisQuantType",
    "CalibrationMethod",
    "PowerOfTwoMethod",
    "Int16Method",
    "LayerWiseMethod",
    "ExtendedCalibrationMethod",
    "QuantFormat",
    "ExtendedQuantFormat",
    "VitisQuantFormat",
]


class _StrEnum(str, Enum):
    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    @classmethod
    def from_string(cls, name: str) -> _StrEnum:
        """The member called ``name`` (Quark's ``from_string``)."""
        return cls[name]


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


class Int16Method(_StrEnum):
    """Quark's int16-scale method: calibrated as MinMax (the int16 scale format itself is not
    written by ryzen-nb; ``Int16Scale`` is rejected)."""

    MinMax = "MinMax"


class LayerWiseMethod(_StrEnum):
    """Quark's layer-wise percentile search, which ryzen-nb lacks: the config rejects it with the
    list of the methods there are (Percentile is the closest)."""

    LayerWisePercentile = "LayerWisePercentile"


class ExtendedCalibrationMethod(_StrEnum):
    """Quark's MinMSE for float scales. As ``extra_options["WeightCalibrateMethod"]`` it is the
    float-scale weight search (calibration.methods.minmse_float_range); as ``calibrate_method`` the
    config reads members by name, so it is ryzen-nb's MinMSE, which searches power-of-two scales
    (a listed difference from Quark)."""

    MinMSE = "MinMSE"


class QuantFormat(_StrEnum):
    QDQ = "QDQ"
    QOperator = "QOperator"


ExtendedQuantFormat = QuantFormat


class VitisQuantFormat(_StrEnum):
    """Quark's deprecated formats: QDQ works; the FixNeuron formats (vai_q_onnx) are rejected by
    the config with an error saying ryzen-nb writes QDQ."""

    QDQ = "QDQ"
    FixNeuron = "FixNeuron"
    BFPFixNeuron = "BFPFixNeuron"
    MXFixNeuron = "MXFixNeuron"
