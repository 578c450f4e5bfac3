"""Cross-layer equalization (Nagel et al. 2019, "Data-Free Quantization", §4.1), as AMD Quark does it.

Per-tensor quantization fails when one output channel of a layer spans a hundred times the range
of another: the small channels round to a handful of levels. Between two layers joined by
positively homogeneous operators (ReLU, LeakyReLU, PReLU, a Pad with zeros, a ReduceMean over the
image: ``f(x / s) = f(x) / s`` for ``s > 0``), output channel ``i`` of the first can be divided by
``s_i`` and input channel ``i`` of the second multiplied by it without changing what the network
computes. Choosing ``s_i = sqrt(r1_i / r2_i)`` — ``r1_i`` the range of the head's output channel,
``r2_i`` of the tail's input channel — gives both the same range ``sqrt(r1_i r2_i)``.

Pairs: Conv (group 1 or depthwise), Gemm and MatMul with constant weights, head -> [those operators]
-> tail, each intermediate tensor read by nothing else. ``Clip(0, 6)`` is not homogeneous; with
``replace_clip6=True`` (Quark's ReplaceClip6Relu) it becomes a ReLU first, which changes the model
wherever activations pass 6.

The rest follows Quark 0.13's ``equalization.py`` (tests/compat/test_cle_vs_quark.py checks the weights
against Quark's own): a head's bias counts in its ranges divided by a shrink factor; a Conv -> Relu ->
depthwise Conv -> Relu -> pointwise Conv is also equalized as one triplet; the groups run in Quark's
order; before them, a stem Conv read only through pools by BatchNormalizations is scaled up into them. Where Quark's CLE does nothing or gets a model wrong, ryzen-nb departs: a Conv without a
``group`` attribute (group 1 by default) is equalized, a MatMul too; a Pad that adds channels or
non-zero values, a ReduceMean over the channels, a grouped Conv that is not depthwise and a weight
that two layers share end the search; Quark's adaptive sweeps (``steps=-1``) stop on the mean change of
every weight, ryzen-nb's on the largest mean change of one group's scales.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["CLEReport", "cross_layer_equalize", "replace_clip6_with_relu"]

HOMOGENEOUS = {"Relu", "LeakyRelu", "PRelu"}
#: the MAC operators CLE rescales (a ConvTranspose's channel layout is not handled)
EQUALIZABLE = MAC_OPS - {"ConvTranspose"}


@dataclass
class CLEReport:
    """What equalization did: the pairs, how many sweeps, and how much the scales moved."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  #: (head node, tail node)
    #: (Conv, depthwise Conv, pointwise Conv) joined by Relus, equalized together (Quark's three-layer step)
    triplets: list[tuple[str, str, str]] = field(default_factory=list)
    sweeps: int = 0
    replaced_clips: list[str] = field(default_factory=list)
    #: the first Conv scaled up before the pairs, and the BatchNormalizations that took its scales back
    #: (Quark 0.13's stem equalization, one entry per span of channels; None and [] when the model has no such
    #: pattern)
    stem: str | None = None
    stem_batchnorms: list[str] = field(default_factory=list)
    #: per pair, then per triplet: max over channels of max(range) / min(range) of the first layer's output
    #: channels, before / after
    spread_before: list[float] = field(default_factory=list)
    spread_after: list[float] = field(default_factory=list)

    def table(self) -> Any:
        import pandas as pd

        groups = [(h, "", t) for h, t in self.pairs] + list(self.triplets)
        return pd.DataFrame({"head": [g[0] for g in groups], "depthwise": [g[1] for g in groups],
                             "tail": [g[2] for g in groups], "channel range spread before": self.spread_before,
                             "after": self.spread_after})

    def __repr__(self) -> str:
        return (f"<CLEReport: {len(self.pairs)} layer pair(s)"
                + (f" and {len(self.triplets)} Conv-depthwise-pointwise triplet(s)" if self.triplets else "")
                + f" equalized in {self.sweeps} sweep(s)"
                + (f", stem {self.stem} scaled into {len(self.stem_batchnorms)} BatchNormalization(s)" if self.stem else "")
                + (f", {len(self.replaced_clips)} Clip(0, 6) -> Relu" if self.replaced_clips else "") + ">")


