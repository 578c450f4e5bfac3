"""One quantization, stage by stage: :class:`QuantizationRun` and its :class:`QuantizationSummary`.

The stages, in the order :func:`ryzen_nb.quantize` (:mod:`ryzen_nb.pipeline`) runs them::

    run = QuantizationRun.prepare(model, "XINT8", images)   # load, check the data, prepare the graph
    ...                                                     # (cross-layer equalization changes weights here)
    run.start()                                             # DPU rewrites, plan, calibrate, parameters
    ...                                                     # (mixed precision, AdaRound/AdaQuant, bias correction)
    summary = run.finish("model_xint8.onnx")                # emit, check it loads, write atomically

The accuracy algorithms of :mod:`ryzen_nb.algorithms` work between the stages on the run's
prepared float model, plan, calibration statistics and data; :meth:`QuantizationRun.emit` gives
the quantized model of the current state at any point.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from ryzen_nb import formats
from ryzen_nb.calibration.methods import get_method
from ryzen_nb.calibration.readers import IMAGE_SUFFIXES, CastingReader, RandomReader, make_reader
from ryzen_nb.calibration.runner import collect_statistics
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError, ConfigError
from ryzen_nb.formats.block import free_batch_in_calls
from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.batching import batch_agrees
from ryzen_nb.graph.builder import make_model
from ryzen_nb.graph.convert import float16_io, float16_to_float32, has_float16, with_float16_io
from ryzen_nb.graph.io import (
    Input,
    ModelLike,
    graph_only,
    load_model,
    model_inputs,
    model_path_of,
    path_inputs,
    save_model,
    serialized_size,
)
from ryzen_nb.graph.npu_forms import apply_npu_forms
from ryzen_nb.graph.prepare import constants_to_initializers, input_specs, ort_session, prepare
from ryzen_nb.graph.shapes import restore_dynamic_batch
from ryzen_nb.metrics import cosine, nonfinite_where_finite
from ryzen_nb.quantization.config import Config, QuantizationConfig, get_default_config, resolve
from ryzen_nb.quantization.emit import emit, metadata_for
from ryzen_nb.quantization.parameters import (
    assign_parameters,
    check_finite_constants,
    guard_divisors,
    release_drowned_block_concats,
)
from ryzen_nb.quantization.plan import QuantPlan, make_plan, select_nodes
from ryzen_nb.quantization.settings import Settings
from ryzen_nb.quantization.xint8 import apply_dpu_rewrites, refine

__all__ = ["QuantizationRun", "QuantizationSummary", "as_settings", "run_inputs", "CALIBRATION_SUFFIXES"]

log = logging.getLogger(__name__)

#: calibration samples finish()'s output check runs through both models
CHECK_SAMPLES = 2
#: what a calibration folder is read for: a new file of these kinds written into it would join the data
CALIBRATION_SUFFIXES = (".npy", ".npz", *IMAGE_SUFFIXES)


def run_inputs(model: ModelLike, calibration_data: Any, model_what: str = "input model",
               data_what: str = "calibration_data") -> list[Input]:
    """What a quantization reads from disk, named as the caller knows it (``--calib-data`` on the
    command line): the model with its external-data files, and the calibration folder if the data
    is a path. No output may overwrite them (:func:`ryzen_nb.graph.io.check_output`)."""
    return model_inputs(model, model_what) + path_inputs(calibration_data, data_what, CALIBRATION_SUFFIXES)


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


def as_settings(config: Any) -> tuple[Settings, Config]:
    """The engine's :class:`Settings` and the full :class:`Config` for a preset name, a
    :class:`QuantizationConfig`, a :class:`Config`, or an object that converts itself to a
    QuantizationConfig with ``to_legacy()`` (Quark's ``QConfig``, :mod:`ryzen_nb.quark`); anything
    else is an error naming them."""
    if callable(getattr(config, "to_legacy", None)):  # the compat layer's QConfig, without importing it
        config = config.to_legacy()
    if isinstance(config, str):
        config = Config(get_default_config(config))
    elif isinstance(config, QuantizationConfig):
        config = Config(config)
    if not isinstance(config, Config):
        raise ConfigError(
            f"config must be a preset name (e.g. 'XINT8'), a QuantizationConfig, a Config or a QConfig "
            f"(ryzen_nb.quark); got {type(config).__name__}."
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


@dataclass
class QuantizationRun:
    """One quantization, stage by stage, so the accuracy algorithms can work between the stages:
    the prepared float model (whose weights they may change), the plan, the calibration statistics
    and the data. :meth:`emit` gives the quantized model for the current state at any point."""

    settings: Settings
    config: Config
    prepared: Any  #: ryzen_nb.graph.prepare.PreparedModel
    plan: QuantPlan | None
    calibration: Any
    reader: Any
    source: Path | None
    progress: bool
    start_time: float
    notes: list[str] = field(default_factory=list)
    reports: dict[str, Any] = field(default_factory=dict)  #: what each algorithm did (CLE, fine-tuning, ...)
    #: (inputs, outputs) an FP16 source model has in float16: quantized as FP32 inside, given back at the end
    float16_io: tuple[list[str], list[str]] | None = None
    #: the source model's output declarations (their dynamic dimensions go back into the quantized model)
    source_outputs: list[onnx.ValueInfoProto] = field(default_factory=list)
    #: the files the run read (model, external data, calibration folder): finish() never writes over them
    inputs: list[Input] = field(default_factory=list)
    #: (quantized model, its onnxruntime session) for finish()'s output and batch checks: made once, as a
    #: BFP16/MX model's functions take ~0.5 s to load on every session (the load check avoids it too)
    _checked: tuple[onnx.ModelProto, Any] | None = field(default=None, repr=False)
    #: the calibration samples whose FP32 outputs preparation recorded (prepared.reference_outputs)
    checked_feeds: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)

    @classmethod
    def prepare(cls, model: ModelLike, config: Any, calibration_data: Any = None, *,
                input_shapes: dict[str, Any] | None = None, limit: int | None = None,
                progress: bool = True) -> QuantizationRun:
        """Load ``model``, read the first calibration sample and check it, prepare the graph
        (:func:`ryzen_nb.graph.prepare.prepare`). No plan yet: :meth:`start` makes it."""
        start_time = time.perf_counter()
        settings, full_config = as_settings(config)
        source = model_path_of(model)
        float_model = load_model(model)
        source_outputs = [onnx.ValueInfoProto.FromString(vi.SerializeToString()) for vi in float_model.graph.output]
        float16 = None
        if has_float16(float_model):
            # integer and float formats alike quantize FP32 values: the FP16 model becomes FP32 inside
            # (its weights exactly), and gets its FP16 inputs and outputs back at the end
            float16 = float16_io(float_model)
            float_model = float16_to_float32(float_model, keep_io_types=False)
        specs = input_specs(float_model)
        if calibration_data is None and settings.random_data:
            log.warning("calibrating on random data (UseRandomData): ranges will not reflect real inputs")
            calibration_data = RandomReader(specs, settings.random_shapes, settings.random_range)
        reader = first = None
        checked: list[dict[str, np.ndarray]] = []  # the samples of finish()'s output check
        if calibration_data is not None:
            reader = make_reader(
                calibration_data,
                input_names=[s.name for s in specs],
                input_shapes={s.name: s.shape for s in specs},
                limit=limit or settings.calibration_limit,
            )
            if float16 is not None:
                reader = CastingReader(reader, {s.name: np.float32 for s in specs if s.dtype == np.float32})
                reader.bind([s.name for s in specs])
            first = reader.get_next()
            if first is None:
                raise CalibrationDataError("The calibration data holds no samples.")
            check_feed(first, specs, 0)  # a bad first sample is a data problem, reported as one
            # finish()'s output check reads CHECK_SAMPLES samples: the FP32 model runs them while it is prepared
            checked = [first]
            while len(checked) < CHECK_SAMPLES and (sample := reader.get_next()) is not None:
                checked.append(sample)
            reader.rewind()
        prepared = prepare(float_model, input_shapes=input_shapes, sample=first, optimize=settings.optimize,
                           matmul_add_to_gemm=settings.simplify, reference_feeds=checked)
        return cls(settings, full_config, prepared, None, None, reader, source, progress, start_time,
                   float16_io=float16, source_outputs=source_outputs, inputs=run_inputs(model, calibration_data),
                   checked_feeds=checked if prepared.reference_outputs else [])

    def start(self) -> None:
        """Apply Quark's rewrites into NPU forms and the XINT8 DPU rewrites the config asks for, then
        plan, calibrate and assign parameters (:meth:`make_plan`)."""
        settings = self.settings
        if settings.npu_forms:
            # after CLE, as Quark (preprocess.apply_pre_optimization_after_algo), on the nodes the config
            # quantizes; Quark adds BatchNormalization to the op types for its rewrite
            wanted = dataclasses.replace(settings, op_types=None if settings.op_types is None else
                                         settings.op_types | {"BatchNormalization"})
            graph = self.prepared.model.graph
            chosen = {graph.node[i].name for i in select_nodes(graph, wanted, self.prepared.folded_nodes)}
            self.notes.extend(apply_npu_forms(self.prepared.model, settings.npu_forms, lambda n: n.name in chosen))
        if settings.dpu_rewrites:
            rewrite_notes, keep_float, fold = apply_dpu_rewrites(self.prepared.model, settings.dpu_rewrites)
            settings.keep_float |= keep_float
            settings.fold_tensors |= fold
            self.notes.extend(rewrite_notes)
        self.plan = self.make_plan()

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
        plan = make_plan(self.prepared.model, settings, folded_nodes=self.prepared.folded_nodes)
        check_finite_constants(self.prepared.model, plan)
        self._calibrate(plan)
        assign_parameters(self.prepared.model, plan, self.calibration, settings)
        release_drowned_block_concats(self.prepared.model, plan, self.prepared.reference_outputs)
        if settings.npu_legality:
            plan.notes.extend(refine(self.prepared.model, plan, settings))
        plan.notes.extend(guard_divisors(self.prepared.model, plan, settings))
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
        hist = {name: get_method(t.settings.method).needs_histogram or t.settings.power_of_two for name, t in missing.items()}
        result = collect_statistics(self.prepared, self.reader, hist, moving_average=self.settings.moving_average,
                                    progress=self.progress, softmax=_softmax_inputs(self.prepared.model, hist))
        self.notes.extend(w for w in result.warnings if w not in self.notes)
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

    def emit(self, plan: Any = None, metadata: dict[str, str] | None = None,
             codes_cache: dict[Any, Any] | None = None) -> onnx.ModelProto:
        """The quantized model for the current weights (constants as initializers; not yet checked).
        ``codes_cache``: see :func:`ryzen_nb.quantization.emit.emit`."""
        model = emit(self.prepared.model, plan or self.plan, self.settings, metadata or {}, codes_cache)
        constants_to_initializers(model)
        return model

    def _batch_problem(self, candidate: onnx.ModelProto) -> str | None:
        """Why ``candidate`` (the quantized model with its dynamic batch back) cannot take another
        batch, or None: it runs two copies of a sample stacked, and each copy must come out as the
        sample does alone. Its session stays for the output check (a BFP16 PP-OCRv4 takes a second
        to load: its 226 quantizer functions inline to 12,000 nodes)."""
        sample = None
        if self.reader is not None:
            self.reader.rewind()
            sample = self.reader.get_next()
            self.reader.rewind()
        if sample is None:  # no data: any values do for a shape and consistency check
            rng = np.random.default_rng(0)
            sample = {s.name: (rng.standard_normal([int(d) for d in s.shape]) if s.dtype.kind == "f"
                               else np.zeros([int(d) for d in s.shape])).astype(s.dtype)
                      for s in self.prepared.inputs}
        free = self.prepared.dynamic_batch
        doubled = {k: np.concatenate([v, v]) if k in free else v for k, v in sample.items()}
        try:
            session = self._session_of(candidate)
            single = session.run(None, sample)
            batched = session.run(None, doubled, _expected_failure())
        except Exception as exc:  # onnxruntime's shape errors: the graph pins its batch
            return str(exc).strip().splitlines()[0][:200]
        names = [o.name for o in candidate.graph.output]
        bad = [n for n, b, s in zip(names, batched, single) if not batch_agrees(b, s, 2)]
        return f"output(s) {bad} differ per sample with a batch of 2" if bad else None

    def _session_of(self, quantized: onnx.ModelProto) -> Any:
        if self._checked is None or self._checked[0] is not quantized:
            self._checked = (quantized, _check_session(quantized))
        return self._checked[1]

    def _collapsed_outputs(self, quantized: onnx.ModelProto, samples: int = CHECK_SAMPLES) -> list[str]:
        """A last check on the calibration data, never scored as success: an output that collapsed
        (constant, or far from FP32) is named in a warning with what to try. Wrong numbers look like
        any others downstream; this is the one place that sees both models on the same inputs."""
        if self.reader is None:
            return []
        names = [o.name for o in self.prepared.model.graph.output]
        recorded = self.prepared.reference_outputs[:samples]
        try:
            if self.checked_feeds and recorded and all(n in r for r in recorded for n in names):
                # the FP32 model as the user gave it, recorded while preparing it (before any DPU rewrite
                # or equalization, which keep or refine its function): a second FP32 session costs a load
                feeds, reference = self.checked_feeds[:samples], [[r[n] for n in names] for r in recorded]
            else:
                feeds = self.samples(samples)
                float_session = _check_session(self.prepared.model)
                reference = [float_session.run(names, f) for f in feeds]
        except Exception as exc:  # noqa: BLE001 - an odd feed only skips the check
            log.debug("output check skipped: %s", exc)
            return []
        try:  # the FP32 model ran these feeds: the quantized one must too
            quantized_session = self._session_of(quantized)
            result = [quantized_session.run(names, f) for f in feeds]
        except Exception as exc:
            raise ConfigError(f"internal error: the quantized model does not run on the calibration data in "
                              f"onnxruntime, where the FP32 model does: {str(exc).strip()[:500]}") from exc
        warnings, remedies = [], _collapse_remedies(self.settings)
        for k, name in enumerate(names):
            problem = _collapse_problem([r[k] for r in reference], [q[k] for q in result])
            if problem:
                message = (f"Output {name!r} of the quantized model {problem} on the calibration data: its numbers "
                           f"are wrong. Try {remedies + ', or ' if remedies else ''}keeping the most sensitive "
                           "layers in float (nodes_to_exclude; AutoMixprecision with AnalysisOnly ranks them).")
                log.warning("%s", message)
                warnings.append(message)
        return warnings

    def finish(self, output_path: str | Path | None = None) -> QuantizationSummary:
        settings, plan, calibration = self.settings, self.plan, self.calibration
        metadata = metadata_for(plan, {
            "preset": settings.preset or "custom",
            "config": self.config.to_dict(),
            "calibration": {"samples": calibration.samples if calibration else 0},
        })
        quantized = _finish(emit(self.prepared.model, plan, settings, metadata))
        quantized, batch_note = restore_dynamic_batch(quantized, self.prepared.dynamic_batch, self.source_outputs,
                                                      self._batch_problem, adapt=free_batch_in_calls)
        self.notes.extend(self._collapsed_outputs(quantized))  # the model returned, in the batch check's session
        self._checked = None  # the session's memory goes with the checks
        if batch_note:
            self.notes.append(batch_note)
        if self.float16_io is not None:
            quantized = _infer(with_float16_io(quantized, *self.float16_io))
            self.notes.append("FP16 model: quantized as FP32 inside, FP16 inputs and outputs kept")
        out_path = None
        if output_path is not None:
            out_path = save_model(quantized, output_path, protect=self.inputs or self.source, what="output_path",
                                  external_data=bool(self.config.global_quant_config.use_external_data_format))
        counts = Counter(plan.formats_by_tensor().values())  # second (dual) quantizers included
        summary = QuantizationSummary(
            preset=settings.preset,
            output_path=out_path,
            tensors_by_format=dict(counts),
            formats_by_tensor=plan.formats_by_tensor(),
            calibration_samples=calibration.samples if calibration else 0,
            calibration_seconds=calibration.seconds if calibration else 0.0,
            total_seconds=time.perf_counter() - self.start_time,
            size_before=serialized_size(self.prepared.model),
            size_after=serialized_size(quantized),
            effective_bits_before=_weight_bits(self.prepared.model, None),
            effective_bits_after=_weight_bits(self.prepared.model, plan.formats_by_tensor()),
            preparation=list(self.prepared.steps),
            notes=self.notes + list(plan.notes),
            model=quantized,
            reports=dict(self.reports),
        )
        log.info("%r", summary)
        return summary


#: a quantized output this far from FP32 on the calibration data (cosine) computes wrong numbers
COLLAPSE_COSINE = 0.5


def _softmax_inputs(model: onnx.ModelProto, names: Any) -> dict[str, tuple[int, bool]]:
    """Tensors of ``names`` whose every reader is a Softmax (a graph output is read by the user too)
    -> (axis, coerce) of that Softmax: calibration weighs their values by softmax probability."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for n in node.input:
            readers.setdefault(n, []).append(node)
    outputs = {o.name for o in model.graph.output}
    found: dict[str, tuple[int, bool]] = {}
    for name in names:
        nodes = readers.get(name, [])
        if not nodes or name in outputs or any(n.op_type != "Softmax" or n.domain not in ("", "ai.onnx") for n in nodes):
            continue
        axes = {(int(attribute(n, "axis", -1 if opset >= 13 else 1)), opset < 13) for n in nodes}
        if len(axes) == 1:
            found[name] = axes.pop()
    return found


def _collapse_problem(reference: Sequence[np.ndarray], quantized: Sequence[np.ndarray]) -> str:
    """What is wrong with a quantized output, compared with FP32 on the same samples, one array per
    sample ("" if nothing). Each sample counts on its own too: pooled, Magika's well-classified first
    file (cosine 1.0) hid a second one at 0.09 (0.71 over both), a wrong label for most files. A sample
    whose FP32 output holds a tenth of the largest one's energy or less (a text detector's empty page)
    is left to the pooled figure: its cosine measures noise."""
    pairs = [(np.asarray(r, np.float64).ravel(), np.asarray(q, np.float64).ravel()) for r, q in zip(reference, quantized)]
    if not pairs or any(a.shape != b.shape or not np.all(np.isfinite(a)) for a, b in pairs):
        return ""
    a, b = np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])
    bad = nonfinite_where_finite(a, b)
    if bad:  # cosine would be NaN, which is no number to compare: say what it is
        return f"holds {bad} NaN or Inf value(s) (of {b.size}) where FP32's are finite"
    if np.ptp(a) > 0 and np.ptp(b) == 0:
        return f"is constant ({b[0]:.4g}) where FP32's varies"
    c = cosine(a, b)
    if np.isfinite(c) and c < COLLAPSE_COSINE:
        return f"has cosine {c:.3f} to FP32"
    energy = [float(np.linalg.norm(x)) for x, _ in pairs]
    for k, (x, y) in enumerate(pairs):
        ck = cosine(x, y)
        if energy[k] > 0.1 * max(energy) and np.isfinite(ck) and ck < COLLAPSE_COSINE:
            return f"has cosine {ck:.3f} to FP32 on sample {k + 1} of {len(pairs)} ({c:.3f} over all)"
    return ""


