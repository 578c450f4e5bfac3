"""Step 2 of the quantizer: scales and zero points for every tensor of the plan that needs them.

* activations in an integer (or scaled float) format: from the calibration statistics, with the
  method the config names (MinMax, Percentile, Entropy, MinMSE, NonOverflow...), once per group
  of tensors that must share a scale;
* weights and other constants: from their values (per tensor or per channel);
* biases: int32 with scale ``s_input * s_weight`` (they add into the accumulator) or the weight format.

Two rules hold by construction:

* a group of tensors sharing one scale (Concat inputs and output, data movement) gets the scale
  that covers every member's own calibrated range — each member's range is computed with the
  config's method, and the group takes the widest: a Concat of box coordinates (0-320) with
  scores (0-1) never clamps the boxes to the scores' range;
* a divisor never rounds to zero: an epsilon added to a non-negative tensor on its way to a
  reciprocal or a division (a normalization's ``1 / sqrt(variance + eps)``) that the sum's scale
  would round away is raised to one step of that scale (:func:`guard_divisors`);
* an int32 bias never saturates: where ``bias / (s_input * s_weight)`` would leave int32 (tiny
  weight scales: a dead channel, int16 weights), the weight scale of that layer is raised until it
  fits — the remedy the hardware flow allows, since the bias scale is fixed by the accumulator —
  and the layers are named in a warning.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.calibration.methods import QuantParams, get_method, minmse_float_range, pow2_scale_for_values
from ryzen_nb.calibration.runner import CalibrationResult
from ryzen_nb.errors import ConfigError, ModelError
from ryzen_nb.formats import ScaleKind
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.metrics import l2
from ryzen_nb.quantization.plan import QuantPlan, TensorPlan, scaled, sharing_groups, with_format
from ryzen_nb.quantization.settings import Settings
from ryzen_nb.spec.dpu import SHIFT_LIMITS

__all__ = ["assign_parameters", "check_finite_constants", "guard_divisors", "INT32_BIAS_LIMIT"]

log = logging.getLogger(__name__)

#: the largest int32 bias code allowed, with headroom below 2**31 - 1 for rounding and for the
#: accumulator the bias starts (an NPU adds products onto it)
INT32_BIAS_LIMIT = 2**31 - 2**16


def assign_parameters(model: onnx.ModelProto, plan: QuantPlan, calibration: CalibrationResult | None,
                      settings: Settings) -> None:
    """Scales and zero points of every tensor in an integer (or scaled float) format."""
    inits = {t.name: t for t in model.graph.initializer}
    stats = calibration.stats if calibration else {}
    _release_drowned_concat_outputs(model, plan, stats, settings)
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
    biases = {name: numpy_helper.to_array(inits[name]) for name, t in plan.tensors.items()
              if t.role == "bias" and scaled(t.fmt())}
    _fit_int32_biases(model, plan, biases, settings)  # first: a weight scale may change for several biases
    for name, values in biases.items():
        plan.tensors[name].params = _bias_params(model, plan, plan.tensors[name], values, settings)
    for name, t in plan.duals.items():
        if scaled(t.fmt()):
            t.params = _activation_params((name,), stats, t, t.fmt(), settings)


def _activation_params(members, stats, t: TensorPlan, fmt, settings: Settings) -> QuantParams:
    """Parameters for ``members`` (one tensor, or a group sharing a scale) that cover each member's
    own range: every member's range comes from the method on its own statistics, and the group
    takes the widest (merged statistics would let a large, narrow member — scores in 0..1 — decide
    the scale of a small, wide one — box coordinates in 0..320 — and clamp it)."""
    method = get_method(t.settings.method)
    if method.power_of_two != t.settings.power_of_two:
        method = get_method("MinMSE" if t.settings.power_of_two else "MinMax")
    own = [method.params(stats[m], fmt, t.settings.symmetric, **settings.method_options)
           for m in members if stats.get(m) is not None and stats[m].count > 0]
    if not own:
        raise ConfigError(f"No calibration statistics for tensor {t.name!r}; was it computed for any sample?")
    if len(own) == 1:
        return own[0]
    lo, hi = min(p.rmin for p in own), max(p.rmax for p in own)
    if t.settings.symmetric or method.power_of_two:  # the zero point is the format's: the widest scale covers all
        widest = max(own, key=lambda p: float(np.max(p.scale)))
        return replace(widest, rmin=lo, rmax=hi)
    scale, zp = fmt.scale_from_range(lo, hi, symmetric=False)
    return QuantParams(scale, zp, lo, hi, method.name)


#: a member of a shared scale whose own range spans fewer codes than this has lost its information
#: (scores in 0..1 concatenated with box coordinates in 0..320 at 8 bits span under one code; fewer than
#: 8 codes is 3 bits of the 8 left)
MIN_SHARED_CODES = 8


def _release_drowned_concat_outputs(model: onnx.ModelProto, plan: QuantPlan, stats: dict, settings: Settings) -> None:
    """A Concat whose inputs' ranges differ so much that the shared scale (the widest, so nothing
    clamps) leaves one of them a handful of codes would return wrong numbers that look fine by
    cosine — the boxes dominate it — while every score reads 0. A detection head's output Concat
    (a graph output) is left in float instead: its inputs keep their own scales, the Concat joins
    their dequantized values. Elsewhere the Concat is named in a warning with the fix."""
    index = ModelIndex(model, infer=False)
    released = []
    for i in plan.nodes:
        node = index.nodes[i]
        out = node.output[0] if node.output else ""
        if node.op_type != "Concat" or out not in plan.tensors or not scaled(plan.tensors[out].fmt()):
            continue
        group = next((g for g in plan.groups if out in g), None)
        if group is None:
            continue
        t = plan.tensors[out]
        own = {m: _activation_params((m,), stats, t, t.fmt(), settings) for m in group
               if m in plan.tensors and stats.get(m) is not None and stats[m].count > 0}
        if len(own) < 2:
            continue
        shared = max(float(np.max(p.scale)) for p in own.values())
        codes = {m: (p.rmax - p.rmin) / shared for m, p in own.items() if p.rmax > p.rmin}
        drowned = sorted((m for m, c in codes.items() if c < MIN_SHARED_CODES), key=codes.get)
        if not drowned:
            continue
        widest = max(own, key=lambda m: own[m].rmax - own[m].rmin)
        detail = (f"Concat {node.name or out!r}: one shared scale for its inputs would leave {drowned[0]!r} "
                  f"(range {own[drowned[0]].rmin:.4g}..{own[drowned[0]].rmax:.4g}) {codes[drowned[0]]:.1f} code(s) "
                  f"next to {widest!r} (range {own[widest].rmin:.4g}..{own[widest].rmax:.4g})")
        if out in index.graph_outputs:
            del plan.tensors[out]
            released.append(out)
            plan.notes.append(f"{detail}: the Concat (a graph output) stays float and its inputs keep their own "
                              "scales")
        else:
            message = (f"{detail}: its values will be wrong. Keep it in float (nodes_to_exclude="
                       f"[{node.name or out!r}]) or use 16-bit activations (A16W8).")
            log.warning("%s", message)
            plan.notes.append(message)
    if released:
        plan.groups = sharing_groups(index, plan, settings)


#: a Concat input whose values come out of a block shared with another input with this relative error
#: (RMS error over RMS value), where its own blocks keep them, has lost them: scores 0..1 in one BFP16
#: block with box coordinates 0..320 read 0 (error 1.0); an input merely rounded stays near its own error
DROWNED_BLOCK_ERROR = 0.1


def release_drowned_block_concats(model: onnx.ModelProto, plan: QuantPlan,
                                  references: list[dict[str, np.ndarray]]) -> None:
    """The block-format counterpart of the shared-scale rule above, for a Concat that is a graph output
    (the FP32 outputs recorded in preparation, ``references``, show its values): where the join of two
    inputs falls inside a block, the block's shared exponent follows the larger input, and a much smaller
    one rounds to nothing (YOLOv8's 4 box rows beside its class scores: BFP16 read every score as 0 and
    lost a quarter of the detections at a cosine of 0.9999). Such a Concat stays float; its inputs keep
    their own quantizers."""
    if not references:
        return
    index = ModelIndex(model, infer=False)
    for i in plan.nodes:
        node = index.nodes[i]
        out = node.output[0] if node.output else ""
        t = plan.tensors.get(out)
        if (node.op_type != "Concat" or t is None or out not in index.graph_outputs or t.role != "activation"
                or t.fmt().info.scale_kind is not ScaleKind.SHARED_EXPONENT
                or not all(out in r for r in references)):
            continue
        rank = np.ndim(references[0][out])
        axis = int(next((a.i for a in node.attribute if a.name == "axis"), 0)) % max(rank, 1)
        sizes = [(index.shapes.get(n) or [None] * rank)[axis] if rank else None for n in node.input]
        block = t.fmt().info.block_size or 1
        if t.axis is None or int(t.axis) % max(rank, 1) != axis or any(not isinstance(n, int) for n in sizes):
            continue
        if all(int(np.sum(sizes[:k])) % block == 0 for k in range(1, len(sizes))):
            continue  # every join falls between blocks: each block holds one input's values
        lost = _drowned_parts(t.fmt(), [r[out] for r in references], axis, sizes)
        if lost:
            position, error = lost[0]
            del plan.tensors[out]
            plan.notes.append(
                f"Concat {node.name or out!r} (a graph output) stays float: in {t.format} blocks along axis {axis} "
                f"its input {node.input[position]!r} would share exponents with a larger one and come out "
                f"{error:.0%} wrong (RMS); its inputs keep their own quantizers")


def _drowned_parts(fmt, values: list[np.ndarray], axis: int, sizes: list[int]) -> list[tuple[int, float]]:
    """(input position, relative error) of each part of a Concat's outputs ``values`` that the block
    format loses when joined, and keeps (within a quarter of that loss) when quantized alone."""
    ends = np.cumsum(sizes)
    joined = [fmt.quantize_dequantize(v, axis=axis) for v in values]

    def part(arrays: list[np.ndarray], start: int, end: int) -> np.ndarray:  # one input's share, every sample
        return np.concatenate([np.take(a, range(start, end), axis=axis).ravel() for a in arrays]).astype(np.float64)

    lost = []
    for k, (start, end) in enumerate(zip(np.r_[0, ends[:-1]], ends)):
        exact = part(values, start, end)
        norm = np.linalg.norm(exact)
        if norm == 0 or not np.isfinite(norm):
            continue
        error = l2(exact, part(joined, start, end)) / norm
        own = [fmt.quantize_dequantize(np.take(v, range(start, end), axis=axis), axis=axis) for v in values]
        alone = l2(exact, np.concatenate([o.ravel() for o in own])) / norm
        if error > DROWNED_BLOCK_ERROR and alone < error / 4:
            lost.append((k, float(error)))
    return sorted(lost, key=lambda e: -e[1])


def check_finite_constants(model: onnx.ModelProto, plan: QuantPlan) -> None:
    """NaN in a constant the plan quantizes, or Inf where a scale or a shared exponent would take
    it in, is an error naming the tensor (its quantized values would all be garbage). Run before
    calibration, which would otherwise stop on the NaN activations the weight causes."""
    inits = {t.name: t for t in model.graph.initializer}
    for name, t in plan.tensors.items():
        if t.role == "activation" or name not in inits:
            continue
        values = numpy_helper.to_array(inits[name])
        if values.dtype.kind != "f":
            continue
        nan, inf = int(np.isnan(values).sum()), int(np.isinf(values).sum())
        fmt = t.fmt()
        inf_breaks = fmt.info.scale_kind is not ScaleKind.NONE or fmt.info.family != "float"
        if nan or (inf and inf_breaks):
            what = " and ".join(x for x in (f"{nan} NaN" if nan else "", f"{inf} Inf" if inf else "") if x)
            raise ModelError(
                f"The model's {t.role} {name!r} holds {what} value(s) (of {values.size}); quantized to {t.format} "
                "it would turn every value of the layer into garbage. Fix the exported weights (a diverged "
                "training, an overflow in export), or keep the nodes reading it in float (nodes_to_exclude)."
            )


def _fit_int32_biases(model, plan: QuantPlan, biases: dict[str, np.ndarray], settings: Settings) -> None:
    """Raise the weight scale of every layer whose int32 bias would saturate (see the module
    docstring); a warning names the layers."""
    if settings.bias != "int32":
        return
    raised: list[str] = []
    for name, values in biases.items():
        pair = _bias_inputs(model, plan, plan.tensors[name])
        if pair is None:
            continue
        x, w, node = pair
        sx = float(np.max(x.params.scale))
        sw = np.asarray(w.params.scale, np.float64)
        need = np.abs(values.astype(np.float64)).reshape(sw.shape if sw.ndim else -1) / (sx * INT32_BIAS_LIMIT)
        need = need if sw.ndim else np.max(need, initial=0.0)
        if not np.any(need > sw):
            continue
        new = np.maximum(sw, need)
        if w.settings.power_of_two:  # keep powers of two (round up: never below what the bias needs)
            new = 2.0 ** np.ceil(np.log2(np.maximum(new, np.finfo(np.float32).tiny)))
        w.params = replace(w.params, scale=np.asarray(new, np.float32).reshape(np.shape(w.params.scale)))
        raised.append(node.name or node.output[0])
    if raised:
        message = (f"int32 bias would saturate in {len(raised)} layer(s) ({', '.join(raised[:5])}"
                   f"{', ...' if len(raised) > 5 else ''}): bias scale = input scale x weight scale was too small for "
                   "the bias, so their weight scales were raised until the bias fits (coarser weights for those "
                   "layers; per-channel weights or A16W8 inputs may help)")
        log.warning(message)
        plan.notes.append(message)


def _bias_inputs(model, plan: QuantPlan, t: TensorPlan):
    """(input plan, weight plan, node) of the layer whose int32 bias ``t`` is, when both have parameters."""
    node = model.graph.node[t.bias_of] if t.bias_of is not None else None
    if node is None:
        return None
    x = plan.tensors.get(node.input[0])
    w = plan.tensors.get(node.input[1])
    if x and w and x.params is not None and w.params is not None and isinstance(w.fmt(), IntegerFormat):
        return x, w, node
    return None


def _constant_params(values: np.ndarray, t: TensorPlan, fmt) -> QuantParams:
    if isinstance(fmt, IntegerFormat):
        per_channel = t.role == "weight" and t.settings.per_channel and values.ndim >= 1
        if t.settings.power_of_two:
            scale, zp = pow2_scale_for_values(values, fmt, t.settings.method)
            return QuantParams(np.asarray(scale), np.asarray(zp), float(values.min(initial=0)),
                               float(values.max(initial=0)), t.settings.method)
        minmse = t.role == "weight" and t.settings.method == "MinMSE"  # float-scale MinMSE (WeightCalibrateMethod)
        if per_channel:
            axis = t.axis % values.ndim
            channels = np.moveaxis(values, axis, 0).reshape(values.shape[axis], -1)
            if minmse:
                lo, hi = np.array([minmse_float_range(c, fmt, t.settings.symmetric, t.settings.minmse_mode)
                                   for c in channels]).T
            else:
                lo, hi = channels.min(axis=1), channels.max(axis=1)
        elif minmse:
            lo, hi = minmse_float_range(values, fmt, t.settings.symmetric, t.settings.minmse_mode)
        else:
            lo, hi = values.min(initial=0), values.max(initial=0)
        scale, zp = fmt.scale_from_range(lo, hi, symmetric=t.settings.symmetric)
        return QuantParams(scale, zp, float(np.min(lo)), float(np.max(hi)), "MinMSE" if minmse else "MinMax")
    # scaled float formats (fp8 with a scale): amax onto the format's largest value
    amax = float(np.abs(values).max(initial=0)) or 1.0
    scale = np.float32(amax / fmt.element.max_normal)  # type: ignore[attr-defined]
    return QuantParams(np.asarray(scale), np.asarray(0), -amax, amax, "MinMax")


def _bias_params(model, plan: QuantPlan, t: TensorPlan, values: np.ndarray, settings: Settings) -> QuantParams | None:
    fmt = t.fmt()
    if settings.bias == "int32":
        pair = _bias_inputs(model, plan, t)
        if pair is not None:
            x, w, _ = pair
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


#: operators that pass a tensor on unchanged in value or monotonically on the way to a divisor
_TO_DIVISOR = frozenset({"Sqrt", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Identity", "Transpose"})


def _reaches_divisor(name: str, nodes, consumers: dict[str, list[int]], inits: dict[str, onnx.TensorProto]) -> str | None:
    """The op type that divides by ``name`` (directly or through a square root and data movement):
    a Reciprocal, a Div's divisor or a Pow with a negative exponent; None if nothing does."""
    seen, stack = set(), [name]
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        for c in consumers.get(tensor, []):
            node = nodes[c]
            if node.op_type == "Reciprocal" or (node.op_type == "Div" and node.input[1] == tensor):
                return node.op_type
            if node.op_type == "Pow" and node.input[0] == tensor and node.input[1] in inits \
                    and float(np.max(numpy_helper.to_array(inits[node.input[1]]))) < 0:
                return node.op_type
            if node.op_type in _TO_DIVISOR and node.input[0] == tensor:
                stack.append(node.output[0])
    return None