def replace_clip6_with_relu(model: onnx.ModelProto, exclude: set[str] = frozenset()) -> list[str]:
    """Replace every ``Clip(0, 6)`` (ReLU6) by a ``Relu``, in place; returns the node names."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    replaced = []
    for node in model.graph.node:
        if node.op_type != "Clip" or node.name in exclude:
            continue
        lo = consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else attribute(node, "min")
        hi = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else attribute(node, "max")
        if lo is not None and hi is not None and float(np.ravel(lo)[0]) == 0.0 and float(np.ravel(hi)[0]) == 6.0:
            del node.input[1:]
            del node.attribute[:]
            node.op_type = "Relu"
            replaced.append(node.name)
    return replaced


@dataclass
class _Layer:
    node: onnx.NodeProto
    weight: str
    bias: str | None
    out_axis: int  #: axis of the weight holding output channels
    in_axis: int  #: axis of the weight holding input channels (the depthwise channel axis for depthwise)
    depthwise: bool = False


def _layer(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> _Layer | None:
    if node.op_type not in EQUALIZABLE or len(node.input) < 2 or node.input[1] not in inits:
        return None
    w = inits[node.input[1]]
    bias = node.input[2] if len(node.input) > 2 and node.input[2] in inits else None
    if node.op_type == "Conv":
        group = int(attribute(node, "group", 1))
        if group == 1:
            return _Layer(node, w.name, bias, 0, 1)
        if w.dims[1] == 1 and w.dims[0] == group:  # depthwise: output channel i reads input channel i
            return _Layer(node, w.name, bias, 0, 0, depthwise=True)
        return None
    if len(w.dims) != 2:
        return None
    if node.op_type == "Gemm":
        if attribute(node, "transA", 0) or attribute(node, "alpha", 1.0) != 1.0 or attribute(node, "beta", 1.0) != 1.0:
            return None
        return _Layer(node, w.name, bias, 0, 1) if attribute(node, "transB", 0) else _Layer(node, w.name, bias, 1, 0)
    return _Layer(node, w.name, None, 1, 0)  # MatMul [K, N]


def _channel_scale_passes(node: onnx.NodeProto, rank: int | None, consts: dict[str, np.ndarray]) -> tuple[bool, int | None]:
    """Whether a positive scale per channel passes through ``node`` unchanged (``f(x / s) = f(x) / s``), and
    the rank of its output. ``rank``: its input's, with channels on axis 1 (a Conv's output);
    None where only the activations of :data:`HOMOGENEOUS` are known to pass (a Gemm's or MatMul's output).
    Quark's pairs cross Relu, LeakyRelu, Pad and ReduceMean; ryzen-nb also checks that a Pad adds only
    zeros and no channel, and that a ReduceMean keeps the channels."""
    if node.op_type in HOMOGENEOUS:
        return node.op_type != "PRelu" or (len(node.input) > 1 and node.input[1] in consts), rank
    if rank is None or rank < 2:
        return False, None
    if node.op_type == "Pad":
        pads = consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else attribute(node, "pads")
        value = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else attribute(node, "value", 0.0)
        mode = attribute(node, "mode", "constant")
        if pads is None or value is None or (len(node.input) > 3 and node.input[3]) or mode not in ("constant", b"constant"):
            return False, None
        pads = np.asarray(pads).ravel()
        untouched = len(pads) == 2 * rank and not pads[[0, 1, rank, rank + 1]].any()
        return untouched and not np.any(value), rank
    if node.op_type == "ReduceMean":
        axes = consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else attribute(node, "axes")
        if axes is None or not len(axes := {int(a) % rank for a in np.ravel(axes)}) or axes & {0, 1}:
            return False, None
        return True, rank if attribute(node, "keepdims", 1) else rank - len(axes)
    return False, None


class _Graph:
    """What the search for equalizable layers reads: initializers, each tensor's readers, graph outputs."""

    def __init__(self, model: onnx.ModelProto, exclude: set[str]) -> None:
        self.inits = {t.name: t for t in model.graph.initializer}
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if len(t.dims) <= 1}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in model.graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in model.graph.output}
        self.exclude = exclude

    def layer(self, node: onnx.NodeProto) -> _Layer | None:
        """``node`` as a layer CLE may rescale: equalizable, not excluded, weight and bias its own."""
        found = _layer(node, self.inits)
        if found is None or node.name in self.exclude or len(self.consumers[found.weight]) != 1:
            return None
        return None if found.bias and len(self.consumers[found.bias]) != 1 else found

    def next_layer(self, head: _Layer, through: set[str] | None = None) -> _Layer | None:
        """The layer that alone reads ``head``'s output, across ops a channel scale passes (``through``:
        only these op types), each read by nothing else; None when there is none."""
        t = head.node.output[0]
        rank = len(self.inits[head.weight].dims) if head.node.op_type == "Conv" else None
        while t not in self.outputs and len(users := self.consumers.get(t, [])) == 1:
            user = users[0]
            if user.input[0] != t:
                return None
            if user.op_type in (through if through is not None else HOMOGENEOUS | {"Pad", "ReduceMean"}):
                passes, rank = _channel_scale_passes(user, rank, self.consts)
                if not passes:
                    return None
                t = user.output[0]
                continue
            return self.layer(user)
        return None


