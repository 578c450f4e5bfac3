"""Quark's newer config API (0.10+): ``QConfig(global_config=QLayerConfig(input_tensors=Int8Spec(),
weight=Int8Spec()), exclude=[...], algo_config=[...], **extra_options)``.

A ``QConfig`` means exactly what Quark's ``_map_q_config`` makes of it (``/work/notes`` API reference
§1.5): it is translated into a :class:`QuantizationConfig`, which the engine resolves. So

    from quark.onnx import ModelQuantizer, QConfig, QLayerConfig, Int8Spec
becomes
    from ryzen_nb.quark import ModelQuantizer, QConfig, QLayerConfig, Int8Spec

Note two differences from the legacy presets that Quark has too: ``XINT8_QCONFIG`` quantizes
activations as int8 (the legacy ``XINT8`` uses uint8 with zero point 128), and ``Int8Spec``
calibrates with Percentile (legacy ``A8W8``: MinMax).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.quantization.config import Config, QuantizationConfig, get_default_config
from ryzen_nb.quantization.options import FINETUNE_ALGORITHM_DEFAULTS

__all__ = [
    "CalibMethod", "ScaleType", "QuantGranularity", "DataType", "QTensorConfig", "QLayerConfig", "QConfig",
    "Int4Spec", "UInt4Spec", "Int8Spec", "UInt8Spec", "XInt8Spec", "Int16Spec", "UInt16Spec", "Int32Spec",
    "UInt32Spec", "Float16Spec", "BFloat16Spec", "BFP16Spec", "MX4Spec", "MX6Spec", "MX9Spec", "MXInt8Spec",
    "MXFP8E4M3Spec", "MXFP8E5M2Spec", "MXFP6E3M2Spec", "MXFP6E2M3Spec", "MXFP4E2M1Spec",
    "AlgoConfig", "CLEConfig", "AdaRoundConfig", "AdaQuantConfig", "BiasCorrectionConfig", "AutoMixprecisionConfig",
    "SmoothQuantConfig", "XINT8_QCONFIG", "A8W8_QCONFIG", "A16W8_QCONFIG", "BF16_QCONFIG", "BFP16_QCONFIG",
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


class DataType(Enum):
    """Tensor data types of the new API, valued by the legacy quant type they map to."""

    Int4 = "QInt4"
    UInt4 = "QUInt4"
    Int8 = "QInt8"
    UInt8 = "QUInt8"
    Int16 = "QInt16"
    UInt16 = "QUInt16"
    Int32 = "QInt32"
    UInt32 = "QUInt32"
    Float16 = "QFloat16"
    BFloat16 = "QBFloat16"
    BFP16 = "BFP16"
    MX4 = "MX4"
    MX6 = "MX6"
    MX9 = "MX9"
    MXInt8 = "int8"
    MXFP8E4M3 = "fp8_e4m3"
    MXFP8E5M2 = "fp8_e5m2"
    MXFP6E3M2 = "fp6_e3m2"
    MXFP6E2M3 = "fp6_e2m3"
    MXFP4E2M1 = "fp4_e2m1"


@dataclass
class QTensorConfig:
    symmetric: bool = True
    scale_type: ScaleType = ScaleType.Float32
    calibration_method: CalibMethod = CalibMethod.MinMax
    quant_granularity: QuantGranularity = QuantGranularity.Tensor
    data_type: DataType = DataType.Int8

    def set_symmetric(self, value: bool) -> None:
        self.symmetric = value

    def set_scale_type(self, value: ScaleType) -> None:
        self.scale_type = value

    def set_calibration_method(self, value: CalibMethod) -> None:
        self.calibration_method = value

    def set_quant_granularity(self, value: QuantGranularity) -> None:
        self.quant_granularity = value

    def set_data_type(self, value: DataType) -> None:
        self.data_type = value


def _spec(name: str, symmetric: bool, scale: ScaleType, method: CalibMethod, dtype: DataType) -> type[QTensorConfig]:
    def __init__(self, symmetric: bool = symmetric, scale_type: ScaleType = scale, calibration_method: CalibMethod = method,
                 quant_granularity: QuantGranularity = QuantGranularity.Tensor, data_type: DataType = dtype) -> None:
        QTensorConfig.__init__(self, symmetric, scale_type, calibration_method, quant_granularity, data_type)

    return type(name, (QTensorConfig,), {"__init__": __init__, "__doc__": f"{dtype.name} tensor spec (Quark {name})."})


_F, _P = ScaleType.Float32, ScaleType.PowerOf2
Int4Spec = _spec("Int4Spec", True, _F, CalibMethod.Percentile, DataType.Int4)
UInt4Spec = _spec("UInt4Spec", False, _F, CalibMethod.Percentile, DataType.UInt4)
Int8Spec = _spec("Int8Spec", True, _F, CalibMethod.Percentile, DataType.Int8)
UInt8Spec = _spec("UInt8Spec", False, _F, CalibMethod.Percentile, DataType.UInt8)
XInt8Spec = _spec("XInt8Spec", True, _P, CalibMethod.MinMSE, DataType.Int8)
Int16Spec = _spec("Int16Spec", True, _F, CalibMethod.Percentile, DataType.Int16)
UInt16Spec = _spec("UInt16Spec", False, _F, CalibMethod.Percentile, DataType.UInt16)
Int32Spec = _spec("Int32Spec", True, _F, CalibMethod.Percentile, DataType.Int32)
UInt32Spec = _spec("UInt32Spec", False, _F, CalibMethod.Percentile, DataType.UInt32)
Float16Spec = _spec("Float16Spec", True, _F, CalibMethod.MinMax, DataType.Float16)
BFloat16Spec = _spec("BFloat16Spec", True, _F, CalibMethod.MinMax, DataType.BFloat16)
BFP16Spec = _spec("BFP16Spec", True, _F, CalibMethod.MinMax, DataType.BFP16)
MX4Spec = _spec("MX4Spec", True, _F, CalibMethod.MinMax, DataType.MX4)
MX6Spec = _spec("MX6Spec", True, _F, CalibMethod.MinMax, DataType.MX6)
MX9Spec = _spec("MX9Spec", True, _F, CalibMethod.MinMax, DataType.MX9)
MXInt8Spec = _spec("MXInt8Spec", True, _F, CalibMethod.MinMax, DataType.MXInt8)
MXFP8E4M3Spec = _spec("MXFP8E4M3Spec", True, _F, CalibMethod.MinMax, DataType.MXFP8E4M3)
MXFP8E5M2Spec = _spec("MXFP8E5M2Spec", True, _F, CalibMethod.MinMax, DataType.MXFP8E5M2)
MXFP6E3M2Spec = _spec("MXFP6E3M2Spec", True, _F, CalibMethod.MinMax, DataType.MXFP6E3M2)
MXFP6E2M3Spec = _spec("MXFP6E2M3Spec", True, _F, CalibMethod.MinMax, DataType.MXFP6E2M3)
MXFP4E2M1Spec = _spec("MXFP4E2M1Spec", True, _F, CalibMethod.MinMax, DataType.MXFP4E2M1)


@dataclass
class QLayerConfig:
    input_tensors: QTensorConfig | None = None
    activation: QTensorConfig | None = None  #: deprecated name of input_tensors (Quark <= 0.10)
    weight: QTensorConfig | None = None
    bias: QTensorConfig | None = None
    output_tensors: QTensorConfig | None = None


class AlgoConfig:
    """An accuracy algorithm of the new API (Quark's ``algo_config=[...]``). Each one writes the
    legacy flag and ``extra_options`` keys it stands for into a :class:`QuantizationConfig`
    (:meth:`apply`), never overwriting a key the user set there — as Quark does. The order of the
    list does not matter: CLE runs before calibration; bias correction, mixed precision and
    AdaRound/AdaQuant after it."""

    #: constructor argument -> extra_options key (of the algorithm's dict, for fine-tuning and AMP)
    KEYS: dict[str, str] = {}
    DEFAULTS: dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        unknown = [k for k in kwargs if k not in self.KEYS]
        if unknown:
            raise UnknownNameError(f"{type(self).__name__} argument", unknown[0], list(self.KEYS))
        self.kwargs = {**self.DEFAULTS, **kwargs}

    def apply(self, qc: QuantizationConfig) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _fill(self, target: dict[str, Any]) -> None:
        for arg, value in self.kwargs.items():
            target.setdefault(self.KEYS[arg], value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.kwargs.items())})"


class CLEConfig(AlgoConfig):
    """Cross-layer equalization before calibration (``include_cle`` and the ``CLE*`` options)."""

    KEYS = {"cle_balance_method": "CLEBalanceMethod", "cle_steps": "CLESteps", "cle_weight_threshold": "CLEWeightThreshold",
            "cle_scale_append_bias": "CLEScaleAppendBias", "cle_scale_use_threshold": "CLEScaleUseThreshold",
            "cle_total_layer_diff_threshold": "CLETotalLayerDiffThreshold"}

    def apply(self, qc: QuantizationConfig) -> None:
        qc.include_cle = True
        self._fill(qc.extra_options)


class BiasCorrectionConfig(AlgoConfig):
    """Empirical bias correction after quantization (``extra_options['BiasCorrection']``)."""

    def apply(self, qc: QuantizationConfig) -> None:
        qc.extra_options.setdefault("BiasCorrection", True)


class _FastFinetuneConfig(AlgoConfig):
    ALGORITHM = ""
    KEYS = {"optim_device": "OptimDevice", "infer_device": "InferDevice", "fixed_seed": "FixedSeed",
            "data_size": "DataSize", "batch_size": "BatchSize", "num_batches": "NumBatches",
            "num_iterations": "NumIterations", "learning_rate": "LearningRate", "early_stop": "EarlyStop",
            "output_index": "OutputIndex", "lr_adjust": "LRAdjust", "target_op_type": "TargetOpType",
            "selective_update": "SelectiveUpdate", "update_bias": "UpdateBias", "output_qdq": "OutputQDQ",
            "drop_ratio": "DropRatio", "mem_opt_level": "MemOptLevel", "cache_dir": "CacheDir",
            "log_period": "LogPeriod", "ref_model_path": "RefModelPath", "dynamic_batch": "DynamicBatch",
            "parallel": "Parallel", "reg_param": "RegParam", "beta_range": "BetaRange", "warm_start": "WarmStart",
            "select_max_mem_layer": "SelectMaxMemLayer", "num_workers": "NumWorkers", "pin_memory": "PinMemory",
            "use_gds": "UseGDS"}

    def apply(self, qc: QuantizationConfig) -> None:
        qc.include_fast_ft = True
        params = qc.extra_options.setdefault("FastFinetune", {})
        params.setdefault("OptimAlgorithm", self.ALGORITHM)
        self._fill(params)


class AdaRoundConfig(_FastFinetuneConfig):
    """AdaRound: learned rounding of integer weights (``include_fast_ft``, ``FastFinetune``).
    Unlike Quark 0.13, ``reg_param``, ``beta_range``, ``warm_start`` and ``output_index`` are
    passed on, not dropped."""

    ALGORITHM = "adaround"
    DEFAULTS = {"num_iterations": FINETUNE_ALGORITHM_DEFAULTS["adaround"]["NumIterations"],
                "learning_rate": FINETUNE_ALGORITHM_DEFAULTS["adaround"]["LearningRate"]}


class AdaQuantConfig(_FastFinetuneConfig):
    """AdaQuant: weights trained through their quantizer — any weight format, BF16 included."""

    ALGORITHM = "adaquant"
    #: Quark's AdaQuantConfig passes update_bias=False, unlike its FastFinetune dict's default (True)
    DEFAULTS = {"num_iterations": FINETUNE_ALGORITHM_DEFAULTS["adaquant"]["NumIterations"],
                "learning_rate": FINETUNE_ALGORITHM_DEFAULTS["adaquant"]["LearningRate"], "update_bias": False}


class AutoMixprecisionConfig(AlgoConfig):
    """Automatic or layer-wise mixed precision (``include_auto_mp``, ``AutoMixprecision``), in the
    seed documents' terms: ``act_target_quant_type`` / ``weight_target_quant_type`` (or
    ``target_quant_type``) for the layers switched, ``l2_target`` or ``top1_acc_target`` with
    ``evaluate_function`` for the automatic search, ``dual_quant_nodes`` on boundaries.

    Quark 0.13's own spelling is accepted too: ``target_layer_config`` (a QLayerConfig) and
    ``metric_threshold`` with the L2 metric (``metric_default='l2'``, ``metric_optimize_object='speed'``)."""

    KEYS = {"target_op_type": "TargetOpType", "target_quant_type": "TargetQuantType",
            "act_target_quant_type": "ActTargetQuantType", "weight_target_quant_type": "WeightTargetQuantType",
            "dual_quant_nodes": "DualQuantNodes", "l2_target": "L2Target", "top1_acc_target": "Top1AccTarget",
            "evaluate_function": "EvaluateFunction", "output_index": "OutputIndex", "data_size": "DataSize",
            "num_target": "NumTarget", "target_tensors": "TargetTensors", "target_indices": "TargetIndices",
            "exclude_indices": "ExcludeIndices", "no_input_qdq_shared": "NoInputQDQShared",
            # Quark 0.13 names, translated in apply()
            "target_layer_config": "", "metric_threshold": "", "metric_default": "", "metric_optimize_object": "",
            "metric_output_index": "OutputIndex", "metric_evaluate_fn": "", "include_layers": "IncludeLayers",
            "exclude_layers": "ExcludeLayers"}

    def apply(self, qc: QuantizationConfig) -> None:
        qc.include_auto_mp = True
        params = qc.extra_options.setdefault("AutoMixprecision", {})
        kw = dict(self.kwargs)
        layer = kw.pop("target_layer_config", None)
        if layer is not None:
            if not isinstance(layer, QLayerConfig):
                raise ConfigError("AutoMixprecisionConfig(target_layer_config=...) takes one QLayerConfig here, e.g. "
                                  "QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()).")
            act = layer.input_tensors or layer.activation
            if act is not None:
                params.setdefault("ActTargetQuantType", _quant_type(act.data_type, qc.extra_options))
            if layer.weight is not None:
                params.setdefault("WeightTargetQuantType", _quant_type(layer.weight.data_type, qc.extra_options))
        metric = kw.pop("metric_default", "l2")
        objective = kw.pop("metric_optimize_object", "speed")
        if "metric_threshold" in kw or metric != "l2" or objective != "speed":
            if metric != "l2" or objective != "speed":
                raise ConfigError(f"AutoMixprecisionConfig supports metric_default='l2' with metric_optimize_object="
                                  f"'speed' (keep L2 below the threshold); got {metric!r} / {objective!r}. For an "
                                  "accuracy target use top1_acc_target with evaluate_function.")
            threshold = kw.pop("metric_threshold")
            if threshold is not None and threshold > 0:
                params.setdefault("L2Target", threshold)
            elif threshold is None:
                params.setdefault("NumTarget", 0)
                params.setdefault("AnalysisOnly", True)
        if "metric_evaluate_fn" in kw:
            params.setdefault("EvaluateFunction", kw.pop("metric_evaluate_fn"))
        for arg, value in kw.items():
            params.setdefault(self.KEYS[arg], value)


class SmoothQuantConfig(AlgoConfig):
    """SmoothQuant is not available in ryzen-nb; passing it is an error naming it."""

    KEYS = {"alpha": "SmoothAlpha"}

    def apply(self, qc: QuantizationConfig) -> None:
        raise ConfigError("SmoothQuantConfig (SmoothQuant) is not available in ryzen-nb; remove it from algo_config.")


def apply_algorithms(qc: QuantizationConfig, algorithms: list[AlgoConfig]) -> None:
    """Write ``algorithms`` into ``qc`` (in place): AdaRound and AdaQuant together are an error
    (Quark keeps the first and logs a warning; the second would silently do nothing)."""
    tuning = [a for a in algorithms if isinstance(a, _FastFinetuneConfig)]
    if len(tuning) > 1:
        raise ConfigError(f"algo_config holds {len(tuning)} fine-tuning algorithms ({', '.join(type(a).__name__ for a in tuning)}); "
                          "AdaRound and AdaQuant are alternatives: keep one.")
    for algo in algorithms:
        if not isinstance(algo, AlgoConfig):
            raise ConfigError(f"algo_config takes CLEConfig, AdaRoundConfig, AdaQuantConfig, BiasCorrectionConfig or "
                              f"AutoMixprecisionConfig objects; got {algo!r}.")
        algo.apply(qc)


_BFP_TYPES = {DataType.BFP16: None, DataType.MX4: 11, DataType.MX6: 13, DataType.MX9: 16}
_MX_TYPES = {DataType.MXInt8, DataType.MXFP8E4M3, DataType.MXFP8E5M2, DataType.MXFP6E3M2, DataType.MXFP6E2M3,
             DataType.MXFP4E2M1}


class QConfig:
    """Quark's QConfig; :meth:`to_legacy` gives the equivalent :class:`QuantizationConfig`."""

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
        extra = dict(kwargs.pop("extra_options", {}) or {})
        extra.update(kwargs)  # Quark accepts options as bare keyword arguments too
        self.extra_options = extra

    @staticmethod
    def get_default_config(name: str) -> Config:
        """As Quark: a *legacy* ``Config`` for a preset name."""
        return Config(global_quant_config=get_default_config(name))

    def to_legacy(self) -> QuantizationConfig:
        g = self.global_config
        act = g.input_tensors or g.activation
        if act is None or g.weight is None:
            raise ConfigError("QLayerConfig needs input_tensors (or activation) and weight specs, e.g. "
                              "QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()).")
        if self.specific_layer_config or any(k is not None for k in self.layer_type_config):
            raise ConfigError("specific_layer_config / layer_type_config with data types (per-layer mixed precision) "
                              "are not available in this version of ryzen-nb; use extra_options['MixedPrecisionTensor'].")
        extra = copy.deepcopy(self.extra_options)
        qc = QuantizationConfig(extra_options={}, include_cle=False)  # the new API: CLE only from CLEConfig
        qc.calibrate_method = _calibrate_method(act)
        qc.activation_type = _quant_type(act.data_type, extra)
        qc.weight_type = _quant_type(g.weight.data_type, extra)
        qc.per_channel = g.weight.quant_granularity is QuantGranularity.Channel
        qc.enable_npu_cnn = bool(extra.pop("EnableNPUCnn", act.scale_type is _P and g.weight.scale_type is _P))
        qc.use_external_data_format = self.use_external_data_format
        for item in self.exclude:
            if isinstance(item, str):
                qc.nodes_to_exclude.append(item)
            else:
                qc.subgraphs_to_exclude.extend(item if isinstance(item, list) else [item])
        qc.op_types_to_exclude.extend(self.layer_type_config.get(None, []))
        for key, attr in (("OpTypesToQuantize", "op_types_to_quantize"), ("NodesToQuantize", "nodes_to_quantize"),
                          ("InputNodes", "input_nodes"), ("OutputNodes", "output_nodes"),
                          ("ExtraOpTypesToQuantize", "extra_op_types_to_quantize")):
            if key in extra:
                setattr(qc, attr, list(extra.pop(key)))
        for key in ("ExecutionProviders", "OptimizeModel", "ConvertFP16ToFP32", "ConvertNCHWToNHWC", "DebugMode",
                    "CryptoMode", "PrintSummary", "SpecificTensorPrecision"):
            extra.pop(key, None)
        extra["ActivationSymmetric"] = act.symmetric
        extra["WeightSymmetric"] = g.weight.symmetric
        qc.extra_options = extra
        apply_algorithms(qc, self.algo_config)
        return qc

    def to_dict(self) -> dict[str, Any]:
        return {"global_config": self.to_legacy().to_dict()}

    def __repr__(self) -> str:
        return f"QConfig({self.global_config}, exclude={self.exclude}, extra_options={self.extra_options})"


