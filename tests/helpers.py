"""Helpers shared by the tests: run a model on onnxruntime's CPU provider, compare bit patterns."""

from __future__ import annotations

from functools import cache

import numpy as np
import onnx
import onnxruntime as ort


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run(model: onnx.ModelProto, **feeds: np.ndarray) -> np.ndarray:
    return session(model).run(None, feeds)[0]


@cache
def _cached(model_bytes: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def run_cached(model: onnx.ModelProto, **feeds: np.ndarray) -> np.ndarray:
    """Like :func:`run`, reusing sessions for identical models (hypothesis runs many examples)."""
    return _cached(model.SerializeToString()).run(None, feeds)[0]


def assert_same_bits(actual: np.ndarray, expected: np.ndarray, context: str = "", signed_zeros: bool = True) -> None:
    """Equal bit patterns (so +0 != -0 unless ``signed_zeros=False``); any NaN equals any NaN."""
    actual = np.asarray(actual, dtype=np.float32)
    expected = np.asarray(expected, dtype=np.float32)
    if not signed_zeros:
        actual, expected = actual + np.float32(0), expected + np.float32(0)  # -0 + 0 = +0
    assert actual.shape == expected.shape, f"{context}: shape {actual.shape} != {expected.shape}"
    same = (actual.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(actual) & np.isnan(expected))
    if not same.all():
        idx = np.flatnonzero(~same.reshape(-1))
        first = idx[0]
        raise AssertionError(
            f"{context}: {idx.size} of {same.size} values differ; first at flat index {first}: "
            f"got {actual.reshape(-1)[first]!r}, expected {expected.reshape(-1)[first]!r}"
        )