def _groups(model: onnx.ModelProto, exclude: set[str]) -> list[tuple[_Layer, ...]]:
    """The layer pairs (head, tail) and Conv -> depthwise -> pointwise triplets to equalize, in Quark's order.

    As Quark (``get_cle_pattern_pair``): each layer heads at most one pair and one triplet; the triplet's
    three Convs are joined by Relus only; groups run in the order of their head in the graph, a head's
    pair before its triplet, and the first group once more at the end (Quark's sort puts it at both ends).
    """
    g = _Graph(model, exclude)
    groups: list[tuple[_Layer, ...]] = []
    for node in model.graph.node:
        head = g.layer(node)
        if head is None:
            continue
        tail = g.next_layer(head)
        if tail is not None:
            groups.append((head, tail))
        if node.op_type == "Conv" and not head.depthwise:
            dw = g.next_layer(head, through={"Relu"})
            pw = g.next_layer(dw, through={"Relu"}) if dw is not None and dw.depthwise else None
            if pw is not None and pw.node.op_type == "Conv" and not pw.depthwise:
                groups.append((head, dw, pw))
    return groups + groups[:1]


def _channel_view(w: np.ndarray, axis: int) -> np.ndarray:
    """``w`` as [channels, everything else] along ``axis``."""
    return np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)


def _range(view: np.ndarray, method: str) -> np.ndarray:
    a = np.abs(view)
    return a.max(axis=1) if method == "max" else a.mean(axis=1)


