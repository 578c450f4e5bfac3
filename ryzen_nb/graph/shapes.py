"""Input shapes: fixing dynamic dimensions for the work, and giving the batch back afterwards.

The quantizer works on a static copy of a model (shape inference, constant folding, the NPU's
shape-dependent rewrites, calibration all need one). Exporters leave the batch dimension dynamic
(``batch``, ``N``, ``?``, or Paddle's ``-1``), and a quantized model must keep it so, as AMD Quark's
do: :func:`dynamic_batch` records it, :func:`make_inputs_static` fixes every dynamic dimension from
``input_shapes`` or the first calibration sample, and :func:`restore_dynamic_batch` makes the batch
dynamic again in the output — only after checking that the quantized model really runs with another
batch (:func:`batch_free_check`), since a graph can compute shapes from its batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from ryzen_nb.errors import ModelError
from ryzen_nb.graph.checks import walk_graphs

__all__ = ["dynamic_batch", "make_inputs_static", "fixed_dim", "batch_fixed_by", "with_free_batch", "with_input_shapes", "restore_dynamic_batch",
           "input_dims"]


def input_dims(vi: onnx.ValueInfoProto) -> list[int | str | None]:
    """A value's dimensions: ints where fixed, the dim_param (or None) where dynamic; a negative
    dim_value (Paddle's -1) counts as dynamic."""
    out: list[int | str | None] = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0 else (d.dim_param or None))
    return out


