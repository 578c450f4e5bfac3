"""Quantization configs: Quark's shape (``Config(global_quant_config=QuantizationConfig(...))``),
presets defined once as data, validation that names what is wrong, and round trips through
dict/JSON and Python code.

>>> from ryzen_nb import get_default_config, Config
>>> qc = get_default_config("XINT8")
>>> qc.calibrate_method, qc.activation_type, qc.weight_type
('MinMSE', 'QUInt8', 'QInt8')
>>> config = Config(global_quant_config=qc)
>>> Config.from_json(config.to_json()) == config
True
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ryzen_nb import formats
from ryzen_nb.calibration.methods import get_method
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.graph.npu_forms import NPU_FORMS
from ryzen_nb.quantization.options import (
    EXTRA_OPTIONS,
    NESTED,
    CLEOptions,
    FineTuneOptions,
    MixedPrecisionOptions,
    check_extra_options,
    default,
)
from ryzen_nb.quantization.settings import Settings, TensorSettings

__all__ = ["QuantizationConfig", "Config", "PRESETS", "Preset", "QUANT_TYPE_FORMATS", "get_default_config", "matching_preset",
           "preset_name", "preset_names", "resolve"]


def _name(value: Any) -> str:
    """Enum members (ours, onnxruntime's, Quark's) and strings alike, as a plain name."""
    return str(getattr(value, "name", value))


@dataclass
class QuantizationConfig:
    """Settings of one quantization run, with AMD Quark's field names.

    The fields most users touch: ``calibrate_method``, ``activation_type``, ``weight_type``,
    ``per_channel``, ``include_cle``, ``include_fast_ft``, ``nodes_to_exclude``,
    ``op_types_to_quantize`` and ``extra_options`` (see :mod:`ryzen_nb.quantization.options`).
    Types may be Quark/onnxruntime ``QuantType`` members, their names, or ryzen-nb format names.
    """

    calibrate_method: Any = "MinMax"
    quant_format: Any = "QDQ"
    activation_type: Any = "QInt8"
    weight_type: Any = "QInt8"
    input_nodes: list[str] = field(default_factory=list)
    output_nodes: list[str] = field(default_factory=list)
    op_types_to_quantize: list[str] = field(default_factory=list)
    nodes_to_quantize: list[str] = field(default_factory=list)
    extra_op_types_to_quantize: list[str] = field(default_factory=list)
    nodes_to_exclude: list[str] = field(default_factory=list)
    subgraphs_to_exclude: list[Any] = field(default_factory=list)
    specific_tensor_precision: bool = False
    execution_providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    per_channel: bool = False
    reduce_range: bool = False
    optimize_model: bool = True
    use_dynamic_quant: bool = False
    use_external_data_format: bool = False
    convert_fp16_to_fp32: bool = False
    convert_nchw_to_nhwc: bool = False
    include_sq: bool = False
    include_rotation: bool = False
    #: cross-layer equalization before calibration. Quark's legacy configs default to True; ryzen-nb leaves it
    #: off unless asked (as the Ryzen AI examples do, include_cle=True): it helps per-tensor integer weights but
    #: measurably hurts block formats (MXFP8E5M2 on the preset tests: top-1 agreement 0.81 instead of >= 0.9)
    include_cle: bool = False
    include_auto_mp: bool = False
    include_fast_ft: bool = False
    enable_npu_cnn: bool = False
    enable_npu_transformer: bool = False
    debug_mode: bool = False
    crypto_mode: bool = False
    print_summary: bool = True
    ignore_warnings: bool = True
    log_severity_level: int = 1
    extra_options: dict[str, Any] = field(default_factory=dict)
    #: ryzen-nb extension: op types to keep in float (Quark spells this layer_type_config={None: [...]})
    op_types_to_exclude: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for f in ("calibrate_method", "quant_format", "activation_type", "weight_type"):
            setattr(self, f, _name(getattr(self, f)))

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in {f.name for f in fields(self)}:
            raise UnknownNameError("QuantizationConfig field", key, [f.name for f in fields(self)])
        if key in ("calibrate_method", "quant_format", "activation_type", "weight_type"):
            value = _name(value)
        object.__setattr__(self, key, value)

    # -- round trips --------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuantizationConfig:
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise UnknownNameError("QuantizationConfig field", key, sorted(known))
        return cls(**copy.deepcopy(data))

    def to_python(self, name: str = "quant_config") -> str:
        """Python code that builds this config (shown by the config builder)."""
        defaults = QuantizationConfig()
        args = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value != getattr(defaults, f.name):
                args.append(f"    {f.name}={_py(value)},")
        body = "\n".join(args)
        return f"{name} = QuantizationConfig(\n{body}\n)" if args else f"{name} = QuantizationConfig()"

    def validate(self) -> None:
        """Raise :class:`ConfigError` / :class:`UnknownNameError` for anything inconsistent."""
        resolve(self)


def _py(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if callable(value):  # an EvaluateFunction: code refers to it by name (a lambda needs one)
        name = getattr(value, "__name__", "")
        return name if name.isidentifier() else "evaluate_function"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


@dataclass
class Config:
    """Top-level config, as Quark's ``Config(global_quant_config=...)``."""

    global_quant_config: QuantizationConfig = field(default_factory=QuantizationConfig)

    def __post_init__(self) -> None:
        if isinstance(self.global_quant_config, str):
            self.global_quant_config = get_default_config(self.global_quant_config)
        if not isinstance(self.global_quant_config, QuantizationConfig):
            raise ConfigError(
                "Config(global_quant_config=...) takes a QuantizationConfig (e.g. get_default_config('XINT8')); "
                f"got {type(self.global_quant_config).__name__}."
            )

    def to_dict(self) -> dict[str, Any]:
        return {"global_quant_config": self.global_quant_config.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        if set(data) != {"global_quant_config"}:
            raise ConfigError(f"A Config dict has the single key 'global_quant_config'; got {sorted(data)}.")
        return cls(QuantizationConfig.from_dict(data["global_quant_config"]))

    def to_json(self, indent: int | None = 2) -> str:
        def refuse(value: Any) -> Any:
            raise ConfigError(f"The config holds {value!r}, which JSON cannot store (e.g. AutoMixprecision's "
                              "EvaluateFunction): save the config without it and set it again after loading.")

        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, default=refuse)

    @classmethod
    def from_json(cls, text: str) -> Config:
        return cls.from_dict(json.loads(text))

    def to_python(self) -> str:
        """The imports and code that rebuild this config."""
        preset = _closest_preset(self.global_quant_config)
        lines = ["from ryzen_nb import Config, QuantizationConfig, get_default_config", ""]
        if preset is not None:
            base = get_default_config(preset)
            lines.append(f"quant_config = get_default_config({preset!r})")
            for f in fields(QuantizationConfig):
                value, default = getattr(self.global_quant_config, f.name), getattr(base, f.name)
                if f.name == "extra_options":
                    for key, v in value.items():
                        if default.get(key, object()) != v:
                            lines.append(f"quant_config.extra_options[{key!r}] = {_py(v)}")
                    for key in default:
                        if key not in value:
                            lines.append(f"del quant_config.extra_options[{key!r}]")
                elif value != default:
                    lines.append(f"quant_config.{f.name} = {_py(value)}")
        else:
            lines.append(self.global_quant_config.to_python())
        lines.append("config = Config(global_quant_config=quant_config)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        return f"<pre>{escape(self.to_python())}</pre>"


#: Quark's QuantType names -> ryzen-nb format names (QBFP/QMX resolve through their attributes)
QUANT_TYPE_FORMATS = {
    "QInt4": "int4",
    "QUInt4": "uint4",
    "QInt8": "int8",
    "QUInt8": "uint8",
    "QInt16": "int16",
    "QUInt16": "uint16",
    "QInt32": "int32",
    "QUInt32": "uint32",
    "QFloat16": "float16",
    "QBFloat16": "bfloat16",
    "QFLOAT8E4M3FN": "float8_e4m3fn",
    "QFLOAT8E5M2": "float8_e5m2",
}


# -- presets ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    fields: dict[str, Any]


_NPU_INT = {"enable_npu_cnn": True}
#: BFP16: the BFPAttributes defaults (8-element blocks, 16 bits)
_BFP = {k: NESTED["BFPAttributes"][k].default for k in ("bfp_method", "axis", "bit_width", "block_size", "rounding_mode")}


def _mx_prime(bits: int) -> dict[str, Any]:
    return {"bfp_method": "to_bfp_prime", "axis": 1, "bit_width": bits, "block_size": 16, "sub_block_size": 2,
            "sub_block_shift_bits": 1, "rounding_mode": 2}


def _mx(element: str) -> dict[str, Any]:
    return {"element_dtype": element, "axis": 1, "block_size": 32, "rounding_mode": 2}


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("XINT8", "NPU CNN default: power-of-two scales (MinMSE), uint8 activations (zero point 128), "
               "int8 weights, per tensor",
               {"calibrate_method": "MinMSE", "activation_type": "QUInt8", "weight_type": "QInt8", **_NPU_INT,
                "extra_options": {"ActivationSymmetric": True, "ForceQuantizeNoInputCheck": True}}),
        Preset("A8W8", "int8 activations and weights, symmetric float scales (MinMax), int32 bias",
               {"calibrate_method": "MinMax", "activation_type": "QInt8", "weight_type": "QInt8",
                "extra_options": {"ActivationSymmetric": True, "AlignSlice": False, "FoldRelu": True,
                                  "AlignConcat": True, "ForceQuantizeNoInputCheck": True}}),
        Preset("A16W8", "int16 activations, int8 weights, symmetric float scales (MinMax), int32 bias",
               {"calibrate_method": "MinMax", "activation_type": "QInt16", "weight_type": "QInt8",
                "extra_options": {"ActivationSymmetric": True, "AlignSlice": False, "FoldRelu": True,
                                  "AlignConcat": True, "AlignEltwiseQuantType": True,
                                  "ForceQuantizeNoInputCheck": True}}),
        Preset("BF16", "bfloat16 activations and weights (what XDNA2 NPUs run FP32 models as)",
               {"activation_type": "QBFloat16", "weight_type": "QBFloat16",
                "extra_options": {"QuantizeAllOpTypes": True, "ForceQuantizeNoInputCheck": True}}),
        Preset("BFP16", "AMD block floating point: 8 values share an exponent, 9 bits per value",
               {"activation_type": "QBFP", "weight_type": "QBFP", "extra_options": {"BFPAttributes": dict(_BFP)}}),
        Preset("MX4", "shared microexponents, 4 bits per value", {"activation_type": "QBFP", "weight_type": "QBFP",
               "extra_options": {"BFPAttributes": _mx_prime(11)}}),
        Preset("MX6", "shared microexponents, 6 bits per value", {"activation_type": "QBFP", "weight_type": "QBFP",
               "extra_options": {"BFPAttributes": _mx_prime(13)}}),
        Preset("MX9", "shared microexponents, 9 bits per value", {"activation_type": "QBFP", "weight_type": "QBFP",
               "extra_options": {"BFPAttributes": _mx_prime(16)}}),
        *(Preset(f"MX{n}", f"OCP MX: blocks of 32 {e} elements with an E8M0 scale",
                 {"activation_type": "QMX", "weight_type": "QMX", "extra_options": {"MXAttributes": _mx(e)}})
          for n, e in (("INT8", "int8"), ("FP8E4M3", "fp8_e4m3"), ("FP8E5M2", "fp8_e5m2"), ("FP6E3M2", "fp6_e3m2"),
                       ("FP6E2M3", "fp6_e2m3"), ("FP4E2M1", "fp4_e2m1"))),
        Preset("FP16", "float16 activations and weights", {"activation_type": "QFloat16", "weight_type": "QFloat16"}),
        Preset("U8U8_AAWA", "uint8 activations and weights, both asymmetric, Percentile",
               {"calibrate_method": "Percentile", "activation_type": "QUInt8", "weight_type": "QUInt8",
                "extra_options": {"ActivationSymmetric": False, "WeightSymmetric": False, "ForceQuantizeNoInputCheck": True}}),
        Preset("S16S8_ASWS", "int16 activations (symmetric), int8 weights (symmetric), Percentile",
               {"calibrate_method": "Percentile", "activation_type": "QInt16", "weight_type": "QInt8",
                "extra_options": {"ActivationSymmetric": True, "ForceQuantizeNoInputCheck": True}}),
        Preset("U16S8_AAWS", "uint16 activations (asymmetric), int8 weights (symmetric), Percentile",
               {"calibrate_method": "Percentile", "activation_type": "QUInt16", "weight_type": "QInt8", "extra_options": {"ForceQuantizeNoInputCheck": True}}),
        Preset("BF16_BFP16", "bfloat16 activations, BFP16 weights",
               {"activation_type": "QBFloat16", "weight_type": "QBFP", "extra_options": {"BFPAttributes": dict(_BFP)}}),
        Preset("BF16_MXINT8", "bfloat16 activations, MXINT8 weights",
               {"activation_type": "QBFloat16", "weight_type": "QMX", "extra_options": {"MXAttributes": _mx("int8")}}),
        Preset("MX9_INT8", "MX9 activations, int8 weights (MinMax)",
               {"activation_type": "QBFP", "weight_type": "QInt8", "extra_options": {"BFPAttributes": _mx_prime(16)}}),
        Preset("INT8_CNN_DEFAULT", "uint8 activations, int8 weights, MinMax (float scales)",
               {"activation_type": "QUInt8", "weight_type": "QInt8", "extra_options": {"ForceQuantizeNoInputCheck": True}}),
        Preset("INT16_CNN_DEFAULT", "uint16 activations, int16 weights, MinMax",
               {"activation_type": "QUInt16", "weight_type": "QInt16", "extra_options": {"ForceQuantizeNoInputCheck": True}}),
        Preset("INT8_TRANSFORMER_DEFAULT", "uint8 activations, int8 weights, MinMax with moving averages (transformers)",
               {"activation_type": "QUInt8", "weight_type": "QInt8", "enable_npu_transformer": True,
                "extra_options": {"CalibMovingAverage": True}}),
        Preset("INT16_TRANSFORMER_DEFAULT", "uint16 activations, int16 weights, MinMax with moving averages "
               "(transformers)", {"activation_type": "QUInt16", "weight_type": "QInt16", "enable_npu_transformer": True,
                "extra_options": {"CalibMovingAverage": True}}),
        Preset("S8S8", "int8 activations (asymmetric) and weights (symmetric), Percentile 99.9999, int32 bias "
               "(Quark S8S8_AAWS)", {"calibrate_method": "Percentile", "activation_type": "QInt8",
                                     "weight_type": "QInt8",
                                     "extra_options": {"Percentile": 99.9999, "ForceQuantizeNoInputCheck": True}}),
        Preset("U8S8", "uint8 activations (asymmetric), int8 weights (symmetric), Percentile, int32 bias "
               "(Quark U8S8_AAWS)", {"calibrate_method": "Percentile", "activation_type": "QUInt8",
                                     "weight_type": "QInt8", "extra_options": {"ForceQuantizeNoInputCheck": True}}),
    )
}
_PRESET_ALIASES = {"S8S8_AAWS": "S8S8", "U8S8_AAWS": "U8S8", "MXFP8E4M3FN": "MXFP8E4M3"}


