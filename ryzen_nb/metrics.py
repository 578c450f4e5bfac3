"""Fidelity and task metrics, each defined once (the evaluate tool, the demo and the dashboards
all use these).

Fidelity compares a reference output ``a`` (FP32) with a test output ``b`` (quantized):

* ``cosine`` — cosine similarity of the flattened tensors (1 = same direction);
* ``l2`` — Euclidean distance ||a - b||;
* ``mse`` — mean squared error;
* ``psnr`` — 20·log10(peak) − 10·log10(MSE) in dB, peak = max(a) (Quark's evaluate tool);
* ``ssim`` — structural similarity with Quark's constants (images, and arrays as planes);
* ``sqnr`` — 10·log10(Σa² / Σ(a−b)²) in dB, signal-to-quantization-noise ratio;
* ``max_abs`` — the largest absolute difference.

Task metrics: :func:`topk_accuracy`, :func:`agreement` (same top-1 as the reference).

A NaN or Inf in either tensor makes every metric NaN — never a good score: a model whose outputs
overflowed must not look like a perfect match (PSNR used to replace a NaN error by 1e-10: 200 dB).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["cosine", "l2", "mse", "psnr", "ssim", "sqnr", "max_abs", "fidelity", "topk_accuracy", "agreement",
           "FIDELITY_METRICS", "all_finite", "nonfinite_where_finite"]

FIDELITY_METRICS = ("cosine", "l2", "mse", "psnr", "sqnr", "max_abs")


_NAN = float("nan")


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"Cannot compare tensors of {a.size} and {b.size} elements; they must have the same shape.")
    return a, b


def all_finite(*arrays: np.ndarray) -> bool:
    """Whether every value of every array is finite (metrics are NaN otherwise)."""
    return all(bool(np.isfinite(np.asarray(x, dtype=np.float64)).all()) for x in arrays)


def nonfinite_where_finite(reference: np.ndarray, test: np.ndarray) -> int:
    """How many values of ``test`` are NaN or Inf when every value of ``reference`` is finite (0 when
    ``reference`` is not): wrong numbers every metric above turns into NaN, which compares as nothing."""
    if not all_finite(reference):
        return 0
    return int(np.count_nonzero(~np.isfinite(np.asarray(test, dtype=np.float64))))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = _pair(a, b)
    if not all_finite(a, b):
        return _NAN
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(a, b) / (na * nb))


def l2(a: np.ndarray, b: np.ndarray) -> float:
    a, b = _pair(a, b)
    return float(np.linalg.norm(a - b)) if all_finite(a, b) else _NAN


def mse(a: np.ndarray, b: np.ndarray) -> float:
    a, b = _pair(a, b)
    if not all_finite(a, b):
        return _NAN
    return float(np.mean((a - b) ** 2)) if a.size else 0.0


def psnr(a: np.ndarray, b: np.ndarray, peak: float | None = None) -> float:
    """Quark's definition: 20·log10(max(a)) − 10·log10(MSE), with MSE and a non-positive peak
    replaced by 1e-10 (so identical tensors give a large finite value, not infinity)."""
    a, b = _pair(a, b)
    if not all_finite(a, b):
        return _NAN
    err = float(np.mean((a - b) ** 2)) if a.size else 0.0
    top = float(np.max(a)) if peak is None else float(peak)
    return float(20 * np.log10(top if top > 0 else 1e-10) - 10 * np.log10(err if err > 0 else 1e-10))


def sqnr(a: np.ndarray, b: np.ndarray) -> float:
    a, b = _pair(a, b)
    if not all_finite(a, b):
        return _NAN
    noise = float(np.sum((a - b) ** 2))
    signal = float(np.sum(a * a))
    if noise == 0:
        return float("inf")
    return float(10 * np.log10(signal / noise)) if signal > 0 else float("-inf")


def max_abs(a: np.ndarray, b: np.ndarray) -> float:
    a, b = _pair(a, b)
    if not all_finite(a, b):
        return _NAN
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def _gaussian_blur(x: np.ndarray, size: int = 11, sigma: float = 1.5) -> np.ndarray:
    """Separable Gaussian blur of the last two axes, reflecting at the borders (as OpenCV's default)."""
    half = size // 2
    k = np.exp(-((np.arange(size) - half) ** 2) / (2 * sigma**2))
    k /= k.sum()
    for axis in (-2, -1):
        n = x.shape[axis]
        if n == 1:
            continue
        pad = [(0, 0)] * x.ndim
        pad[axis] = (min(half, n - 1), min(half, n - 1))
        padded = np.pad(x, pad, mode="reflect")
        width = padded.shape[axis] - n + 1
        kk = k[half - (width - 1) // 2 : half + width // 2 + 1] if width < size else k
        kk = kk / kk.sum()
        moved = np.moveaxis(padded, axis, -1)
        windows = np.lib.stride_tricks.sliding_window_view(moved, kk.size, axis=-1)[..., :n, :]
        x = np.moveaxis(windows @ kk, -1, axis)
    return x


def _as_planes(x: np.ndarray) -> np.ndarray:
    """A tensor as a stack of 2-D planes: images HxW or HxWxC; arrays keep their last two axes."""
    x = np.asarray(x, dtype=np.float64)
    while x.ndim > 2 and x.shape[0] == 1:
        x = x[0]
    if x.ndim <= 1:
        return x.reshape(1, 1, -1)
    if x.ndim == 3 and x.shape[2] <= 4 and x.shape[0] > 4:  # H x W x C image
        x = np.moveaxis(x, 2, 0)
    return x.reshape(-1, x.shape[-2], x.shape[-1])


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Structural similarity (Wang et al. 2004) with Quark's constants: 11x11 Gaussian window,
    sigma 1.5, C1 = (0.01·255)², C2 = (0.03·255)² — the 0..255 image range, applied to arrays too."""
    x, y = _as_planes(a), _as_planes(b)
    if x.shape != y.shape:
        raise ValueError(f"Cannot compare tensors of shapes {np.shape(a)} and {np.shape(b)}.")
    if not all_finite(x, y):
        return _NAN
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = _gaussian_blur(x), _gaussian_blur(y)
    sxx = _gaussian_blur(x * x) - mx * mx
    syy = _gaussian_blur(y * y) - my * my
    sxy = _gaussian_blur(x * y) - mx * my
    index = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return float(index.mean())


def fidelity(a: np.ndarray, b: np.ndarray, peak: float | None = None) -> dict[str, float]:
    """Every fidelity metric of ``b`` against reference ``a``."""
    return {"cosine": cosine(a, b), "l2": l2(a, b), "mse": mse(a, b), "psnr": psnr(a, b, peak),
            "sqnr": sqnr(a, b), "max_abs": max_abs(a, b)}


def topk_accuracy(logits: np.ndarray, labels: Sequence[int], k: int = 1) -> float:
    """Fraction of rows whose true label is among the ``k`` largest logits (NaN if any logit is
    NaN or Inf: arg-max of NaN picks a class at random)."""
    logits = np.asarray(logits).reshape(len(labels), -1)
    if not all_finite(logits):
        return _NAN
    top = np.argsort(-logits, axis=1)[:, :k]
    return float(np.mean([label in row for label, row in zip(labels, top)]))


def agreement(reference: np.ndarray, test: np.ndarray) -> float:
    """Fraction of rows where ``test`` has the same top-1 class as ``reference``."""
    a = np.asarray(reference).reshape(len(reference), -1)
    b = np.asarray(test).reshape(len(test), -1)
    if not all_finite(a, b):
        return _NAN
    return float(np.mean(a.argmax(axis=1) == b.argmax(axis=1)))
