"""The names of Quark's ``quant_utils`` that user scripts import (``quark.onnx.quantization.quant_utils``;
``quark.onnx.quant_utils`` in Quark 0.x): the quant type and format enums, the calibration method
enums, the data readers, ``dump_model``, version checks and an inference-session helper. Quark's
quantizer internals that also live there (range tables, scale arithmetic, graph helpers) are not
mirrored: ryzen-nb's engine has its own."""

from __future__ import annotations

import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnxruntime as ort
from packaging import version

from ryzen_nb.graph.io import ModelLike, load_model
from ryzen_nb.quark.calibration.data_readers import CachedDataReader, PathDataReader, RandomDataReader
from ryzen_nb.quark.operators.custom_ops import _COP_DOMAIN, _COP_VERSION
from ryzen_nb.quark.types import (
    ExtendedQuantFormat,
    ExtendedQuantType,
    Int16Method,
    PowerOfTwoMethod,
    VitisQuantFormat,
    VitisQuantType,
)
from ryzen_nb.quark.utils.deploy_utils import dump_model

__all__ = ["ExtendedQuantType", "ExtendedQuantFormat", "VitisQuantType", "VitisQuantFormat", "PowerOfTwoMethod",
           "Int16Method", "CachedDataReader", "RandomDataReader", "PathDataReader", "dump_model", "is_version_below",
           "is_ort_version_below", "create_infer_session_for_onnx_model", "COP_DOMAIN", "COP_VERSION"]

COP_DOMAIN = _COP_DOMAIN
COP_VERSION = _COP_VERSION


def is_version_below(package: types.ModuleType, target_version: str) -> bool:
    """Whether an imported ``package`` (``onnx``, ``onnxruntime``...) is older than ``target_version``."""
    if not isinstance(package, types.ModuleType):
        raise TypeError(f"is_version_below takes an imported module; got {type(package).__name__}.")
    return version.parse(package.__version__) < version.parse(target_version)


def is_ort_version_below(target_version: str) -> bool:
    """Whether the installed onnxruntime is older than ``target_version``."""
    return is_version_below(ort, target_version)


def create_infer_session_for_onnx_model(model_input: ModelLike, sess_options: ort.SessionOptions | None = None,
                                        providers: Sequence[str] = ("CPUExecutionProvider",),
                                        provider_options: list[dict[str, Any]] | None = None,
                                        use_external_data_format: bool = False) -> ort.InferenceSession:
    """An onnxruntime session for a model (path, bytes or ModelProto) on ``providers`` (default CPU).
    No custom-op library is registered: ryzen-nb's models need none."""
    source: Any = str(model_input) if isinstance(model_input, (str, Path)) else load_model(model_input).SerializeToString()
    return ort.InferenceSession(source, sess_options, providers=list(providers),
                                provider_options=provider_options)
