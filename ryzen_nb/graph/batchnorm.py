"""Folding BatchNormalization into the convolution or Gemm before it (a preparation step).

A BatchNormalization after a Conv scales and shifts each output channel: the same as scaling that
channel's weights and bias. Folded, the quantizer sees one tensor where it would see two, as Quark's
and the NPU compiler's models do, and the block formats no longer share an exponent between channels
that the normalization would then scale apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.graph.checks import outer_scope_reads

__all__ = ["fold_batch_norms"]


def _channel_bias_add(node, producers, consumers, inits, graph_outputs) -> tuple[Any, np.ndarray]:
    """(``node``, its constant as one value per channel) when ``node`` is an Add of a constant, one value
    or one per channel ([C, 1, 1] or [1, C, 1, 1]), to the output of a Conv or ConvTranspose read by
    nothing else; else (None, empty)."""
    if node is None or node.op_type != "Add" or sum(i in inits for i in node.input) != 1:
        return None, np.zeros(0)
    const = next(i for i in node.input if i in inits)
    conv = producers.get(next(i for i in node.input if i != const))
    if conv is None or conv.op_type not in ("Conv", "ConvTranspose") or conv.input[1] not in inits:
        return None, np.zeros(0)
    if len(consumers.get(conv.output[0], [])) != 1 or conv.output[0] in graph_outputs:
        return None, np.zeros(0)
    values = numpy_helper.to_array(inits[const]).astype(np.float64)
    rank = len(inits[conv.input[1]].dims)  # a convolution's output has its weight's rank
    shape = (1,) * (rank - values.ndim) + values.shape
    if values.ndim > rank or any(d != 1 for k, d in enumerate(shape) if k != 1):
        return None, np.zeros(0)
    return node, values.reshape(-1)


def fold_batch_norms(m: onnx.ModelProto, folded: dict[str, str] | None = None) -> int:
    """Fold each BatchNormalization that alone consumes a Conv/ConvTranspose/Gemm output into it, also
    through a constant per-channel Add between them (Paddle2ONNX writes a ConvTranspose's bias so).

    The weight keeps its name (mixed-precision settings refer to tensors by name); ``folded``
    records, per BatchNormalization name, the node it went into."""
    inits = {t.name: t for t in m.graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in m.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    producers = {out: node for node in m.graph.node for out in node.output}
    # a Conv output that is a graph output or that a subgraph reads must stay as it is
    graph_outputs = {o.name for o in m.graph.output} | outer_scope_reads(m.graph)
    removed: set[int] = set()
    count = 0
    for bn in list(m.graph.node):
        if bn.op_type != "BatchNormalization" or len(bn.output) != 1:
            continue
        prev = producers.get(bn.input[0])
        bias_add, added = _channel_bias_add(prev, producers, consumers, inits, graph_outputs)
        if bias_add is not None:
            prev = producers[next(i for i in bias_add.input if i not in inits)]
        if prev is None or prev.op_type not in ("Conv", "ConvTranspose", "Gemm") or len(consumers[bn.input[0]]) != 1:
            continue
        if bn.input[0] in graph_outputs or any(n not in inits for n in bn.input[1:5]) or prev.input[1] not in inits:
            continue
        if len(consumers.get(prev.input[1], [])) != 1:
            continue  # a shared weight cannot be rescaled for one consumer
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        gamma, beta, mean, var = (numpy_helper.to_array(inits[n]).astype(np.float64) for n in bn.input[1:5])
        factor = gamma / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[prev.input[1]]).astype(np.float64)
        if prev.op_type == "Conv":
            w = w * factor.reshape(-1, *([1] * (w.ndim - 1)))
        elif prev.op_type == "ConvTranspose":
            # weight [C_in, C_out/group, k...]; output channel g*(C_out/group)+j scales column j of group g
            group = next((a.i for a in prev.attribute if a.name == "group"), 1)
            c_in, per_group, kernel = w.shape[0], w.shape[1], w.shape[2:]
            grouped = w.reshape(group, c_in // group, per_group, *kernel)
            w = (grouped * factor.reshape(group, 1, per_group, *([1] * len(kernel)))).reshape(c_in, per_group, *kernel)
        else:  # Gemm: Y = alpha * A @ B' + beta * C, columns of Y are channels
            trans_b = next((a.i for a in prev.attribute if a.name == "transB"), 0)
            alpha = next((a.f for a in prev.attribute if a.name == "alpha"), 1.0)
            if alpha != 1.0 or next((a.f for a in prev.attribute if a.name == "beta"), 1.0) != 1.0:
                continue
            w = w * (factor.reshape(-1, 1) if trans_b else factor.reshape(1, -1))
        old_bias = np.zeros_like(mean)
        if len(prev.input) > 2 and prev.input[2]:
            if prev.input[2] not in inits or len(consumers.get(prev.input[2], [])) != 1:
                continue
            old_bias = numpy_helper.to_array(inits[prev.input[2]]).astype(np.float64)
            if old_bias.shape != mean.shape:
                continue
        if bias_add is not None:
            if added.size not in (1, mean.size):
                continue
            old_bias = old_bias + added
            removed.add(id(bias_add))
        bias = (old_bias - mean) * factor + beta
        w_tensor = numpy_helper.from_array(w.astype(np.float32), prev.input[1])
        inits[prev.input[1]].CopyFrom(w_tensor)
        bias_name = prev.input[2] if len(prev.input) > 2 and prev.input[2] else prev.input[1] + "_bias"
        b_tensor = numpy_helper.from_array(bias.astype(np.float32), bias_name)
        if bias_name in inits:
            inits[bias_name].CopyFrom(b_tensor)
        else:
            m.graph.initializer.append(b_tensor)
            inits[bias_name] = m.graph.initializer[-1]
            while len(prev.input) < 3:
                prev.input.append("")
            prev.input[2] = bias_name
        prev.output[0] = bn.output[0]
        removed.add(id(bn))
        count += 1
        if folded is not None:
            for gone in (bn, bias_add):
                if gone is not None and gone.name:
                    folded[gone.name] = f"folded into {prev.op_type} {prev.name or prev.output[0]!r}"
    if count:
        kept = [n for n in m.graph.node if id(n) not in removed]
        del m.graph.node[:]
        m.graph.node.extend(kept)
        used = {i for n in m.graph.node for i in n.input}
        kept_inits = [t for t in m.graph.initializer if t.name in used]
        del m.graph.initializer[:]
        m.graph.initializer.extend(kept_inits)
        del m.graph.value_info[:]
    return count
