"""Calibration methods: from a tensor's statistics (or a weight's values) to scale and zero point.

Each method is defined once here and used for activations by the quantizer, listed by the config
builder, and documented in its ``description``:

=============  ===========  ========================================================================
method         scales       range / choice
=============  ===========  ========================================================================
MinMax         float        observed [min, max] (moving averages optional)
Percentile     float        cut the tails at ``percentile`` (99.999 by default)
Entropy        float        KL-divergence threshold (onnxruntime's search on our histogram)
Distribution   float        float8 only: scale from the distribution's spread (onnxruntime's rule)
NonOverflow    power of 2   the power of two nearest the MinMax scale (Quark; ``legacy=True``:
                            the largest power of two that cannot overflow, vai_q_onnx)
MinMSE         power of 2   among 5 powers of two around NonOverflow's, the one with least squared
                            error over the histogram (weights: over their exact values; a Softmax
                            input: each value weighted by its softmax probability)
=============  ===========  ========================================================================

Float-scale weights take MinMax, or with ``WeightCalibrateMethod="MinMSE"`` (Quark's
``ExtendedCalibrationMethod.MinMSE``) the clipping range of least squared error among Quark's
candidates: :func:`minmse_float_range`.

Power-of-two methods follow docs/quark.md#power-of-two-calibration (Quark ``calibrators.py``/``quant_utils.py``).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from ryzen_nb.calibration.stats import TensorStats
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.formats.integer import IntegerFormat

__all__ = ["CalibrationMethod", "METHODS", "get_method", "QuantParams", "constant_code_range", "pow2_scale_for_values",
           "MINMSE_FLOAT_MODES", "minmse_float_range"]


@dataclass(frozen=True)
class QuantParams:
    """Scale and zero point chosen for one tensor, with the range they came from."""

    scale: np.ndarray
    zero_point: np.ndarray
    rmin: float
    rmax: float
    method: str


@dataclass(frozen=True)
class CalibrationMethod:
    name: str
    power_of_two: bool
    needs_histogram: bool
    description: str

    def params(self, stats: TensorStats, fmt: IntegerFormat, symmetric: bool, **options: Any) -> QuantParams:
        """Scale/zero point for an activation with statistics ``stats`` in integer format ``fmt``."""
        if stats.count == 0:
            raise ConfigError("No calibration statistics were collected for this tensor.")
        if self.name == "Distribution":
            raise ConfigError(
                "The Distribution method sets float8 scales (as in onnxruntime); for integer formats use "
                "MinMax, Percentile or Entropy (float scales) or MinMSE / NonOverflow (powers of two)."
            )
        if self.power_of_two:
            return _pow2_params(self.name, stats, fmt, **options)
        lo, hi = _float_range(self.name, stats, symmetric, **options)
        scale, zp = fmt.scale_from_range(lo, hi, symmetric=symmetric)
        return QuantParams(scale, zp, lo, hi, self.name)


METHODS: dict[str, CalibrationMethod] = {
    m.name: m
    for m in (
        CalibrationMethod("MinMax", False, False, "observed minimum and maximum"),
        CalibrationMethod("Percentile", False, True, "range cut at a percentile of |x| (default 99.999)"),
        CalibrationMethod("Entropy", False, True, "threshold minimising KL divergence (TensorRT-style)"),
        CalibrationMethod("Distribution", False, True, "float8 scale from the distribution's spread"),
        CalibrationMethod("NonOverflow", True, False, "power-of-two scale nearest the MinMax scale"),
        CalibrationMethod("MinMSE", True, True, "power-of-two scale with the least squared error"),
    )
}
_ALIASES = {"minmax": "MinMax", "percentile": "Percentile", "entropy": "Entropy", "distribution": "Distribution",
            "nonoverflow": "NonOverflow", "non_overflow": "NonOverflow", "minmse": "MinMSE", "min_mse": "MinMSE"}


def get_method(name: Any) -> CalibrationMethod:
    """A method by name, or by an onnxruntime ``CalibrationMethod`` / Quark ``PowerOfTwoMethod`` enum."""
    if isinstance(name, CalibrationMethod):
        return name
    key = getattr(name, "name", name)  # enums: CalibrationMethod.MinMax -> "MinMax"
    found = _ALIASES.get(str(key).replace("PowerOfTwoMethod.", "").replace("CalibrationMethod.", "").lower())
    if found is None:
        raise UnknownNameError("calibration method", key, list(METHODS))
    return METHODS[found]


# -- float-scale methods --------------------------------------------------------------------------------
def _float_range(name: str, stats: TensorStats, symmetric: bool, percentile: float = 99.999,
                 num_quantized_bins: int = 128, **_: Any) -> tuple[float, float]:
    if name == "MinMax":
        return float(stats.min), float(stats.max)
    if name == "Percentile":
        if not 0 < percentile <= 100:
            raise ConfigError(f"Percentile must be in (0, 100]; got {percentile}.")
        if symmetric:
            counts, edges = stats.abs_histogram()
            cdf = np.cumsum(counts) / counts.sum()
            t = float(edges[min(np.searchsorted(cdf, percentile / 100.0) + 1, len(edges) - 1)])
            return max(-t, stats.min), min(t, stats.max)
        cdf = np.cumsum(stats.hist) / stats.hist.sum()
        cut = (100.0 - percentile) / 200.0
        edges = stats.edges
        lo = float(edges[np.searchsorted(cdf, cut)])
        hi = float(edges[min(np.searchsorted(cdf, 1.0 - cut) + 1, len(edges) - 1)])
        return max(lo, stats.min), min(hi, stats.max)
    if name == "Entropy":
        from onnxruntime.quantization.calibrate import HistogramCollector

        collector = HistogramCollector("entropy", symmetric, stats.num_bins, num_quantized_bins, 99.999, "same")
        histogram = (stats.hist, stats.edges.astype(np.float32), np.float32(stats.min), np.float32(stats.max),
                     np.float32(stats.threshold))
        with contextlib.redirect_stdout(io.StringIO()):  # onnxruntime prints progress lines
            lo, hi = collector.get_entropy_threshold(histogram, num_quantized_bins)
        return float(lo), float(hi)
    raise ConfigError(f"{name} is not a float-scale method")


# -- power-of-two methods -------------------------------------------------------------------------------
def _pos(scale: float) -> int:
    """Quark's scale2pos: the power-of-two position nearest ``scale`` in the log domain."""
    return int(np.rint(-np.log2(np.clip(scale, 2.0**-127, 2.0**127))))