def _calibrate_method(spec: QTensorConfig) -> str:
    m, scale = spec.calibration_method, spec.scale_type
    if m is CalibMethod.MinMSE:
        return "MinMSE"
    if m is CalibMethod.MinMax:
        return "NonOverflow" if scale is _P else "MinMax"
    if m is CalibMethod.LayerwisePercentile:
        raise ConfigError("LayerwisePercentile calibration is not available in ryzen-nb; use Percentile.")
    return m.name


def _quant_type(dtype: DataType, extra: dict[str, Any]) -> str:
    if dtype in _BFP_TYPES:
        bits = _BFP_TYPES[dtype]
        attrs = extra.setdefault("BFPAttributes", {})
        if bits is None:
            attrs.setdefault("bfp_method", "to_bfp")
        else:
            attrs.update({"bfp_method": "to_bfp_prime", "bit_width": bits, "block_size": 16, "sub_block_size": 2,
                          "sub_block_shift_bits": 1})
        attrs.setdefault("rounding_mode", 2)
        return "QBFP"
    if dtype in _MX_TYPES:
        extra.setdefault("MXAttributes", {}).update({"element_dtype": dtype.value, "block_size": 32})
        extra["MXAttributes"].setdefault("rounding_mode", 2)
        return "QMX"
    if not isinstance(dtype, DataType):
        raise UnknownNameError("data type", dtype, [d.name for d in DataType])
    return dtype.value


XINT8_QCONFIG = QConfig(QLayerConfig(input_tensors=XInt8Spec(), weight=XInt8Spec()), ForceQuantizeNoInputCheck=True)
A8W8_QCONFIG = QConfig(QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()), ForceQuantizeNoInputCheck=True,
                       AlignSlice=False, FoldRelu=True, AlignConcat=True)
A16W8_QCONFIG = QConfig(QLayerConfig(input_tensors=Int16Spec(), weight=Int8Spec()), ForceQuantizeNoInputCheck=True,
                        AlignSlice=False, FoldRelu=True, AlignConcat=True, AlignEltwiseQuantType=True)
BF16_QCONFIG = QConfig(QLayerConfig(input_tensors=BFloat16Spec(), weight=BFloat16Spec()), ForceQuantizeNoInputCheck=True)
BFP16_QCONFIG = QConfig(QLayerConfig(input_tensors=BFP16Spec(), weight=BFP16Spec()))
