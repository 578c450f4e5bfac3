"""What layer-wise algorithms (AdaRound, AdaQuant, bias correction) share: the target layers, their
weight quantizers, and two onnxruntime sessions to read activations from.

* the float model (the prepared model as calibrated) gives each layer's float input and output;
* the quantized model gives each layer's input as the quantized network delivers it. Its target
  weights and biases are graph *inputs*, fed with their current fake-quantized values, so one
  session serves while the algorithm changes them layer after layer. The layers are visited in
  graph order, so it runs segment by segment (:class:`~ryzen_nb.graph.segments.SegmentedRunner`):
  each layer's data costs the nodes since the last layer, not the whole network.

Memory: the quantized network's activations are read layer by layer — ``samples x (input +
output)`` of one layer, plus the values live at the last cut (at most
:data:`~ryzen_nb.graph.segments.LIVE_BUDGET_BYTES`; a cut holding more is not kept, and the next
layer's read starts from the network's inputs). The float network does not change, so its outputs at
every target layer are read in one pass when they fit in :data:`FLOAT_CACHE_BYTES` (small models,
where the passes cost most), else layer by layer, segment by segment like the quantized network's
(its cut's values count against a budget of their own).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.algorithms.layers import Activation, Layer, activation_after, layer_for
from ryzen_nb.calibration.methods import constant_code_range
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.batching import SampleRunner
from ryzen_nb.graph.prepare import prune_unused
from ryzen_nb.graph.segments import NotSegmentable, SegmentedRunner
from ryzen_nb.quantization.emit import lowering_args
from ryzen_nb.quantization.run import QuantizationRun

__all__ = ["Target", "LayerRig", "WeightQuantizer"]

log = logging.getLogger(__name__)

#: the float network's target-layer tensors over all samples are kept when they take at most this
FLOAT_CACHE_BYTES = 256 * 2**20


class WeightQuantizer:
    """Fake quantization of one constant (weight or bias) exactly as the emitted model stores it."""

    def __init__(self, plan_tensor: Any, shape: tuple[int, ...]) -> None:
        self.t = plan_tensor
        self.fmt = plan_tensor.fmt()
        self.integer = isinstance(self.fmt, IntegerFormat) and plan_tensor.params is not None
        if self.integer:
            p = plan_tensor.params
            scale = np.asarray(p.scale, np.float64)
            zp = np.asarray(p.zero_point, np.float64)
            bshape = [1] * len(shape)
            if scale.ndim and scale.size > 1:
                bshape[plan_tensor.axis % len(shape)] = -1
            self.scale = scale.reshape(bshape) if scale.ndim else scale
            self.zp = zp.reshape(bshape) if zp.ndim and zp.size > 1 else zp.reshape(())
            lo, hi = constant_code_range(self.fmt, plan_tensor.settings.symmetric)  # the codes emit stores
            self.qmin, self.qmax = float(lo), float(hi)
            self.narrow = (lo, hi) != (self.fmt.qmin, self.fmt.qmax)

    def __call__(self, w: np.ndarray) -> np.ndarray:
        """The values the quantized model computes with."""
        kw = lowering_args(self.t, self.fmt)  # the arguments the written quantizer gets
        if self.t.params is None and self.fmt.info.axis_role == "block" and w.ndim <= 1:
            kw["axis"] = 0  # a bias: one axis to block along
        out = np.asarray(self.fmt.quantize_dequantize(w.astype(np.float32), **kw), np.float64)
        if self.integer and self.narrow:  # emit.constant_codes: the codes stay in [qmin, qmax]
            out = np.clip(out, (self.qmin - self.zp) * self.scale, (self.qmax - self.zp) * self.scale)
        return out

    def in_range(self, w: np.ndarray) -> np.ndarray:
        """Where the straight-through gradient passes: inside the integer range (everywhere for
        formats without one)."""
        if not self.integer:
            return np.ones(w.shape, bool)
        q = np.rint(w / self.scale) + self.zp
        return (q >= self.qmin) & (q <= self.qmax)


@dataclass
class Target:
    """One layer the algorithm works on."""

    node: onnx.NodeProto
    layer: Layer
    weight: str  #: initializer name in the prepared model
    bias: str | None
    wq: WeightQuantizer
    bq: WeightQuantizer | None  #: None: the bias stays float
    feed_w: str  #: graph input name feeding the weight in the quantized evaluation model
    feed_b: str | None
    activation: Activation | None = None  #: the ReLU / Clip right after the layer, if any
    #: rows of the layer's 2-D input that make one item of the model's batch: a MatMul on
    #: ``[batch, tokens, K]`` that preparation turned into a Gemm on ``[batch * tokens, K]`` has
    #: ``tokens`` rows per item (1 for every other layer)
    rows_per_item: int = 1

    @property
    def name(self) -> str:
        return self.node.name or self.node.output[0]


class LayerRig:
    """The target layers of a :class:`~ryzen_nb.quantization.run.QuantizationRun`, their
    current weights, and their activations in the float and the quantized network."""

    def __init__(self, run: QuantizationRun, op_types: tuple[str, ...], samples: list[dict[str, np.ndarray]],
                 float_inputs: bool = False) -> None:
        self.run = run
        self.samples = samples
        self.float_inputs = float_inputs  #: whether activations() will be asked for float inputs (QDrop)
        self._float_cache: dict[str, list[np.ndarray]] | None = None
        model = run.prepared.model
        inits = {t.name: t for t in model.graph.initializer}
        uses: dict[str, int] = {}
        readers: dict[str, list[onnx.NodeProto]] = {}
        for node in model.graph.node:
            for name in node.input:
                uses[name] = uses.get(name, 0) + 1
                readers.setdefault(name, []).append(node)
        producers = {o: node for node in model.graph.node for o in node.output}
        constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if not t.dims or len(t.dims) <= 1}
        graph_outputs = {o.name for o in model.graph.output}
        shapes = _shapes(model)
        tensors = run.plan.tensors
        self.targets: list[Target] = []
        self.skipped: list[tuple[str, str]] = []
        for i, node in enumerate(model.graph.node):
            if node.op_type not in op_types or i not in set(run.plan.nodes):
                continue
            w = node.input[1] if len(node.input) > 1 else ""
            why = ""
            if w not in inits:
                why = "its weight is not a constant"
            elif w not in tensors:
                why = "its weight is not quantized"
            elif uses.get(w, 0) != 1:
                why = "its weight is shared with another node"
            layer = layer_for(node, tuple(inits[w].dims), shapes.get(node.input[0])) if not why else None
            if not why and layer is None:
                why = f"{node.op_type} with these attributes is not supported by the fine-tuning layers"
            if why:
                self.skipped.append((node.name, why))
                continue
            b = node.input[2] if len(node.input) > 2 and node.input[2] in inits and uses.get(node.input[2]) == 1 else None
            bq = WeightQuantizer(tensors[b], tuple(inits[b].dims)) if b and b in tensors else None
            self.targets.append(Target(node, layer, w, b, WeightQuantizer(tensors[w], tuple(inits[w].dims)), bq,
                                       f"{w}::ryzen_nb_weight", f"{b}::ryzen_nb_bias" if b else None,
                                       activation_after(node, readers.get(node.output[0], []), constants, graph_outputs),
                                       _rows_per_item(node, layer, producers, shapes)))
        self._float_runner: SampleRunner | None = None
        self._quant_runner: SampleRunner | None = None
        self._segments: SegmentedRunner | None = None
        self._float_segments: SegmentedRunner | None = None
        self.values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer
                       if any(t.name in (g.weight, g.bias) for g in self.targets)}

    # -- current values ----------------------------------------------------------------------------------
    def weight(self, t: Target) -> np.ndarray:
        return self.values[t.weight]

    def bias(self, t: Target) -> np.ndarray | None:
        return self.values[t.bias] if t.bias else None

    def set_weight(self, t: Target, w: np.ndarray) -> None:
        self.values[t.weight] = np.asarray(w, np.float64)
        self._store(t.weight)
        if self._segments is not None:
            self._segments.changed(t.node.name)

    def set_bias(self, t: Target, b: np.ndarray) -> None:
        assert t.bias is not None
        self.values[t.bias] = np.asarray(b, np.float64)
        self._store(t.bias)
        if self._segments is not None:
            self._segments.changed(t.node.name)

    def _store(self, name: str) -> None:
        for init in self.run.prepared.model.graph.initializer:
            if init.name == name:
                init.CopyFrom(numpy_helper.from_array(self.values[name].astype(np.float32), name))
                return

    def feeds(self) -> dict[str, np.ndarray]:
        """Fake-quantized weights and biases for the quantized evaluation model."""
        out = {}
        for t in self.targets:
            out[t.feed_w] = t.wq(self.values[t.weight]).astype(np.float32)
            if t.feed_b:
                b = self.values[t.bias]
                out[t.feed_b] = (t.bq(b) if t.bq else b).astype(np.float32)
        return out

    # -- sessions ------------------------------------------------------------------------------------
    def _runners(self) -> tuple[SampleRunner, SampleRunner]:
        if self._float_runner is None:
            float_model = onnx.ModelProto()
            float_model.CopyFrom(self.run.prepared.model)
            _add_outputs(float_model, [n for t in self.targets for n in (t.node.input[0], t.node.output[0])])
            self._float_runner = SampleRunner(float_model)
            try:  # the float network, when its outputs at every layer are too large to keep in one pass
                self._float_segments = SegmentedRunner(self._float_runner, [t.node.name for t in self.targets],
                                                       self.samples)
            except NotSegmentable as exc:
                log.debug("the float network runs whole for every layer: %s", exc)
            quant = self.run.emit()
            by_name = {n.name: n for n in quant.graph.node}
            for t in self.targets:
                node = by_name[t.node.name]
                node.input[1] = t.feed_w
                quant.graph.input.append(helper.make_tensor_value_info(t.feed_w, onnx.TensorProto.FLOAT, list(self.values[t.weight].shape)))
                if t.feed_b:
                    node.input[2] = t.feed_b
                    quant.graph.input.append(helper.make_tensor_value_info(t.feed_b, onnx.TensorProto.FLOAT, list(self.values[t.bias].shape)))
            _add_outputs(quant, [by_name[t.node.name].input[0] for t in self.targets]
                         + [by_name[t.node.name].output[0] for t in self.targets])
            self._quant_names = {t.name: (by_name[t.node.name].input[0], by_name[t.node.name].output[0]) for t in self.targets}
            prune_unused(quant)  # the weight chains the feeds replaced are dead now
            self._quant_runner = SampleRunner(quant)
            try:
                self._segments = SegmentedRunner(self._quant_runner, [t.node.name for t in self.targets], self.samples)
            except NotSegmentable as exc:
                log.debug("the quantized network runs whole for every layer: %s", exc)
        return self._float_runner, self._quant_runner

    def _float_values(self) -> dict[str, list[np.ndarray]] | None:
        """Every target layer's float output (and input, for QDrop) over all samples, from one pass
        of the float model — if they fit in FLOAT_CACHE_BYTES; else None."""
        if self._float_cache is None:
            names = [n for t in self.targets for n in ([t.node.output[0]] + ([t.node.input[0]] if self.float_inputs else []))]
            names = list(dict.fromkeys(names))
            shapes = _shapes(self.run.prepared.model)
            if not names or any(n not in shapes for n in names):
                self._float_cache = {}
                return None
            size = 4 * len(self.samples) * sum(int(np.prod(shapes[n])) for n in names)
            if size > FLOAT_CACHE_BYTES:
                self._float_cache = {}
                return None
            fr, _ = self._runners()
            per_sample = list(fr.run(names, self.samples))
            self._float_cache = {n: [item[n] for item in per_sample] for n in names}
        return self._float_cache or None

    def activations(self, t: Target, *, float_input: bool = False, quant_output: bool = False) -> Iterator[dict[str, np.ndarray]]:
        """Per sample (float32, batch 1): ``x_q`` (the layer's input in the quantized network, current
        weights), ``y_f`` (its float output) and, when asked, ``x_f`` (float input) and ``y_q`` (its
        output in the quantized network)."""
        fr, qr = self._runners()
        xq_name, yq_name = self._quant_names[t.name]
        want = [xq_name] + ([yq_name] if quant_output else [])
        fwant = [t.node.output[0]] + ([t.node.input[0]] if float_input else [])
        cache = self._float_values()
        floats: Any = None
        if cache is not None and all(n in cache for n in fwant):
            floats = ({n: cache[n][i] for n in fwant} for i in range(len(self.samples)))
        elif self._float_segments is not None:
            try:
                floats = self._float_segments.run_to(self.targets.index(t), fwant, through_stop=True)
            except NotSegmentable as exc:
                log.debug("the float network runs whole for every layer from %s on: %s", t.name, exc)
                self._float_segments = None
        if floats is None:
            floats = fr.run(fwant, self.samples)
        quantized = None
        if self._segments is not None:
            try:
                quantized = self._segments.run_to(self.targets.index(t), want, self.feeds(), through_stop=quant_output)
            except NotSegmentable as exc:
                log.debug("the quantized network runs whole for every layer from %s on: %s", t.name, exc)
                self._segments = None
        for q, f in zip(quantized if quantized is not None else qr.run(want, self.samples, self.feeds()), floats):
            item = {"x_q": q[xq_name], "y_f": f[t.node.output[0]]}
            if float_input:
                item["x_f"] = f[t.node.input[0]]
            if quant_output:
                item["y_q"] = q[yq_name]
            yield item


def _rows_per_item(node: onnx.NodeProto, layer: Layer, producers: dict[str, onnx.NodeProto],
                   shapes: dict[str, tuple[int, ...]]) -> int:
    """How many rows of a Gemm's 2-D input come from one item of the model's batch: the Gemm that
    preparation made of a MatMul on ``[batch, tokens, K]`` reads it through a Reshape to
    ``[batch * tokens, K]``, and one item is a sequence of ``tokens`` rows, as Quark batches it."""
    if layer.op != "Gemm":
        return 1
    reshape = producers.get(node.input[0])
    if reshape is None or reshape.op_type != "Reshape":
        return 1
    shape = shapes.get(reshape.input[0])
    if not shape or len(shape) < 3 or shape[-1] != layer.weight_shape[1 if layer.attrs.get("transB", 0) else 0]:
        return 1
    return max(1, int(np.prod(shape[1:-1])))


def _add_outputs(model: onnx.ModelProto, names: list[str]) -> None:
    present = {o.name for o in model.graph.output}
    for n in dict.fromkeys(names):
        if n not in present:
            model.graph.output.append(onnx.ValueInfoProto(name=n))


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    out = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(int(d.dim_value) for d in dims)
    return out
