"""Gemm rewrites of model preparation, as Quark's model simplification (onnxslim) makes them.

:func:`fuse_matmul_add` turns a MatMul with a constant weight and its bias Add into one Gemm;
:func:`fold_scales_into_gemms` folds a constant Mul after a Gemm (an attention layer's query
scaling) into the Gemm's weight and bias. Both keep the names of what follows, so the rest of the
graph, and the user's node names, read as before.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.graph.checks import outer_scope_reads

__all__ = ["fold_scales_into_gemms", "fuse_matmul_add"]


def fuse_matmul_add(m: onnx.ModelProto, folded: dict[str, str] | None = None) -> tuple[int, int]:
    """Turn ``Add(MatMul(A, W), b)`` with constant ``W [K, N]`` and bias ``b [N]`` into a Gemm, and a
    MatMul with a constant float ``W`` and no such bias into a Gemm without one.

    A Gemm carries its bias into the accumulator: integer presets quantize it to int32 with scale
    s_A * s_W instead of rounding the MatMul output to 8 bits before the bias is added, as the NPU
    does and as Quark's model simplification arranges. ``A`` of rank > 2 (``[batch, tokens, K]``)
    is reshaped to 2-D around the Gemm, once for all the pairs that read it (an attention layer's
    query, key and value projections: as Quark's simplified models). The Gemm takes the MatMul's node
    name and the Add's output name, so everything downstream keeps its names. Returns the number of
    MatMuls turned into Gemms and how many of them took their bias Add along.

    The Gemm reads ``W`` transposed (``transB=1``, ``W`` as ``[N, K]``), as in Quark's simplified
    models: with ``W`` as ``[K, N]``, onnxruntime turns a quantized weight's DequantizeLinear and
    the Gemm into its MatMulNBits kernel, which by default (``session.qdq_matmulnbits_accuracy_level``
    4) rounds the activations to int8 inside: in a plain session MiniLM in A16W8 scored a cosine of
    0.9758 where the model as written scores 0.9768. The same holds for a MatMul without a bias (T5's
    and many decoders' projections), hence the Gemm without one: onnxruntime fuses no Gemm so. ``W``
    keeps its name when the MatMul alone read it.
    """
    graph = m.graph
    inits = {t.name: t for t in graph.initializer}
    shapes = {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
              for vi in list(graph.input) + list(graph.value_info) if vi.type.tensor_type.HasField("shape")}
    consumers = _readers(graph)
    # outputs and tensors a subgraph reads must keep their producers
    graph_outputs = {o.name for o in graph.output} | outer_scope_reads(graph)
    replaced: dict[int, list[onnx.NodeProto]] = {}  # id(MatMul) -> new nodes; the Add is dropped
    dropped: set[int] = set()
    flattened: dict[tuple[str, int], str] = {}  # (A, K) -> A as [-1, K]: one Reshape for the query, key and value
    transposed: dict[str, str] = {}  # W -> W as [N, K]
    for mm in graph.node:
        if mm.op_type != "MatMul" or mm.input[1] not in inits or len(inits[mm.input[1]].dims) != 2 or \
                inits[mm.input[1]].data_type != onnx.TensorProto.FLOAT:
            continue
        k, n = inits[mm.input[1]].dims
        add, bias = _bias_add(mm, consumers.get(mm.output[0], []), inits, n, graph_outputs)
        a_shape = shapes.get(mm.input[0])
        if not a_shape or len(a_shape) < 2 or any(d is None or d <= 0 for d in a_shape):
            continue
        out = (add or mm).output[0]
        tag = mm.name or mm.output[0]
        b_vec = bias
        if bias is not None and len(inits[bias].dims) != 1:
            b_vec = f"{bias}_vector"
            if b_vec not in inits:  # a bias shared by several pairs is reshaped once
                vec = numpy_helper.from_array(numpy_helper.to_array(inits[bias]).reshape(n), b_vec)
                graph.initializer.append(vec)
                inits[b_vec] = graph.initializer[-1]
        nodes = []
        a2 = mm.input[0]
        if len(a_shape) > 2 and (mm.input[0], k) in flattened:
            a2 = flattened[(mm.input[0], k)]  # made before this MatMul, by the first pair that reads A
        elif len(a_shape) > 2:
            shape_2d = numpy_helper.from_array(np.array([-1, k], np.int64), f"{tag}_gemm_input_shape")
            graph.initializer.append(shape_2d)
            a2 = flattened[(mm.input[0], k)] = f"{tag}_gemm_input"
            nodes.append(helper.make_node("Reshape", [mm.input[0], shape_2d.name], [a2], name=f"{tag}_gemm_reshape_in"))
        y2 = out if len(a_shape) == 2 else f"{tag}_gemm_output"
        w_t = transposed.get(mm.input[1]) or _transposed(graph, inits, mm.input[1],
                                                          in_place=len(consumers[mm.input[1]]) == 1
                                                          and mm.input[1] not in graph_outputs)
        transposed[mm.input[1]] = w_t
        nodes.append(helper.make_node("Gemm", [a2, w_t] + ([b_vec] if bias is not None else []), [y2],
                                      name=mm.name or f"{tag}_gemm", transB=1))
        if len(a_shape) > 2:
            # -1 for the leading dimension: the batch stays free for a model whose batch is dynamic
            out_shape = numpy_helper.from_array(np.array([-1, *a_shape[1:-1], n], np.int64), f"{tag}_gemm_output_shape")
            graph.initializer.append(out_shape)
            nodes.append(helper.make_node("Reshape", [y2, out_shape.name], [out], name=f"{tag}_gemm_reshape_out"))
        replaced[id(mm)] = nodes
        if add is not None:
            dropped.add(id(add))
            if folded is not None and add.name:
                folded[add.name] = f"fused with its MatMul into Gemm {mm.name or f'{tag}_gemm'!r}"
    if not replaced:
        return 0, 0
    new_nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        if id(node) in replaced:
            new_nodes.extend(replaced[id(node)])
        elif id(node) not in dropped:
            new_nodes.append(node)
    del graph.node[:]
    graph.node.extend(new_nodes)
    del graph.value_info[:]
    # a weight several pairs shared is read as its transposed copy now: the original goes (the
    # quantized model would carry it as a float initializer nothing reads)
    still_read = {name for node in graph.node for name in node.input} | graph_outputs
    unread = {w for w, w_t in transposed.items() if w_t != w and w not in still_read}
    if unread:
        kept = [t for t in graph.initializer if t.name not in unread]
        del graph.initializer[:]
        graph.initializer.extend(kept)
    return len(replaced), len(dropped)


def _bias_add(mm: onnx.NodeProto, users: list[onnx.NodeProto], inits: dict[str, onnx.TensorProto], n: int,
              graph_outputs: set[str]) -> tuple[onnx.NodeProto | None, str | None]:
    """The Add that alone reads ``mm``'s output and adds a constant bias of ``n`` values, and that bias;
    (None, None) when there is none."""
    if len(users) != 1 or users[0].op_type != "Add" or mm.output[0] in graph_outputs:
        return None, None
    add = users[0]
    bias = add.input[1] if add.input[0] == mm.output[0] else add.input[0]
    if bias not in inits or int(np.prod(inits[bias].dims)) != n or inits[bias].dims[-1:] != [n]:
        return None, None
    return add, bias


def _transposed(graph: onnx.GraphProto, inits: dict[str, onnx.TensorProto], name: str, in_place: bool) -> str:
    """The 2-D initializer ``name`` transposed: in place, or as a new initializer beside it."""
    values = numpy_helper.to_array(inits[name]).T.copy()
    if in_place:
        inits[name].CopyFrom(numpy_helper.from_array(values, name))
        return name
    new = f"{name}_transposed"
    while new in inits:
        new += "_"
    graph.initializer.append(numpy_helper.from_array(values, new))
    inits[new] = graph.initializer[-1]
    return new


def fold_scales_into_gemms(m: onnx.ModelProto, folded: dict[str, str] | None = None) -> int:
    """Fold ``Mul(Reshape(Gemm(A, W, C)), s)`` (each output read by the next alone) with a constant
    ``s`` — one number, or one per output column — into the Gemm: its weight's output columns and
    its bias times ``s``. The Mul's output name stays. This is onnxslim's FusionGemmMul, which
    Quark's model simplification runs: the Reshape is the one :func:`fuse_matmul_add` puts after a
    Gemm of a 3-D input, so the pattern is a projection's MatMul, bias Add and Mul.

    An attention layer's query is often scaled so after its projection (by 1/sqrt(head size)):
    quantized as written, the projection's output and the scaled query each get a quantizer, two
    roundings where Quark's simplified model has one. A power-of-two ``s`` (1/8 for heads of 64)
    scales the weights exactly. Returns the number of Muls folded.
    """
    graph = m.graph
    inits = {t.name: t for t in graph.initializer}
    consumers = _readers(graph)
    graph_outputs = {o.name for o in graph.output} | outer_scope_reads(graph)
    dropped: set[int] = set()
    scales: set[str] = set()  #: the Muls' constants, dropped with them where nothing else reads them
    for gemm in graph.node:
        if gemm.op_type != "Gemm" or gemm.domain not in ("", "ai.onnx") or not _constant_float(inits, gemm.input[1]):
            continue
        has_bias = len(gemm.input) > 2 and bool(gemm.input[2])
        if has_bias and not _constant_float(inits, gemm.input[2]):
            continue
        if any(a.name == "transA" and a.i for a in gemm.attribute):
            continue
        users = consumers.get(gemm.output[0], [])
        if len(users) != 1 or users[0].op_type != "Reshape" or gemm.output[0] in graph_outputs:
            continue
        last = users[0]  # the Reshape back to the MatMul's rank, which the Mul reads
        users = consumers.get(last.output[0], [])
        if len(users) != 1 or users[0].op_type != "Mul" or last.output[0] in graph_outputs:
            continue
        mul = users[0]
        other = mul.input[1] if mul.input[0] == last.output[0] else mul.input[0]
        w = numpy_helper.to_array(inits[gemm.input[1]])
        trans_b = any(a.name == "transB" and a.i for a in gemm.attribute)
        n = w.shape[0] if trans_b else w.shape[1]
        if not _constant_float(inits, other) or mul.input[0] == mul.input[1]:
            continue
        s = numpy_helper.to_array(inits[other]).astype(np.float32)
        if s.size not in (1, n) or (s.size == n and s.shape[-1:] != (n,)) or not np.all(np.isfinite(s)):
            continue
        s = s.reshape(-1)
        scaled_w = (w * (s[:, None] if trans_b else s[None, :])).astype(np.float32)
        _replace_constant(graph, inits, consumers, gemm, 1, scaled_w, f"{mul.output[0]}_weight_fused")
        if has_bias:
            c = numpy_helper.to_array(inits[gemm.input[2]]).astype(np.float32)
            scaled_c = (np.broadcast_to(c, np.broadcast_shapes(c.shape, s.shape)) * s).astype(np.float32)
            _replace_constant(graph, inits, consumers, gemm, 2, scaled_c, f"{mul.output[0]}_bias_fused")
        last.output[0] = mul.output[0]
        dropped.add(id(mul))
        scales.add(other)
        if folded is not None and mul.name:
            folded[mul.name] = f"folded into the weights and bias of Gemm {gemm.name!r}"
    if dropped:
        kept = [node for node in graph.node if id(node) not in dropped]
        del graph.node[:]
        graph.node.extend(kept)
        del graph.value_info[:]
        read = {i for node in kept for i in node.input} | graph_outputs | {i.name for i in graph.input}
        unread = [t for t in graph.initializer if t.name in scales and t.name not in read]
        for t in unread:  # onnxruntime warns of an initializer nothing uses each time it loads the model
            graph.initializer.remove(t)
    return len(dropped)


def _readers(graph: onnx.GraphProto) -> dict[str, list[onnx.NodeProto]]:
    """Tensor name -> the nodes of ``graph`` that read it."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    return readers


def _constant_float(inits: dict[str, onnx.TensorProto], name: str) -> bool:
    return name in inits and inits[name].data_type == onnx.TensorProto.FLOAT


def _replace_constant(graph: onnx.GraphProto, inits: dict[str, onnx.TensorProto],
                      consumers: dict[str, list[onnx.NodeProto]], node: onnx.NodeProto, slot: int,
                      values: np.ndarray, name: str) -> None:
    """``node``'s constant input ``slot`` becomes ``values``: in place when ``node`` alone reads it,
    else as a new initializer ``name`` (made unique), the shared one left to its other readers."""
    old = node.input[slot]
    if len(consumers.get(old, [])) == 1:
        inits[old].CopyFrom(numpy_helper.from_array(values, old))
        return
    while name in inits:
        name += "_"
    graph.initializer.append(numpy_helper.from_array(values, name))
    inits[name] = graph.initializer[-1]
    consumers[old].remove(node)
    consumers[name] = [node]
    node.input[slot] = name