def cross_layer_equalize(model: onnx.ModelProto, *, steps: int = 1, balance_method: str = "max",
                         weight_threshold: float = 0.5, scale_append_bias: bool = True,
                         scale_use_threshold: bool = True, total_layer_diff_threshold: float = 1.9e-7,
                         replace_clip6: bool = False, stem: bool = True,
                         exclude: list[str] | tuple[str, ...] = ()) -> tuple[onnx.ModelProto, CLEReport]:
    """Equalize the weight ranges of consecutive layers of a float model; returns a copy and a report.

    ``steps``: sweeps over all pairs and triplets (``-1``: until no group's scales move by more than
    ``total_layer_diff_threshold`` on average, at most 100). ``balance_method``: "max" or "avg" of
    ``|w|`` per channel (Quark reads "max" whatever it is given). Channels whose two ranges sum below
    ``weight_threshold`` are left alone when ``scale_use_threshold`` (their quantization is governed by
    other channels anyway). ``scale_append_bias``: the head's bias, shrunk as Quark shrinks it, counts in
    its channel ranges (it is divided too). Triplets use neither the threshold nor the bias, as in Quark.
    ``stem``: first, as Quark 0.13 does with CLE, scale the first Conv's weak output channels up where
    only BatchNormalizations read them (:func:`_equalize_stem`).

    >>> equalized, report = cross_layer_equalize(model)   # doctest: +SKIP
    """
    if balance_method not in ("max", "avg"):
        raise ConfigError(f"CLEBalanceMethod must be 'max' or 'avg'; got {balance_method!r}.")
    if not isinstance(steps, int) or steps == 0 or steps < -1:
        raise ConfigError(f"CLESteps must be a positive number of sweeps or -1 (adaptive); got {steps!r}.")
    m = onnx.ModelProto()
    m.CopyFrom(model)
    report = CLEReport()
    if replace_clip6:
        report.replaced_clips = replace_clip6_with_relu(m, set(exclude))
    if stem:
        report.stem, report.stem_batchnorms = _equalize_stem(m, set(exclude))
    groups = _groups(m, set(exclude))
    distinct = groups[:-1]  # the first group runs twice a sweep, as in Quark
    inits = {t.name: t for t in m.graph.initializer}
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    report.pairs = [(g[0].node.name, g[1].node.name) for g in distinct if len(g) == 2]
    report.triplets = [(g[0].node.name, g[1].node.name, g[2].node.name) for g in distinct if len(g) == 3]
    ordered = [g for g in distinct if len(g) == 2] + [g for g in distinct if len(g) == 3]  # the report's order
    report.spread_before = [_spread(_range(_channel_view(values[g[0].weight], g[0].out_axis), "max")) for g in ordered]
    sweeps = steps if steps > 0 else 100
    for sweep in range(sweeps):
        moved = 0.0
        for group in groups:
            if len(group) == 2:
                scales = [_equalize_pair(values, *group, balance_method=balance_method, weight_threshold=weight_threshold,
                                         scale_append_bias=scale_append_bias, scale_use_threshold=scale_use_threshold)]
            else:
                scales = _equalize_triplet(values, *group)
            moved = max([moved] + [float(np.abs(s - 1.0).mean()) for s in scales if s.size])
        report.sweeps = sweep + 1
        if steps < 0 and moved < total_layer_diff_threshold:
            break
    touched = {name for g in groups for layer in g for name in (layer.weight, layer.bias) if name}
    for name in touched:
        if inits[name].data_type == onnx.TensorProto.FLOAT:
            inits[name].CopyFrom(numpy_helper.from_array(values[name].astype(np.float32), name))
    report.spread_after = [_spread(_range(_channel_view(values[g[0].weight], g[0].out_axis), "max")) for g in ordered]
    return m, report


#: operators a positive per-channel scale passes on the way from the stem to a BatchNormalization (Quark's
#: _STEM_HOMOGENEOUS_OPS; Pad with zeros and Concat along the channels too)
_STEM_PASS = {"Relu", "MaxPool", "AveragePool", "GlobalAveragePool", "Identity"}
_STEM_LIMIT = 16.0  #: the largest factor a stem channel is scaled up by (Quark's _CLAMP)
_STEM_LIVE = 1e-6  #: channels whose largest weight is below this are left alone (Quark's _LIVE_EPS)


