"""Options of the accuracy-recovery algorithms, read from Quark's option names.

Each algorithm's knobs are one frozen dataclass; ``from_quark`` reads the dict a Quark config
carries (``extra_options['FastFinetune']``, ``extra_options['AutoMixprecision']``, the ``CLE*``
keys) and rejects names it does not know, suggesting the closest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["CLEOptions", "FineTuneOptions", "MixedPrecisionOptions"]

MAC_OP_TYPES = tuple(sorted(MAC_OPS))


def _read(cls: type, mapping: Mapping[str, Any], keys: dict[str, str], what: str, accepted: tuple[str, ...] = ()) -> dict:
    """Field values from Quark keys (``keys``: Quark name -> field); unknown keys are errors;
    ``accepted`` names are read and ignored (device placement and the like)."""
    from ryzen_nb.errors import UnknownNameError

    values = {}
    for key, value in mapping.items():
        if key in keys:
            values[keys[key]] = value
        elif key not in accepted:
            raise UnknownNameError(what, key, list(keys) + list(accepted))
    return values


@dataclass(frozen=True)
class CLEOptions:
    """Cross-layer equalization (Quark's CLE* extra options, CLEConfig)."""

    steps: int = 1
    balance_method: str = "max"
    weight_threshold: float = 0.5
    scale_append_bias: bool = True
    scale_use_threshold: bool = True
    total_layer_diff_threshold: float = 1.9e-7
    replace_clip6: bool = False

    KEYS = {"CLESteps": "steps", "CLEBalanceMethod": "balance_method", "CLEWeightThreshold": "weight_threshold",
            "CLEScaleAppendBias": "scale_append_bias", "CLEScaleUseThreshold": "scale_use_threshold",
            "CLETotalLayerDiffThreshold": "total_layer_diff_threshold", "ReplaceClip6Relu": "replace_clip6"}

    @classmethod
    def from_quark(cls, extra: Mapping[str, Any]) -> CLEOptions:
        return cls(**{field: extra[key] for key, field in cls.KEYS.items() if key in extra})


@dataclass(frozen=True)
class FineTuneOptions:
    """AdaRound / AdaQuant layer-wise reconstruction (Quark's ``FastFinetune`` dict)."""

    algorithm: str = "adaround"  #: "adaround" or "adaquant"
    num_iterations: int = 1000
    learning_rate: float | None = None  #: None: 0.1 for AdaRound, 1e-5 for AdaQuant (Quark's defaults)
    batch_size: int = 1  #: samples per iteration
    num_batches: int = 1  #: batches averaged per iteration
    data_size: int | None = None  #: samples collected per layer (None: up to 256 of the calibration data)
    fixed_seed: int = 1705472343
    early_stop: bool = False  #: stop a layer when its loss has not improved for a tenth of the iterations
    lr_adjust: tuple[float, float] | None = None  #: (loss threshold, rate for layers whose loss starts above it)
    target_op_types: tuple[str, ...] = MAC_OP_TYPES
    selective_update: bool = False  #: keep a layer's update only if its reconstruction loss improved
    update_bias: bool = True  #: AdaQuant: train the bias too (Quark's default in FastFinetune; AdaQuantConfig: False)
    drop_ratio: float = 1.0  #: share of input elements taken from the quantized model (QDrop); rest float
    reg_param: float = 0.01  #: AdaRound: weight of the rounding regulariser
    beta_range: tuple[float, float] = (20.0, 2.0)  #: AdaRound: annealing of the regulariser's exponent
    warm_start: float = 0.2  #: AdaRound: share of iterations without the regulariser
    log_period: int | None = None

    KEYS = {"OptimAlgorithm": "algorithm", "NumIterations": "num_iterations", "LearningRate": "learning_rate",
            "BatchSize": "batch_size", "NumBatches": "num_batches", "DataSize": "data_size", "FixedSeed": "fixed_seed",
            "EarlyStop": "early_stop", "LRAdjust": "lr_adjust", "TargetOpType": "target_op_types",
            "SelectiveUpdate": "selective_update", "UpdateBias": "update_bias", "DropRatio": "drop_ratio",
            "RegParam": "reg_param", "BetaRange": "beta_range", "WarmStart": "warm_start", "LogPeriod": "log_period"}
    #: read and ignored: ryzen-nb trains in numpy on the CPU, in memory
    ACCEPTED = ("OptimDevice", "InferDevice", "OutputQDQ", "MemOptLevel", "CacheDir", "SelectMaxMemLayer",
                "NumWorkers", "PinMemory", "UseGDS", "OutputIndex", "RefModelPath", "DynamicBatch", "Parallel")

    def __post_init__(self) -> None:
        from ryzen_nb.errors import ConfigError

        algorithm = str(self.algorithm).lower()
        if algorithm not in ("adaround", "adaquant"):
            raise ConfigError(f"FastFinetune OptimAlgorithm must be 'adaround' or 'adaquant'; got {self.algorithm!r}.")
        object.__setattr__(self, "algorithm", algorithm)
        object.__setattr__(self, "target_op_types", tuple(self.target_op_types))
        for name in ("num_iterations", "batch_size", "num_batches"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"FastFinetune {name} must be at least 1; got {getattr(self, name)!r}.")
        if not 0.0 <= float(self.drop_ratio) <= 1.0:
            raise ConfigError(f"FastFinetune DropRatio must be in [0, 1]; got {self.drop_ratio!r}.")

    @property
    def lr(self) -> float:
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return 0.1 if self.algorithm == "adaround" else 1e-5

    @classmethod
    def from_quark(cls, params: Mapping[str, Any] | None) -> FineTuneOptions:
        return cls(**_read(cls, params or {}, cls.KEYS, "FastFinetune option", cls.ACCEPTED))


@dataclass(frozen=True)
class MixedPrecisionOptions:
    """Layer-wise and automatic mixed precision (Quark's ``AutoMixprecision`` dict).

    Formats are ryzen-nb format names (resolved from Quark's QuantType values by the config)."""

    target_op_types: tuple[str, ...] = MAC_OP_TYPES
    act_format: str | None = None  #: activations of the layers switched (None: unchanged)
    weight_format: str | None = None  #: weights of the layers switched (None: unchanged)
    dual_quant_nodes: bool = False  #: keep the original quantizer beside the new one on boundary tensors
    l2_target: float | None = None
    top1_target: float | None = None  #: largest top-1 drop allowed (with evaluate_function)
    evaluate_function: Callable[[list], float] | None = None
    output_index: int = 0
    data_size: int | None = None
    num_target: int = 0  #: switch this many of the least sensitive layers (0: as many as the targets allow)
    target_tensors: tuple[str, ...] = ()
    target_indices: tuple[int, ...] = ()
    exclude_indices: tuple[int, ...] = ()
    include_layers: tuple[str, ...] = ()  #: node names: only these are candidates (empty: all target layers)
    exclude_layers: tuple[str, ...] = ()  #: node names never switched
    analysis_only: bool = False  #: measure the sensitivities, switch nothing
    no_input_qdq_shared: bool = True
    #: True: switch every target layer without analysis (Quark does so for BFP/MX targets)
    direct: bool = False

    KEYS = {"TargetOpType": "target_op_types", "DualQuantNodes": "dual_quant_nodes", "L2Target": "l2_target",
            "Top1AccTarget": "top1_target", "EvaluateFunction": "evaluate_function", "OutputIndex": "output_index",
            "DataSize": "data_size", "NumTarget": "num_target", "TargetTensors": "target_tensors",
            "TargetIndices": "target_indices", "ExcludeIndices": "exclude_indices",
            "IncludeLayers": "include_layers", "ExcludeLayers": "exclude_layers", "AnalysisOnly": "analysis_only",
            "NoInputQDQShared": "no_input_qdq_shared"}
    #: format keys, resolved by the config into act_format / weight_format
    FORMAT_KEYS = ("TargetQuantType", "ActTargetQuantType", "WeightTargetQuantType", "BiasTargetQuantType")
    ACCEPTED = ("AutoMixUseFastFT",)

    def __post_init__(self) -> None:
        from ryzen_nb.errors import ConfigError

        for name in ("target_op_types", "target_tensors", "target_indices", "exclude_indices", "include_layers",
                     "exclude_layers"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        if self.top1_target is not None and self.evaluate_function is None:
            raise ConfigError("AutoMixprecision Top1AccTarget needs EvaluateFunction: a function taking the list of "
                              "model outputs over the data and returning top-1 accuracy in [0, 1].")

    @classmethod
    def from_quark(cls, params: Mapping[str, Any], act_format: str | None, weight_format: str | None,
                   direct: bool) -> MixedPrecisionOptions:
        values = _read(cls, params, cls.KEYS, "AutoMixprecision option", cls.FORMAT_KEYS + cls.ACCEPTED)
        if values.get("l2_target") is not None and values.get("top1_target") is not None:
            values.pop("l2_target")  # as Quark: the top-1 target wins (with a warning there)
        return cls(**values, act_format=act_format, weight_format=weight_format, direct=direct)

    def replace(self, **changes: Any) -> MixedPrecisionOptions:
        return dataclasses.replace(self, **changes)