def _collapse_remedies(settings: Settings) -> str:
    """What to try when an output collapsed, for the formats it was quantized to: integer remedies
    mean nothing to a block or float format, whose remedy is more bits per element."""
    weight, activation = formats.get(settings.weight.format).info, formats.get(settings.activation.format).info
    used = [weight, activation]
    remedies = []
    if weight.family == "integer" and not settings.weight.per_channel:
        remedies.append("per_channel=True")
    if activation.family == "integer" and activation.element_bits < 16:
        remedies.append("16-bit activations (A16W8)")
    narrow = [info for info in used if info.family != "integer" and info.name != "bfloat16"]
    if narrow:
        narrowest = min(narrow, key=lambda info: info.bits_per_element)
        wider = sorted((info for info in (formats.get(name).info for name in formats.names())
                        if info.family in ("bfp", "mx") and info.bits_per_element > narrowest.bits_per_element),
                       key=lambda info: info.bits_per_element)
        suggestions = ", ".join([info.name for info in wider[:4]] + ["BF16"])
        remedies.append(f"a format with more bits per element than {narrowest.name} ({suggestions})")
    return ", ".join(remedies)


def _check_session(model: onnx.ModelProto) -> Any:
    """A session for finish()'s checks, which run a sample or two: without graph optimizations, which
    halve the load time of a model whose quantizers are functions (BFP16/MX) and change no result."""
    return ort_session(model, graph_optimization_level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)