def _equalize_stem(m: onnx.ModelProto, exclude: set[str]) -> tuple[str | None, list[str]]:
    """Quark 0.13's stem equalization (``stem_equalize_transforms``), in place: the first Conv (group 1)
    fed by a graph input, when every path from its output reaches BatchNormalizations through
    :data:`_STEM_PASS`, zero Pads and Concats along the channels, has each output channel scaled up by
    ``clip(largest / its own largest weight, 1, 16)`` (its bias too), and each BatchNormalization takes the
    scale back (``gamma / s``, ``mean * s``) over the channels the stem's output lands on. The float
    model computes the same; the stem's weak channels get more of its per-tensor grid. Pair CLE cannot
    do this: a BatchNormalization is not a layer it pairs. Returns the stem's and the BatchNormalizations'
    names, or (None, []) when the pattern is not there (any other reader, an unknown Concat offset)."""
    g = _Graph(m, exclude)
    inits, consumers = g.inits, g.consumers
    inputs = {i.name for i in m.graph.input} - set(inits)
    stem = next((n for n in m.graph.node if n.op_type == "Conv" and n.name not in exclude and int(attribute(n, "group", 1)) == 1
                 and any(x in inputs for x in n.input) and len(n.input) > 1 and n.input[1] in inits), None)
    if stem is None:
        return None, []

    def own(names: list[str]) -> bool:  # float32 constants only this node reads (Quark does not check)
        return all(n in inits and inits[n].data_type == onnx.TensorProto.FLOAT and len(consumers[n]) == 1 for n in names)

    if not own([x for x in stem.input[1:3] if x]):
        return None, []
    shapes = ModelIndex(m, infer=False).static_shapes  # the declared ones, as Quark reads (a prepared model has them)
    cout = int(inits[stem.input[1]].dims[0])
    found: dict[tuple[int, int], onnx.NodeProto] = {}  # (id of the BatchNormalization, channel offset)
    queue, seen = [(stem.output[0], 0)], set()
    while queue:
        tensor, offset = queue.pop(0)
        if tensor in g.outputs:  # the model's own output would change (Quark does not check)
            return None, []
        for node in consumers.get(tensor, []):
            if (id(node), tensor, offset) in seen:
                continue
            seen.add((id(node), tensor, offset))
            if node.op_type == "BatchNormalization":
                gamma = inits.get(node.input[1])
                if gamma is None or not own([node.input[1], node.input[3]]) or len(node.input) < 5 or \
                        node.input[4] not in inits or attribute(node, "training_mode", 0) or gamma.dims[0] < offset + cout:
                    return None, []
                found[(id(node), offset)] = node
                continue
            delta = 0
            if node.op_type == "Pad":
                passes, _ = _channel_scale_passes(node, len(shapes.get(tensor, [])) or None, g.consts)
                if not passes:
                    return None, []
            elif node.op_type == "Concat":
                before = node.input[:list(node.input).index(tensor)]
                if attribute(node, "axis", 1) != 1 or any(x not in shapes for x in before):
                    return None, []
                delta = sum(shapes[x][1] for x in before)
            elif node.op_type not in _STEM_PASS or node.input[0] != tensor:
                return None, []
            queue.extend((out, offset + delta) for out in node.output)
    if not found:
        return None, []
    w = numpy_helper.to_array(inits[stem.input[1]]).astype(np.float32)
    absmax = np.abs(w).reshape(cout, -1).max(axis=1)
    live = absmax > _STEM_LIVE
    if not live.any():
        return None, []
    scale = np.ones(cout, np.float32)
    scale[live] = np.clip(absmax[live].max() / absmax[live], 1.0, _STEM_LIMIT)
    _replace(inits[stem.input[1]], w * scale.reshape(-1, *[1] * (w.ndim - 1)))
    if len(stem.input) > 2 and stem.input[2] in inits:
        _replace(inits[stem.input[2]], numpy_helper.to_array(inits[stem.input[2]]).astype(np.float32) * scale)
    for (_, offset), bn in found.items():
        span = slice(offset, offset + cout)
        for name, apply in ((bn.input[1], np.divide), (bn.input[3], np.multiply)):  # gamma / s, mean * s
            v = numpy_helper.to_array(inits[name]).astype(np.float32).copy()
            v[span] = apply(v[span], scale)
            _replace(inits[name], v)
    return stem.name, [bn.name for bn in found.values()]


def _replace(tensor: onnx.TensorProto, value: np.ndarray) -> None:
    tensor.CopyFrom(numpy_helper.from_array(value.astype(np.float32), tensor.name))


def _equalize_pair(values: dict[str, np.ndarray], head: _Layer, tail: _Layer, *, balance_method: str,
                   weight_threshold: float, scale_append_bias: bool, scale_use_threshold: bool) -> np.ndarray:
    """Scale ``head``'s output channels by ``s = sqrt(r1 / r0)`` and ``tail``'s input channels by ``1 / s``
    (``r0``, ``r1``: their ranges), in ``values``; returns ``s``."""
    hw = _channel_view(values[head.weight], head.out_axis)
    if scale_append_bias and head.bias is not None:
        hw = _with_shrunk_bias(hw, values[head.bias])
    tw = _channel_view(values[tail.weight], tail.in_axis)
    r0, r1 = _range(hw, balance_method), _range(tw, balance_method)
    geo = np.sqrt(r0 * r1)
    scale = np.where(geo != 0, r1 / np.where(geo != 0, geo, 1.0), 1.0)  # = sqrt(r1 / r0)
    if scale_use_threshold:
        scale = np.where(np.abs(hw).max(axis=1) + np.abs(tw).max(axis=1) < weight_threshold, 1.0, scale)
    _scale_axis(values, head.weight, head.out_axis, scale)
    if head.bias is not None:
        values[head.bias] = values[head.bias] * scale.reshape(values[head.bias].shape)
    _scale_axis(values, tail.weight, tail.in_axis, 1.0 / scale)
    return scale


