"""Passes over the lowered model that change how it holds and moves integer codes, not what it computes.

:func:`~ryzen_nb.npu.lower.lower` runs :func:`rewrite_codes` on each emulated model: each pass
computes the same numbers bit for bit with fewer passes over the tensors — a MaxPool on codes in
float, value-moving operators (Concat, Split, Reshape...) on codes, an embedding Gather on codes,
XINT8's uint8 codes centred as int8, and int8 codes that only become floats kept as float32 numbers.
The renamed tensors are listed in the model's metadata; :func:`code_sources` and
:func:`restored_codes` give the original codes back (``NPUSession.tensor_values``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder
from ryzen_nb.graph.checks import outer_scope_reads
from ryzen_nb.graph.prepare import prune_unused

__all__ = ["CENTRED_CODES", "FLOAT_CODES", "code_sources", "graph_maps", "restored_codes", "rewrite_codes"]


def rewrite_codes(m: onnx.ModelProto) -> None:
    """Every pass, in order, in place (constants must be initializers already)."""
    _max_pools_in_float(m)
    _moves_on_codes(m)
    _gathers_on_codes(m)
    _centred_codes(m)
    prune_unused(m)  # the quantized model's DequantizeLinears that kernels replaced read codes no more
    _float_codes(m)
    prune_unused(m)


#: operators that only move values -> how many of their first inputs are the values (None: all);
#: the other inputs (shapes, axes, starts, sizes) stay as they are
_MOVES: dict[str, int | None] = {"Concat": None, "Split": 1, "Reshape": 1, "Transpose": 1, "Slice": 1, "Flatten": 1,
                                 "Squeeze": 1, "Unsqueeze": 1, "Identity": 1, "Resize": 1}
#: onnxruntime's Resize takes 8-bit integers, not 16-bit ones
_MOVES_OF_BYTES = {"Resize"}


def _moved_values(n: onnx.NodeProto) -> list[str] | None:
    """The tensors an operator that only moves values reads (:data:`_MOVES`: its other inputs are
    shapes, axes, sizes), or None for any other operator (Resize counts when it picks the nearest)."""
    if n.domain not in ("", "ai.onnx") or n.op_type not in _MOVES or \
            n.op_type == "Resize" and attribute(n, "mode", "nearest") != "nearest":
        return None
    count = _MOVES[n.op_type]
    return [t for t in (n.input if count is None else n.input[:count]) if t]


def _moves_on_codes(m: onnx.ModelProto) -> None:
    """DequantizeLinear -> Concat / Split / Reshape / Transpose / Slice / Resize (nearest)... ->
    QuantizeLinear with one scale and zero point throughout moves the codes: the values it takes
    are the dequantized codes, each lands unchanged, and quantizing ``(c - zp) * s`` with the same
    ``s`` and ``zp`` gives ``c`` back. So the operator runs on the codes, without the two passes
    over the tensor (YOLOv8n's 18 Concats and 9 Splits in XINT8), as the NPU moves them. The
    DequantizeLinears stay for their other readers; :func:`prune_unused` drops the rest."""
    inits, graph_outputs, producers, readers = graph_maps(m)

    def quantizers(n: onnx.NodeProto) -> list[int] | None:
        """Positions of the QuantizeLinears after the value-moving ``n`` (one per output), when
        every value it reads and writes has one quantization."""
        values = _moved_values(n)
        dqs = [producers.get(name) for name in values or []]
        if not values or any(dq is None or dq.op_type != "DequantizeLinear" for dq in dqs):
            return None
        found = {_one_quantization(dq, inits) for dq in dqs}  # type: ignore[arg-type]
        positions = []
        for out in n.output:
            after = readers.get(out, [])
            if not out or out in graph_outputs or len(after) != 1 or m.graph.node[after[0]].op_type != "QuantizeLinear":
                return None
            found.add(_one_quantization(m.graph.node[after[0]], inits))
            positions.append(after[0])
        if len(found) != 1 or None in found:
            return None
        if n.op_type in _MOVES_OF_BYTES and found.pop()[2] not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            return None
        return positions

    def on_codes(n: onnx.NodeProto, positions: list[int]) -> list[onnx.NodeProto]:
        moved = onnx.NodeProto()
        moved.CopyFrom(n)
        for j, name in enumerate(_moved_values(n) or []):  # the values come first
            moved.input[j] = producers[name].input[0]
        for j, q in enumerate(positions):  # the moved operator writes the QuantizeLinears' codes
            moved.output[j] = m.graph.node[q].output[0]
        return [moved]

    _replace_with_quantizers(m, quantizers, on_codes)


def _gathers_on_codes(m: onnx.ModelProto) -> None:
    """A Gather from a dequantized constant table (an embedding: DequantizeLinear -> Gather) gathers
    the codes and dequantizes only the rows it took. With one scale and zero point for the whole
    table the two orders give the same numbers, element by element; the table's DequantizeLinear
    costs its whole size on every run (MiniLM's 30522 x 384 word embeddings: 13.8 ms of 79 on one
    thread, where FP32 takes 60 in all). Per-axis and blocked tables keep their order.
    :func:`prune_unused` drops the table's DequantizeLinear once no reader is left."""
    inits = {t.name: t for t in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    taken = {name for n in m.graph.node for name in (*n.input, *n.output, n.name)}
    taken |= set(inits) | {i.name for i in m.graph.input} | {o.name for o in m.graph.output}
    b = GraphBuilder(prefix="npu_gather", reserved=taken)

    def table(n: onnx.NodeProto) -> onnx.NodeProto | None:
        """The DequantizeLinear of a constant table with one scale that the Gather ``n`` reads."""
        dq = producers.get(n.input[0]) if n.op_type == "Gather" and n.domain in ("", "ai.onnx") else None
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[0] not in inits or \
                any(name not in inits for name in dq.input[1:]) or attribute(dq, "block_size", 0):
            return None
        return dq if all(np.size(numpy_helper.to_array(inits[name])) == 1 for name in dq.input[1:]) else None

    nodes: list[onnx.NodeProto] = []
    for n in m.graph.node:
        dq = table(n)
        if dq is None:
            nodes.append(n)
            continue
        gather = onnx.NodeProto()
        gather.CopyFrom(n)
        gather.name = b.fresh("Gather")
        gather.input[0] = dq.input[0]
        gather.output[0] = b.fresh("rows")
        dequantize = onnx.NodeProto()
        dequantize.CopyFrom(dq)
        dequantize.name = b.fresh("DequantizeLinear")
        dequantize.input[0] = gather.output[0]
        dequantize.output[0] = n.output[0]
        nodes += [gather, dequantize]
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def _max_pools_in_float(m: onnx.ModelProto) -> None:
    """DequantizeLinear -> MaxPool -> QuantizeLinear with one scale and zero point is the MaxPool of
    the codes, which onnxruntime fuses into its integer MaxPool (measured 6 ms on a ResNet50 stem,
    where the float one takes 0.5 ms). The codes are cast to float32 and back instead: the same
    numbers (the maximum commutes with a positive scale), at float speed. The DequantizeLinear stays
    for its other readers; :func:`prune_unused` drops it if there are none."""
    inits, graph_outputs, producers, readers = graph_maps(m)
    taken = {name for n in m.graph.node for name in (*n.input, *n.output, n.name)}
    taken |= set(inits) | {i.name for i in m.graph.input} | graph_outputs
    b = GraphBuilder(prefix="npu_maxpool", reserved=taken)

    def on_codes(n: onnx.NodeProto) -> list[int] | None:
        """The position of the QuantizeLinear that reads the MaxPool ``n`` of dequantized codes."""
        if n.op_type != "MaxPool" or len(n.output) != 1 or n.output[0] in graph_outputs:
            return None
        dq = producers.get(n.input[0])
        after = readers.get(n.output[0], [])
        if dq is None or dq.op_type != "DequantizeLinear" or len(dq.input) < 3 or len(after) != 1:
            return None
        q = m.graph.node[after[0]]
        quantization = _one_quantization(dq, inits)
        if q.op_type != "QuantizeLinear" or quantization is None or _one_quantization(q, inits) != quantization:
            return None
        return [after[0]]

    def in_float(n: onnx.NodeProto, positions: list[int]) -> list[onnx.NodeProto]:
        q = m.graph.node[positions[0]]  # now written by a Cast
        dq = producers[n.input[0]]
        pool = onnx.NodeProto()
        pool.CopyFrom(n)
        del pool.input[:]
        del pool.output[:]
        pool.input.append(b.fresh("float_codes"))
        pool.output.append(b.fresh("float_max"))
        pool.name = b.fresh("MaxPool")
        return [helper.make_node("Cast", [dq.input[0]], [pool.input[0]], name=b.fresh("to_float"),
                                 to=onnx.TensorProto.FLOAT),
                pool,
                helper.make_node("Cast", [pool.output[0]], [q.output[0]], name=b.fresh("to_codes"),
                                 to=inits[q.input[2]].data_type)]

    _replace_with_quantizers(m, on_codes, in_float)


def _replace_with_quantizers(m: onnx.ModelProto, match: Callable[[onnx.NodeProto], list[int] | None],
                             rewrite: Callable[[onnx.NodeProto, list[int]], list[onnx.NodeProto]]) -> None:
    """Each node that ``match`` accepts, with the QuantizeLinears at the positions it returns (they
    read the node's outputs), becomes the nodes ``rewrite`` gives in place of all of them."""
    nodes: list[onnx.NodeProto] = []
    replaced: set[int] = set()
    for position, n in enumerate(m.graph.node):
        if position in replaced:
            continue
        positions = match(n)
        if positions is None:
            nodes.append(n)
            continue
        nodes += rewrite(n, positions)
        replaced.update(positions)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


#: the emulated model's metadata key listing the code tensors :func:`_centred_codes` renamed
CENTRED_CODES = "ryzen_nb.npu.centred_codes"
_CENTRED = "_centred"


def _centred_codes(m: onnx.ModelProto) -> None:
    """uint8 codes with zero point 128 (XINT8's activations) become int8 codes with zero point 0.

    Every integer kernel starts by centring its codes, ``Cast(c) - 128``, a pass over the tensor
    before each Conv (YOLOv8n XINT8: 64 Subs, 2.3 of 51 ms). QuantizeLinear can write the centred
    codes itself: with zero point 0 in int8 it gives ``c - 128`` exactly, as it rounds the same and
    the two ranges are [0, 255] and [-128, 127]. So each group of such codes — a tensor, and what
    Concat, Split, Reshape... move of it on codes — is written centred when every reader of the
    group takes it centred anyway: a Cast read only by ``Sub 128`` (the Sub goes), a
    DequantizeLinear (its zero point becomes int8 0), or another operator moving codes in the group.
    A group with any other reader, or a graph output, stays as it is. The renamed tensors are listed
    in the model's metadata (:data:`CENTRED_CODES`): :func:`code_sources` finds them."""
    inits, graph_outputs, producers, readers = graph_maps(m)
    nodes = m.graph.node

    def zero_128(n: onnx.NodeProto) -> bool:
        q = _one_quantization(n, inits)
        return q is not None and q[2] == onnx.TensorProto.UINT8 and q[3] == bytes([128])

    def minus_128(n: onnx.NodeProto, cast_output: str) -> bool:
        if n.op_type != "Sub" or list(n.input[:1]) != [cast_output] or n.input[1] not in inits \
                or n.output[0] in graph_outputs:
            return False
        c = numpy_helper.to_array(inits[n.input[1]])
        return c.ndim == 0 and c.dtype == np.float32 and float(c) == 128.0

    def pooled(n: onnx.NodeProto) -> str | None:
        """The codes a MaxPool on float codes writes back (:func:`_max_pools_in_float`: Cast ->
        MaxPool -> Cast): the maximum of centred codes is the centred maximum."""
        after = readers.get(n.output[0], []) if n.op_type == "MaxPool" and len(n.output) == 1 else []
        if len(after) != 1 or n.output[0] in graph_outputs:
            return None
        cast = nodes[after[0]]
        return cast.output[0] if cast.op_type == "Cast" and attribute(cast, "to", 0) == onnx.TensorProto.UINT8 else None

    def group_of(seed: str) -> tuple[set[str], list[int]] | None:
        """The code tensors joined to ``seed`` and the positions of their readers, if all can be centred."""
        members: set[str] = set()
        todo: list[str] = []
        reads: list[int] = []

        def join(names: list[str]) -> None:
            todo.extend(v for v in names if v not in members)
            members.update(names)

        join([seed])
        while todo:
            t = todo.pop()
            p = producers.get(t)
            if t in graph_outputs or p is None:
                return None
            if p.op_type == "Cast":  # the end of a MaxPool on float codes
                pool = producers.get(p.input[0])
                cast = producers.get(pool.input[0]) if pool is not None and pool.op_type == "MaxPool" else None
                if cast is None or cast.op_type != "Cast" or pooled(pool) != t:
                    return None
                join([cast.input[0]])
            elif p.op_type != "QuantizeLinear" or not zero_128(p):
                values = _moved_values(p)
                if values is None:
                    return None
                join(values + [o for o in p.output if o])
            for position in readers.get(t, []):
                n = nodes[position]
                moved = _moved_values(n)
                if n.op_type == "DequantizeLinear" and n.input[0] == t and zero_128(n):
                    reads.append(position)
                elif n.op_type == "Cast" and attribute(n, "to", 0) == onnx.TensorProto.FLOAT and \
                        n.output[0] not in graph_outputs and readers.get(n.output[0]):
                    for r in readers[n.output[0]]:
                        codes = pooled(nodes[r])
                        if codes is not None:
                            join([codes])
                        elif not minus_128(nodes[r], n.output[0]):
                            return None
                    reads.append(position)
                elif moved is not None and t in moved:
                    join(moved + [o for o in n.output if o])
                else:
                    return None
        return members, reads

    centred: set[str] = set()
    seen: set[str] = set()
    rewired: dict[str, str] = {}  # a Sub's output -> the Cast output it now is
    drop: set[int] = set()
    taken = _names(m)
    zero = numpy_helper.from_array(np.zeros((), np.int8), GraphBuilder(reserved=taken).unique("npu_centred_zero_point"))
    for n in list(nodes):
        if n.op_type != "QuantizeLinear" or n.output[0] in seen or not zero_128(n):
            continue
        group = group_of(n.output[0])
        if group is None:
            seen.add(n.output[0])
            continue
        members, reads = group
        seen |= members
        if any(t + _CENTRED in taken for t in members):  # the model has a tensor of that name already
            continue
        centred |= members
        for position in reads:
            r = nodes[position]
            if r.op_type == "DequantizeLinear":
                r.input[2] = zero.name
                continue
            for s in readers[r.output[0]]:
                if nodes[s].op_type == "Sub":
                    rewired[nodes[s].output[0]] = r.output[0]
                    drop.add(s)
    if not centred:
        return
    for n in nodes:
        if n.op_type == "QuantizeLinear" and n.output[0] in centred:
            n.input[2] = zero.name
        elif n.op_type == "Cast" and n.output[0] in centred:  # a MaxPool's codes
            next(a for a in n.attribute if a.name == "to").i = onnx.TensorProto.INT8
        n.input[:] = [rewired.get(t, t) + (_CENTRED if t in centred else "") for t in n.input]
        n.output[:] = [t + _CENTRED if t in centred else t for t in n.output]
    kept = [n for position, n in enumerate(nodes) if position not in drop]
    del m.graph.node[:]
    m.graph.node.extend(kept)
    m.graph.initializer.append(zero)
    helper.set_model_props(m, {**{p.key: p.value for p in m.metadata_props}, CENTRED_CODES: " ".join(sorted(centred))})


#: the emulated model's metadata key listing the int8 code tensors :func:`_float_codes` keeps as floats
FLOAT_CODES = "ryzen_nb.npu.float_codes"
_FLOAT = "_float"
#: adding then subtracting 1.5 * 2**23 rounds a float32 of magnitude below 2**22 to an integer, half to
#: even: the sum lands in [2**23, 2**24), where float32's step is 1, and the constant is even
_ROUNDING_CONSTANT = np.float32(1.5 * 2**23)


def _float_codes(m: onnx.ModelProto) -> None:
    """int8 codes (zero point 0) that every reader turns into floats stay floats.

    A kernel ends with ``QuantizeLinear(v, 1)`` and the next one begins with ``Cast`` (a Conv; to
    float64 for A8W8's Add and Mul) or ``DequantizeLinear`` (an Add, a Mul): two passes, and
    onnxruntime's Cast and DequantizeLinear use one thread. ``Clip(v, -128, 127)``, then
    ``+ 1.5 * 2**23`` and ``- 1.5 * 2**23`` give the same codes as float32 numbers, rounded half to
    even as QuantizeLinear rounds (the clip first is the same saturation: its bounds are integers),
    on every thread; a Cast reader to float32 then reads them as they are (one to float64 casts
    them), and a DequantizeLinear reader becomes a Mul by its scale (``code * scale``, the same
    product). EfficientNet-Lite0 XINT8: 8.2 ms of Q, Cast and DequantizeLinear become 6.7 ms. Where
    ``v`` holds integers already (A8W8's float64 requantisation ends in a Round), the Clip alone
    gives the codes. A tensor with another reader, a graph output or one a subgraph reads stays as
    it is. The tensors are listed in the model's metadata (:data:`FLOAT_CODES`): :func:`code_sources`
    finds them.

    Two more passes go where they can. A Relu or a Clip with constant bounds that only feeds the
    quantizer merges into its Clip (clipping twice is clipping once to the narrower bounds), which
    onnxruntime then fuses into the Conv before it. Codes that only Convs read are rounded by two
    1x1 depthwise Convs with a kernel of ones and a bias of + and - 1.5 * 2**23 (:func:`_rounding_convs`).
    """
    inits, graph_outputs, producers, readers = graph_maps(m)
    nodes = m.graph.node
    positions = {o: i for i, n in enumerate(nodes) for o in n.output}

    def scalar(name: str, dtype: type, value: float) -> bool:
        if name not in inits:
            return False
        a = numpy_helper.to_array(inits[name])
        return a.size == 1 and a.dtype == dtype and float(a.reshape(())) == value

    def float_reader(n: onnx.NodeProto, codes: str) -> bool:
        if n.op_type == "Cast":
            return attribute(n, "to", 0) in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE) and \
                n.output[0] not in graph_outputs
        return n.op_type == "DequantizeLinear" and list(n.input[:1]) == [codes] and n.input[1] in inits and \
            inits[n.input[1]].data_type == onnx.TensorProto.FLOAT and \
            numpy_helper.to_array(inits[n.input[1]]).size == 1 and not attribute(n, "block_size", 0) and \
            (len(n.input) < 3 or not n.input[2] or scalar(n.input[2], np.int8, 0))

    def clip_bounds(n: onnx.NodeProto) -> tuple[float, float] | None:
        """A Relu's or a constant Clip's bounds on float32 values, or None."""
        if n.op_type == "Relu":
            return 0.0, np.inf
        if n.op_type != "Clip" or n.domain or n.attribute:  # Clip before opset 11 has attribute bounds
            return None
        bounds = []
        for name, unbounded in zip((*n.input[1:3], "", "")[:2], (-np.inf, np.inf)):
            if not name:
                bounds.append(unbounded)
            elif name in inits and inits[name].data_type == onnx.TensorProto.FLOAT and \
                    numpy_helper.to_array(inits[name]).size == 1:
                bounds.append(float(numpy_helper.to_array(inits[name]).reshape(())))
            else:
                return None
        return bounds[0], bounds[1]

    def merged_clip(value: str, position: int) -> tuple[str, float, float, list[onnx.NodeProto]]:
        """The tensor to clip, the bounds and the Relus / Clips merged into the quantizer's Clip:
        each one only the quantizer (or the clip merged before it) reads."""
        low, high, merged = -128.0, 127.0, []
        while value not in graph_outputs and readers.get(value) == [position] and value in producers:
            source = producers[value]
            bounds = clip_bounds(source)
            if bounds is None or max(low, bounds[0]) > min(high, bounds[1]):
                break
            low, high = max(low, bounds[0]), min(high, bounds[1])
            merged.append(source)
            value, position = source.input[0], positions[value]
        return value, low, high, merged

    def keeps_integers(n: onnx.NodeProto) -> bool:
        """Whether ``n`` gives integers for integer input: a Cast to float32 or float64, a Relu, or a
        Clip to constant integer bounds."""
        if n.op_type == "Cast":
            return attribute(n, "to", 0) in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
        if n.op_type == "Clip" and not n.attribute:
            return all(not t or t in inits and np.all(np.mod(numpy_helper.to_array(inits[t]), 1) == 0)
                       for t in n.input[1:3])
        return n.op_type == "Relu"

    def integral(value: str) -> bool:
        """Whether ``value`` holds integers whatever the input: a Round (or Floor, Ceil), through
        operators that keep integers (A8W8/A16W8 requantisation rounds in float64)."""
        while value in producers:
            source = producers[value]
            if source.op_type in ("Round", "Floor", "Ceil"):
                return True
            if not keeps_integers(source):
                return False
            value = source.input[0]
        return False

    def conv_readers(codes: str) -> tuple[int, int] | None:
        """(channels, spatial rank) when every reader of ``codes`` is a Cast whose readers are all
        Convs taking it as their input, with a constant weight; otherwise None."""
        shapes = set()
        for r in readers[codes]:
            cast = nodes[r]
            if cast.op_type != "Cast" or not readers.get(cast.output[0]):
                return None
            for c in readers[cast.output[0]]:
                conv = nodes[c]
                if conv.op_type != "Conv" or conv.domain or list(conv.input).count(cast.output[0]) != 1 or \
                        conv.input[0] != cast.output[0] or conv.input[1] not in inits or len(inits[conv.input[1]].dims) < 3:
                    return None
                dims = inits[conv.input[1]].dims
                shapes.add((int(dims[1]) * int(attribute(conv, "group", 1)), len(dims) - 2))
        return shapes.pop() if len(shapes) == 1 else None

    kept: set[str] = set()
    taken = _names(m)
    b = GraphBuilder(prefix="npu_float_codes", reserved=set(taken))
    constants: dict[tuple, onnx.TensorProto] = {}

    def constant(key: tuple, value: np.ndarray, hint: str) -> str:
        if key not in constants:
            constants[key] = numpy_helper.from_array(value, b.fresh(hint))
        return constants[key].name

    rounding = constant(("rounding",), _ROUNDING_CONSTANT, "rounding")
    rewired: dict[str, str] = {}  # a Cast reader's output -> the float codes
    dropped: set[str] = set()  # outputs of the Relus and Clips merged into a quantizer's Clip
    out: list[onnx.NodeProto] = []
    for position, n in enumerate(nodes):
        codes = n.output[0] if n.op_type == "QuantizeLinear" else ""
        if codes and codes not in graph_outputs and codes + _FLOAT not in taken and readers.get(codes) \
                and scalar(n.input[1], np.float32, 1.0) \
                and len(n.input) > 2 and scalar(n.input[2], np.int8, 0) \
                and all(float_reader(nodes[r], codes) for r in readers[codes]):
            value, low, high, merged = merged_clip(n.input[0], position)
            dropped |= {source.output[0] for source in merged}
            clipped, shifted = b.fresh("clipped"), b.fresh("shifted")
            out.append(helper.make_node("Clip", [value, constant(("bound", low), np.float32(low), "low"),
                                                 constant(("bound", high), np.float32(high), "high")],
                                        [clipped], name=b.fresh("Clip")))
            convs = conv_readers(codes)
            if integral(value) and low.is_integer() and high.is_integer():
                # integers clipped to integer bounds: nothing to round (a Round came before)
                out[-1].output[0] = codes + _FLOAT
            elif convs:
                out += _rounding_convs(b, clipped, shifted, codes + _FLOAT, *convs, constant)
            else:
                out += [helper.make_node("Add", [clipped, rounding], [shifted], name=b.fresh("Add")),
                        helper.make_node("Sub", [shifted, rounding], [codes + _FLOAT], name=b.fresh("Sub"))]
            kept.add(codes)
            for r in readers[codes]:
                reader = nodes[r]
                if reader.op_type == "Cast" and attribute(reader, "to", 0) == onnx.TensorProto.FLOAT:
                    rewired[reader.output[0]] = codes + _FLOAT
                elif reader.op_type == "Cast":  # to float64: it stays, and casts the float codes
                    reader.input[0] = codes + _FLOAT
                else:  # DequantizeLinear -> Mul by its scale, in place, under its name (check_kernels reads
                    # it; a Mul by 1 stays: onnxruntime's optimizer drops it)
                    scale = reader.input[1]
                    del reader.input[:]
                    reader.input.extend([codes + _FLOAT, scale])
                    del reader.attribute[:]
                    reader.op_type, reader.domain = "Mul", ""
            continue
        if n.op_type == "Cast" and n.input[0] in kept and attribute(n, "to", 0) == onnx.TensorProto.FLOAT:
            continue
        out.append(n)
    if not kept:
        return
    out = [n for n in out if not (n.output and n.output[0] in dropped)]
    for n in out:
        n.input[:] = [rewired.get(t, t) for t in n.input]
    del m.graph.node[:]
    m.graph.node.extend(out)
    m.graph.initializer.extend(constants.values())
    helper.set_model_props(m, {**{p.key: p.value for p in m.metadata_props}, FLOAT_CODES: " ".join(sorted(kept))})


def _rounding_convs(b: GraphBuilder, clipped: str, shifted: str, codes: str, channels: int, spatial: int,
                    constant: Callable[[tuple, np.ndarray, str], str]) -> list[onnx.NodeProto]:
    """``clipped`` rounded half to even into ``codes`` by two 1x1 depthwise Convs, kernel of ones,
    biases + and - 1.5 * 2**23: each output is ``x * 1 + bias``, one rounding, the same numbers as
    the Add and the Sub. Why Convs: onnxruntime runs Convs in its blocked NCHWc layout, and an Add
    or a Sub between two Convs makes it reorder the tensor out of that layout and back in
    (EfficientNet-Lite0 XINT8: 9.4 -> 6.9 ms). Only where Convs alone read the codes: onnxruntime
    folds a Mul or an Add that follows a Conv into the Conv's weight and bias, which would round
    the bias (and the codes) otherwise."""
    ones = constant(("ones", channels, spatial), np.ones((channels, 1, *[1] * spatial), np.float32), "ones")
    attrs = {"group": channels, "kernel_shape": [1] * spatial}
    plus = constant(("bias", channels, 1), np.full(channels, _ROUNDING_CONSTANT, np.float32), "plus_rounding")
    minus = constant(("bias", channels, -1), np.full(channels, -_ROUNDING_CONSTANT, np.float32), "minus_rounding")
    return [helper.make_node("Conv", [clipped, ones, plus], [shifted], name=b.fresh("Conv"), **attrs),
            helper.make_node("Conv", [shifted, ones, minus], [codes], name=b.fresh("Conv"), **attrs)]


def _listed(m: onnx.ModelProto, key: str) -> list[str]:
    return next((p.value for p in m.metadata_props if p.key == key), "").split()


def code_sources(m: onnx.ModelProto) -> dict[str, tuple[str, bool]]:
    """Code tensors an emulated model holds otherwise than the quantized model: original name ->
    (the tensor holding them, whether centred). :func:`_centred_codes` holds XINT8's uint8 codes as
    int8 codes, :func:`_float_codes` int8 codes as float32 numbers; :func:`restored_codes` gives
    the original codes back from the holder's value."""
    floats = set(_listed(m, FLOAT_CODES))
    sources: dict[str, tuple[str, bool]] = {}
    for name in _listed(m, CENTRED_CODES):
        twin = name + _CENTRED
        sources[name] = (twin + _FLOAT if twin in floats else twin, True)
    for name in floats:
        if not name.endswith(_CENTRED) or name[:-len(_CENTRED)] not in sources:
            sources[name] = (name + _FLOAT, False)
    return sources


def restored_codes(value: np.ndarray, centred: bool) -> np.ndarray:
    """The original codes from the value of their holder (:func:`code_sources`): float32 codes are
    integers in [-128, 127]; centred ones are uint8 codes minus 128."""
    codes = value.astype(np.int8) if value.dtype.kind == "f" else value
    return (codes.astype(np.int16) + 128).astype(np.uint8) if centred else codes


def _names(m: onnx.ModelProto) -> set[str]:
    """Every tensor and node name the main graph uses: a renamed tensor must not take one."""
    return {name for n in m.graph.node for name in (*n.input, *n.output, n.name)} | \
        {t.name for t in m.graph.initializer} | {v.name for v in (*m.graph.input, *m.graph.output)}


def graph_maps(m: onnx.ModelProto) -> tuple[dict[str, onnx.TensorProto], set[str], dict[str, onnx.NodeProto],
                                            dict[str, list[int]]]:
    """What the passes on codes look up: initializers by name, the tensors to keep as they are (the
    graph outputs, and what an If / Loop / Scan body reads from the main graph: its readers are not
    in the node list, and a pass that moved or renamed such a tensor would leave the body reading a
    name nothing writes), each tensor's producer and the positions of its readers."""
    inits = {t.name: t for t in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    readers: dict[str, list[int]] = {}
    for position, n in enumerate(m.graph.node):
        for name in n.input:
            readers.setdefault(name, []).append(position)
    return inits, {o.name for o in m.graph.output} | outer_scope_reads(m.graph), producers, readers


def _one_quantization(n: onnx.NodeProto, inits: dict[str, onnx.TensorProto]) -> tuple | None:
    """The one constant scale and zero point of a QuantizeLinear / DequantizeLinear (their types
    and bytes, to compare), or None when it has per-axis or blocked ones, or computed ones."""
    if len(n.input) < 3 or any(name not in inits for name in n.input[1:3]) or attribute(n, "block_size", 0):
        return None
    scale, zero_point = (numpy_helper.to_array(inits[name]) for name in n.input[1:3])
    if np.size(scale) != 1:
        return None
    return inits[n.input[1]].data_type, scale.tobytes(), inits[n.input[2]].data_type, zero_point.tobytes()