def _symmetric_float_scale(lo: float, hi: float, fmt: IntegerFormat) -> float:
    amax = max(abs(lo), abs(hi))
    return 2.0 * amax / (fmt.qmax - fmt.qmin) if amax > 0 else 1.0


def _zero_point(fmt: IntegerFormat) -> int:
    return 0 if fmt.signed else (fmt.qmax + 1) // 2  # XINT8: uint8 activations use 128


def _legacy_pos(lo: float, hi: float, fmt: IntegerFormat) -> int:
    """vai_q_onnx's NonOverflow: the finest power of two that cannot overflow after rounding."""
    half = 2 ** (fmt.bits - 1)
    s = max(lo / (-half - 0.5), hi / (half - 0.5))
    return 127 if s <= 0 else int(np.clip(np.floor(np.log2(1.0 / s)), -128, 127))


def _qdq_error(values: np.ndarray, weights: np.ndarray | None, pos: int, fmt: IntegerFormat, zp: int,
               codes: tuple[int, int] | None = None) -> float:
    s = 2.0**-pos
    lo, hi = codes if codes is not None else (fmt.qmin, fmt.qmax)
    q = np.clip(np.rint(values / s) + zp, lo, hi)
    err = (q - zp) * s - values
    return float(np.sum(err * err) if weights is None else np.sum(weights * err * err))


def _best_pos(values: np.ndarray, weights: np.ndarray | None, p0: int, fmt: IntegerFormat, zp: int,
              codes: tuple[int, int] | None = None) -> int:
    candidates = [p0 + i - 1 for i in range(5)]  # Quark's pos_range = 5
    errors = [_qdq_error(values, weights, p, fmt, zp, codes) for p in candidates]
    return candidates[int(np.argmin(errors))]


def constant_code_range(fmt: IntegerFormat, symmetric: bool = True) -> tuple[int, int]:
    """The integer codes a quantized constant (weight, bias) may take: a symmetric signed format keeps
    [-qmax, qmax] ([-127, 127] for int8), as Quark stores them (``quantize_nparray`` clips every
    constant to the symmetric range); otherwise the format's whole range."""
    if symmetric and fmt.signed:
        return -fmt.qmax, fmt.qmax
    return fmt.qmin, fmt.qmax


