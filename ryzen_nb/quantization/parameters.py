"""Step 2 of the quantizer: scales and zero points for every tensor of the plan that needs them.

* activations in an integer (or scaled float) format: from the calibration statistics, with the
  method the config names (MinMax, Percentile, Entropy, MinMSE, NonOverflow...), once per group
  of tensors that must share a scale;
* weights and other constants: from their values (per tensor or per channel);
* biases: int32 with scale ``s_input * s_weight`` (they add into the accumulator) or the weight format.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.calibration.methods import QuantParams, get_method, pow2_scale_for_values
from ryzen_nb.calibration.runner import CalibrationResult
from ryzen_nb.calibration.stats import TensorStats
from ryzen_nb.errors import ConfigError
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.quantization.plan import QuantPlan, TensorPlan, scaled, with_format
from ryzen_nb.quantization.settings import Settings

__all__ = ["assign_parameters"]


def assign_parameters(model: onnx.ModelProto, plan: QuantPlan, calibration: CalibrationResult | None,
                      settings: Settings) -> None:
    """Scales and zero points of every tensor in an integer (or scaled float) format."""
    inits = {t.name: t for t in model.graph.initializer}
    stats = calibration.stats if calibration else {}
    group_of = {n: tuple(g) for g in plan.groups for n in g}
    done: set[str] = set()
    for name, t in plan.tensors.items():
        fmt = t.fmt()
        if not scaled(fmt) or t.role != "activation" or name in done:
            continue
        members = group_of.get(name, (name,))
        members = tuple(m for m in members if m in plan.tensors)
        params = _activation_params(members, stats, t, fmt, settings)
        for m in members:
            plan.tensors[m].params = params
            done.add(m)
    for name, t in plan.tensors.items():
        fmt = t.fmt()
        if t.role == "activation" or not scaled(fmt) or t.role == "bias":
            continue
        t.params = _constant_params(numpy_helper.to_array(inits[name]), t, fmt)
    for name, t in plan.tensors.items():
        if t.role == "bias" and scaled(t.fmt()):
            t.params = _bias_params(model, plan, t, numpy_helper.to_array(inits[name]), settings)
    for name, t in plan.duals.items():
        if scaled(t.fmt()):
            t.params = _activation_params((name,), stats, t, t.fmt(), settings)


def _activation_params(members, stats, t: TensorPlan, fmt, settings: Settings) -> QuantParams:
    merged: TensorStats | None = None
    for m in members:
        s = stats.get(m)
        if s is None or s.count == 0:
            continue
        merged = s if merged is None else _merge(merged, s)
    if merged is None:
        raise ConfigError(f"No calibration statistics for tensor {t.name!r}; was it computed for any sample?")
    method = get_method(t.settings.method)
    if method.power_of_two != t.settings.power_of_two:
        method = get_method("MinMSE" if t.settings.power_of_two else "MinMax")
    return method.params(merged, fmt, t.settings.symmetric, **settings.method_options)


def _merge(a, b):
    out = TensorStats(histogram=a.histogram and b.histogram, num_bins=a.num_bins)
    out.min, out.max, out.count = min(a.min, b.min), max(a.max, b.max), a.count + b.count
    if out.histogram:
        out.hist = np.zeros(out.num_bins, np.int64)
        out.threshold = max(a.threshold, b.threshold)
        for s in (a, b):
            h, thr = s.hist, s.threshold
            while thr < out.threshold:  # widen the smaller histogram to the common range
                merged = h.reshape(-1, 2).sum(axis=1)
                q = out.num_bins // 4
                h = np.zeros_like(h)
                h[q : q + merged.size] = merged
                thr *= 2
            out.hist += h
    return out


def _constant_params(values: np.ndarray, t: TensorPlan, fmt) -> QuantParams:
    if isinstance(fmt, IntegerFormat):
        per_channel = t.role == "weight" and t.settings.per_channel and values.ndim >= 1
        if t.settings.power_of_two:
            scale, zp = pow2_scale_for_values(values, fmt, t.settings.method)
            return QuantParams(np.asarray(scale), np.asarray(zp), float(values.min(initial=0)),
                               float(values.max(initial=0)), t.settings.method)
        if per_channel:
            axis = t.axis % values.ndim
            other = tuple(i for i in range(values.ndim) if i != axis)
            lo, hi = values.min(axis=other), values.max(axis=other)
        else:
            lo, hi = values.min(initial=0), values.max(initial=0)
        scale, zp = fmt.scale_from_range(lo, hi, symmetric=t.settings.symmetric)
        return QuantParams(scale, zp, float(np.min(lo)), float(np.max(hi)), "MinMax")
    # scaled float formats (fp8 with a scale): amax onto the format's largest value
    amax = float(np.abs(values).max(initial=0)) or 1.0
    scale = np.float32(amax / fmt.element.max_normal)  # type: ignore[attr-defined]
    return QuantParams(np.asarray(scale), np.asarray(0), -amax, amax, "MinMax")


def _bias_params(model, plan: QuantPlan, t: TensorPlan, values: np.ndarray, settings: Settings) -> QuantParams | None:
    node = model.graph.node[t.bias_of] if t.bias_of is not None else None
    fmt = t.fmt()
    if settings.bias == "int32" and node is not None:
        x = plan.tensors.get(node.input[0])
        w = plan.tensors.get(node.input[1])
        if x and w and x.params is not None and w.params is not None and isinstance(w.fmt(), IntegerFormat):
            scale = (x.params.scale.astype(np.float64) * w.params.scale.astype(np.float64)).astype(np.float32)
            scale = np.maximum(scale, np.finfo(np.float32).tiny)
            t.settings = with_format(t.settings, "int32")
            return QuantParams(scale, np.zeros(scale.shape, np.int64), float(values.min(initial=0)),
                               float(values.max(initial=0)), "input*weight")
    if isinstance(fmt, IntegerFormat):
        if t.settings.power_of_two:
            scale, zp = pow2_scale_for_values(values, fmt, t.settings.method)
            return QuantParams(np.asarray(scale), np.asarray(zp), float(values.min(initial=0)),
                               float(values.max(initial=0)), "MinMSE")
        scale, zp = fmt.scale_from_range(values.min(initial=0), values.max(initial=0), symmetric=True)
        return QuantParams(scale, zp, float(values.min(initial=0)), float(values.max(initial=0)), "MinMax")
    return None


