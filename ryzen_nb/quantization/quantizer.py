"""The quantizer's public entry points: :func:`quantize` and Quark's ``ModelQuantizer`` shape.

>>> import ryzen_nb                                                        # doctest: +SKIP
>>> summary = ryzen_nb.quantize("model.onnx", "model_xint8.onnx", "XINT8", calibration_images_folder)
>>> summary                                                                # doctest: +SKIP
<QuantizationSummary XINT8: 57 tensors (uint8 32, int8 25), 100 samples in 3.1 s, 97.5 MB -> 24.5 MB>
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb import formats
from ryzen_nb.calibration.readers import make_reader
from ryzen_nb.calibration.runner import collect_statistics
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError, ConfigError
from ryzen_nb.graph.builder import make_model
from ryzen_nb.graph.io import ModelLike, load_model, model_path_of, save_model
from ryzen_nb.graph.prepare import ort_session, prepare
from ryzen_nb.quantization.config import Config, QuantizationConfig, get_default_config, resolve
from ryzen_nb.quantization.engine import assign_parameters, emit, make_plan, metadata_for
from ryzen_nb.quantization.settings import Settings

__all__ = ["quantize", "ModelQuantizer", "QuantizationRun", "QuantizationSummary"]

log = logging.getLogger(__name__)


@dataclass
class QuantizationSummary:
    """What a quantization run did; ``model`` holds the quantized ONNX model."""

    preset: str | None
    output_path: Path | None
    tensors_by_format: dict[str, int]
    formats_by_tensor: dict[str, str]
    calibration_samples: int
    calibration_seconds: float
    total_seconds: float
    size_before: int  #: bytes of the float model's weights (serialized model size)
    size_after: int  #: bytes of the quantized model file
    effective_bits_before: int  #: weights at 32 bits
    effective_bits_after: int  #: weights at their format's bits per element
    preparation: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model: onnx.ModelProto | None = field(default=None, repr=False)
    #: what the accuracy algorithms did: "cle", "mixed_precision", "finetune", "bias_correction"
    reports: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def compression(self) -> float:
        return self.effective_bits_before / max(self.effective_bits_after, 1)

    def __repr__(self) -> str:
        fmts = ", ".join(f"{k} {v}" for k, v in sorted(self.tensors_by_format.items(), key=lambda kv: -kv[1]))
        label = self.preset or "custom"
        n = sum(self.tensors_by_format.values())
        calib = (f", {self.calibration_samples} samples in {self.calibration_seconds:.1f} s"
                 if self.calibration_samples else "")
        return (f"<QuantizationSummary {label}: {n} tensors ({fmts}){calib}, weights "
                f"{_mb(self.effective_bits_before / 8)} -> {_mb(self.effective_bits_after / 8)} "
                f"({self.compression:.1f}x), {self.total_seconds:.1f} s>")

    def as_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "output_path": str(self.output_path) if self.output_path else None,
            "tensors_by_format": self.tensors_by_format,
            "calibration_samples": self.calibration_samples,
            "calibration_seconds": round(self.calibration_seconds, 3),
            "total_seconds": round(self.total_seconds, 3),
            "file_bytes_before": self.size_before,
            "file_bytes_after": self.size_after,
            "weight_bytes_before": self.effective_bits_before // 8,
            "weight_bytes_after": self.effective_bits_after // 8,
            "preparation": self.preparation,
            "notes": self.notes,
        }

    def _repr_html_(self) -> str:
        from html import escape

        rows = "".join(f"<tr><td>{escape(k)}</td><td>{v}</td></tr>" for k, v in sorted(self.tensors_by_format.items()))
        prep = "".join(f"<li>{escape(s)}</li>" for s in self.preparation) or "<li>nothing to change</li>"
        return (
            f"<div><b>Quantized with {escape(self.preset or 'a custom config')}</b>"
            + (f" &rarr; <code>{escape(str(self.output_path))}</code>" if self.output_path else "")
            + f"<table><tr><th>format</th><th>tensors</th></tr>{rows}</table>"
            f"<p>Calibration: {self.calibration_samples} samples, {self.calibration_seconds:.2f} s; total "
            f"{self.total_seconds:.2f} s.<br>Weights: {_mb(self.effective_bits_before / 8)} &rarr; "
            f"{_mb(self.effective_bits_after / 8)} ({self.compression:.1f}x); file {_mb(self.size_before)} &rarr; "
            f"{_mb(self.size_after)}.</p><details><summary>Preparation</summary><ul>{prep}</ul></details></div>"
        )


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _as_settings(config: Any) -> tuple[Settings, Config]:
    from ryzen_nb.quantization.qconfig import QConfig

    if isinstance(config, QConfig):
        config = Config(config.to_legacy())
    if isinstance(config, str):
        config = Config(get_default_config(config))
    elif isinstance(config, QuantizationConfig):
        config = Config(config)
    if not isinstance(config, Config):
        raise ConfigError(
            f"config must be a preset name (e.g. 'XINT8'), a QuantizationConfig, a Config or a QConfig; got "
            f"{type(config).__name__}."
        )
    return resolve(config), config


def _weight_bits(model: onnx.ModelProto, plan_formats: dict[str, str] | None) -> int:
    total = 0
    for init in model.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        n = int(np.prod(init.dims, dtype=np.int64)) if init.dims else 1
        bits = 32.0
        if plan_formats and init.name in plan_formats:
            bits = formats.get(plan_formats[init.name]).info.bits_per_element
        total += int(n * bits)
    return total


def quantize(
    model: ModelLike,
    output_path: str | Path | None,
    config: Any = "XINT8",
    calibration_data: Any = None,
    *,
    input_shapes: dict[str, Any] | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> QuantizationSummary:
    """Quantize ``model`` with ``config`` (a preset name, QuantizationConfig or Config) and write it
    to ``output_path`` (atomically; ``None`` keeps it in memory: ``summary.model``).

    ``calibration_data`` is anything :func:`ryzen_nb.calibration.make_reader` accepts (array, list
    of feeds, folder, reader, iterable); integer formats need it, bf16/BFP/MX formats do not.
    ``limit`` caps the calibration samples. The config's accuracy algorithms run in Quark's order:
    cross-layer equalization before calibration; mixed precision, AdaRound/AdaQuant and bias
    correction after it (:mod:`ryzen_nb.algorithms`). Returns a :class:`QuantizationSummary`.
    """
    run = QuantizationRun.start(model, config, calibration_data, input_shapes=input_shapes, limit=limit,
                                progress=progress)
    if output_path is not None and run.source is not None:
        from ryzen_nb.graph.io import same_file

        if Path(output_path).expanduser().resolve() == run.source.expanduser().resolve() or \
                same_file(Path(output_path), run.source):
            raise ConfigError(f"The output path is the input model {str(run.source)!r}; choose another output path.")
    run.apply_algorithms()
    return run.finish(output_path)


@dataclass
class QuantizationRun:
    """One quantization, stage by stage, so the accuracy algorithms can work between the stages:
    the prepared float model (whose weights they may change), the plan, the calibration statistics
    and the data. :meth:`emit` gives the quantized model for the current state at any point."""

    settings: Settings
    config: Config
    prepared: Any  #: ryzen_nb.graph.prepare.PreparedModel
    plan: Any  #: ryzen_nb.quantization.engine.QuantPlan
    calibration: Any
    reader: Any
    source: Path | None
    progress: bool
    start_time: float
    notes: list[str] = field(default_factory=list)
    reports: dict[str, Any] = field(default_factory=dict)  #: what each algorithm did (CLE, fine-tuning, ...)

    @classmethod
    def start(cls, model: ModelLike, config: Any, calibration_data: Any = None, *,
              input_shapes: dict[str, Any] | None = None, limit: int | None = None, progress: bool = True) -> QuantizationRun:
        """Prepare, equalize (CLE), plan, calibrate and assign parameters."""
        start = time.perf_counter()
        settings, full_config = _as_settings(config)
        source = model_path_of(model)
        float_model = load_model(model)
        reader = None
        first = None
        from ryzen_nb.graph.prepare import input_specs

        specs = input_specs(float_model)
        if calibration_data is None and settings.random_data:
            from ryzen_nb.calibration.readers import RandomReader

            log.warning("calibrating on random data (UseRandomData): ranges will not reflect real inputs")
            calibration_data = RandomReader(specs, settings.random_shapes, settings.random_range)
        if calibration_data is not None:
            reader = make_reader(
                calibration_data,
                input_names=[s.name for s in specs],
                input_shapes={s.name: s.shape for s in specs},
                limit=limit or settings.calibration_limit,
            )
            first = reader.get_next()
            reader.rewind()
            if first is None:
                raise CalibrationDataError("The calibration data holds no samples.")
            check_feed(first, specs, 0)  # a bad first sample is a data problem, reported as one
        prepared = prepare(float_model, input_shapes=input_shapes, sample=first, optimize=settings.optimize,
                           matmul_add_to_gemm=settings.simplify)
        notes: list[str] = []
        reports: dict[str, Any] = {}
        if settings.cle is not None:
            from ryzen_nb.algorithms.cle import cross_layer_equalize

            o = settings.cle
            prepared.model, report = cross_layer_equalize(
                prepared.model, steps=o.steps, balance_method=o.balance_method, weight_threshold=o.weight_threshold,
                scale_append_bias=o.scale_append_bias, scale_use_threshold=o.scale_use_threshold,
                total_layer_diff_threshold=o.total_layer_diff_threshold, replace_clip6=o.replace_clip6,
                exclude=settings.exclude_nodes)
            reports["cle"] = report
            notes.append(f"cross-layer equalization: {len(report.pairs)} layer pair(s), {report.sweeps} sweep(s)")
        if settings.dpu_rewrites:
            from ryzen_nb.quantization.xint8 import apply_dpu_rewrites

            rewrite_notes, keep_float, fold = apply_dpu_rewrites(prepared.model, settings.dpu_rewrites)
            settings.keep_float |= keep_float
            settings.fold_tensors |= fold
            notes.extend(rewrite_notes)
        run = cls(settings, full_config, prepared, None, None, reader, source, progress, start, notes, reports)
        run.plan = run.make_plan()
        return run

    # -- plans -------------------------------------------------------------------------------------------
    def make_plan(self, tensor_formats: dict[str, str] | None = None,
                  dual: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> Any:
        """A plan with parameters for the current weights; ``tensor_formats`` overrides formats per
        tensor (mixed precision), ``dual`` adds second quantizers (tensor -> (format, consumer nodes))."""
        settings = self.settings
        if tensor_formats is not None or dual is not None:
            import copy

            settings = copy.copy(self.settings)
            settings.tensor_formats = {**self.settings.tensor_formats, **(tensor_formats or {})}
            settings.dual_formats = dict(dual or {})
        plan = make_plan(self.prepared.model, settings)
        self._calibrate(plan)
        assign_parameters(self.prepared.model, plan, self.calibration, settings)
        if settings.npu_legality:
            from ryzen_nb.quantization.xint8 import refine

            plan.notes.extend(refine(self.prepared.model, plan, settings))
        return plan

    def _calibrate(self, plan: Any) -> None:
        """Statistics for every activation the plan needs and the run has not measured yet."""
        needs = {t.name: t for t in plan.calibrated()}
        have = self.calibration.stats if self.calibration is not None else {}
        missing = {n: t for n, t in needs.items() if n not in have}
        if not missing:
            return
        if self.reader is None:
            raise ConfigError(
                f"This config quantizes {len(needs)} activation tensor(s) to integer formats, which needs calibration "
                "data: pass calibration_data (an array, a folder of images or .npy files, or a reader), or, for a "
                "quick test only, set extra_options['UseRandomData'] = True."
            )
        from ryzen_nb.calibration.methods import get_method

        hist = {name: get_method(t.settings.method).needs_histogram or t.settings.power_of_two for name, t in missing.items()}
        result = collect_statistics(self.prepared, self.reader, hist, moving_average=self.settings.moving_average,
                                    progress=self.progress)
        if self.calibration is None:
            self.calibration = result
        else:
            self.calibration.stats.update(result.stats)
            self.calibration.seconds += result.seconds

    # -- data and models ---------------------------------------------------------------------------------
    def samples(self, limit: int | None = None) -> list[dict[str, np.ndarray]]:
        """Up to ``limit`` calibration feeds (for the algorithms), read again from the reader."""
        if self.reader is None:
            raise ConfigError("This algorithm needs data: pass calibration_data to quantize().")
        self.reader.rewind()
        feeds = []
        while limit is None or len(feeds) < limit:
            feed = self.reader.get_next()
            if feed is None:
                break
            feeds.append(feed)
        self.reader.rewind()
        return feeds

    def emit(self, plan: Any = None, metadata: dict[str, str] | None = None) -> onnx.ModelProto:
        """The quantized model for the current weights (constants as initializers; not yet checked)."""
        from ryzen_nb.graph.prepare import _constants_to_initializers

        model = emit(self.prepared.model, plan or self.plan, self.settings, metadata or {})
        _constants_to_initializers(model)
        return model

    # -- algorithms after calibration ----------------------------------------------------------------------
    def apply_algorithms(self) -> None:
        """Mixed precision, then AdaRound/AdaQuant, then bias correction — as the config asks."""
        s = self.settings
        if s.mixed_precision is not None:
            from ryzen_nb.algorithms.mixed_precision import apply_mixed_precision

            self.reports["mixed_precision"] = apply_mixed_precision(self, s.mixed_precision)
        if s.finetune is not None:
            from ryzen_nb.algorithms.finetune import fast_finetune

            self.reports["finetune"] = fast_finetune(self, s.finetune)
        if s.bias_correction:
            from ryzen_nb.algorithms.bias_correction import bias_correction

            self.reports["bias_correction"] = bias_correction(self)

    def finish(self, output_path: str | Path | None = None) -> QuantizationSummary:
        settings, plan, calibration = self.settings, self.plan, self.calibration
        metadata = metadata_for(plan, {
            "preset": settings.preset or "custom",
            "config": self.config.to_dict(),
            "calibration": {"samples": calibration.samples if calibration else 0},
        })
        quantized = _finish(emit(self.prepared.model, plan, settings, metadata))
        out_path = None
        if output_path is not None:
            out_path = save_model(quantized, output_path, protect=self.source)
        counts = Counter(plan.formats_by_tensor().values())  # second (dual) quantizers included
        summary = QuantizationSummary(
            preset=settings.preset,
            output_path=out_path,
            tensors_by_format=dict(counts),
            formats_by_tensor=plan.formats_by_tensor(),
            calibration_samples=calibration.samples if calibration else 0,
            calibration_seconds=calibration.seconds if calibration else 0.0,
            total_seconds=time.perf_counter() - self.start_time,
            size_before=self.prepared.model.ByteSize(),
            size_after=quantized.ByteSize(),
            effective_bits_before=_weight_bits(self.prepared.model, None),
            effective_bits_after=_weight_bits(self.prepared.model, plan.formats_by_tensor()),
            preparation=list(self.prepared.steps),
            notes=self.notes + list(plan.notes),
            model=quantized,
            reports=dict(self.reports),
        )
        log.info("%r", summary)
        return summary


def _finish(model: onnx.ModelProto) -> onnx.ModelProto:
    """Constants as initializers, shape inference for readers and viewers, and a load check:
    never write a model ORT rejects."""
    from ryzen_nb.graph.prepare import _constants_to_initializers

    _constants_to_initializers(model)  # Q/DQ scales and zero points, as every QDQ tool writes them
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception as exc:  # best effort; the load check below is what matters
        log.debug("shape inference of the quantized model failed: %s", exc)
    try:
        _load_check(model)
    except Exception as exc:
        raise ConfigError(f"internal error: the quantized model does not load in onnxruntime: {exc}") from exc
    return model


_CHECKED_FUNCTIONS: set[tuple[str, str, bytes]] = set()


def _load_check(model: onnx.ModelProto) -> None:
    """Load ``model`` in onnxruntime, with each model-local function checked once per process.

    onnxruntime inlines every call of a function at load time: a BERT quantized to BFP16 holds
    ~130 calls whose ``If`` branches cost ~0.5 s to load — most of the quantization time. So the
    graph is loaded with each single-input, single-output call replaced by an ``Identity`` (the
    quantize-dequantize functions keep the element type), and each function body is loaded once,
    in a one-node model built from its first call (cached: bodies are fixed per format, rounding
    and layout, and the tests run every layout).
    """
    functions = {(f.domain, f.name): f for f in model.functions}
    value_infos = {vi.name: vi for vi in list(model.graph.input) + list(model.graph.value_info)}
    stubbed = onnx.ModelProto()
    stubbed.CopyFrom(model)
    del stubbed.functions[:]
    bodies: list[onnx.ModelProto] = []
    for node in stubbed.graph.node:
        f = functions.get((node.domain, node.op_type))
        if f is None or len(node.input) != 1 or len(node.output) != 1:
            continue
        key = (f.domain, f.name, f.SerializeToString(deterministic=True))
        x = value_infos.get(node.input[0])
        if key not in _CHECKED_FUNCTIONS and x is not None:
            _CHECKED_FUNCTIONS.add(key)
            y = onnx.helper.make_tensor_value_info(node.output[0], x.type.tensor_type.elem_type, None)
            call = onnx.NodeProto()
            call.CopyFrom(node)
            graph = onnx.helper.make_graph([call], "function_check", [x], [y])
            bodies.append(make_model(graph, opset_imports=list(model.opset_import), functions=[f]))
        del node.attribute[:]
        node.op_type, node.domain = "Identity", ""
    ort_session(stubbed)
    for body in bodies:
        ort_session(body)


class ModelQuantizer:
    """Quark's call shape: ``ModelQuantizer(config).quantize_model(input, output, reader)``."""

    def __init__(self, config: Any) -> None:
        self.settings, self.config = _as_settings(config)

    def quantize_model(
        self,
        model_input: ModelLike,
        model_output: str | Path | None = None,
        calibration_data_reader: Any = None,
        calibration_data_path: str | Path | None = None,
        algorithms: Any = None,
        **kwargs: Any,
    ) -> onnx.ModelProto:
        """Quantize and write ``model_output`` (if given); return the quantized ModelProto.
        ``algorithms`` (CLEConfig(), AdaRoundConfig(...), ...) add accuracy algorithms to this run.

        As in Quark, ``calibration_data_path`` is a folder of .npy files (or one sub-folder of them
        per input) used when no reader is given. Unlike Quark, which logs a data/model mismatch and
        returns None without writing anything, a mismatch here raises an error naming the input
        and the fix. The run's :class:`QuantizationSummary` is kept in ``self.summary``.
        """
        config = self.config
        if algorithms:  # Quark's legacy call shape: the algorithm list applies to this run only
            import copy

            from ryzen_nb.quantization.qconfig import apply_algorithms

            config = copy.deepcopy(self.config)
            apply_algorithms(config.global_quant_config, list(algorithms))
        data = calibration_data_reader if calibration_data_reader is not None else calibration_data_path
        if calibration_data_reader is not None and calibration_data_path is not None:
            log.warning("both a calibration reader and a calibration path were given; using the reader (as Quark)")
        self.summary = quantize(model_input, model_output, config, data, **kwargs)
        if self.config.global_quant_config.print_summary:
            log.info("%r", self.summary)
        assert self.summary.model is not None
        return self.summary.model
