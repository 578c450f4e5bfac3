"""Every option of a quantization config, declared once: name, default, meaning, status.

One typed schema: the ``extra_options`` keys (:data:`EXTRA_OPTIONS`), the keys of the nested option
dicts (:data:`NESTED`: ``FastFinetune``, ``AutoMixprecision``, ``BFPAttributes``, ``MXAttributes``),
and the typed option records the algorithms read (:class:`CLEOptions`, :class:`FineTuneOptions`,
:class:`MixedPrecisionOptions`), whose defaults come from those tables and are never typed twice.
The config (:mod:`ryzen_nb.quantization.config`), the engine's settings, the config builder and the
Quark-compatible classes (:mod:`ryzen_nb.quark`) all read defaults from here.

Names and defaults follow AMD Quark's ONNX quantizer (docs/quark.md#built-in-configs, docs/quark.md#npu-extra-options) so a config copied from
the Ryzen AI or Quark documentation works unchanged. An unknown key is an error suggesting the
closest known one (Quark's legacy API silently ignores it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.graph.npu_forms import LARGE_POOL
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["Option", "EXTRA_OPTIONS", "NESTED", "default", "check_extra_options", "CLEOptions", "FineTuneOptions",
           "MixedPrecisionOptions", "FINETUNE_ALGORITHM_DEFAULTS", "FINETUNE_CLASS_DEFAULTS"]


@dataclass(frozen=True)
class Option:
    name: str
    default: Any
    description: str
    #: "supported", "accepted" (recognised and harmless here: the engine's behaviour already matches,
    #: or it only affects Quark internals), or "planned" (a later ryzen-nb feature; an error if set)
    status: str = "supported"
    #: the field of the typed options record this key fills (nested options), if any
    field: str = ""


def _o(name: str, default: Any, description: str, status: str = "supported", field: str = "") -> Option:
    return Option(name, default, description, status, field)


EXTRA_OPTIONS: dict[str, Option] = {
    o.name: o
    for o in (
        # -- symmetry, scaling, bias -------------------------------------------------------------------
        _o("ActivationSymmetric", False, "symmetric activation ranges (uint8 then uses zero point 128)"),
        _o("WeightSymmetric", True, "symmetric weight ranges"),
        _o("ActivationScaled", False, "scale float activations into a reduced range", "planned"),
        _o("WeightScaled", False, "scale float weights into a reduced range", "planned"),
        _o("QuantizeFP16", False, "float16 input model", "planned"),
        _o("UseFP32Scale", True, "float32 scales (ryzen-nb always uses them)", "accepted"),
        _o("UseUnsignedReLU", False, "asymmetric ReLU outputs", "planned"),
        _o("QuantizeBias", True, "quantize biases at all"),
        _o("Int32Bias", True, "biases as int32 with scale input*weight (default False with enable_npu_cnn)"),
        _o("Int16Bias", False, "biases as int16", "planned"),
        _o("AdjustBiasScale", True, "bias scale = activation scale x weight scale (ryzen-nb always does)", "accepted"),
        _o("Int16Scale", False, "scales as int16 M * 2^N", "planned"),
        # -- calibration ----------------------------------------------------------------------------------
        _o("CalibTensorRangeSymmetric", False, "symmetric calibration ranges (implied by ActivationSymmetric)", "accepted"),
        _o("CalibMovingAverage", False, "moving averages of per-sample min/max (MinMax); not for power-of-two"),
        _o("CalibMovingAverageConstant", 0.01, "averaging constant of CalibMovingAverage"),
        _o("Percentile", 99.999, "percentile of the Percentile method"),
        _o("NumBins", 2048, "histogram bins (a multiple of 4)"),
        _o("NumQuantizedBins", 128, "quantized bins of the Entropy search"),
        _o("MinMSEMode", "All", "MinMSE statistics: 'All' (one histogram of every sample)"),
        _o("MinMSEModePof2Scale", "All", "Quark >= 0.10 name of MinMSEMode"),
        _o("LegacyNonOverflow", False, "vai_q_onnx's floor-based NonOverflow (guaranteed no overflow)"),
        _o("WeightCalibrateMethod", None, "float-scale weights: MinMax (None, the default) or MinMSE (the clipping "
           "range of least squared error)"),
        _o("MinMSEModeFloatScale", "Percentile", "WeightCalibrateMethod=MinMSE's candidates: Percentile, "
           "HistCenter or All"),
        _o("LWPMetric", "mae", "LayerWisePercentile metric", "planned"),
        _o("ActivationBitWidth", 8, "LayerWisePercentile", "planned"),
        _o("PercentileCandidates", [99.99, 99.999, 99.9999], "LayerWisePercentile candidates", "planned"),
        _o("CalibDataSize", None, "use at most this many calibration samples"),
        _o("CalibWorkerNum", 1, "calibration processes (ryzen-nb streams in one)", "accepted"),
        _o("CalibOptimizeMem", True, "ryzen-nb always streams statistics", "accepted"),
        _o("CalibOptimizeDisk", True, "", "accepted"),
        _o("SaveTensorHistFig", False, "", "accepted"),
        _o("CalibPassthroughOpTypes", [], "ops reusing the producer's range (ryzen-nb shares data-movement scales)", "accepted"),
        _o("UseRandomData", False, "calibrate on random data when no reader is given (quick tests only)"),
        _o("RandomDataReaderInputShape", {}, "{input name: shape} for random data"),
        _o("RandomDataReaderInputDataRange", None, "{input name: [low, high]} for random data (default [0, 1))"),
        _o("SaveAndRestore", None, "save/restore calibration ranges", "planned"),
        _o("TensorsRangeFile", None, "old name of SaveAndRestore", "planned"),
        _o("TensorQuantOverrides", {}, "onnxruntime's per-tensor overrides", "planned"),
        _o("QuantizationPreference", None, "", "accepted"),
        # -- what to quantize --------------------------------------------------------------------------------
        _o("QuantizeAllOpTypes", False, "quantize every op type the quantizer knows (the default here)", "accepted"),
        _o("ForceQuantizeNoInputCheck", False, "quantize Transpose, Reshape, Squeeze, Unsqueeze, Resize, MaxPool, "
           "Gather and LayerNormalization even where what they read is not quantized (the integer and BF16 presets "
           "set it); off, they stay float there, as in Quark; with WeightsOnly, off leaves LayerNormalization's "
           "scale and bias float"),
        _o("WeightsOnly", False, "quantize weights (and XINT8's int8 biases) only; activations stay float32, no "
           "calibration is needed, and biases that would be int32 stay float, as in Quark"),
        _o("MatMulConstBOnly", False, "only MatMuls with a constant B", "planned"),
        _o("EnableSubgraph", False, "quantize subgraphs of If/Loop", "planned"),
        _o("AddQDQPairToWeight", False, "keep float weights with a Q/DQ pair", "accepted"),
        _o("OpTypesToExcludeOutputQuantization", [], "op types whose outputs stay float", "planned"),
        _o("NodesToExcludeOutputQuantization", [], "nodes whose outputs stay float", "planned"),
        _o("DedicatedQDQPair", False, "one QDQ pair per consumer", "accepted"),
        _o("DedicateDQNode", False, "one DequantizeLinear per consumer", "accepted"),
        _o("EnableDualQuantNodePairs", False, "two quantizers on mixed-precision boundaries (as DualQuantNodes)"),
        _o("QDQOpTypePerChannelSupportToAxis", {}, "per-channel axis per op type ({} for the NPU)", "accepted"),
        _o("UseQDQVitisCustomOps", True, "", "accepted"),
        _o("MixedPrecisionTensor", {}, "{format or QuantType: [tensor names]} — tensor-wise mixed precision"),
        # -- alignment and NPU legality -------------------------------------------------------------------------
        _o("AlignConcat", True, "Concat inputs and output share one scale"),
        _o("AlignSlice", True, "Slice output shares its input's scale"),
        _o("AlignPool", True, "MaxPool output shares its input's scale"),
        _o("AlignPad", True, "Pad output shares its input's scale"),
        _o("AlignTranspose", False, "", "accepted"),
        _o("AlignReshape", False, "", "accepted"),
        _o("AlignEltwiseQuantType", False, "constant operands of Add/Sub/Mul/Div take the activations' type, not "
           "the weights' (A16W8: int16 position embeddings and scales); not with enable_npu_cnn/_transformer"),
        _o("FoldRelu", False, "no QDQ between Conv/Gemm/MatMul/Add and a following Relu (fused on the NPU)"),
        # ryzen-nb's own key: see Settings.ort_fusable_folds and quantization/emit.py (_ort_fusable_folds)
        _o("ORTFusableQDQ", False, "with FoldRelu and int32 biases, also the Relu's 8-bit quantizer before it "
           "(same values): onnxruntime then fuses the convolution into its integer kernel, which is faster but "
           "saturates on x86 CPUs without VNNI"),
        _o("RemoveQDQConvRelu", True, "as FoldRelu, for the NPU CNN flow"),
        _o("RemoveQDQConvClip", True, "as FoldRelu for Clip"),
        _o("RemoveQDQConvLeakyRelu", True, "as FoldRelu for LeakyRelu"),
        _o("RemoveQDQConvPRelu", True, "as FoldRelu for PRelu"),
        _o("RemoveQDQConvGelu", False, "", "planned"),
        _o("RemoveQDQMulAdd", False, "", "planned"),
        _o("RemoveQDQBetweenOps", None, "", "planned"),
        _o("RemoveQDQInstanceNorm", False, "", "planned"),
        _o("RemoveFusedQDQ", False, "", "planned"),
        _o("RemoveInputInit", True, "initializers listed as graph inputs are dropped (always here)", "accepted"),
        _o("CopySharedInit", None, "", "accepted"),
        _o("CopyBiasInit", None, "", "accepted"),
        _o("FixShapes", None, "'input:[1,3,224,224];...' — use input_shapes= instead", "planned"),
        _o("FillAllValueInfo", False, "", "accepted"),
        _o("NPULimitationCheck", True, "apply the XINT8 shift-range refinements (docs/npu-numerics.md#xint8-shift-limits)"),
        _o("IPULimitationCheck", True, "old name of NPULimitationCheck"),
        _o("MaxLoopNum", 5, "refinement passes"),
        *(_o(k, True, "individual refinement switches (all applied together here)", "accepted")
          for k in ("AdjustShiftCut", "AdjustShiftBias", "AdjustShiftRead", "AdjustShiftWrite", "AdjustHardSigmoid",
                    "AdjustShiftSwish")),
        _o("SimulateDPU", True, "apply the DPU-version rewrites below (NPU CNN flow)"),
        _o("ConvertLeakyReluToDPUVersion", True, "LeakyRelu alpha -> k/256"),
        _o("ConvertSigmoidToHardSigmoid", True, "Sigmoid -> HardSigmoid(1/6, 0.5)"),
        _o("ConvertHardSigmoidToDPUVersion", True, "HardSigmoid 1/6 -> 2731/2^14"),
        _o("ConvertAvgPoolToDPUVersion", True, "average pooling divides by k/2^n"),
        _o("ConvertReduceMeanToDPUVersion", True, "ReduceMean divides by k/2^n"),
        _o("ConvertClipToDPUVersion", False, "Clip bounds on the output grid", "planned"),
        _o("ConvertSoftmaxToDPUVersion", False, "bf16 polynomial Softmax", "planned"),
        _o("ConvertInstanceNormToDPUVersion", False, "DPU InstanceNorm", "planned"),
        # -- graph preprocessing ---------------------------------------------------------------------------------
        _o("SimplifyModel", True, "MatMuls with a constant weight become Gemm, with their bias Add if any (the bias "
           "then adds into the accumulator; onnxruntime runs the Gemm as written)"),
        _o("SimplifyModelOptions", {}, "", "accepted"),
        _o("SkipPreprocess", False, "", "accepted"),
        _o("PreprocessYAML", None, "", "accepted"),
        _o("ConvertOpsetVersion", None, "ryzen-nb always writes opset 21", "accepted"),
        # the four rewrites into NPU forms (ryzen_nb.graph.npu_forms), after CLE and before planning; on unless
        # set to False, as in Quark's NPU and extended-QDQ flows, off by default with BF16QDQToCast/EnableVaimlBF16
        _o("ConvertBNToConv", True, "a BatchNormalization after a Conv/ConvTranspose/Gemm is folded into it during "
           "preparation (always); one left alone on a 4-D tensor becomes a depthwise 1x1 Conv"),
        _o("ConvertReduceMeanToGlobalAvgPool", True, "a ReduceMean over axes [2, 3] that keeps them becomes a "
           "GlobalAveragePool"),
        _o("SplitLargeKernelPool", True, f"a GlobalAveragePool over more than {LARGE_POOL} values becomes an "
           "AveragePool over tiles, then a GlobalAveragePool"),
        _o("ConvertSplitToSlice", True, "a Split with explicit sizes becomes one Slice per output (Split has no XINT8 "
           "or A8W8 NPU kernel)"),
        _o("FuseInstanceNorm", True, "", "accepted"),
        _o("FuseL2Norm", True, "", "accepted"),
        _o("FuseGelu", True, "", "accepted"),
        _o("FuseLayerNorm", True, "", "accepted"),
        _o("ConvertClipToRelu", False, "", "accepted"),
        _o("FoldBatchNorm", True, "", "accepted"),
        _o("ReplaceClip6Relu", False, "with CLE: Clip(0, 6) becomes Relu so it can be equalized (changes outputs above 6)"),
        _o("ReplaceSigmoid", False, "", "accepted"),
        # -- bf16 / block formats ---------------------------------------------------------------------------------
        _o("BF16WithClip", False, "", "accepted"),
        _o("BF16QDQToCast", False, "float-format quantizers as visible Cast pairs, weights stored in bf16 "
                                   "(else one QuantizeDequantize function node per tensor)"),
        _o("EnableVaimlBF16", False, "float-format weights stored as float32 values on the format's grid"),
        _o("RefineBlockAxis", True, "block formats run blocks along each op's reduction axis (always here)", "accepted"),
        _o("BFPAttributes", {}, "{bfp_method, axis, bit_width, block_size, rounding_mode, ...} of QBFP types"),
        _o("MXAttributes", {}, "{element_dtype, axis, block_size, rounding_mode} of QMX types"),
        # -- accuracy recovery and others (later ryzen-nb releases) ------------------------------------------------------
        _o("FastFinetune", {}, "AdaRound / AdaQuant settings (include_fast_ft): the keys of NESTED['FastFinetune']"),
        _o("AutoMixprecision", {}, "layer-wise and automatic mixed precision (include_auto_mp)"),
        _o("DualQuantNodes", False, "both quantizers on mixed-precision boundaries (also inside AutoMixprecision)"),
        *(_o(k, d, "cross-layer equalization (include_cle)") for k, d in (
            ("CLESteps", 1), ("CLETotalLayerDiffThreshold", 1.9e-7), ("CLEScaleAppendBias", True),
            ("CLEBalanceMethod", "max"), ("CLEWeightThreshold", 0.5), ("CLEScaleUseThreshold", True))),
        _o("BiasCorrection", False, "empirical bias correction after quantization"),
        _o("SmoothAlpha", 0.5, "SmoothQuant", "planned"),
        _o("RMatrixDim", 4096, "QuaRot", "planned"),
        _o("UseRandomHad", False, "QuaRot", "planned"),
        _o("RConfigPath", "", "QuaRot", "planned"),
        _o("UseGPTQ", False, "GPTQ", "planned"),
        _o("GPTQParams", {}, "GPTQ", "planned"),
        _o("UseMatMulNBits", False, "MatMulNBits", "planned"),
        _o("MatMulNBitsParams", {}, "MatMulNBits", "planned"),
        _o("EvalMetrics", False, "cosine/L2 vs float after quantization (see ryzen_nb.evaluation)", "accepted"),
        _o("EvalDataReader", None, "", "accepted"),
        _o("TmpDir", None, "", "accepted"),
        _o("UserCustomOpLibPath", None, "", "accepted"),
        _o("EncryptionAlgorithm", None, "", "planned"),
        _o("IgnoreWarnings", True, "", "accepted"),
        _o("LogSeverityLevel", 1, "", "accepted"),
    )
}

#: Quark's algorithm classes (AdaRoundConfig, AdaQuantConfig) default some FastFinetune keys per
#: algorithm; a FastFinetune dict that names the algorithm and omits the key gets the same value
FINETUNE_ALGORITHM_DEFAULTS: dict[str, dict[str, Any]] = {
    "adaround": {"NumIterations": 1000, "LearningRate": 0.1},
    "adaquant": {"NumIterations": 3000, "LearningRate": 1e-5},
}

#: Quark's AdaRoundConfig / AdaQuantConfig classes (the QConfig API) pass these where they differ from the
#: FastFinetune dict's own defaults (its UpdateBias defaults to True, the classes pass False)
FINETUNE_CLASS_DEFAULTS: dict[str, Any] = {"UpdateBias": False}

_FT = "AdaRound / AdaQuant"
_AMP = "mixed precision"
#: the keys of the nested option dicts; ``field`` names the typed record's field a key fills
NESTED: dict[str, dict[str, Option]] = {
    "FastFinetune": {o.name: o for o in (
        _o("OptimAlgorithm", "adaround", f"{_FT}: 'adaround' or 'adaquant'", field="algorithm"),
        _o("NumIterations", None, f"{_FT}: iterations per layer (default per algorithm: "
           "FINETUNE_ALGORITHM_DEFAULTS)", field="num_iterations"),
        _o("LearningRate", None, f"{_FT}: Adam learning rate (default per algorithm)", field="learning_rate"),
        _o("BatchSize", 1, f"{_FT}: samples per iteration", field="batch_size"),
        _o("NumBatches", 1, f"{_FT}: batches averaged per iteration", field="num_batches"),
        _o("DataSize", None, f"{_FT}: samples collected per layer (None: up to 256 of the calibration data)",
           field="data_size"),
        _o("FixedSeed", 1705472343, f"{_FT}: random seed of the batches", field="fixed_seed"),
        _o("EarlyStop", False, f"{_FT}: stop a layer when its loss has not improved for a tenth of the iterations",
           field="early_stop"),
        _o("LRAdjust", None, f"{_FT}: (loss threshold, rate for layers whose loss starts above it)",
           field="lr_adjust"),
        _o("TargetOpType", tuple(sorted(MAC_OPS)), f"{_FT}: op types tuned", field="target_op_types"),
        _o("SelectiveUpdate", False, f"{_FT}: keep a layer's update only if its loss improved (off, an update "
           "that more than doubles a layer's loss is still refused, with a warning)",
           field="selective_update"),
        _o("UpdateBias", True, "AdaQuant: train the bias too (Quark's FastFinetune default; its AdaQuantConfig "
           "class passes False)", field="update_bias"),
        _o("DropRatio", 1.0, f"{_FT}: share of input elements from the quantized model (QDrop); the rest float",
           field="drop_ratio"),
        _o("RegParam", 0.01, "AdaRound: weight of the rounding regulariser", field="reg_param"),
        _o("BetaRange", (20.0, 2.0), "AdaRound: annealing of the regulariser's exponent", field="beta_range"),
        _o("WarmStart", 0.2, "AdaRound: share of iterations without the regulariser", field="warm_start"),
        _o("LogPeriod", None, f"{_FT}: log every N iterations", field="log_period"),
        # Quark's own defaults, so its AdaRoundConfig / AdaQuantConfig signatures read the same values
        *(_o(k, d, f"{_FT}: read and ignored (ryzen-nb trains in numpy on the CPU, in memory)", "accepted")
          for k, d in (("OptimDevice", "cpu"), ("InferDevice", "cpu"), ("OutputQDQ", False), ("MemOptLevel", 1),
                       ("CacheDir", None), ("SelectMaxMemLayer", False), ("NumWorkers", 1), ("PinMemory", False),
                       ("UseGDS", False), ("OutputIndex", 0), ("RefModelPath", None), ("DynamicBatch", False),
                       ("Parallel", False))),
    )},
    "AutoMixprecision": {o.name: o for o in (
        _o("TargetOpType", tuple(sorted(MAC_OPS)), f"{_AMP}: op types that may switch", field="target_op_types"),
        _o("TargetQuantType", None, f"{_AMP}: the type switched layers get (activations and weights)"),
        _o("ActTargetQuantType", None, f"{_AMP}: the activation type switched layers get"),
        _o("WeightTargetQuantType", None, f"{_AMP}: the weight type switched layers get"),
        _o("BiasTargetQuantType", None, f"{_AMP}: read and ignored (biases follow the weights)", "accepted"),
        _o("DualQuantNodes", False, f"{_AMP}: both quantizers on precision boundaries", field="dual_quant_nodes"),
        _o("L2Target", None, f"{_AMP}: largest average L2 distance to the float output", field="l2_target"),
        _o("Top1AccTarget", None, f"{_AMP}: largest top-1 drop (with EvaluateFunction)", field="top1_target"),
        _o("EvaluateFunction", None, f"{_AMP}: outputs -> top-1 accuracy", field="evaluate_function"),
        _o("OutputIndex", 0, f"{_AMP}: the model output measured", field="output_index"),
        _o("DataSize", None, f"{_AMP}: samples used (None: 32)", field="data_size"),
        _o("NumTarget", 0, f"{_AMP}: switch this many of the least sensitive layers (0: as the targets allow)",
           field="num_target"),
        _o("TargetTensors", (), f"{_AMP}: tensors that may switch", field="target_tensors"),
        _o("TargetIndices", (), f"{_AMP}: layer indices that may switch", field="target_indices"),
        _o("ExcludeIndices", (), f"{_AMP}: layer indices never switched", field="exclude_indices"),
        _o("IncludeLayers", (), f"{_AMP}: node names that may switch (empty: all target layers)",
           field="include_layers"),
        _o("ExcludeLayers", (), f"{_AMP}: node names never switched", field="exclude_layers"),
        _o("AnalysisOnly", False, f"{_AMP}: measure the sensitivities, switch nothing", field="analysis_only"),
        # ryzen-nb's own key (Quark has none): the analysis evaluates one model per layer, independently
        _o("Executor", None, f"{_AMP}: where the sensitivity analysis runs: None (this process), a number of local "
           "worker processes, a dask Client or a scheduler address (ryzen_nb.executor)", field="executor"),
        _o("NoInputQDQShared", True, f"{_AMP}: layers reading one activation switch together",
           field="no_input_qdq_shared"),
        _o("AutoMixUseFastFT", False, f"{_AMP}: read and ignored", "accepted"),
    )},
    "BFPAttributes": {o.name: o for o in (
        _o("bfp_method", "to_bfp", "'to_bfp' (BFP16) or 'to_bfp_prime' (MX4/MX6/MX9)"),
        _o("axis", 1, "the axis blocks run along"),
        _o("bit_width", 16, "bits per element including the shared exponent's share"),
        _o("block_size", 8, "elements per block"),
        _o("rounding_mode", 2, "0 half away from zero, 1 half up, 2 half to even"),
        _o("sub_block_size", 2, "to_bfp_prime: elements per sub-block"),
        _o("sub_block_shift_bits", 1, "to_bfp_prime: bits of each sub-block's shift"),
        _o("convert_to_bfloat_before_bfp", False, "round to bfloat16 first", "accepted"),
        _o("use_compiler_version_cpu_kernel", False, "the compiler's BFP16 rounding variant"),
    )},
    "MXAttributes": {o.name: o for o in (
        _o("element_dtype", None, "int8, fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3 or fp4_e2m1"),
        _o("axis", 1, "the axis blocks run along"),
        _o("block_size", 32, "elements per block (OCP MX: 32)"),
        _o("rounding_mode", 2, "0 half away from zero, 1 half up, 2 half to even"),
    )},
}


def default(key: str, nested: str | None = None) -> Any:
    """The default of ``extra_options[key]`` (or of ``extra_options[nested][key]``)."""
    table = EXTRA_OPTIONS if nested is None else NESTED[nested]
    return table[key].default


def check_extra_options(extra: dict[str, Any]) -> None:
    """Raise for unknown keys (with suggestions) and for planned-but-unimplemented options."""
    if not isinstance(extra, dict):
        raise ConfigError(f"extra_options must be a dict; got {type(extra).__name__}.")
    for key, value in extra.items():
        if key not in EXTRA_OPTIONS:
            raise UnknownNameError("extra option", key, EXTRA_OPTIONS)
        option = EXTRA_OPTIONS[key]
        if option.status == "planned" and value not in (option.default, None, {}, [], False):
            raise ConfigError(
                f"extra_options[{key!r}] is recognised but not implemented in this version of ryzen-nb; "
                "remove it (see the release notes for the algorithms and mixed-precision work)."
            )
        if key in NESTED and value:
            if not isinstance(value, dict):
                raise ConfigError(f"extra_options[{key!r}] must be a dict; got {type(value).__name__}.")
            for sub in value:
                if sub not in NESTED[key]:
                    raise UnknownNameError(f"{key} option" if key in _TYPED else f"{key} key", sub, NESTED[key])


#: nested dicts read into typed records (their unknown keys are named "... option" in errors)
_TYPED = ("FastFinetune", "AutoMixprecision")


def _fields(nested: str, values: Mapping[str, Any] | None) -> dict[str, Any]:
    """Typed-record field values from a nested dict (keys without a field are read and ignored)."""
    table = NESTED[nested]
    out = {}
    for key, value in (values or {}).items():
        if key not in table:
            raise UnknownNameError(f"{nested} option", key, table)
        if table[key].field:
            out[table[key].field] = value
    return out


def _nested_default(nested: str, field: str) -> Any:
    return next(o.default for o in NESTED[nested].values() if o.field == field)


# -- the typed records the algorithms read -----------------------------------------------------------------
#: CLE* extra option -> CLEOptions field
_CLE_KEYS = {"CLESteps": "steps", "CLEBalanceMethod": "balance_method", "CLEWeightThreshold": "weight_threshold",
             "CLEScaleAppendBias": "scale_append_bias", "CLEScaleUseThreshold": "scale_use_threshold",
             "CLETotalLayerDiffThreshold": "total_layer_diff_threshold", "ReplaceClip6Relu": "replace_clip6"}


@dataclass(frozen=True)
class CLEOptions:
    """Cross-layer equalization (Quark's CLE* extra options, CLEConfig)."""

    steps: int = default("CLESteps")
    balance_method: str = default("CLEBalanceMethod")
    weight_threshold: float = default("CLEWeightThreshold")
    scale_append_bias: bool = default("CLEScaleAppendBias")
    scale_use_threshold: bool = default("CLEScaleUseThreshold")
    total_layer_diff_threshold: float = default("CLETotalLayerDiffThreshold")
    replace_clip6: bool = default("ReplaceClip6Relu")

    @classmethod
    def from_quark(cls, extra: Mapping[str, Any]) -> CLEOptions:
        return cls(**{field: extra[key] for key, field in _CLE_KEYS.items() if key in extra})


def _ft(field: str) -> Any:
    return _nested_default("FastFinetune", field)


@dataclass(frozen=True)
class FineTuneOptions:
    """AdaRound / AdaQuant layer-wise reconstruction (Quark's ``FastFinetune`` dict)."""

    algorithm: str = _ft("algorithm")  #: "adaround" or "adaquant"
    num_iterations: int | None = _ft("num_iterations")  #: None: the algorithm's default
    learning_rate: float | None = _ft("learning_rate")  #: None: the algorithm's default
    batch_size: int = _ft("batch_size")
    num_batches: int = _ft("num_batches")
    data_size: int | None = _ft("data_size")
    fixed_seed: int = _ft("fixed_seed")
    early_stop: bool = _ft("early_stop")
    lr_adjust: tuple[float, float] | None = _ft("lr_adjust")
    target_op_types: tuple[str, ...] = _ft("target_op_types")
    selective_update: bool = _ft("selective_update")
    update_bias: bool = _ft("update_bias")
    drop_ratio: float = _ft("drop_ratio")
    reg_param: float = _ft("reg_param")
    beta_range: tuple[float, float] = _ft("beta_range")
    warm_start: float = _ft("warm_start")
    log_period: int | None = _ft("log_period")

    def __post_init__(self) -> None:
        algorithm = str(self.algorithm).lower()
        if algorithm not in FINETUNE_ALGORITHM_DEFAULTS:
            raise ConfigError(f"FastFinetune OptimAlgorithm must be 'adaround' or 'adaquant'; got {self.algorithm!r}.")
        object.__setattr__(self, "algorithm", algorithm)
        own = FINETUNE_ALGORITHM_DEFAULTS[algorithm]
        if self.num_iterations is None:
            object.__setattr__(self, "num_iterations", own["NumIterations"])
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
        return float(FINETUNE_ALGORITHM_DEFAULTS[self.algorithm]["LearningRate"])

    @classmethod
    def from_quark(cls, params: Mapping[str, Any] | None) -> FineTuneOptions:
        return cls(**_fields("FastFinetune", params))


def _amp(field: str) -> Any:
    return _nested_default("AutoMixprecision", field)


@dataclass(frozen=True)
class MixedPrecisionOptions:
    """Layer-wise and automatic mixed precision (Quark's ``AutoMixprecision`` dict).

    Formats are ryzen-nb format names (resolved from Quark's QuantType values by the config)."""

    target_op_types: tuple[str, ...] = _amp("target_op_types")
    act_format: str | None = None  #: activations of the layers switched (None: unchanged)
    weight_format: str | None = None  #: weights of the layers switched (None: unchanged)
    dual_quant_nodes: bool = _amp("dual_quant_nodes")  #: keep the original quantizer beside the new one
    l2_target: float | None = _amp("l2_target")
    top1_target: float | None = _amp("top1_target")  #: largest top-1 drop allowed (with evaluate_function)
    evaluate_function: Callable[[list], float] | None = _amp("evaluate_function")
    output_index: int = _amp("output_index")
    data_size: int | None = _amp("data_size")
    num_target: int = _amp("num_target")
    target_tensors: tuple[str, ...] = _amp("target_tensors")
    target_indices: tuple[int, ...] = _amp("target_indices")
    exclude_indices: tuple[int, ...] = _amp("exclude_indices")
    include_layers: tuple[str, ...] = _amp("include_layers")
    exclude_layers: tuple[str, ...] = _amp("exclude_layers")
    analysis_only: bool = _amp("analysis_only")
    no_input_qdq_shared: bool = _amp("no_input_qdq_shared")
    executor: Any = _amp("executor")  #: see ryzen_nb.executor.get_executor
    #: True: switch every target layer without analysis (Quark does so for BFP/MX targets)
    direct: bool = False

    def __post_init__(self) -> None:
        for name in ("target_op_types", "target_tensors", "target_indices", "exclude_indices", "include_layers",
                     "exclude_layers"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        if self.top1_target is not None and self.evaluate_function is None:
            raise ConfigError("AutoMixprecision Top1AccTarget needs EvaluateFunction: a function taking the list of "
                              "model outputs over the data and returning top-1 accuracy in [0, 1].")

    @classmethod
    def from_quark(cls, params: Mapping[str, Any], act_format: str | None, weight_format: str | None,
                   direct: bool) -> MixedPrecisionOptions:
        values = _fields("AutoMixprecision", params)
        if values.get("l2_target") is not None and values.get("top1_target") is not None:
            values.pop("l2_target")  # as Quark: the top-1 target wins (with a warning there)
        return cls(**values, act_format=act_format, weight_format=weight_format, direct=direct)

    def replace(self, **changes: Any) -> MixedPrecisionOptions:
        return dataclasses.replace(self, **changes)
