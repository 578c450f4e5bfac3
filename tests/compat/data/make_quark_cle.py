"""Writes quark_cle_patterns.onnx, quark_cle_stem.onnx and quark_cle.npz: two small float models with every
layer pattern AMD Quark 0.13's cross-layer equalization handles, and the weights Quark's own CLE gives them
(``stem_equalize_transforms`` then ``cle_transforms`` in ``quark.onnx.algorithm.cle.equalization``, as
``include_cle`` runs them, with the defaults of its legacy configs: balance "max", weight threshold 0.5,
the bias appended to the head's ranges, the threshold used) after one and after two sweeps, for
tests/compat/test_cle_vs_quark.py. Run where amd-quark is installed (ryzen-nb never imports it):
``python tests/compat/data/make_quark_cle.py``.

The model (1x3x8x8 input): a Conv whose bias is large against its weights (Quark's bias shrink factors of
5 to 20) -> Relu -> Conv with a small bias (factor 2) -> Relu -> depthwise Conv -> Relu -> pointwise Conv
(Quark's Conv -> depthwise -> pointwise triplet) -> Pad with zeros -> Relu -> Conv with a dead output
channel and zero weights -> Relu -> ReduceMean over the image -> 1x1 Conv -> Flatten -> Gemm (transB) ->
Relu -> Gemm. Output channels of every layer span four decades.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper
from quark.onnx.algorithm.cle.equalization import cle_transforms, stem_equalize_transforms

HERE = Path(__file__).parent


def model() -> onnx.ModelProto:
    rng = np.random.default_rng(11)

    def spread(shape, axis=0, low=-2.0, high=2.0):
        w = rng.standard_normal(shape)
        factors = np.exp(rng.uniform(low, high, shape[axis]) * np.log(10) / 2)
        return (w * np.expand_dims(factors, [a for a in range(len(shape)) if a != axis])).astype(np.float32)

    inits = {
        "c0.w": spread((8, 3, 3, 3)), "c0.b": (rng.standard_normal(8) * 30).astype(np.float32),
        "c1.w": spread((8, 8, 1, 1)), "c1.b": (rng.standard_normal(8) * 0.05).astype(np.float32),
        "dw.w": spread((8, 1, 3, 3)), "dw.b": (rng.standard_normal(8) * 0.5).astype(np.float32),
        "pw.w": spread((16, 8, 1, 1)), "pw.b": (rng.standard_normal(16) * 0.5).astype(np.float32),
        "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
        "c2.w": spread((16, 16, 3, 3)), "c2.b": (rng.standard_normal(16) * 2).astype(np.float32),
        "c3.w": spread((10, 16, 1, 1)), "c3.b": (rng.standard_normal(10) * 0.5).astype(np.float32),
        "g0.w": spread((12, 10)), "g0.b": (rng.standard_normal(12) * 0.5).astype(np.float32),
        "g1.w": spread((12, 4), axis=1), "g1.b": (rng.standard_normal(4) * 0.5).astype(np.float32),
    }
    inits["c2.w"][3] = 0.0  # a dead output channel: its bias does not count
    inits["c2.w"][5, :4] = 0.0  # zeros in a live channel count as its smallest weight
    conv = lambda name, x, y, **kw: helper.make_node("Conv", [x, f"{name}.w", f"{name}.b"], [y], name=name, **kw)  # noqa: E731
    relu = lambda name, x: helper.make_node("Relu", [x], [f"{name}.r"], name=f"{name}.relu")  # noqa: E731
    nodes = [
        conv("c0", "x", "c0", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=1), relu("c0", "c0"),
        conv("c1", "c0.r", "c1", kernel_shape=[1, 1], group=1), relu("c1", "c1"),
        conv("dw", "c1.r", "dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8), relu("dw", "dw"),
        conv("pw", "dw.r", "pw", kernel_shape=[1, 1], group=1),
        helper.make_node("Pad", ["pw", "pads"], ["padded"], name="pad", mode="constant"), relu("pad", "padded"),
        conv("c2", "pad.r", "c2", kernel_shape=[3, 3], group=1), relu("c2", "c2"),
        helper.make_node("ReduceMean", ["c2.r"], ["mean"], name="mean", axes=[2, 3], keepdims=1),
        conv("c3", "mean", "c3", kernel_shape=[1, 1], group=1),
        helper.make_node("Flatten", ["c3"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "g0.w", "g0.b"], ["g0"], name="g0", transB=1), relu("g0", "g0"),
        helper.make_node("Gemm", ["g0.r", "g1.w", "g1.b"], ["y"], name="g1"),
    ]
    graph = helper.make_graph(nodes, "cle_patterns", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def stem_model() -> onnx.ModelProto:
    """Quark 0.13's stem equalization: a stem Conv (3 -> 8, output channels over four decades) -> Relu, read
    by a MaxPool and an AveragePool, joined by a Concat (16 channels) -> BatchNormalization -> Relu -> Conv ->
    Relu -> Conv. The stem's channels land on the BatchNormalization at offsets 0 and 8."""
    rng = np.random.default_rng(12)
    stem = (rng.standard_normal((8, 3, 3, 3)) * np.geomspace(0.01, 1, 8)[:, None, None, None]).astype(np.float32)
    inits = {"stem.w": stem, "stem.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
             "bn.gamma": rng.uniform(0.5, 2, 16).astype(np.float32), "bn.beta": rng.standard_normal(16).astype(np.float32),
             "bn.mean": rng.standard_normal(16).astype(np.float32), "bn.var": rng.uniform(0.5, 2, 16).astype(np.float32),
             "c1.w": (rng.standard_normal((8, 16, 1, 1)) * np.geomspace(0.1, 10, 8)[:, None, None, None]).astype(np.float32),
             "c1.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
             "c2.w": rng.standard_normal((4, 8, 1, 1)).astype(np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "stem.w", "stem.b"], ["s"], name="stem", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=1),
        helper.make_node("Relu", ["s"], ["sr"], name="stem.relu"),
        helper.make_node("MaxPool", ["sr"], ["p1"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["sr"], ["p2"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["p1", "p2"], ["cat"], name="concat", axis=1),
        helper.make_node("BatchNormalization", ["cat", "bn.gamma", "bn.beta", "bn.mean", "bn.var"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["bnr"], name="bn.relu"),
        helper.make_node("Conv", ["bnr", "c1.w", "c1.b"], ["c1"], name="c1", kernel_shape=[1, 1], group=1),
        helper.make_node("Relu", ["c1"], ["c1r"], name="c1.relu"),
        helper.make_node("Conv", ["c1r", "c2.w"], ["y"], name="c2", kernel_shape=[1, 1], group=1),
    ]
    graph = helper.make_graph(nodes, "stem", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 4, 4])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)  # Quark reads the Concat's offsets from the declared shapes
    onnx.checker.check_model(m)
    return m


def equalized(m: onnx.ModelProto, steps: int, stem: bool) -> onnx.ModelProto:
    """What Quark's include_cle does (``apply_pre_quantization_algorithms``): stem equalization, then CLE."""
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    if stem:
        copy = stem_equalize_transforms(copy, ["Conv", "Gemm"], [], [])
    return cle_transforms(copy, ["Conv", "Gemm"], [], [], cle_steps=steps, cle_balance_method="max",
                          cle_weight_threshold=0.5, cle_scale_append_bias=True, cle_scale_use_threshold=True)


def main() -> None:
    out = {}
    for label, m in (("patterns", model()), ("stem", stem_model())):
        onnx.save(m, HERE / f"quark_cle_{label}.onnx")
        for steps in (1, 2):
            for t in equalized(m, steps, stem=True).graph.initializer:
                out[f"{label}/steps{steps}/{t.name}"] = numpy_helper.to_array(t)
    np.savez_compressed(HERE / "quark_cle.npz", **out)


if __name__ == "__main__":
    main()