def preset_names() -> list[str]:
    return list(PRESETS)


def preset_name(name: str) -> str:
    """The preset's name as the table spells it (case-insensitive; Quark's aliases such as
    ``"S8S8_AAWS"`` accepted); an unknown name is an error naming the closest."""
    key = _PRESET_ALIASES.get(str(name).upper(), str(name).upper())
    match = next((p for p in PRESETS if p.upper() == key), None)
    if match is None:
        raise UnknownNameError("preset", name, PRESETS)
    return match


def get_default_config(name: str) -> QuantizationConfig:
    """A fresh, editable copy of preset ``name`` (``"XINT8"``, ``"A8W8"``, ``"BF16"``, ``"BFP16"``, ...)."""
    return QuantizationConfig(**copy.deepcopy(PRESETS[preset_name(name)].fields))


def matching_preset(qc: QuantizationConfig) -> str | None:
    """The preset this config is exactly (unmodified), or None."""
    for name in PRESETS:
        if get_default_config(name) == qc:
            return name
    return None


def _closest_preset(qc: QuantizationConfig) -> str | None:
    """The preset with the same types and method that needs the fewest edits to become ``qc``
    (used to render short code); None if no preset has the same types and method."""
    best, best_edits = None, None
    for name in PRESETS:
        base = get_default_config(name)
        if (base.activation_type, base.weight_type, base.calibrate_method) != (
            qc.activation_type, qc.weight_type, qc.calibrate_method
        ):
            continue
        edits = sum(getattr(base, f.name) != getattr(qc, f.name) for f in fields(QuantizationConfig)
                    if f.name != "extra_options")
        keys = set(base.extra_options) | set(qc.extra_options)
        edits += sum(base.extra_options.get(k, object()) != qc.extra_options.get(k, object()) for k in keys)
        if best_edits is None or edits < best_edits:
            best, best_edits = name, edits
    return best