def _equalize_triplet(values: dict[str, np.ndarray], conv: _Layer, depthwise: _Layer, pointwise: _Layer) -> list[np.ndarray]:
    """Quark's three-layer step (``_cle_set_with_depthwise_layers``): with ``m0``, ``m1``, ``m2`` the
    largest weight per channel of the Conv's outputs, the depthwise Conv and the pointwise Conv's inputs,
    and ``c`` their geometric mean, each becomes ``c``: the Conv is divided by ``s12 = m0 / c``, the
    depthwise multiplied by ``s12 / s23`` with ``s23 = c / m2``, the pointwise by ``s23``. Biases are not
    counted in the ranges; a zero range leaves its channel alone. Returns ``[s12, s23]``."""
    m0 = np.abs(_channel_view(values[conv.weight], conv.out_axis)).max(axis=1)
    m1 = np.abs(_channel_view(values[depthwise.weight], depthwise.out_axis)).max(axis=1)
    m2 = np.abs(_channel_view(values[pointwise.weight], pointwise.in_axis)).max(axis=1)
    c = np.cbrt(m0 * m1 * m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        s12, s23 = m0 / c, c / m2
    s12, s23 = (np.where(np.isfinite(s) & (s != 0), s, 1.0) for s in (s12, s23))
    _scale_axis(values, conv.weight, conv.out_axis, 1.0 / s12)
    _scale_axis(values, depthwise.weight, depthwise.out_axis, s12 / s23)
    _scale_axis(values, pointwise.weight, pointwise.in_axis, s23)
    for layer, s in ((conv, s12), (depthwise, s23)):
        if layer.bias is not None:
            values[layer.bias] = values[layer.bias] / s.reshape(values[layer.bias].shape)
    return [s12, s23]


def _with_shrunk_bias(w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The head's [channels, k] weights with its bias as one more column, divided by Quark's shrink
    factor (``_combine_weight_and_bias`` in Quark's equalization.py), so that the channel ranges CLE
    balances are Quark's. A bias is often tens of times a weight; counted whole it would set every
    range, so it is shrunk by 2 to 20, more the larger the bias is against the weights (per element,
    ``|b_i| / |w_ij|``: its median and mean pick the factor). A channel whose weights are all zero
    counts with a zero bias; zero weights count as the channel's smallest non-zero magnitude, and
    nothing counts as less than 1e-7."""
    b = bias.reshape(-1, 1)
    dead = ~(w != 0).any(axis=1, keepdims=True)
    b = np.where(dead, 0.0, b)
    a = np.abs(w)
    smallest = np.where(a > 0, a, np.inf).min(axis=1, keepdims=True)
    a = np.where(dead, 1e-7, np.where(a == 0, smallest, a))
    a = np.maximum(a, 1e-7)
    factor = np.abs(b) / a
    median, mean = float(np.median(factor)), float(factor.mean())
    b_max = float(np.abs(bias).max())
    if b_max < 10 and b_max / float(a.max()) < 20:
        shrink = 5 if median > 100 or mean > 1000 else 2
    else:
        shrink = 20 if median > 30 or mean > 500 else 10 if median > 15 or mean > 100 else 5
    return np.concatenate([w, b / shrink], axis=1)


def _scale_axis(values: dict[str, np.ndarray], name: str, axis: int, scale: np.ndarray) -> None:
    shape = [1] * values[name].ndim
    shape[axis] = -1
    values[name] = values[name] * scale.reshape(shape)


def _spread(r: np.ndarray) -> float:
    nz = r[r > 0]
    return float(nz.max() / nz.min()) if nz.size else 1.0
