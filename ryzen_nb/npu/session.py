"""``NPUSession``: run a model with the NPU's arithmetic on a CPU, behind onnxruntime's surface.

>>> session = ryzen_nb.npu.NPUSession("model_xint8.onnx", target="PHX")      # doctest: +SKIP
>>> session.run(None, {"input": x})[0]                                         # doctest: +SKIP

NPU partitions compute with NPU numerics (integer accumulation and requantisation for XINT8 /
A8W8 / A16W8, bf16 with exact accumulation for BF16 / BFP16 / MX, bf16 non-linearities); CPU
partitions compute in float32 as onnxruntime does. ``rounding`` selects the XINT8 requantisation
ties rule: ``"half_up"`` (DPU_ROUND, the default, A11) or ``"half_even"`` (provider option
``xlnx_enable_py3_round``). ``accumulation`` of BF16/BFP16/MX MAC kernels: ``"exact"`` (the
default: bf16 products summed exactly, bit for bit what :mod:`ryzen_nb.npu.reference` computes) or
``"fp32"`` (float32 sums in onnxruntime's order, as FP32 accumulators do in some order: several
times faster, and within one bf16 unit of ``"exact"`` where a rounding flips).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.convert import float16_to_float32
from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.npu.compile import NPUProgram, compile
from ryzen_nb.npu.kernels import Kernel, extract_kernels
from ryzen_nb.npu.lower import MARKER_DOMAIN, lower, mark
from ryzen_nb.spec.targets import Target

__all__ = ["NPUSession"]


class NPUSession:
    """Emulated inference with the ``onnxruntime.InferenceSession`` surface."""

    def __init__(self, model: ModelLike, target: str | Target = "STX", *, rounding: str = "half_up",
                 accumulation: str = "exact", **compile_options: Any) -> None:
        if rounding not in ("half_up", "half_even"):
            raise ConfigError(f"rounding must be 'half_up' (DPU_ROUND) or 'half_even'; got {rounding!r}.")
        if accumulation not in ("exact", "fp32"):
            raise ConfigError(f"accumulation must be 'exact' or 'fp32' (faster BF16 kernels); got {accumulation!r}.")
        index = ModelIndex.of(model)  # loaded (copied) once; compile() and the kernels share this index
        if any(t.data_type == onnx.TensorProto.FLOAT16 for t in index.graph.initializer):
            # an FP16 model: compile() places its operators on the NPU in BF16, as an FP32 model's,
            # but the kernels below work on float32 tensors; emulate a float32 copy that keeps the
            # float16 inputs and outputs (as convert_bf16 does with FP16 models)
            index = ModelIndex(float16_to_float32(index.model, keep_io_types=True))
        self.rounding = rounding
        self.accumulation = accumulation
        self.program: NPUProgram = compile(index, target, **compile_options)
        self.model = self.program.model
        self.kernels: list[Kernel] = extract_kernels(self.program)
        self.marked = mark(self.model, self.program, self.kernels)
        self.emulated = lower(self.marked, self.kernels, rounding, accumulation)
        self._session = ort_session(self.emulated)

    # -- the onnxruntime surface ----------------------------------------------------------------------
    def get_inputs(self) -> list[Any]:
        return self._session.get_inputs()

    def get_outputs(self) -> list[Any]:
        return self._session.get_outputs()

    def get_modelmeta(self) -> Any:
        return self._session.get_modelmeta()

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, np.ndarray], run_options: Any = None) -> list[np.ndarray]:
        return self._session.run(output_names, dict(input_feed), run_options)

    # -- beyond onnxruntime -------------------------------------------------------------------------------
    @property
    def target(self) -> Target:
        return self.program.target

    def emulation(self) -> Any:
        """pandas DataFrame: for each NPU operator, whether it computes with NPU arithmetic."""
        import pandas as pd

        by_node = {id(n): (k.op, k.precision, "integer" if k.integer else ("bf16 evaluation" if k.attrs.get("bf16")
                                                                          else "bf16, exact accumulation"))
                   for k in self.kernels for n in k.replaced}
        rows = []
        for n, node in zip(self.program.nodes, self.model.graph.node):
            if n.device != "NPU" or n.quantizer:
                continue
            kind = by_node.get(id(node), (None, None, None))[2]
            if kind is None:
                kind = "bf16 rounding" if n.precision in ("BF16", "BFP16", "MX") else "exact as in the QDQ simulation"
            rows.append({"node": n.name, "op": n.op_type, "precision": n.precision, "arithmetic": kind})
        return pd.DataFrame(rows)

    def check_kernels(self, input_feed: Mapping[str, np.ndarray]) -> Any:
        """Recompute every NPU kernel with the numpy reference from the inputs it actually
        received in one emulated run, and compare its output bit for bit (pandas DataFrame).
        (With ``accumulation="fp32"`` float kernels may differ by one bf16 unit: the reference sums exactly.)"""
        import pandas as pd

        from ryzen_nb.graph.prepare import run_with_outputs
        from ryzen_nb.npu.reference import run_kernel

        markers = [n for n in self.marked.graph.node if n.domain == MARKER_DOMAIN]
        consts = ModelIndex(self.emulated).constants
        wanted = sorted({t for n in markers for t in list(n.input) + list(n.output) if t and t not in consts})
        values = run_with_outputs(self.emulated, wanted, input_feed) | consts
        rows = []
        for n in markers:
            kid = next(a.i for a in n.attribute if a.name == "kid")
            k = self.kernels[kid]
            inputs = [values.get(t) if t else None for t in n.input]
            expected = run_kernel(k, inputs, self.rounding)
            got = values[n.output[0]]
            same = (got.view(np.uint8) == np.asarray(expected, got.dtype).view(np.uint8)).reshape(got.size, -1).all(axis=1)
            rows.append({"kernel": n.name, "op": k.op, "precision": k.precision, "elements": got.size,
                         "mismatches": int((~same).sum())})
        return pd.DataFrame(rows)

    def reference_run(self, input_feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The whole model by onnx's ReferenceEvaluator with the numpy kernels (slow; for tests).

        Float operators outside the kernels (LayerNorm, Softmax...) are computed by onnx's
        reference implementation there and by onnxruntime in :meth:`run`, which may differ in the
        last bit; :meth:`check_kernels` compares the kernels alone."""
        from onnx.reference import ReferenceEvaluator
        from onnx.reference.op_run import OpRun

        from ryzen_nb.npu.reference import run_kernel

        kernels, rounding = self.kernels, self.rounding

        class Kernel(OpRun):  # noqa: N801 - the marker op's name
            op_domain = MARKER_DOMAIN

            def _run(self, *inputs, kid=None):  # type: ignore[override]
                return (run_kernel(kernels[kid], list(inputs), rounding),)

        evaluator = ReferenceEvaluator(self.marked, new_ops=[Kernel])
        return evaluator.run(None, dict(input_feed))

    def __repr__(self) -> str:
        return f"<NPUSession {self.program.target.name}: {self.program.summary()}, {len(self.kernels)} NPU kernels>"