def _pow2_params(name: str, stats: TensorStats, fmt: IntegerFormat, legacy: bool = False, **_: Any) -> QuantParams:
    lo, hi = float(stats.min), float(stats.max)
    zp = _zero_point(fmt)
    p0 = _legacy_pos(lo, hi, fmt) if legacy else _pos(_symmetric_float_scale(lo, hi, fmt))
    pos = p0
    if name == "MinMSE":
        # a Softmax input: the error that counts is the Softmax's, so each value weighs its probability
        # (the logits far below their row's maximum, which clipping moves, weigh nothing)
        weights = stats.relevance if stats.relevance is not None and stats.relevance.sum() > 0 else stats.hist
        used = weights > 0
        pos = _best_pos(stats.centers[used], weights[used].astype(np.float64), p0, fmt, zp)
    scale = np.float32(2.0**-pos)
    return QuantParams(np.asarray(scale), np.asarray(zp, dtype=np.int64), lo, hi, name)


def pow2_scale_for_values(values: np.ndarray, fmt: IntegerFormat, method: str = "MinMSE", legacy: bool = False) -> tuple[np.float32, int]:
    """Power-of-two scale (and zero point) for a constant tensor: weights and XINT8 biases.

    Quark quantizes weights with their MinMax range, then (MinMSE) searches the same five powers of
    two on the exact squared error of the values themselves, codes clipped to the symmetric range
    (:func:`constant_code_range`) as they are stored.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
    zp = _zero_point(fmt)
    half = (fmt.qmax - fmt.qmin) // 2  # weights use the symmetric range [-127, 127]
    amax = max(abs(lo), abs(hi))
    p0 = _legacy_pos(lo, hi, fmt) if legacy else _pos(amax / half if amax > 0 else 1.0)
    pos = _best_pos(v, None, p0, fmt, zp, constant_code_range(fmt)) if get_method(method).name == "MinMSE" else p0
    return np.float32(2.0**-pos), zp


# -- float-scale MinMSE for weights (Quark's ExtendedCalibrationMethod.MinMSE) --------------------------
#: candidate ranges per mode, as Quark's compute_minmse: "Percentile" — the central 99.9, 99.99, 99.999
#: and 99.9999 % of the values; "HistCenter" / "All" — ranges between the centres of a histogram's bins,
#: from the central half of the bins outwards, the error measured on the bin centres (weighted by their
#: counts) or on every value
MINMSE_FLOAT_MODES = ("Percentile", "HistCenter", "All")


def minmse_float_range(values: np.ndarray, fmt: IntegerFormat, symmetric: bool, mode: str = "Percentile"
                       ) -> tuple[float, float]:
    """The clipping range ``(rmin, rmax)`` of ``values`` whose float scale quantizes them with the least
    squared error. Cutting a few outliers buys every other weight a finer step; MinMax keeps them."""
    if mode not in MINMSE_FLOAT_MODES:
        raise ConfigError(f"MinMSEModeFloatScale must be one of {', '.join(MINMSE_FLOAT_MODES)}; got {mode!r}.")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0 or not v.any():
        return 0.0, 0.0
    if mode == "Percentile":
        candidates = [(float(np.percentile(v, (100 - p) / 2)), float(np.percentile(v, 100 - (100 - p) / 2)))
                      for p in (99.9, 99.99, 99.999, 99.9999)]
        points, counts = v, None
    else:
        bins = min(2048, v.size)
        counts, edges = np.histogram(v, bins=bins)
        centers = (edges[1:] + edges[:-1]) / 2
        candidates = [(float(centers[int((bins - i) / 2)]), float(centers[int(bins - (bins - i) / 2)]))
                      for i in range(int(0.5 * bins), bins)]
        points, counts = (centers, counts.astype(np.float64)) if mode == "HistCenter" else (v, None)
    best, best_error, seen = candidates[-1], np.inf, set()
    qlo, qhi = constant_code_range(fmt, symmetric)  # the codes a weight is stored with
    for lo, hi in candidates:
        scale, zp = fmt.scale_from_range(lo, hi, symmetric=symmetric)
        key = (float(scale), float(zp))
        if key in seen or float(scale) <= 0:
            continue
        seen.add(key)
        q = np.clip(np.rint(points / float(scale)) + float(zp), qlo, qhi)
        err = (q - float(zp)) * float(scale) - points
        error = float(np.sum(err * err) if counts is None else np.sum(counts * err * err))
        if error < best_error:
            best, best_error = (lo, hi), error
    return best
