"""Quark's accuracy-algorithm configs (``quark.onnx.quantization.config.algorithm``): ``CLEConfig``,
``AdaRoundConfig``, ``AdaQuantConfig``, ``BiasCorrectionConfig``, ``AutoMixprecisionConfig``, and the
ones ryzen-nb lacks (``SmoothQuantConfig``, ``GPTQConfig``, ``QuarotConfig``).

Each class has Quark's signature, with its defaults read from :mod:`ryzen_nb.quantization.options`,
and writes the legacy flag and ``extra_options`` keys it stands for into a
:class:`~ryzen_nb.quantization.config.QuantizationConfig` (:meth:`AlgoConfig.apply`) — never over a
key the user set, as Quark does. The order of an ``algo_config`` list does not matter: CLE runs
before calibration; mixed precision, AdaRound/AdaQuant and bias correction after it.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.quantization.config import QuantizationConfig
from ryzen_nb.quantization.options import FINETUNE_ALGORITHM_DEFAULTS, FINETUNE_CLASS_DEFAULTS, default
from ryzen_nb.quark.quantization.config.data_type import DataType, block_attributes, parse_data_type
from ryzen_nb.quark.quantization.config.spec import QLayerConfig

__all__ = ["AlgoConfig", "CLEConfig", "BiasCorrectionConfig", "AdaRoundConfig", "AdaQuantConfig",
           "AutoMixprecisionConfig", "SmoothQuantConfig", "GPTQConfig", "QuarotConfig", "apply_algorithms"]

_ARG = inspect.Parameter.POSITIONAL_OR_KEYWORD


class AlgoConfig:
    """An accuracy algorithm of Quark's ``QConfig(algo_config=[...])``.

    ``PARAMETERS`` lists (argument, option key, default): the key is an ``extra_options`` key, or a
    key of the algorithm's own dict (``FastFinetune``, ``AutoMixprecision``); "" marks an argument
    the class translates itself. The class signature is built from it, so ``inspect.signature`` and
    a wrong keyword (an error naming the closest argument) both see Quark's parameters.
    """

    PARAMETERS: ClassVar[tuple[tuple[str, str, Any], ...]] = ()
    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(arg, _ARG, default=value) for arg, _, value in cls.PARAMETERS])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        signature: inspect.Signature = type(self).__signature__  # type: ignore[attr-defined]
        for key in kwargs:
            if key not in signature.parameters:
                raise UnknownNameError(f"{type(self).__name__} argument", key, list(signature.parameters))
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ConfigError(f"{type(self).__name__}{signature}: {exc}.") from None
        self.given = set(bound.arguments)  #: the arguments passed (the others hold their defaults)
        bound.apply_defaults()
        self.kwargs: dict[str, Any] = dict(bound.arguments)
        for key, value in self.kwargs.items():  # Quark's attributes: AdaRoundConfig().num_iterations
            setattr(self, key, value)

    def apply(self, qc: QuantizationConfig) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _fill(self, target: dict[str, Any], nested: str | None = None) -> None:
        """Write the arguments given, and those whose default is not the option's own, into
        ``target`` without overwriting a key already there."""
        for arg, key, _ in self.PARAMETERS:
            if not key:
                continue
            value = self.kwargs[arg]
            if arg in self.given or value != default(key, nested):
                target.setdefault(key, value)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.kwargs}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={self.kwargs[k]!r}' for k in sorted(self.given))})"


class CLEConfig(AlgoConfig):
    """Cross-layer equalization before calibration (``include_cle`` and the ``CLE*`` options)."""

    name = "cle"
    PARAMETERS = tuple((arg, key, default(key)) for arg, key in (
        ("cle_balance_method", "CLEBalanceMethod"), ("cle_steps", "CLESteps"),
        ("cle_weight_threshold", "CLEWeightThreshold"), ("cle_scale_append_bias", "CLEScaleAppendBias"),
        ("cle_scale_use_threshold", "CLEScaleUseThreshold"),
        ("cle_total_layer_diff_threshold", "CLETotalLayerDiffThreshold")))

    def apply(self, qc: QuantizationConfig) -> None:
        qc.include_cle = True
        self._fill(qc.extra_options)


class BiasCorrectionConfig(AlgoConfig):
    """Empirical bias correction after quantization (``extra_options['BiasCorrection']``)."""

    name = "bias_correction"

    def apply(self, qc: QuantizationConfig) -> None:
        qc.extra_options.setdefault("BiasCorrection", True)


_FT_KEYS = (("optim_device", "OptimDevice"), ("infer_device", "InferDevice"), ("fixed_seed", "FixedSeed"),
            ("data_size", "DataSize"), ("batch_size", "BatchSize"), ("num_batches", "NumBatches"),
            ("num_iterations", "NumIterations"), ("learning_rate", "LearningRate"), ("early_stop", "EarlyStop"),
            ("output_index", "OutputIndex"), ("lr_adjust", "LRAdjust"), ("target_op_type", "TargetOpType"),
            ("selective_update", "SelectiveUpdate"), ("update_bias", "UpdateBias"), ("output_qdq", "OutputQDQ"),
            ("drop_ratio", "DropRatio"), ("mem_opt_level", "MemOptLevel"), ("cache_dir", "CacheDir"),
            ("log_period", "LogPeriod"), ("ref_model_path", "RefModelPath"), ("dynamic_batch", "DynamicBatch"),
            ("parallel", "Parallel"), ("reg_param", "RegParam"), ("beta_range", "BetaRange"),
            ("warm_start", "WarmStart"), ("select_max_mem_layer", "SelectMaxMemLayer"),
            ("num_workers", "NumWorkers"), ("pin_memory", "PinMemory"), ("use_gds", "UseGDS"))


def _finetune_parameters(algorithm: str) -> tuple[tuple[str, str, Any], ...]:
    """The per-algorithm default where Quark's class has one, else the FastFinetune option's."""
    own = {**FINETUNE_CLASS_DEFAULTS, **FINETUNE_ALGORITHM_DEFAULTS[algorithm]}
    return tuple((arg, key, own.get(key, default(key, "FastFinetune"))) for arg, key in _FT_KEYS)


class _FastFinetuneConfig(AlgoConfig):
    def apply(self, qc: QuantizationConfig) -> None:
        qc.include_fast_ft = True
        params = qc.extra_options.setdefault("FastFinetune", {})
        params.setdefault("OptimAlgorithm", self.name)
        self._fill(params, "FastFinetune")


class AdaRoundConfig(_FastFinetuneConfig):
    """AdaRound: learned rounding of integer weights (``include_fast_ft``, ``FastFinetune``)."""

    name = "adaround"
    PARAMETERS = _finetune_parameters("adaround")


class AdaQuantConfig(_FastFinetuneConfig):
    """AdaQuant: weights trained through their quantizer — any weight format, BF16 included."""

    name = "adaquant"
    PARAMETERS = _finetune_parameters("adaquant")


def _amp(key: str) -> Any:
    return default(key, "AutoMixprecision")


class AutoMixprecisionConfig(AlgoConfig):
    """Layer-wise or automatic mixed precision (``include_auto_mp``, ``AutoMixprecision``).

    Both of Quark's spellings work. Quark 0.13's: ``target_layer_config`` (one QLayerConfig: the
    precision the switched layers get) with ``metric_threshold`` on the L2 metric — ``0`` switches
    every target layer, a positive value switches layers while the L2 distance stays below it,
    ``None`` only measures the sensitivities. The earlier one: ``act_target_quant_type`` /
    ``weight_target_quant_type`` (or ``target_quant_type``), ``l2_target`` or ``top1_acc_target`` with
    ``evaluate_function``, ``num_target``, ``dual_quant_nodes``. Metrics other than L2 and top-1,
    the ``"quality"`` objective, several target layer configs and subgraph files are Quark features
    ryzen-nb lacks: they are errors that say so.
    """

    name = "auto_mixprecision"
    PARAMETERS = (
        ("target_layer_config", "", None),
        ("target_op_type", "TargetOpType", _amp("TargetOpType")),
        ("subgraph_json", "", None),
        ("include_layers", "IncludeLayers", _amp("IncludeLayers")),
        ("exclude_layers", "ExcludeLayers", _amp("ExcludeLayers")),
        ("data_size", "DataSize", _amp("DataSize")),
        ("metric_output_index", "OutputIndex", _amp("OutputIndex")),
        ("metric_distance_fn", "", None),
        ("metric_evaluate_fn", "EvaluateFunction", _amp("EvaluateFunction")),
        ("metric_default", "", "l2"),  # Quark 0.13's defaults for its metric arguments
        ("metric_threshold", "", 0),
        ("metric_optimize_object", "", "speed"),
        ("sensitivity_cache_file", "", None),  # accepted and not used: ryzen-nb measures in one pass
        ("worker_num", "", 1),  # accepted and not used: ryzen-nb measures in one process
        ("dual_quant_nodes", "DualQuantNodes", _amp("DualQuantNodes")),
        ("no_input_qdq_shared", "NoInputQDQShared", _amp("NoInputQDQShared")),
        ("shared_param_mode", "", "propagate"),  # ryzen-nb gives a switched tensor its own quantizer
        ("target_quant_type", "TargetQuantType", _amp("TargetQuantType")),
        ("act_target_quant_type", "ActTargetQuantType", _amp("ActTargetQuantType")),
        ("weight_target_quant_type", "WeightTargetQuantType", _amp("WeightTargetQuantType")),
        ("bias_target_quant_type", "BiasTargetQuantType", _amp("BiasTargetQuantType")),
        ("output_index", "OutputIndex", _amp("OutputIndex")),
        ("l2_target", "L2Target", _amp("L2Target")),
        ("top1_acc_target", "Top1AccTarget", _amp("Top1AccTarget")),
        ("evaluate_function", "EvaluateFunction", _amp("EvaluateFunction")),
        ("num_target", "NumTarget", _amp("NumTarget")),
        ("target_tensors", "TargetTensors", _amp("TargetTensors")),
        ("target_indices", "TargetIndices", _amp("TargetIndices")),
        ("exclude_indices", "ExcludeIndices", _amp("ExcludeIndices")),
        ("auto_mix_use_fast_ft", "AutoMixUseFastFT", _amp("AutoMixUseFastFT")),
    )
    _TYPE_KEYS = ("TargetQuantType", "ActTargetQuantType", "WeightTargetQuantType", "BiasTargetQuantType")

    def apply(self, qc: QuantizationConfig) -> None:
        kw = self.kwargs
        for arg in ("subgraph_json", "metric_distance_fn"):
            if kw[arg] is not None:
                raise ConfigError(f"AutoMixprecisionConfig({arg}=...) is a Quark feature ryzen-nb lacks; remove it "
                                  "(ryzen-nb measures each target layer against the float model's output).")
        if kw["shared_param_mode"] not in ("propagate", "unshare"):
            raise UnknownNameError("shared_param_mode", kw["shared_param_mode"], ["propagate", "unshare"])
        qc.include_auto_mp = True
        params = qc.extra_options.setdefault("AutoMixprecision", {})
        layer = kw["target_layer_config"]
        if layer is not None:
            if not isinstance(layer, QLayerConfig):
                raise ConfigError("AutoMixprecisionConfig(target_layer_config=...) takes one QLayerConfig here, e.g. "
                                  "QLayerConfig(activation=Int8Spec(), weight=Int8Spec()); several target configs "
                                  "(a dict or a list) are a Quark feature ryzen-nb lacks.")
            if layer.activation_spec is not None:
                params.setdefault("ActTargetQuantType", layer.activation_spec.data_type)
            if layer.weight is not None:
                params.setdefault("WeightTargetQuantType", layer.weight.data_type)
        self._metric(params)
        self._fill(params, "AutoMixprecision")
        for key in self._TYPE_KEYS:
            if params.get(key) is not None:
                params[key] = _legacy_type(params[key], qc.extra_options)

    def _metric(self, params: dict[str, Any]) -> None:
        """Quark 0.13's metric arguments as ryzen-nb's L2 target."""
        metric, objective, threshold = (self.kwargs[k] for k in ("metric_default", "metric_optimize_object",
                                                                  "metric_threshold"))
        if metric != "l2" or objective != "speed":
            raise ConfigError(f"AutoMixprecisionConfig supports metric_default='l2' with metric_optimize_object="
                              f"'speed' (keep the L2 distance below the threshold); got {metric!r} / {objective!r}. "
                              "For an accuracy target use top1_acc_target with evaluate_function.")
        if threshold is None:
            params.setdefault("NumTarget", 0)
            params.setdefault("AnalysisOnly", True)
        elif threshold < 0:
            raise ConfigError(f"AutoMixprecisionConfig(metric_threshold={threshold}): an L2 threshold is positive "
                              "(0 switches every target layer).")
        elif threshold > 0:
            params.setdefault("L2Target", threshold)


def _legacy_type(value: Any, extra: dict[str, Any]) -> Any:
    """A Quark data-type class as its legacy quant type (block types also set their attributes);
    QuantType members and names pass through."""
    if isinstance(value, DataType) or (isinstance(value, type) and issubclass(value, DataType)):
        dtype = parse_data_type(value)
        block = block_attributes(dtype)
        if block is not None:
            extra.setdefault(block[0], dict(block[1]))
        return dtype.map_onnx_format.value
    return value


class _Unavailable(AlgoConfig):
    """A Quark algorithm ryzen-nb lacks: constructing it works (scripts that only import or build
    configs keep running); quantizing with it is an error that says so."""

    what = ""

    def apply(self, qc: QuantizationConfig) -> None:
        raise ConfigError(f"{type(self).__name__} ({self.what}) is a Quark algorithm ryzen-nb lacks; remove it "
                          "from algo_config.")


class SmoothQuantConfig(_Unavailable):
    name, what = "smooth_quant", "SmoothQuant"
    PARAMETERS = (("alpha", "SmoothAlpha", default("SmoothAlpha")),)


class GPTQConfig(_Unavailable):
    name, what = "gptq", "GPTQ"
    # Quark's defaults; ryzen-nb has no GPTQ options of its own
    PARAMETERS = (("bits", "", 8), ("block_size", "", 128), ("group_size", "", -1), ("perc_damp", "", 0.01),
                  ("act_order", "", False), ("per_channel", "", False), ("mse", "", False),
                  ("weight_symmetric", "", True))


class QuarotConfig(_Unavailable):
    name, what = "quarot", "QuaRot rotation"
    PARAMETERS = (("r_matrix_dim", "RMatrixDim", default("RMatrixDim")),
                  ("use_random_had", "UseRandomHad", default("UseRandomHad")),
                  ("r_config_path", "RConfigPath", None))


def apply_algorithms(qc: QuantizationConfig, algorithms: list[Any]) -> None:
    """Write ``algorithms`` into ``qc`` (in place). AdaRound and AdaQuant together are an error
    (Quark keeps the first with a warning; the second would silently do nothing)."""
    for algo in algorithms:
        if not isinstance(algo, AlgoConfig):
            raise ConfigError(f"algo_config takes CLEConfig, AdaRoundConfig, AdaQuantConfig, BiasCorrectionConfig or "
                              f"AutoMixprecisionConfig objects; got {algo!r}.")
    tuning = [a for a in algorithms if isinstance(a, _FastFinetuneConfig)]
    if len(tuning) > 1:
        raise ConfigError(f"algo_config holds {len(tuning)} fine-tuning algorithms "
                          f"({', '.join(type(a).__name__ for a in tuning)}); AdaRound and AdaQuant are alternatives: "
                          "keep one.")
    for algo in algorithms:
        algo.apply(qc)


#: Quark's registry of algorithm names, for ``from_dict``
ALGORITHMS: dict[str, type[AlgoConfig]] = {c.name: c for c in (CLEConfig, BiasCorrectionConfig, AdaRoundConfig,
                                                               AdaQuantConfig, AutoMixprecisionConfig,
                                                               SmoothQuantConfig, GPTQConfig, QuarotConfig)}


def from_dict(d: dict[str, Any]) -> AlgoConfig:
    """An algorithm config from ``{"name": "adaround", **arguments}`` (Quark's ``to_dict`` form)."""
    if "name" not in d:
        raise ConfigError(f"An algorithm dict names its algorithm: {{'name': 'adaround', ...}}; got {d!r}.")
    if d["name"] not in ALGORITHMS:
        raise UnknownNameError("algorithm", d["name"], ALGORITHMS)
    return ALGORITHMS[d["name"]](**{k: v for k, v in d.items() if k != "name"})
