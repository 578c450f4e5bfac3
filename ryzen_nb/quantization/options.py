"""Every ``extra_options`` key ryzen-nb understands, declared once: default, meaning, nested keys.

Names and defaults follow AMD Quark's ONNX quantizer (NPU_SPEC §5.2–5.3) so a config copied from
the Ryzen AI or Quark documentation works unchanged. An unknown key is an error suggesting the
closest known one (Quark's legacy API silently ignores it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ryzen_nb.errors import ConfigError, UnknownNameError

__all__ = ["ExtraOption", "EXTRA_OPTIONS", "NESTED_KEYS", "check_extra_options"]


@dataclass(frozen=True)
class ExtraOption:
    name: str
    default: Any
    description: str
    #: "supported", "accepted" (recognised and harmless here: the engine's behaviour already matches,
    #: or it only affects Quark internals), or "planned" (a later ryzen-nb feature; an error if set)
    status: str = "supported"


def _o(name: str, default: Any, description: str, status: str = "supported") -> ExtraOption:
    return ExtraOption(name, default, description, status)


EXTRA_OPTIONS: dict[str, ExtraOption] = {
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
        _o("WeightCalibrateMethod", None, "float-scale weights: MinMax (default) or MinMSE", "planned"),
        _o("MinMSEModeFloatScale", "Percentile", "", "planned"),
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
        _o("ForceQuantizeNoInputCheck", False, "quantize ops whose inputs are not quantized (the default here)", "accepted"),
        _o("WeightsOnly", False, "quantize weights only", "planned"),
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
        _o("AlignEltwiseQuantType", False, "eltwise inputs share one type (A16W8)", "accepted"),
        _o("FoldRelu", False, "no QDQ between Conv/Gemm and a following Relu (fused on the NPU)"),
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
        _o("NPULimitationCheck", True, "apply the XINT8 shift-range refinements (NPU_SPEC §4.1.4)"),
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
        _o("SimplifyModel", True, "MatMul + bias Add pairs become Gemm (the bias then adds into the accumulator)"),
        _o("SimplifyModelOptions", {}, "", "accepted"),
        _o("SkipPreprocess", False, "", "accepted"),
        _o("PreprocessYAML", None, "", "accepted"),
        _o("ConvertOpsetVersion", None, "ryzen-nb always writes opset 21", "accepted"),
        _o("ConvertBNToConv", True, "BatchNormalization is folded into Conv/Gemm during preparation", "accepted"),
        _o("ConvertReduceMeanToGlobalAvgPool", True, "", "accepted"),
        _o("SplitLargeKernelPool", True, "", "accepted"),
        _o("ConvertSplitToSlice", True, "", "accepted"),
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
        _o("FastFinetune", {}, "AdaRound / AdaQuant settings (include_fast_ft); ryzen_nb.algorithms.FineTuneOptions"),
        _o("AutoMixprecision", {}, "layer-wise and automatic mixed precision (include_auto_mp)"),
        _o("DualQuantNodes", False, "both quantizers on mixed-precision boundaries (also inside AutoMixprecision)"),
        *(_o(k, d, "cross-layer equalization (include_cle)") for k, d in (
            ("CLESteps", 1), ("CLETotalLayerDiffThreshold", 2e-7), ("CLEScaleAppendBias", True),
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

NESTED_KEYS: dict[str, tuple[str, ...]] = {
    "BFPAttributes": ("bfp_method", "axis", "bit_width", "block_size", "rounding_mode", "sub_block_size",
                      "sub_block_shift_bits", "convert_to_bfloat_before_bfp", "use_compiler_version_cpu_kernel"),
    "MXAttributes": ("element_dtype", "axis", "block_size", "rounding_mode"),
}


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
        if key in NESTED_KEYS and value:
            if not isinstance(value, dict):
                raise ConfigError(f"extra_options[{key!r}] must be a dict; got {type(value).__name__}.")
            for sub in value:
                if sub not in NESTED_KEYS[key]:
                    raise UnknownNameError(f"{key} key", sub, NESTED_KEYS[key])
