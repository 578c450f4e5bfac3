"""Quark's function API (``quark.onnx.quantization.quantize``, formerly ``quark.onnx.quantize``):
``quantize_static`` and ``quantize_dynamic``, whose keywords are :class:`QuantizationConfig`'s
fields. Each builds that config and runs it through :class:`ModelQuantizer`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import onnx

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.quantization.config import Config, QuantizationConfig
from ryzen_nb.quark.quantization.api import ModelQuantizer

__all__ = ["quantize_static", "quantize_dynamic"]

#: the defaults of the keywords are the config's own (list fields: None, meaning empty)
_D: dict[str, Any] = {f.name: f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
                      for f in fields(QuantizationConfig)
                      if f.default is not MISSING or f.default_factory is not MISSING}


def quantize_static(
    model_input: ModelLike,
    model_output: str | Path | None = None,
    calibration_data_reader: Any = None,
    calibration_data_path: str | Path | None = None,
    quant_format: Any = _D["quant_format"],
    calibrate_method: Any = _D["calibrate_method"],
    input_nodes: list[str] | None = None,
    output_nodes: list[str] | None = None,
    op_types_to_quantize: list[str] | None = None,
    extra_op_types_to_quantize: list[str] | None = None,
    per_channel: bool = _D["per_channel"],
    reduce_range: bool = _D["reduce_range"],
    activation_type: Any = _D["activation_type"],
    weight_type: Any = _D["weight_type"],
    nodes_to_quantize: list[str] | None = None,
    nodes_to_exclude: list[str] | None = None,
    subgraphs_to_exclude: list[Any] | None = None,
    optimize_model: bool = _D["optimize_model"],
    use_external_data_format: bool = _D["use_external_data_format"],
    execution_providers: Sequence[str] = tuple(_D["execution_providers"]),
    enable_dpu: bool = False,
    enable_npu_cnn: bool = _D["enable_npu_cnn"],
    enable_npu_transformer: bool = _D["enable_npu_transformer"],
    specific_tensor_precision: bool = _D["specific_tensor_precision"],
    convert_fp16_to_fp32: bool = _D["convert_fp16_to_fp32"],
    convert_nchw_to_nhwc: bool = _D["convert_nchw_to_nhwc"],
    debug_mode: bool = _D["debug_mode"],
    crypto_mode: bool = _D["crypto_mode"],
    include_cle: bool = _D["include_cle"],
    include_sq: bool = _D["include_sq"],
    include_rotation: bool = _D["include_rotation"],
    include_fast_ft: bool = _D["include_fast_ft"],
    include_auto_mp: bool = _D["include_auto_mp"],
    print_summary: bool = _D["print_summary"],
    extra_options: dict[str, Any] | None = None,
) -> onnx.ModelProto:
    """Quantize ``model_input`` with the settings given as keywords; write ``model_output`` if
    given and return the quantized model. ``enable_dpu`` is Quark's old name of ``enable_npu_cnn``.
    ``crypto_mode`` (keep the model in memory) is what ``model_output=None`` does here."""
    config = QuantizationConfig(
        calibrate_method=calibrate_method, quant_format=quant_format, activation_type=activation_type,
        weight_type=weight_type, input_nodes=list(input_nodes or []), output_nodes=list(output_nodes or []),
        op_types_to_quantize=list(op_types_to_quantize or []), nodes_to_quantize=list(nodes_to_quantize or []),
        extra_op_types_to_quantize=list(extra_op_types_to_quantize or []),
        nodes_to_exclude=list(nodes_to_exclude or []), subgraphs_to_exclude=list(subgraphs_to_exclude or []),
        specific_tensor_precision=specific_tensor_precision,
        execution_providers=list(execution_providers), per_channel=per_channel,
        reduce_range=reduce_range, optimize_model=optimize_model, use_external_data_format=use_external_data_format,
        convert_fp16_to_fp32=convert_fp16_to_fp32, convert_nchw_to_nhwc=convert_nchw_to_nhwc, include_sq=include_sq,
        include_rotation=include_rotation, include_cle=include_cle, include_auto_mp=include_auto_mp,
        include_fast_ft=include_fast_ft, enable_npu_cnn=enable_npu_cnn or enable_dpu,
        enable_npu_transformer=enable_npu_transformer, debug_mode=debug_mode, print_summary=print_summary,
        extra_options=dict(extra_options or {}))
    return ModelQuantizer(Config(config)).quantize_model(model_input, model_output, calibration_data_reader,
                                                         calibration_data_path)


def quantize_dynamic(
    model_input: ModelLike,
    model_output: str | Path | None = None,
    op_types_to_quantize: list[str] | None = None,
    per_channel: bool = _D["per_channel"],
    reduce_range: bool = _D["reduce_range"],
    weight_type: Any = _D["weight_type"],
    nodes_to_quantize: list[str] | None = None,
    nodes_to_exclude: list[str] | None = None,
    subgraphs_to_exclude: list[Any] | None = None,
    use_external_data_format: bool = _D["use_external_data_format"],
    debug_mode: bool = _D["debug_mode"],
    crypto_mode: bool = _D["crypto_mode"],
    extra_options: dict[str, Any] | None = None,
) -> onnx.ModelProto:
    """Quark's dynamic quantization, which ryzen-nb lacks: the Ryzen AI NPU runs statically
    quantized models. Calling it is an error naming ``quantize_static``."""
    raise ConfigError("quantize_dynamic (dynamic quantization) is a Quark feature ryzen-nb lacks: the Ryzen AI NPU "
                      "runs statically quantized models. Use quantize_static with calibration data, or with "
                      "extra_options={'UseRandomData': True} for a quick test.")
