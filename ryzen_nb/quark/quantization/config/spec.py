"""Quark's tensor and layer specs (``quark.onnx.quantization.config.spec``): ``QTensorConfig``, the
``*Spec`` presets (``Int8Spec``, ``XInt8Spec``, ``BFloat16Spec``, ``MX6Spec``...) and ``QLayerConfig``.

Defaults are Quark's: integer specs calibrate with Percentile on float scales (``XInt8Spec``: MinMSE
on power-of-two scales), the float and block specs with MinMax; signed specs are symmetric.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from ryzen_nb.quark.quantization.config.data_type import (
    BFP16,
    MX4,
    MX6,
    MX9,
    MXFP4E2M1,
    MXFP6E2M3,
    MXFP6E3M2,
    MXFP8E4M3,
    MXFP8E5M2,
    BFloat16,
    DataType,
    Float16,
    Int4,
    Int8,
    Int16,
    Int32,
    MXInt8,
    UInt4,
    UInt8,
    UInt16,
    UInt32,
)

__all__ = [
    "CalibMethod", "ScaleType", "QuantGranularity", "QTensorConfig", "QLayerConfig",
    "Int4Spec", "UInt4Spec", "Int8Spec", "UInt8Spec", "XInt8Spec", "Int16Spec", "UInt16Spec", "Int32Spec",
    "UInt32Spec", "Float16Spec", "BFloat16Spec", "BFP16Spec", "MX4Spec", "MX6Spec", "MX9Spec", "MXInt8Spec",
    "MXFP8E4M3Spec", "MXFP8E5M2Spec", "MXFP6E3M2Spec", "MXFP6E2M3Spec", "MXFP4E2M1Spec",
]


class CalibMethod(Enum):
    MinMax = 0
    MinMSE = 1
    Percentile = 2
    Entropy = 3
    LayerwisePercentile = 4
    Distribution = 5


class ScaleType(Enum):
    Float32 = 0
    PowerOf2 = 1
    Int16 = 2


class QuantGranularity(Enum):
    Tensor = 0
    Channel = 1
    Group = 2


class QTensorConfig:
    """How one kind of tensor is quantized: symmetry, scale type, calibration method, granularity
    and data type (a class of :mod:`~ryzen_nb.quark.quantization.config.data_type`)."""

    def __init__(self, symmetric: bool = True, scale_type: ScaleType = ScaleType.Float32,
                 calibration_method: CalibMethod = CalibMethod.MinMax,
                 quant_granularity: QuantGranularity = QuantGranularity.Tensor,
                 data_type: type[DataType] | DataType = Int8) -> None:
        self.symmetric = symmetric
        self.scale_type = scale_type
        self.calibration_method = calibration_method
        self.quant_granularity = quant_granularity
        self.data_type = data_type

    def set_symmetric(self, symmetric: bool) -> None:
        self.symmetric = symmetric

    def set_scale_type(self, scale_type: ScaleType) -> None:
        self.scale_type = scale_type

    def set_calibration_method(self, calibration_method: CalibMethod) -> None:
        self.calibration_method = calibration_method

    def set_quant_granularity(self, quant_granularity: QuantGranularity) -> None:
        self.quant_granularity = quant_granularity

    def set_data_type(self, data_type: type[DataType] | DataType) -> None:
        self.data_type = data_type

    def to_dict(self) -> dict[str, Any]:
        dtype = self.data_type if isinstance(self.data_type, type) else type(self.data_type)
        return {"symmetric": self.symmetric, "scale_type": str(self.scale_type),
                "calibration_method": str(self.calibration_method),
                "quant_granularity": str(self.quant_granularity), "data_type": dtype.__name__}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QTensorConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        d = self.to_dict()
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in d.items())})"


def _spec(name: str, dtype: type[DataType], symmetric: bool = True, scale: ScaleType = ScaleType.Float32,
          method: CalibMethod = CalibMethod.Percentile) -> type[QTensorConfig]:
    def __init__(self: QTensorConfig, symmetric: bool = symmetric, scale_type: ScaleType = scale,
                 calibration_method: CalibMethod = method, quant_granularity: QuantGranularity = QuantGranularity.Tensor,
                 data_type: type[DataType] | DataType = dtype) -> None:
        QTensorConfig.__init__(self, symmetric, scale_type, calibration_method, quant_granularity, data_type)

    return type(name, (QTensorConfig,), {"__init__": __init__, "__module__": __name__,
                                         "__doc__": f"{dtype.__name__} tensors (Quark's {name})."})


_MINMAX = CalibMethod.MinMax
Int4Spec = _spec("Int4Spec", Int4)
UInt4Spec = _spec("UInt4Spec", UInt4, symmetric=False)
Int8Spec = _spec("Int8Spec", Int8)
UInt8Spec = _spec("UInt8Spec", UInt8, symmetric=False)
XInt8Spec = _spec("XInt8Spec", Int8, scale=ScaleType.PowerOf2, method=CalibMethod.MinMSE)
Int16Spec = _spec("Int16Spec", Int16)
UInt16Spec = _spec("UInt16Spec", UInt16, symmetric=False)
Int32Spec = _spec("Int32Spec", Int32)
UInt32Spec = _spec("UInt32Spec", UInt32, symmetric=False)
Float16Spec = _spec("Float16Spec", Float16, method=_MINMAX)
BFloat16Spec = _spec("BFloat16Spec", BFloat16, method=_MINMAX)
BFP16Spec = _spec("BFP16Spec", BFP16, method=_MINMAX)
MX4Spec = _spec("MX4Spec", MX4, method=_MINMAX)
MX6Spec = _spec("MX6Spec", MX6, method=_MINMAX)
MX9Spec = _spec("MX9Spec", MX9, method=_MINMAX)
MXInt8Spec = _spec("MXInt8Spec", MXInt8, method=_MINMAX)
MXFP8E4M3Spec = _spec("MXFP8E4M3Spec", MXFP8E4M3, method=_MINMAX)
MXFP8E5M2Spec = _spec("MXFP8E5M2Spec", MXFP8E5M2, method=_MINMAX)
MXFP6E3M2Spec = _spec("MXFP6E3M2Spec", MXFP6E3M2, method=_MINMAX)
MXFP6E2M3Spec = _spec("MXFP6E2M3Spec", MXFP6E2M3, method=_MINMAX)
MXFP4E2M1Spec = _spec("MXFP4E2M1Spec", MXFP4E2M1, method=_MINMAX)


@dataclass(eq=False)  # compared and hashed by identity: a QLayerConfig keys Quark's layer-config dicts
class QLayerConfig:
    """Specs of one layer's tensors. ``activation`` is the name Quark's examples use; newer Quark
    calls it ``input_tensors`` (either works)."""

    input_tensors: QTensorConfig | None = None
    activation: QTensorConfig | None = None
    weight: QTensorConfig | None = None
    bias: QTensorConfig | None = None
    output_tensors: QTensorConfig | None = None

    @property
    def activation_spec(self) -> QTensorConfig | None:
        """The activation spec under either name."""
        return self.input_tensors or self.activation

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name).to_dict() for f in fields(self) if getattr(self, f.name) is not None}
