"""The quantizer's resolved settings: what a Config means, in the package's own terms.

``Config``/``QuantizationConfig`` speak Quark's language (QuantType enums, extra_options...);
:func:`ryzen_nb.quantization.config.resolve` turns them into :class:`Settings`, which the engine
reads. Keeping the two apart lets the Quark-compatible surface grow without the engine caring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ryzen_nb.quantization.options import CLEOptions, FineTuneOptions, MixedPrecisionOptions, default

__all__ = ["TensorSettings", "Settings"]


@dataclass(frozen=True)
class TensorSettings:
    """How one class of tensors (activations or weights) is quantized."""

    format: str  #: a name from ryzen_nb.formats
    symmetric: bool = True
    power_of_two: bool = False
    per_channel: bool = False
    method: str = "MinMax"  #: calibration method (activations) / scale method (weights: MinMax or MinMSE)
    #: float-scale MinMSE weights: which candidate ranges (calibration.methods.MINMSE_FLOAT_MODES)
    minmse_mode: str = "Percentile"
    block_axis: int | None = None  #: force the axis block formats run along (None: the reduction axis)
    options: tuple[tuple[str, Any], ...] = ()  #: format options, e.g. (("variant", "compiler"),)
    rounding: str | None = None  #: format rounding (None: the format's default)


@dataclass
class Settings:
    activation: TensorSettings
    weight: TensorSettings
    #: "int32" (scale = s_input * s_weight), "weight" (the weight format, e.g. XINT8's int8 pow2),
    #: or "float" (left unquantized)
    bias: str = "int32"
    op_types: set[str] | None = None  #: None: every op type the quantizer knows
    exclude_op_types: set[str] = field(default_factory=set)
    exclude_nodes: list[str] = field(default_factory=list)  #: names or regular expressions
    include_nodes: list[str] = field(default_factory=list)  #: restrict to these nodes (names or regexes) when non-empty
    input_nodes: list[str] = field(default_factory=list)  #: quantize only downstream of these nodes
    output_nodes: list[str] = field(default_factory=list)  #: ... and upstream of these
    exclude_subgraphs: list[tuple[list[str], list[str]]] = field(default_factory=list)  #: (starts, ends)
    fold_activations: bool = default("FoldRelu")  #: no QDQ between Conv/Gemm/MatMul/Add and a following Relu/Clip/LeakyRelu/PRelu
    #: with fold_activations and int32 biases: before a folded Relu/Clip, the same 8-bit quantizer as after
    #: it (identical values: both commute with a monotone quantizer), which lets onnxruntime fuse the
    #: operator into its integer kernel (emit.py, _ort_fusable_folds). Off by default: on x86 CPUs without
    #: VNNI those kernels saturate (the Ryzen AI tutorial's A8W8 ResNet: 98 % -> 71 % top-1 on AVX2)
    ort_fusable_folds: bool = default("ORTFusableQDQ")
    share_data_movement: bool = True  #: data-movement outputs (Reshape, Transpose...) reuse their input's scale
    align_slice: bool = default("AlignSlice")  #: ... Slice too (Quark AlignSlice)
    align_pad: bool = default("AlignPad")  #: ... Pad too (AlignPad)
    align_pool: bool = default("AlignPool")  #: ... MaxPool too (AlignPool)
    align_concat: bool = default("AlignConcat")  #: Concat inputs and output share one scale
    #: constants read by Add/Sub/Mul/Div take the activation format (weight settings otherwise), as
    #: Quark's AlignEltwiseQuantType does (its A16W8 preset; ignored in its NPU CNN/transformer flows)
    align_eltwise_types: bool = default("AlignEltwiseQuantType")
    #: only weights, biases and other constants are quantized; every activation stays float32 (WeightsOnly)
    weights_only: bool = default("WeightsOnly")
    #: ForceQuantizeNoInputCheck (see plan.INPUT_GATED_OPS, and plan.INPUT_GATED_CONSTANTS with weights_only)
    force_no_input_check: bool = default("ForceQuantizeNoInputCheck")
    keep_float: set[str] = field(default_factory=set)  #: constants never quantized (DPU correction factors)
    fold_tensors: set[str] = field(default_factory=set)  #: tensors never quantized (inside a fused NPU op)
    npu_legality: bool = False  #: XINT8 shift-range refinements (docs/npu-numerics.md#xint8-shift-limits)
    #: Quark's rewrites into NPU forms to apply before planning, by option name (graph.npu_forms.NPU_FORMS)
    npu_forms: frozenset[str] = frozenset()
    dpu_rewrites: dict[str, bool] = field(default_factory=dict)  #: docs/npu-numerics.md#dpu-rewrites to apply
    tensor_formats: dict[str, str] = field(default_factory=dict)  #: tensor name -> format (mixed precision)
    method_options: dict[str, Any] = field(default_factory=dict)  #: percentile, num_bins, ...
    calibration_limit: int | None = default("CalibDataSize")  #: samples (Quark CalibDataSize)
    #: float formats (bf16, fp16, fp8): "function" — one ryzen_nb:<format>QuantizeDequantize node per
    #: tensor, the standard-op twin of Quark's custom Q/DQ; "cast" — visible Cast pairs (BF16QDQToCast)
    float_lowering: str = "function"
    #: how quantized weights are stored: "native" (integer codes + DequantizeLinear, bf16 + Cast),
    #: "float" (float32 values already on the format's grid: EnableVaimlBF16), or "qdq" (the float32
    #: weight plus a quantizer node, as Quark's custom-QDQ float models)
    float_weight_storage: str = "qdq"
    random_data: bool = default("UseRandomData")  #: calibrate on random data (Quark UseRandomData) when none is given
    random_shapes: dict[str, Any] = field(default_factory=dict)
    random_range: Any = None
    moving_average: float | None = None
    preset: str | None = None
    optimize: bool = True  #: constant folding while preparing (optimize_model)
    simplify: bool = default("SimplifyModel")  #: MatMul + bias Add -> Gemm while preparing (SimplifyModel)
    #: tensor -> (format, consumer node names): a second quantizer, after the tensor's own, that those
    #: consumers read (DualQuantNodes on mixed-precision boundaries)
    dual_formats: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # -- accuracy algorithms (ryzen_nb.algorithms); None / False: off ------------------------------------------
    cle: CLEOptions | None = None
    finetune: FineTuneOptions | None = None  #: AdaRound / AdaQuant
    bias_correction: bool = default("BiasCorrection")
    mixed_precision: MixedPrecisionOptions | None = None