def dynamic_batch(m: onnx.ModelProto) -> dict[str, str]:
    """Graph inputs whose first dimension is dynamic -> its label (``"batch"`` when it has none)."""
    inits = {t.name for t in m.graph.initializer}
    out: dict[str, str] = {}
    for vi in m.graph.input:
        if vi.name in inits or not vi.type.tensor_type.HasField("shape"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if dims and not (dims[0].HasField("dim_value") and dims[0].dim_value > 0):
            out[vi.name] = dims[0].dim_param or "batch"
    return out


def make_inputs_static(
    m: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None, sample: Mapping[str, np.ndarray] | None,
    free_batch: Mapping[str, str] = (), *, require_all: bool = True,
) -> tuple[onnx.ModelProto, list[str]]:
    """Fix every dynamic input dimension of ``m`` in place, from ``input_shapes``, else from
    ``sample``'s shapes; a dimension left dynamic is an error naming it (unless not
    ``require_all``). For an input whose batch is dynamic (``free_batch``) the sample's batch wins
    over ``input_shapes``': calibration runs the samples as they come, and the quantized model gets
    its dynamic batch back anyway."""
    inits = {t.name for t in m.graph.initializer}
    inputs = {vi.name: vi for vi in m.graph.input if vi.name not in inits}
    given: dict[str, list[int]] = {}
    if input_shapes:
        unknown = [n for n in input_shapes if n not in inputs]
        if unknown:
            raise ModelError(
                f"input_shapes names {unknown}, which the model does not have; its inputs are {list(inputs)}."
            )
        given.update({k: [fixed_dim(d) for d in v] for k, v in input_shapes.items()})
    for name, value in (sample or {}).items():
        if name not in inputs:
            continue
        shape = list(np.shape(value))
        if name not in given:
            given[name] = shape
        elif shape and len(shape) == len(given[name]):
            if name in free_batch:
                given[name][0] = shape[0]
            # a dimension input_shapes leaves dynamic ("N", None, -1) takes the sample's size inside
            given[name] = [shape[i] if d is None else d for i, d in enumerate(given[name])]
    fixed, problems = [], []
    for name, vi in inputs.items():
        declared = input_dims(vi)
        shape = given.get(name)
        if shape is not None and len(shape) != len(declared):
            dims = ", ".join(str(d) if d is not None else "?" for d in declared)
            raise ModelError(
                f"Input {name!r} has rank {len(declared)} ([{dims}]), but the shape given for it is {list(shape)}."
            )
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if isinstance(declared[i], int):
                if shape is not None and shape[i] != d.dim_value:
                    raise ModelError(
                        f"Input {name!r} dimension {i} is fixed to {d.dim_value} in the model, but the data "
                        f"or input_shapes give {shape[i]}. Feed tensors of shape "
                        f"{[x if isinstance(x, int) else '?' for x in declared]}."
                    )
                continue
            label = d.dim_param or ("-1" if d.HasField("dim_value") else "?")
            if shape is None or shape[i] is None:
                problems.append(f"{name!r} dimension {i} ({label})")
                continue
            d.Clear()
            d.dim_value = int(shape[i])
            fixed.append(f"{name} dim {i} ({label}) = {shape[i]}")
    if problems and require_all:
        raise ModelError(
            "The model has dynamic input dimensions: " + ", ".join(problems) + ". The NPU flow needs static "
            "shapes: pass input_shapes={name: [...]} or calibration data, whose first sample fixes them."
        )
    if fixed:
        # stale value_info for intermediate tensors (If/Loop bodies too) would pin the old dynamic shapes
        for g in walk_graphs(m.graph):
            del g.value_info[:]
    return m, fixed


def fixed_dim(d: Any) -> int | None:
    """An ``input_shapes`` dimension: a size, or None where the caller leaves it dynamic (a label such
    as ``"N"``, ``None`` or ``-1``)."""
    if isinstance(d, (int, np.integer)) and int(d) >= 0:
        return int(d)
    if isinstance(d, str) or d is None or (isinstance(d, (int, np.integer)) and int(d) < 0):
        return None
    raise ModelError(f"input_shapes dimensions are sizes, or a name such as 'N' to keep one dynamic; got {d!r}.")


def batch_fixed_by(input_shapes: Mapping[str, Sequence[Any]] | None, name: str) -> bool:
    """Whether ``input_shapes`` gives input ``name`` a fixed batch size (then the quantized model keeps
    it: the NPU compiles static shapes only); a label there keeps the batch dynamic."""
    dims = list((input_shapes or {}).get(name) or [])
    return bool(dims) and fixed_dim(dims[0]) is not None


def with_input_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    """A copy of ``model`` with the dynamic input dimensions that ``input_shapes`` gives fixed (the
    command line's ``--input-shape`` for commands that take a model as it is)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return make_inputs_static(m, input_shapes, None, require_all=False)[0]


def with_free_batch(model: onnx.ModelProto, free_batch: Mapping[str, str],
                    outputs_like: Sequence[onnx.ValueInfoProto] = ()) -> onnx.ModelProto:
    """A copy of ``model`` whose inputs in ``free_batch`` have their dynamic batch label back, and
    whose outputs are declared with the shapes of ``outputs_like`` (the source model's outputs;
    element types kept) or without shapes; intermediate shapes are dropped (they hold the fixed batch)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in m.graph.input:
        if vi.name in free_batch and vi.type.tensor_type.shape.dim:
            d = vi.type.tensor_type.shape.dim[0]
            d.Clear()
            d.dim_param = free_batch[vi.name]
    declared = {vi.name: vi for vi in outputs_like}
    for vi in m.graph.output:
        source = declared.get(vi.name)
        t = vi.type.tensor_type
        if source is not None and source.type.tensor_type.HasField("shape"):
            t.shape.CopyFrom(source.type.tensor_type.shape)
            for d in t.shape.dim:  # Paddle's -1 is not valid ONNX: a named dynamic dimension instead
                if d.HasField("dim_value") and d.dim_value < 0:
                    d.Clear()
                    d.dim_param = "batch"
        else:
            t.ClearField("shape")
    for g in walk_graphs(m.graph):
        del g.value_info[:]
    return m


def restore_dynamic_batch(model: onnx.ModelProto, free_batch: Mapping[str, str],
                          outputs_like: Sequence[onnx.ValueInfoProto],
                          check: Callable[[onnx.ModelProto], str | None],
                          adapt: Callable[[onnx.ModelProto], onnx.ModelProto] | None = None,
                          ) -> tuple[onnx.ModelProto, str]:
    """``model`` with its dynamic batch back (:func:`with_free_batch`, then ``adapt``: what else in the
    graph wrote the batch down) when ``check(candidate)`` accepts it, else ``model`` as it is; and a
    note saying which happened and why."""
    if not free_batch:
        return model, ""
    candidate = with_free_batch(model, free_batch, outputs_like)
    if adapt is not None:
        candidate = adapt(candidate)
    problem = check(candidate)
    names = ", ".join(f"{n} ({label})" for n, label in free_batch.items())
    if problem is None:
        return candidate, f"kept the dynamic batch dimension of {names}"
    return model, (f"the batch dimension of {names} stays fixed: the quantized model does not run with another "
                   f"batch ({problem}); the graph computes shapes from its batch")