# -- resolution --------------------------------------------------------------------------------------------
_MX_ELEMENTS = {
    "int8": "MXINT8", "fp8_e4m3": "MXFP8E4M3", "fp8_e5m2": "MXFP8E5M2", "fp6_e3m2": "MXFP6E3M2",
    "fp6_e2m3": "MXFP6E2M3", "fp4_e2m1": "MXFP4E2M1",
}
_BFP_PRIME = {11: "MX4", 13: "MX6", 16: "MX9"}


def _opt(extra: dict[str, Any], key: str) -> Any:
    return extra.get(key, default(key))


def _format_for(type_name: str, extra: dict[str, Any]) -> tuple[str, tuple, str | None, int | None]:
    """(format name, format options, rounding, forced block axis) for a QuantType or format name."""
    if type_name in QUANT_TYPE_FORMATS:
        return QUANT_TYPE_FORMATS[type_name], (), None, None
    if type_name == "QBFP":
        attrs = {**_BFP, **_opt(extra, "BFPAttributes")}
        method = attrs.get("bfp_method", "to_bfp")
        if method == "to_bfp":
            if attrs.get("bit_width", 16) != 16 or attrs.get("block_size", 8) != 8:
                raise ConfigError("BFPAttributes: to_bfp is supported with bit_width 16 and block_size 8 (BFP16).")
            options = (("variant", "compiler"),) if attrs.get("use_compiler_version_cpu_kernel") else ()
            return "BFP16", options, _rounding(attrs), attrs.get("axis")
        if method in ("to_bfp_prime", "to_bfp_prime_shared"):
            bits = attrs.get("bit_width", 16)
            if bits not in _BFP_PRIME or attrs.get("block_size", 16) != 16:
                raise ConfigError(f"BFPAttributes: to_bfp_prime needs bit_width 11, 13 or 16 and block_size 16; got {attrs}.")
            return _BFP_PRIME[bits], (), _rounding(attrs), attrs.get("axis")
        raise UnknownNameError("bfp_method", method, ["to_bfp", "to_bfp_prime"])
    if type_name == "QMX":
        attrs = _opt(extra, "MXAttributes")
        element = attrs.get("element_dtype")
        if element not in _MX_ELEMENTS:
            raise UnknownNameError("MXAttributes element_dtype", element, _MX_ELEMENTS)
        if attrs.get("block_size", 32) != 32:
            raise ConfigError("MXAttributes: block_size must be 32 (OCP MX).")
        return _MX_ELEMENTS[element], (), _rounding(attrs), attrs.get("axis")
    try:
        return formats.get(type_name).name, (), None, None
    except UnknownNameError:
        raise UnknownNameError("quantization type", type_name,
                               list(QUANT_TYPE_FORMATS) + ["QBFP", "QMX"] + formats.names()) from None


