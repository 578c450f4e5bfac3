"""Cost of each format's ONNX lowering in plain onnxruntime (CPU).

For every format: the time to quantize-dequantize a 1x64x56x56 activation (blocks/channels along
axis 1) and a 768x768 weight (along axis 1), relative to an Identity on the same tensor, and —
the goal for block formats — relative to one 3x3 convolution 64->64 on the same activation.

    python -m benchmarks.formats [--threads N] [--csv out.csv]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from onnx import TensorProto, helper, numpy_helper

from benchmarks._timing import session, time_call
from ryzen_nb import formats
from ryzen_nb.formats import ScaleKind
from ryzen_nb.graph import make_model

ACTIVATION = (1, 64, 56, 56)
WEIGHT = (768, 768)


def identity_model(shape):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    return make_model(graph)


def conv3x3_model(shape):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializer=[w],
    )
    return make_model(graph)


def measure(model, x, threads):
    sess = session(model, threads)
    return time_call(lambda: sess.run(None, {"x": x}))["median_ms"]


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0 = default)")
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    tensors = {
        "activation": (rng.standard_normal(ACTIVATION) * 2).astype(np.float32),
        "weight": (rng.standard_normal(WEIGHT) * 0.05).astype(np.float32),
    }
    base = {k: measure(identity_model(v.shape), v, args.threads) for k, v in tensors.items()}
    conv_ms = measure(conv3x3_model(ACTIVATION), tensors["activation"], args.threads)

    rows = []
    for name in formats.names():
        fmt = formats.get(name)
        row = {"format": name, "family": fmt.info.family}
        for label, x in tensors.items():
            kw = {}
            if fmt.info.scale_kind is ScaleKind.TENSOR:
                scale, zp = fmt.scale_from_range(x.min(), x.max())
                kw = {"scale": scale, "zero_point": zp}
            ms = measure(formats.qdq_model(name, x.shape, axis=1, **kw), x, args.threads)
            row[f"{label}_ms"] = ms
            row[f"{label}_vs_identity"] = ms / base[label]
        row["activation_vs_conv3x3"] = row["activation_ms"] / conv_ms
        rows.append(row)
    table = pd.DataFrame(rows).set_index("format")
    pd.set_option("display.width", 200)
    print(f"Identity: activation {base['activation']:.3f} ms, weight {base['weight']:.3f} ms; "
          f"Conv 3x3 64->64 on {ACTIVATION}: {conv_ms:.3f} ms (threads={args.threads or 'default'})")
    print(table.round(3).to_string())
    blocks = table[table["family"].isin(["bfp", "mx"])]
    worst = blocks["activation_vs_conv3x3"].max()
    print(f"\nBlock formats: worst lowering/conv3x3 ratio {worst:.2f} ({blocks['activation_vs_conv3x3'].idxmax()}); "
          f"goal < 1: {'met' if worst < 1 else 'NOT met'}")
    if args.csv:
        table.to_csv(args.csv)
    return table


if __name__ == "__main__":
    main()
