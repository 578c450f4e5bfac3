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
        # symmetry and ranges
        _o("ActivationSymmetric", False, "symmetric activation ranges (uint8 then uses zero point 128)"),
        _o("WeightSymmetric", True, "symmetric weight ranges"),
        _o("CalibTensorRangeSymmetric", False, "symmetric calibration ranges (implied by ActivationSymmetric)", "accepted"),
        _o("CalibMovingAverage", False, "moving averages of per-sample min/max (MinMax); not for power-of-two"),
        _o("CalibMovingAverageConstant", 0.01, "averaging constant of CalibMovingAverage"),
        _o("CalibDataSize", None, "use at most this many calibration samples"),
        _o("Percentile", 99.999, "percentile of the Percentile method"),
        _o("NumBins", 2048, "histogram bins of histogram-based methods"),
        _o("NumQuantizedBins", 128, "quantized bins of the Entropy search"),
        _o("MinMSEMode", "All", "MinMSE statistics: 'All' (one histogram of every sample)"),
        _o("LegacyNonOverflow", False, "vai_q_onnx's floor-based NonOverflow (guaranteed no overflow)"),
        # bias
        _o("Int32Bias", True, "biases as int32 with scale input*weight (default False with enable_npu_cnn)"),
        _o("Int16Bias", False, "biases as int16", "planned"),
        _o("QuantizeBias", True, "quantize biases at all"),
        # what to quantize
        _o("QuantizeAllOpTypes", False, "quantize every op type the quantizer knows (BF16 presets)", "accepted"),
        _o("ForceQuantizeNoInputCheck", False, "quantize ops whose inputs are not quantized", "accepted"),
        _o("OpTypesToExcludeOutputQuantization", [], "op types whose outputs stay float", "planned"),
        _o("MixedPrecisionTensor", {}, "{format or QuantType: [tensor names]} — tensor-wise mixed precision"),
        _o("TensorQuantOverrides", {}, "onnxruntime's per-tensor overrides", "planned"),
        # alignment / NPU legality (power-of-two flows)
        _o("AlignConcat", True, "Concat inputs and output share one scale"),
        _o("AlignSlice", True, "Slice output shares its input's scale"),
        _o("AlignPool", True, "MaxPool output shares its input's scale"),
        _o("AlignPad", True, "Pad output shares its input's scale"),
        _o("AlignEltwiseQuantType", False, "eltwise inputs share one type (A16W8)", "accepted"),
        _o("FoldRelu", False, "no QDQ between Conv/Gemm and a following Relu (fused on the NPU)"),
        _o("RemoveQDQConvRelu", True, "as FoldRelu, for the NPU CNN flow"),
        _o("RemoveQDQConvClip", True, "as FoldRelu for Clip"),
        _o("RemoveQDQConvLeakyRelu", True, "as FoldRelu for LeakyRelu"),
        _o("RemoveQDQConvPRelu", True, "as FoldRelu for PRelu"),
        _o("NPULimitationCheck", True, "apply the XINT8 shift-range refinements (NPU_SPEC §4.1.4)"),
        _o("IPULimitationCheck", True, "old name of NPULimitationCheck"),
        _o("MaxLoopNum", 5, "refinement passes"),
        _o("SimulateDPU", True, "apply the DPU-version rewrites below (NPU CNN flow)"),
        _o("ConvertLeakyReluToDPUVersion", True, "LeakyRelu alpha -> k/256"),
        _o("ConvertSigmoidToHardSigmoid", True, "Sigmoid -> HardSigmoid(1/6, 0.5)"),
        _o("ConvertHardSigmoidToDPUVersion", True, "HardSigmoid 1/6 -> 2731/2^14"),
        _o("ConvertAvgPoolToDPUVersion", True, "average pooling divides by k/2^n"),
        _o("ConvertReduceMeanToDPUVersion", True, "ReduceMean divides by k/2^n"),
        _o("ConvertClipToDPUVersion", False, "Clip bounds on the output grid"),
        _o("ConvertSoftmaxToDPUVersion", False, "bf16 polynomial Softmax", "planned"),
        _o("ConvertInstanceNormToDPUVersion", False, "DPU InstanceNorm", "planned"),
        # graph rewrites of the NPU flow
        _o("ConvertBNToConv", True, "BatchNormalization is folded into Conv/Gemm during preparation", "accepted"),
        _o("ConvertReduceMeanToGlobalAvgPool", True, "", "accepted"),
        _o("SplitLargeKernelPool", True, "", "accepted"),
        _o("ConvertSplitToSlice", True, "", "accepted"),
        _o("ConvertClipToRelu", True, "", "accepted"),
        _o("ReplaceClip6Relu", False, "", "accepted"),
        _o("DedicateDQNode", False, "one DequantizeLinear per consumer", "accepted"),
        _o("UseRandomData", False, "calibrate on random data", "planned"),
        # block formats
        _o("BFPAttributes", {}, "{bfp_method, axis, bit_width, block_size, rounding_mode, ...} of QBFP types"),
        _o("MXAttributes", {}, "{element_dtype, axis, block_size, rounding_mode} of QMX types"),
        _o("BF16QDQToCast", False, "BF16 Q/DQ as Cast pairs (ryzen-nb always uses Cast pairs)", "accepted"),
        # accuracy recovery (issue: algorithms)
        _o("FastFinetune", {}, "AdaRound / AdaQuant settings (include_fast_ft)", "planned"),
        _o("AutoMixprecision", {}, "layer-wise and automatic mixed precision", "planned"),
        _o("DualQuantNodes", False, "both quantizers on mixed-precision boundaries", "planned"),
        _o("CLEScaleAppendBias", True, "cross-layer equalization options", "planned"),
        _o("CLESteps", 1, "cross-layer equalization iterations", "planned"),
        _o("CLETotalLayerDiffThreshold", 2e-7, "", "planned"),
        _o("ReplaceSigmoid", False, "", "accepted"),
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