def _align_eltwise_types(extra: dict[str, Any], npu_flow: bool) -> bool:
    """AlignEltwiseQuantType as Quark applies it: not in its NPU CNN or transformer flows, where it
    warns and leaves the option without effect."""
    if not _opt(extra, "AlignEltwiseQuantType"):
        return False
    if npu_flow:
        logging.getLogger(__name__).warning(
            "AlignEltwiseQuantType has no effect with enable_npu_cnn or enable_npu_transformer (as in Quark): the "
            "constants of Add/Sub/Mul/Div keep the weights' type.")
        return False
    return True


def _subgraph(spec: Any) -> tuple[list[str], list[str]]:
    """``(["start", ...], ["end", ...])`` — Quark's subgraphs_to_exclude entry."""
    try:
        starts, ends = spec
        return [starts] if isinstance(starts, str) else list(starts), [ends] if isinstance(ends, str) else list(ends)
    except (TypeError, ValueError):
        raise ConfigError(
            f"subgraphs_to_exclude entries are (start node names, end node names) pairs, e.g. "
            f"(['Conv1'], ['Relu9']); got {spec!r}."
        ) from None


def _rounding(attrs: dict[str, Any]) -> str | None:
    mode = attrs.get("rounding_mode")
    return None if mode is None else {0: "half_away", 1: "half_up", 2: "half_even"}.get(int(mode), str(mode))


