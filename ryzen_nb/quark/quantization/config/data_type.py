"""Quark's data-type classes (``quark.onnx.quantization.config.data_type``): ``Int8``, ``BFloat16``,
``BFP16``, ``MX6``, ``MXFP4E2M1``...

As in Quark, a spec takes the class itself (``Int8Spec(data_type=Int8)``) — an instance works too.
Each class names the legacy quant type it stands for (``map_onnx_format``); the block types also
name the ryzen-nb preset whose ``BFPAttributes`` / ``MXAttributes`` they take, so the block layout
(block size, shared exponent, element type) is defined once, in the presets.
"""

from __future__ import annotations

from typing import Any, ClassVar

from onnx import TensorProto

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.quantization.config import get_default_config
from ryzen_nb.quark.types import QuantType

__all__ = [
    "DataType", "Int4", "UInt4", "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Float16", "BFloat16",
    "BFP16", "MX4", "MX6", "MX9", "MXInt8", "MXFP8E4M3", "MXFP8E5M2", "MXFP6E3M2", "MXFP6E2M3", "MXFP4E2M1",
    "parse_data_type", "block_attributes",
]


class DataType:
    """Base of the data types: ``map_onnx_format`` is the legacy ``QuantType`` the type stands for,
    ``onnx_proto_dtype`` the ONNX element type of its codes (UNDEFINED for block formats)."""

    map_onnx_format: ClassVar[QuantType]
    onnx_proto_dtype: ClassVar[int] = TensorProto.UNDEFINED
    #: the ryzen-nb preset holding the BFPAttributes / MXAttributes of a block type
    preset: ClassVar[str | None] = None


def _dtype(name: str, qtype: QuantType, proto: int = TensorProto.UNDEFINED, preset: str | None = None) -> type[DataType]:
    doc = f"{name}: {qtype.value}" + (f" with the block layout of the {preset} preset" if preset else "") + "."
    return type(name, (DataType,), {"map_onnx_format": qtype, "onnx_proto_dtype": proto, "preset": preset,
                                    "__doc__": doc, "__module__": __name__})


Int4 = _dtype("Int4", QuantType.QInt4, TensorProto.INT4)
UInt4 = _dtype("UInt4", QuantType.QUInt4, TensorProto.UINT4)
Int8 = _dtype("Int8", QuantType.QInt8, TensorProto.INT8)
UInt8 = _dtype("UInt8", QuantType.QUInt8, TensorProto.UINT8)
Int16 = _dtype("Int16", QuantType.QInt16, TensorProto.INT16)
UInt16 = _dtype("UInt16", QuantType.QUInt16, TensorProto.UINT16)
Int32 = _dtype("Int32", QuantType.QInt32, TensorProto.INT32)
UInt32 = _dtype("UInt32", QuantType.QUInt32, TensorProto.UINT32)
Float16 = _dtype("Float16", QuantType.QFloat16, TensorProto.FLOAT16)
BFloat16 = _dtype("BFloat16", QuantType.QBFloat16, TensorProto.BFLOAT16)
BFP16 = _dtype("BFP16", QuantType.QBFP, preset="BFP16")
MX4 = _dtype("MX4", QuantType.QBFP, preset="MX4")
MX6 = _dtype("MX6", QuantType.QBFP, preset="MX6")
MX9 = _dtype("MX9", QuantType.QBFP, preset="MX9")
MXInt8 = _dtype("MXInt8", QuantType.QMX, preset="MXINT8")
MXFP8E4M3 = _dtype("MXFP8E4M3", QuantType.QMX, preset="MXFP8E4M3")
MXFP8E5M2 = _dtype("MXFP8E5M2", QuantType.QMX, preset="MXFP8E5M2")
MXFP6E3M2 = _dtype("MXFP6E3M2", QuantType.QMX, preset="MXFP6E3M2")
MXFP6E2M3 = _dtype("MXFP6E2M3", QuantType.QMX, preset="MXFP6E2M3")
MXFP4E2M1 = _dtype("MXFP4E2M1", QuantType.QMX, preset="MXFP4E2M1")

_BY_NAME: dict[str, type[DataType]] = {
    c.__name__: c for c in (Int4, UInt4, Int8, UInt8, Int16, UInt16, Int32, UInt32, Float16, BFloat16, BFP16, MX4,
                            MX6, MX9, MXInt8, MXFP8E4M3, MXFP8E5M2, MXFP6E3M2, MXFP6E2M3, MXFP4E2M1)
}


def parse_data_type(dtype_name: Any) -> type[DataType]:
    """The data-type class for a class, an instance or a name (``"Int8"``); anything else is an
    error listing the data types."""
    if isinstance(dtype_name, type) and issubclass(dtype_name, DataType) and dtype_name is not DataType:
        return dtype_name
    if isinstance(dtype_name, DataType):
        return type(dtype_name)
    if isinstance(dtype_name, str) and dtype_name in _BY_NAME:
        return _BY_NAME[dtype_name]
    raise UnknownNameError("data type", getattr(dtype_name, "__name__", dtype_name), _BY_NAME)


def block_attributes(dtype: type[DataType]) -> tuple[str, dict[str, Any]] | None:
    """(``"BFPAttributes"`` or ``"MXAttributes"``, the attributes) of a block type, None otherwise."""
    if dtype.preset is None:
        return None
    key = "BFPAttributes" if dtype.map_onnx_format is QuantType.QBFP else "MXAttributes"
    return key, get_default_config(dtype.preset).extra_options[key]
