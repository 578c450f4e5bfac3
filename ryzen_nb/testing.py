"""Seeded synthetic models for tests, benchmarks and examples (no download, no training).

* :func:`resnet_cnn` — a ResNet-style CNN (basic blocks, BatchNorm, residual adds, global pooling,
  a classifier); ``blocks=(2, 2, 2, 2)`` gives the ResNet18 layout, ``bottleneck=True`` with
  ``(3, 4, 6, 3)`` and width 64 the ResNet50 architecture.
* :func:`bert_encoder` — a BERT-style encoder: token and position embeddings, LayerNorm,
  multi-head self-attention, GELU feed-forward, mean pooling.
* :func:`depthwise_cnn` — a MobileNet-style depthwise-separable CNN whose depthwise channels
  span very different weight ranges: the case where per-tensor INT8 collapses and cross-layer
  equalization restores it.

Weights are random (He / Xavier scaled so activations stay in a sane range) and fixed by ``seed``;
the graphs are built with onnx helpers at opset 17, as a user's exported model would be.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.graph.builder import make_model

__all__ = ["resnet_cnn", "bert_encoder", "depthwise_cnn", "random_images", "random_tokens"]


class _Graph:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def init(self, hint: str, value: np.ndarray) -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], hint: str | None = None, **attrs) -> str:
        out = self.name(hint or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out


def _conv_bn(g: _Graph, x: str, cin: int, cout: int, k: int, stride: int, relu: bool, tag: str) -> str:
    fan_in = cin * k * k
    w = g.init(f"{tag}.weight", (g.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32))
    y = g.node("Conv", [x, w], f"{tag}.conv", kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    gamma = g.init(f"{tag}.bn.gamma", g.rng.uniform(0.5, 1.5, cout).astype(np.float32))
    beta = g.init(f"{tag}.bn.beta", g.rng.normal(0, 0.1, cout).astype(np.float32))
    mean = g.init(f"{tag}.bn.mean", g.rng.normal(0, 0.1, cout).astype(np.float32))
    var = g.init(f"{tag}.bn.var", g.rng.uniform(0.5, 1.5, cout).astype(np.float32))
    y = g.node("BatchNormalization", [y, gamma, beta, mean, var], f"{tag}.bn", epsilon=1e-5)
    return g.node("Relu", [y], f"{tag}.relu") if relu else y


def resnet_cnn(
    seed: int = 0,
    *,
    blocks: tuple[int, ...] = (2, 2, 2, 2),
    width: int = 16,
    image_size: int = 32,
    num_classes: int = 10,
    bottleneck: bool = False,
    stem_stride: int = 1,
) -> onnx.ModelProto:
    """A seeded ResNet-style classifier ``input [1, 3, S, S] -> logits [1, num_classes]``."""
    g = _Graph(seed)
    x = _conv_bn(g, "input", 3, width, 7 if stem_stride > 1 else 3, stem_stride, True, "stem")
    if stem_stride > 1:
        x = g.node("MaxPool", [x], "stem.pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    expansion = 4 if bottleneck else 1
    for stage, n in enumerate(blocks):
        planes = width * 2**stage
        for b in range(n):
            stride = 2 if stage > 0 and b == 0 else 1
            tag = f"layer{stage + 1}.{b}"
            if bottleneck:
                y = _conv_bn(g, x, cin, planes, 1, 1, True, f"{tag}.a")
                y = _conv_bn(g, y, planes, planes, 3, stride, True, f"{tag}.b")
                y = _conv_bn(g, y, planes, planes * expansion, 1, 1, False, f"{tag}.c")
            else:
                y = _conv_bn(g, x, cin, planes, 3, stride, True, f"{tag}.a")
                y = _conv_bn(g, y, planes, planes, 3, 1, False, f"{tag}.b")
            shortcut = x
            if stride != 1 or cin != planes * expansion:
                shortcut = _conv_bn(g, x, cin, planes * expansion, 1, stride, False, f"{tag}.down")
            x = g.node("Relu", [g.node("Add", [y, shortcut], f"{tag}.add")], f"{tag}.out")
            cin = planes * expansion
    x = g.node("GlobalAveragePool", [x], "pool")
    x = g.node("Flatten", [x], "flatten", axis=1)
    w = g.init("fc.weight", (g.rng.standard_normal((num_classes, cin)) * np.sqrt(1.0 / cin)).astype(np.float32))
    b = g.init("fc.bias", g.rng.normal(0, 0.1, num_classes).astype(np.float32))
    g.nodes.append(helper.make_node("Gemm", [x, w, b], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        g.nodes, "resnet_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image_size, image_size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, num_classes])],
        initializer=g.inits,
    )
    return make_model(graph, opset=17)


def bert_encoder(
    seed: int = 0,
    *,
    layers: int = 4,
    hidden: int = 128,
    heads: int = 4,
    seq_len: int = 32,
    vocab: int = 1000,
    intermediate: int | None = None,
) -> onnx.ModelProto:
    """A seeded BERT-style encoder ``input_ids [1, seq_len] (int64) -> embedding [1, hidden]``."""
    g = _Graph(seed)
    inter = intermediate or 4 * hidden
    head_dim = hidden // heads
    rnd = lambda *shape, s=0.02: (g.rng.standard_normal(shape) * s).astype(np.float32)  # noqa: E731

    def layer_norm(x: str, tag: str) -> str:
        gamma = g.init(f"{tag}.gamma", g.rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        beta = g.init(f"{tag}.beta", rnd(hidden))
        return g.node("LayerNormalization", [x, gamma, beta], tag, axis=-1, epsilon=1e-12)

    def linear(x: str, fin: int, fout: int, tag: str) -> str:
        w = g.init(f"{tag}.weight", (g.rng.standard_normal((fin, fout)) * np.sqrt(1.0 / fin)).astype(np.float32))
        b = g.init(f"{tag}.bias", rnd(fout))
        return g.node("Add", [g.node("MatMul", [x, w], f"{tag}.matmul"), b], f"{tag}.add")

    shape = lambda *dims: g.init("shape", np.array(dims, np.int64))  # noqa: E731
    words = g.init("embeddings.word", rnd(vocab, hidden, s=0.5))
    positions = g.init("embeddings.position", rnd(1, seq_len, hidden, s=0.2))
    x = g.node("Add", [g.node("Gather", [words, "input_ids"], "embeddings.gather"), positions], "embeddings.add")
    x = layer_norm(x, "embeddings.ln")
    for i in range(layers):
        t = f"layer{i}"
        split = lambda y, tag: g.node("Transpose", [g.node("Reshape", [y, shape(1, seq_len, heads, head_dim)],  # noqa: E731
                                                                f"{tag}.reshape")], f"{tag}.transpose", perm=[0, 2, 1, 3])
        q = split(linear(x, hidden, hidden, f"{t}.query"), f"{t}.q")
        k = split(linear(x, hidden, hidden, f"{t}.key"), f"{t}.k")
        v = split(linear(x, hidden, hidden, f"{t}.value"), f"{t}.v")
        kt = g.node("Transpose", [k], f"{t}.kT", perm=[0, 1, 3, 2])
        scores = g.node("MatMul", [q, kt], f"{t}.scores")
        scores = g.node("Mul", [scores, g.init(f"{t}.scale", np.array(1 / np.sqrt(head_dim), np.float32))], f"{t}.scaled")
        probs = g.node("Softmax", [scores], f"{t}.softmax", axis=-1)
        ctx = g.node("MatMul", [probs, v], f"{t}.context")
        ctx = g.node("Reshape", [g.node("Transpose", [ctx], f"{t}.ctxT", perm=[0, 2, 1, 3]),
                                 shape(1, seq_len, hidden)], f"{t}.merge")
        x = layer_norm(g.node("Add", [linear(ctx, hidden, hidden, f"{t}.output"), x], f"{t}.residual1"), f"{t}.ln1")
        h = linear(x, hidden, inter, f"{t}.intermediate")
        # GELU(h) = 0.5 h (1 + erf(h / sqrt 2)), as exporters write it
        erf = g.node("Erf", [g.node("Div", [h, g.init(f"{t}.sqrt2", np.array(np.sqrt(2.0), np.float32))], f"{t}.div")], f"{t}.erf")
        gelu = g.node("Mul", [g.node("Mul", [h, g.node("Add", [erf, g.init(f"{t}.one", np.array(1.0, np.float32))], f"{t}.erf1")],
                                     f"{t}.gelu_mul"), g.init(f"{t}.half", np.array(0.5, np.float32))], f"{t}.gelu")
        x = layer_norm(g.node("Add", [linear(gelu, inter, hidden, f"{t}.ffn_out"), x], f"{t}.residual2"), f"{t}.ln2")
    g.nodes.append(helper.make_node("ReduceMean", [x, g.init("pool.axes", np.array([1], np.int64))], ["embedding"],
                                    name="pool", keepdims=0))
    graph = helper.make_graph(
        g.nodes, "bert_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq_len])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, hidden])],
        initializer=g.inits,
    )
    return make_model(graph, opset=18)


def depthwise_cnn(
    seed: int = 0,
    *,
    width: int = 16,
    blocks: int = 2,
    image_size: int = 32,
    num_classes: int = 10,
    spread: float = 1000.0,
    outlier: float = 0.0,
) -> onnx.ModelProto:
    """A depthwise-separable classifier ``input [1, 3, S, S] -> logits [1, num_classes]``: a stem
    convolution, then ``blocks`` x (depthwise 3x3 + ReLU, pointwise 1x1 + ReLU), pooling, a classifier.

    Each depthwise layer's output channels are scaled by factors spread log-uniformly over
    ``spread`` (and the pointwise layer after it divides them back), as BatchNorm folding leaves
    them in MobileNets: the network computes the same function for any ``spread``, but per-tensor
    weight quantization rounds the small channels of the depthwise layer to nothing.

    ``outlier`` (> 1) makes one output channel of the first depthwise layer that many times larger
    (a different network, not compensated): an activation whose range one channel sets, so 8-bit
    activations there lose the others, as in transformers' outlier features — the case 16-bit
    activations, and mixed precision, are for.
    """
    g = _Graph(seed)
    he = lambda shape, fan_in: (g.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)  # noqa: E731
    bias = lambda n: g.rng.normal(0.0, 0.05, n).astype(np.float32)  # noqa: E731
    x = g.node("Conv", ["input", g.init("stem.weight", he((width, 3, 3, 3), 27)), g.init("stem.bias", bias(width))],
               "stem.conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    x = g.node("Relu", [x], "stem.relu")
    cin = width
    for i in range(blocks):
        cout = cin * 2
        factors = np.exp(g.rng.permutation(np.linspace(0.0, np.log(spread), cin))) / np.sqrt(spread)
        dw = he((cin, 1, 3, 3), 9) * factors.reshape(-1, 1, 1, 1)
        db = bias(cin) * factors
        if i == 0 and outlier:
            dw[0] *= outlier
            db[0] *= outlier
        x = g.node("Conv", [x, g.init(f"block{i}.dw.weight", dw.astype(np.float32)),
                            g.init(f"block{i}.dw.bias", db.astype(np.float32))],
                   f"block{i}.dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=cin)
        x = g.node("Relu", [x], f"block{i}.dw.relu")
        pw = (he((cout, cin, 1, 1), cin) / factors.reshape(1, -1, 1, 1)).astype(np.float32)
        x = g.node("Conv", [x, g.init(f"block{i}.pw.weight", pw), g.init(f"block{i}.pw.bias", bias(cout))],
                   f"block{i}.pw", kernel_shape=[1, 1])
        x = g.node("Relu", [x], f"block{i}.pw.relu")
        cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x], "pool")], "flatten", axis=1)
    w = g.init("fc.weight", (g.rng.standard_normal((num_classes, cin)) * np.sqrt(1.0 / cin)).astype(np.float32))
    g.nodes.append(helper.make_node("Gemm", [x, w, g.init("fc.bias", bias(num_classes))], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        g.nodes, "depthwise_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image_size, image_size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, num_classes])],
        initializer=g.inits,
    )
    return make_model(graph, opset=17)


def random_images(n: int, size: int = 32, seed: int = 1) -> np.ndarray:
    """``n`` samples shaped ``[n, 3, size, size]`` with image-like statistics (smooth, normalised)."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, 3, size // 4, size // 4)).astype(np.float32)
    up = base.repeat(4, axis=2).repeat(4, axis=3)
    return (up + 0.3 * rng.standard_normal((n, 3, size, size))).astype(np.float32)


def random_tokens(n: int, seq_len: int = 32, vocab: int = 1000, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, size=(n, seq_len)).astype(np.int64)