def _weight_method(value: Any, power_of_two: bool, w_fmt: str) -> str:
    """WeightCalibrateMethod (Quark: CalibrationMethod.MinMax or ExtendedCalibrationMethod.MinMSE)."""
    name = str(getattr(value, "name", value)).rsplit(".", 1)[-1]
    if name.lower() not in ("minmax", "minmse"):
        raise ConfigError(f"WeightCalibrateMethod must be MinMax or MinMSE (ExtendedCalibrationMethod.MinMSE); "
                          f"got {value!r}.")
    if power_of_two or formats.get(w_fmt).info.family != "integer":
        raise ConfigError("WeightCalibrateMethod applies to integer weights with float scales (A8W8, A16W8...); "
                          "power-of-two methods choose weight scales themselves. Remove it, or use MinMax.")
    return "MinMax" if name.lower() == "minmax" else "MinMSE"


def resolve(qc: QuantizationConfig | Config | str) -> Settings:
    """What a config means for the engine; raises on anything unknown or inconsistent."""
    if isinstance(qc, str):
        qc = get_default_config(qc)
    preset = matching_preset(qc.global_quant_config if isinstance(qc, Config) else qc)
    if isinstance(qc, Config):
        qc = qc.global_quant_config
    extra = qc.extra_options
    check_extra_options(extra)
    if _name(qc.quant_format) not in ("QDQ",):
        raise ConfigError(
            f"quant_format {qc.quant_format!r} is not supported: ryzen-nb writes QDQ models (what the Ryzen AI "
            "NPU flow consumes). Use quant_format='QDQ'."
        )
    for flag, what in (("include_sq", "SmoothQuant"), ("convert_nchw_to_nhwc", "NCHW->NHWC conversion"),
                       ("include_rotation", "QuaRot rotation"), ("use_dynamic_quant", "dynamic quantization"),
                       ("crypto_mode", "crypto mode")):
        if getattr(qc, flag):
            raise ConfigError(f"{flag}=True ({what}) is not available in this version of ryzen-nb; set it to False.")
    method = get_method(qc.calibrate_method)
    power_of_two = method.power_of_two
    npu = bool(qc.enable_npu_cnn)
    if npu and qc.per_channel:  # Quark raises the same; ignoring it would quantize per tensor silently
        raise ConfigError("per_channel=True is not possible with enable_npu_cnn=True (XINT8): the NPU's CNN flow "
                          "uses one power-of-two scale per weight tensor. Set per_channel=False, or use A8W8 or "
                          "A16W8, which take per-channel weights.")
    if qc.reduce_range:
        raise ConfigError("reduce_range=True (7-bit weights) is not available in ryzen-nb; set it to False.")
    act_fmt, act_opts, act_round, act_axis = _format_for(_name(qc.activation_type), extra)
    w_fmt, w_opts, w_round, w_axis = _format_for(_name(qc.weight_type), extra)
    if power_of_two and not (formats.get(act_fmt).info.family == "integer"):
        raise ConfigError(f"{method.name} gives power-of-two integer scales; activation_type {qc.activation_type} "
                          "is not an integer type. Use MinMax, or an integer type.")
    if _opt(extra, "CalibMovingAverage") and power_of_two:
        raise ConfigError("CalibMovingAverage must be False with power-of-two methods (Quark's rule).")
    act_symmetric = bool(_opt(extra, "ActivationSymmetric"))
    activation = TensorSettings(
        format=act_fmt, symmetric=act_symmetric, power_of_two=power_of_two, method=method.name,
        block_axis=act_axis, options=act_opts, rounding=act_round,
    )
    weight_method = "MinMSE" if method.name == "MinMSE" else "MinMax"
    if _opt(extra, "WeightCalibrateMethod") is not None:
        weight_method = _weight_method(extra["WeightCalibrateMethod"], power_of_two, w_fmt)
    weight = TensorSettings(
        format=w_fmt, symmetric=bool(_opt(extra, "WeightSymmetric")), power_of_two=power_of_two,
        per_channel=bool(qc.per_channel) and not npu, method=weight_method,
        block_axis=w_axis, options=w_opts, rounding=w_round, minmse_mode=str(_opt(extra, "MinMSEModeFloatScale")),
    )
    if not _opt(extra, "QuantizeBias"):
        bias = "float"
    elif npu:
        bias = "int32" if extra.get("Int32Bias", False) else "weight"  # docs/npu-numerics.md#xint8-definition, A10
    else:
        bias = "int32" if _opt(extra, "Int32Bias") else "weight"
    if formats.get(w_fmt).info.family != "integer" or formats.get(act_fmt).info.family != "integer":
        bias = "weight" if bias == "int32" else bias
    weights_only = bool(_opt(extra, "WeightsOnly"))
    if weights_only and bias == "int32":
        # Quark skips its int32 bias pass with WeightsOnly (an int32 bias takes the input activation's scale,
        # which is not there); biases of float, block and XINT8 weights it quantizes as weights, as here
        bias = "float"
    tensor_formats: dict[str, str] = {}
    for type_name, names in (_opt(extra, "MixedPrecisionTensor") or {}).items():
        fmt_name = _format_for(_name(type_name), extra)[0]
        if isinstance(names, str):
            names = [names]
        for n in names:
            tensor_formats[n] = fmt_name
    fold = bool(_opt(extra, "FoldRelu")) or (npu and bool(_opt(extra, "RemoveQDQConvRelu")))
    legality = npu and power_of_two and bool(extra.get("NPULimitationCheck", extra.get("IPULimitationCheck", True)))
    rewrites = {}
    if npu and _opt(extra, "SimulateDPU"):
        rewrites = {k: bool(_opt(extra, k)) for k in EXTRA_OPTIONS if k.startswith("Convert") and k.endswith("DPUVersion")
                    or k == "ConvertSigmoidToHardSigmoid"}
    # Quark turns these on by default in its NPU flows and its extended QDQ flow, unless bf16 goes out as
    # Casts or grid values (quantization/quantize.py, "TODO: to remove this patch"); set, they apply anyway
    vaiml_bf16 = bool(_opt(extra, "BF16QDQToCast")) or bool(_opt(extra, "EnableVaimlBF16"))
    forms_default = npu or bool(qc.enable_npu_transformer) or not vaiml_bf16
    npu_forms = frozenset(k for k in NPU_FORMS if bool(extra[k] if k in extra else forms_default))
    algorithms = _algorithms(qc, extra)
    if weights_only and algorithms.get("mixed_precision"):
        raise ConfigError("WeightsOnly leaves every activation float, so automatic mixed precision "
                          "(include_auto_mp) has no activations to switch: remove one of the two.")
    return Settings(
        activation=activation,
        weight=weight,
        bias=bias,
        op_types=(set(qc.op_types_to_quantize) | set(qc.extra_op_types_to_quantize)) if qc.op_types_to_quantize else None,
        exclude_op_types=set(qc.op_types_to_exclude),
        exclude_nodes=list(qc.nodes_to_exclude),
        include_nodes=list(qc.nodes_to_quantize),
        input_nodes=list(qc.input_nodes),
        output_nodes=list(qc.output_nodes),
        exclude_subgraphs=[_subgraph(s) for s in qc.subgraphs_to_exclude],
        fold_activations=fold,
        share_data_movement=True,
        align_slice=bool(_opt(extra, "AlignSlice")),
        align_pad=bool(_opt(extra, "AlignPad")),
        align_pool=bool(_opt(extra, "AlignPool")),
        align_concat=bool(_opt(extra, "AlignConcat")),
        align_eltwise_types=_align_eltwise_types(extra, npu or bool(qc.enable_npu_transformer)),
        weights_only=weights_only,
        force_no_input_check=bool(_opt(extra, "ForceQuantizeNoInputCheck")),
        npu_legality=legality,
        npu_forms=npu_forms,
        dpu_rewrites=rewrites,
        tensor_formats=tensor_formats,
        method_options={
            "percentile": float(_opt(extra, "Percentile")),
            "num_quantized_bins": int(_opt(extra, "NumQuantizedBins")),
            "legacy": bool(_opt(extra, "LegacyNonOverflow")),
        },
        calibration_limit=_opt(extra, "CalibDataSize"),
        ort_fusable_folds=bool(_opt(extra, "ORTFusableQDQ")),
        float_lowering="cast" if _opt(extra, "BF16QDQToCast") else "function",
        float_weight_storage=("float" if _opt(extra, "EnableVaimlBF16") else
                              "native" if _opt(extra, "BF16QDQToCast") else "qdq"),
        random_data=bool(_opt(extra, "UseRandomData")),
        random_shapes=dict(_opt(extra, "RandomDataReaderInputShape") or {}),
        random_range=_opt(extra, "RandomDataReaderInputDataRange"),
        moving_average=float(_opt(extra, "CalibMovingAverageConstant")) if _opt(extra, "CalibMovingAverage") else None,
        preset=preset,
        optimize=bool(qc.optimize_model),
        simplify=bool(_opt(extra, "SimplifyModel")),
        **algorithms,
    )


