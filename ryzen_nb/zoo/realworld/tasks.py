"""Reading the corpus models' answers, and scoring a quantized model's answers against FP32's.

Each model's outputs are decoded the way the package that ships it decodes them (CTC greedy decoding
for the text recognizers, score threshold + NMS for the detectors, a threshold for the voice-activity
detector), then compared with the FP32 model's decoded answers on the same samples. A score of 1.0
means the quantized model answers exactly as FP32 does; the ground truth is not involved (the tests
check separately that FP32 reads the samples right, which shows the preprocessing is right).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "box_f1",
    "ctc_greedy",
    "label_agreement",
    "mask_iou",
    "nms",
    "sequence_agreement",
]

#: one sample's outputs, in the model's output order
Outputs = Sequence[np.ndarray]


def ctc_greedy(probabilities: np.ndarray, blank: int = 0) -> tuple[int, ...]:
    """Best path decoding of one sequence of class scores [T, C]: arg-max per step, repeats merged, blanks dropped."""
    best = np.asarray(probabilities).reshape(-1, probabilities.shape[-1]).argmax(axis=-1)
    merged = [int(c) for i, c in enumerate(best) if i == 0 or c != best[i - 1]]
    return tuple(c for c in merged if c != blank)


def sequence_agreement(reference: Sequence[Sequence[int]], test: Sequence[Sequence[int]]) -> float:
    """Share of samples whose decoded sequence is exactly FP32's."""
    if not reference:
        return float("nan")
    return float(np.mean([tuple(a) == tuple(b) for a, b in zip(reference, test, strict=True)]))


def label_agreement(reference: Sequence[int], test: Sequence[int]) -> float:
    """Share of samples (or frames) given the same label as FP32."""
    a, b = np.asarray(reference).reshape(-1), np.asarray(test).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"label counts differ: {a.size} vs {b.size}")
    return float(np.mean(a == b)) if a.size else float("nan")


def mask_iou(reference: Sequence[np.ndarray], test: Sequence[np.ndarray]) -> float:
    """Intersection over union of two sets of binary maps, pooled over the samples."""
    inter = sum(int(np.logical_and(a, b).sum()) for a, b in zip(reference, test, strict=True))
    union = sum(int(np.logical_or(a, b).sum()) for a, b in zip(reference, test, strict=True))
    return inter / union if union else 1.0


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-9)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> np.ndarray:
    """Indices of the boxes (x1, y1, x2, y2) kept by greedy non-maximum suppression, best first."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        best = order[0]
        keep.append(int(best))
        if order.size == 1:
            break
        rest = order[1:]
        order = rest[_iou(boxes[best], boxes[rest]) <= threshold]
    return np.asarray(keep, dtype=np.int64)


def box_f1(reference: Sequence[np.ndarray], test: Sequence[np.ndarray], iou: float = 0.5) -> float:
    """F1 of the test detections against FP32's, pooled over samples.

    Each detection is a row (x1, y1, x2, y2, class); a test box matches an unmatched FP32 box of the
    same class with IoU >= ``iou`` (greedy, in the order given: highest score first). No detections
    on either side scores 1.0.
    """
    matched = found = expected = 0
    for ref, tst in zip(reference, test, strict=True):
        ref = np.asarray(ref, dtype=np.float64).reshape(-1, 5)
        tst = np.asarray(tst, dtype=np.float64).reshape(-1, 5)
        expected += len(ref)
        found += len(tst)
        free = np.ones(len(ref), dtype=bool)
        for box in tst:
            candidates = np.flatnonzero(free & (ref[:, 4] == box[4]))
            if candidates.size:
                overlaps = _iou(box, ref[candidates])
                best = int(np.argmax(overlaps))
                if overlaps[best] >= iou:
                    free[candidates[best]] = False
                    matched += 1
    if expected == 0 and found == 0:
        return 1.0
    return 2 * matched / (expected + found)
