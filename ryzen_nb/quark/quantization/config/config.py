"""Quark's config classes (``quark.onnx.quantization.config.config``): the legacy
``Config(global_quant_config=QuantizationConfig(...))`` — ryzen-nb's own classes, which carry
Quark's field names — and the newer ``QConfig``:

    QConfig(global_config=QLayerConfig(activation=Int8Spec(), weight=Int8Spec()),
            exclude=["/head/Conv"], algo_config=[AdaRoundConfig()], AlignConcat=True)

A ``QConfig`` means what Quark makes of it: :meth:`QConfig.to_legacy` gives the equivalent
:class:`QuantizationConfig`, which the engine resolves (and checks: an unknown option or name is an
error naming the closest).
"""

from __future__ import annotations

import copy
from typing import Any

from ryzen_nb.errors import ConfigError
from ryzen_nb.quantization.config import Config, QuantizationConfig
from ryzen_nb.quark.quantization.config.algorithm import AlgoConfig, apply_algorithms
from ryzen_nb.quark.quantization.config.algorithm import from_dict as algorithm_from_dict
from ryzen_nb.quark.quantization.config.data_type import block_attributes, parse_data_type
from ryzen_nb.quark.quantization.config.presets import get_default_config
from ryzen_nb.quark.quantization.config.spec import (
    CalibMethod,
    QLayerConfig,
    QTensorConfig,
    QuantGranularity,
    ScaleType,
)

__all__ = ["Config", "QConfig", "QuantizationConfig"]

#: QConfig keyword options that are QuantizationConfig fields in the legacy API
_FIELD_OPTIONS = {"OpTypesToQuantize": "op_types_to_quantize", "NodesToQuantize": "nodes_to_quantize",
                  "InputNodes": "input_nodes", "OutputNodes": "output_nodes",
                  "ExtraOpTypesToQuantize": "extra_op_types_to_quantize", "OptimizeModel": "optimize_model",
                  "ConvertFP16ToFP32": "convert_fp16_to_fp32", "ConvertNCHWToNHWC": "convert_nchw_to_nhwc",
                  "DebugMode": "debug_mode", "PrintSummary": "print_summary",
                  "SpecificTensorPrecision": "specific_tensor_precision", "ExecutionProviders": "execution_providers"}
#: options that only steer how Quark runs (crypto mode keeps the model in memory, as ryzen-nb always can)
_RUN_OPTIONS = ("CryptoMode",)