def guard_divisors(model: onnx.ModelProto, plan: QuantPlan, settings: Settings) -> list[str]:
    """Raise an epsilon that rounding would lose on its way to a divisor; returns notes.

    ``Add(x, eps)`` with ``x >= 0`` (a variance, a mean square) and a small positive constant ``eps``,
    whose sum reaches a Reciprocal, a Div's divisor or a negative Pow (through Sqrt), is how exported
    normalizations guard ``1 / sqrt(var + eps)``. At 8 bits the sum's step is often far above
    ``eps`` (magika's first LayerNorm: variances up to 157, step 1 or 2, eps 0.001; XINT8's shift-read
    rule also moves eps to at most 7 positions finer than ``x``, where it rounds to 0): every variance
    under half a step quantizes to 0 and the divisor to 0, giving ``inf`` (saturated to the largest
    code) where the float model divides by ``sqrt(eps)``. The epsilon is then raised to one step of the
    sum, the smallest value that survives its rounding, so the quantized divisor is never 0. Rows whose
    variance is below that step get ``1 / sqrt(step)`` instead of a saturated value; the others keep
    their quantized variance plus one step. (Quark 0.13's XINT8 gets the same effect by accident: its
    shift-read refinement moves the epsilon's position from 16 to 7 but keeps the integer code, 66,
    so eps becomes 66/128.)
    """
    graph = model.graph
    nodes = list(graph.node)
    inits = {t.name: t for t in graph.initializer}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for n in node.input:
            consumers.setdefault(n, []).append(i)
    notes: list[str] = []
    for i in plan.nodes:
        node = nodes[i]
        if node.op_type != "Add" or len(node.input) != 2:
            continue
        consts = [n for n in node.input if n in inits]
        acts = [n for n in node.input if n not in inits]
        if len(consts) != 1 or len(acts) != 1:
            continue
        c, x, y = consts[0], acts[0], node.output[0]
        tc, tx, ty = plan.tensors.get(c), plan.tensors.get(x), plan.tensors.get(y)
        if tc is None or tx is None or ty is None or None in (tc.params, tx.params, ty.params):
            continue
        fmt_c, fmt_y = tc.fmt(), ty.fmt()
        if not isinstance(fmt_c, IntegerFormat) or not isinstance(fmt_y, IntegerFormat) \
                or np.ndim(tc.params.scale) or np.ndim(ty.params.scale):
            continue
        if c in plan.constant_values or any(j != i for j in consumers.get(c, [])):
            continue  # a constant other nodes read too keeps its value
        values = numpy_helper.to_array(inits[c])
        if values.size == 0 or not np.all(values == values.flat[0]) or not float(values.flat[0]) > 0 or tx.params.rmin < 0:
            continue
        divisor = _reaches_divisor(y, nodes, consumers, inits)
        if divisor is None:
            continue
        step = float(ty.params.scale)
        kw = {"scale": tc.params.scale, "zero_point": tc.params.zero_point, "rounding": tc.settings.rounding}
        eps_q = float(np.max(fmt_c.quantize_dequantize(values.astype(np.float32), **kw)))
        if eps_q > step / 2:
            continue  # a zero x plus eps already rounds to one step or more
        raised = np.full_like(values, step, dtype=values.dtype)
        params = _constant_params(raised, tc, fmt_c)
        if settings.npu_legality and tc.settings.power_of_two and not np.ndim(tx.params.scale):
            # keep the Add's shift_read (docs/npu-numerics.md#xint8-shift-limits): eps at most 7 positions from x
            pc, px = -np.log2(float(params.scale)), -np.log2(float(tx.params.scale))
            pc = int(np.clip(round(pc), round(px) - SHIFT_LIMITS.shift_read_max, round(px) + SHIFT_LIMITS.shift_read_max))
            params = replace(params, scale=np.asarray(np.float32(2.0**-pc)))
        tc.params = params
        plan.constant_values[c] = raised
        new = float(np.max(fmt_c.quantize_dequantize(raised.astype(np.float32), scale=params.scale,
                                                       zero_point=params.zero_point, rounding=tc.settings.rounding)))
        notes.append(f"divisor guard: {c!r} ({float(values.flat[0]):.3g}), added to {x!r} before a {divisor}, "
                     f"would round away at the sum's step {step:.3g} (the quantized divisor reaching 0 for every "
                     f"value under {step / 2:.3g}); raised to {new:.3g}")
    return notes