def _algorithms(qc: QuantizationConfig, extra: dict[str, Any]) -> dict[str, Any]:
    """The accuracy algorithms a config asks for, as :mod:`ryzen_nb.algorithms` options."""
    out: dict[str, Any] = {"bias_correction": bool(_opt(extra, "BiasCorrection"))}
    if qc.include_cle:
        out["cle"] = CLEOptions.from_quark(extra)
    if qc.include_fast_ft:
        out["finetune"] = FineTuneOptions.from_quark(_opt(extra, "FastFinetune"))
    if qc.include_auto_mp:
        amp = dict(_opt(extra, "AutoMixprecision") or {})
        target, act_t, w_t = amp.get("TargetQuantType"), amp.get("ActTargetQuantType"), amp.get("WeightTargetQuantType")
        if target is None and act_t is None and w_t is None:
            raise ConfigError("include_auto_mp is True, so AutoMixprecision needs TargetQuantType or ActTargetQuantType "
                              "or WeightTargetQuantType: the precision the less sensitive layers get.")
        act_format = _format_for(_name(act_t if act_t is not None else target), extra)[0] if (act_t or target) else None
        weight_format = _format_for(_name(w_t), extra)[0] if w_t is not None else None
        # Quark switches every target layer without analysis when the target is a BFP or MX type
        direct = act_format is not None and formats.get(act_format).info.family in ("bfp", "mx")
        if direct and weight_format is None:
            weight_format = act_format
        mp = MixedPrecisionOptions.from_quark(amp, act_format, weight_format, direct)
        dual = bool(amp.get("DualQuantNodes", _opt(extra, "DualQuantNodes") or _opt(extra, "EnableDualQuantNodePairs")))
        out["mixed_precision"] = mp.replace(dual_quant_nodes=dual)
    return out