class QConfig:
    """Quark's QConfig; :meth:`to_legacy` gives the equivalent :class:`QuantizationConfig`.

    Options are keyword arguments (``QConfig(..., Percentile=99.99)``) or an ``extra_options`` dict,
    as Quark's examples write either.
    """

    def __init__(self, global_config: QLayerConfig, specific_layer_config: dict | None = None,
                 layer_type_config: dict | None = None, exclude: list | None = None,
                 algo_config: list[AlgoConfig] | None = None, use_external_data_format: bool = False,
                 **kwargs: Any) -> None:
        if not isinstance(global_config, QLayerConfig):
            raise ConfigError(f"QConfig(global_config=...) takes a QLayerConfig; got {type(global_config).__name__}.")
        self.global_config = global_config
        self.specific_layer_config = specific_layer_config or {}
        self.layer_type_config = layer_type_config or {}
        self.exclude = list(exclude or [])
        self.algo_config = list(algo_config or [])
        self.use_external_data_format = use_external_data_format
        extra = dict(kwargs.pop("extra_options", None) or {})
        extra.update(kwargs)
        self.extra_options = extra

    @staticmethod
    def get_default_config(config_name: str) -> Config:
        """As Quark: a *legacy* :class:`Config` for a preset name of ``DefaultConfigMapping``."""
        return Config(global_quant_config=get_default_config(config_name))

    @staticmethod
    def from_dict(d: dict[str, Any]) -> QConfig:
        """A QConfig from the ``global_config`` / ``exclude`` / ``algo_config`` / ``extra_options``
        dict Quark's ``to_dict`` writes (specs as dicts of their fields)."""
        if "global_config" not in d:
            raise ConfigError(f"A QConfig dict has a 'global_config' entry; got the keys {sorted(d)}.")
        layer = QLayerConfig(**{k: _spec_from_dict(v) for k, v in d["global_config"].items()})
        return QConfig(layer, exclude=d.get("exclude"), algo_config=[algorithm_from_dict(a) for a in
                                                                       d.get("algo_config", [])],
                       use_external_data_format=d.get("use_external_data_format", False),
                       **d.get("extra_options", {}))

    def to_dict(self) -> dict[str, Any]:
        return {"global_config": self.global_config.to_dict(), "exclude": copy.deepcopy(self.exclude),
                "algo_config": [a.to_dict() for a in self.algo_config],
                "use_external_data_format": self.use_external_data_format,
                "extra_options": copy.deepcopy(self.extra_options)}

    def to_legacy(self) -> QuantizationConfig:
        """The equivalent legacy config (what Quark's own mapping makes of a QConfig)."""
        g = self.global_config
        act = g.activation_spec
        if act is None or g.weight is None:
            raise ConfigError("QLayerConfig needs activation (or input_tensors) and weight specs, e.g. "
                              "QLayerConfig(activation=Int8Spec(), weight=Int8Spec()).")
        if self.specific_layer_config or any(k is not None for k in self.layer_type_config):
            raise ConfigError("specific_layer_config / layer_type_config with specs (per-layer mixed precision) is a "
                              "Quark feature ryzen-nb lacks; use extra_options['MixedPrecisionTensor'] "
                              "({type: [tensor names]}) or AutoMixprecisionConfig.")
        extra = copy.deepcopy(self.extra_options)
        qc = QuantizationConfig(extra_options={}, include_cle=False)  # the new API: CLE only from CLEConfig
        qc.calibrate_method = _calibrate_method(act)
        qc.activation_type, qc.weight_type = _types(act, g.weight, extra)
        qc.per_channel = g.weight.quant_granularity is QuantGranularity.Channel
        both_pof2 = act.scale_type is ScaleType.PowerOf2 and g.weight.scale_type is ScaleType.PowerOf2
        qc.enable_npu_cnn = bool(extra.pop("EnableNPUCnn", both_pof2))
        qc.enable_npu_transformer = bool(extra.pop("EnableNPUTransformer", False))
        qc.use_external_data_format = self.use_external_data_format
        for item in self.exclude:
            if isinstance(item, str):
                qc.nodes_to_exclude.append(item)
            else:  # a (start nodes, end nodes) subgraph, or a list of them
                qc.subgraphs_to_exclude.extend(item if isinstance(item, list) else [item])
        qc.op_types_to_exclude.extend(self.layer_type_config.get(None, []))
        for key, attr in _FIELD_OPTIONS.items():
            if key in extra:
                value = extra.pop(key)
                setattr(qc, attr, list(value) if isinstance(getattr(qc, attr), list) else value)
        for key in _RUN_OPTIONS:
            extra.pop(key, None)
        extra["ActivationSymmetric"] = act.symmetric  # the specs decide symmetry, as in Quark's mapping
        extra["WeightSymmetric"] = g.weight.symmetric
        qc.extra_options = extra
        apply_algorithms(qc, self.algo_config)
        return qc

    def __repr__(self) -> str:
        return (f"QConfig(global_config={self.global_config}, exclude={self.exclude}, "
                f"algo_config={self.algo_config}, extra_options={self.extra_options})")


def _spec_from_dict(d: dict[str, Any]) -> QTensorConfig:
    enums = {"scale_type": ScaleType, "calibration_method": CalibMethod, "quant_granularity": QuantGranularity}
    args = {}
    for key, value in d.items():
        if key in enums and isinstance(value, str):
            value = enums[key][value.split(".")[-1]]
        elif key == "data_type":
            value = parse_data_type(value)
        args[key] = value
    return QTensorConfig(**args)


def _calibrate_method(spec: QTensorConfig) -> str:
    method, scale = spec.calibration_method, spec.scale_type
    if method is CalibMethod.MinMSE:
        return "MinMSE"
    if method is CalibMethod.MinMax:
        return "NonOverflow" if scale is ScaleType.PowerOf2 else "MinMax"
    if method is CalibMethod.LayerwisePercentile:
        raise ConfigError("LayerwisePercentile calibration is a Quark feature ryzen-nb lacks; use CalibMethod.Percentile.")
    if scale is ScaleType.Int16:
        raise ConfigError("ScaleType.Int16 (int16 scales) is a Quark feature ryzen-nb lacks; use ScaleType.Float32.")
    return method.name


def _types(act: QTensorConfig, weight: QTensorConfig, extra: dict[str, Any]) -> tuple[str, str]:
    """The legacy quant types of the activation and weight specs. Block types also write their
    attributes (unless the options set them); two block types needing different attributes are an
    error, since one ``BFPAttributes`` / ``MXAttributes`` serves both."""
    dtypes = parse_data_type(act.data_type), parse_data_type(weight.data_type)
    blocks: dict[str, tuple[str, dict[str, Any]]] = {}
    for dtype in dtypes:
        block = block_attributes(dtype)
        if block is None:
            continue
        key, attrs = block
        if key in blocks and blocks[key][1] != attrs and key not in extra:
            raise ConfigError(f"The activation and weight specs are two different {key} layouts ({blocks[key][0]} "
                              f"and {dtype.__name__}); ryzen-nb needs one. Use the same block type for both.")
        blocks[key] = (dtype.__name__, attrs)
    for key, (_, attrs) in blocks.items():
        extra.setdefault(key, dict(attrs))
    return dtypes[0].map_onnx_format.value, dtypes[1].map_onnx_format.value