def _expected_failure() -> ort.RunOptions:
    """Options for a run whose failure is an answer the caller handles (does the model take another
    batch?): onnxruntime logs a failed kernel at error level, in red in the user's notebook, before
    raising the exception."""
    options = ort.RunOptions()
    options.log_severity_level = 4
    return options


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference for readers and viewers (best effort: the load check is what matters)."""
    try:
        return graph_only(model, lambda m: onnx.shape_inference.infer_shapes(m, strict_mode=False))
    except Exception as exc:
        log.debug("shape inference of the quantized model failed: %s", exc)
        return model


def _finish(model: onnx.ModelProto) -> onnx.ModelProto:
    """Constants as initializers, shape inference for readers and viewers, and a load check:
    never write a model ORT rejects."""
    constants_to_initializers(model)  # Q/DQ scales and zero points, as every QDQ tool writes them
    model = _infer(model)
    try:
        _load_check(model)
    except Exception as exc:
        raise ConfigError(f"internal error: the quantized model does not load in onnxruntime: {exc}") from exc
    return model


_CHECKED_FUNCTIONS: set[tuple[str, str, bytes, int | None]] = set()


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
        x = value_infos.get(node.input[0])
        # per rank too: a dynamic-layout body's shape arithmetic depends on it
        rank = len(x.type.tensor_type.shape.dim) if x is not None and x.type.tensor_type.HasField("shape") else None
        key = (f.domain, f.name, f.SerializeToString(deterministic=True), rank)
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
