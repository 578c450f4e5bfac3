"""``NPUSession``: run a model with the NPU's arithmetic on a CPU, behind onnxruntime's surface.

>>> session = ryzen_nb.npu.NPUSession("model_xint8.onnx", target="PHX")      # doctest: +SKIP
>>> session.run(None, {"input": x})[0]                                         # doctest: +SKIP

NPU partitions compute with NPU numerics (integer accumulation and requantisation for XINT8 /
A8W8 / A16W8, bf16 with exact accumulation for BF16 / BFP16 / MX, bf16 non-linearities); CPU
partitions compute in float32 as onnxruntime does. ``rounding`` selects the XINT8 requantisation
ties rule: ``"half_up"`` (DPU_ROUND, the default, A11) or ``"half_even"`` (provider option
``xlnx_enable_py3_round``). ``accumulation`` of BF16/BFP16/MX MAC kernels: ``"exact"`` (the
default: bf16 products summed exactly, bit for bit what the kernels' numpy reference computes) or
``"fp32"`` (float32 sums in onnxruntime's order, as FP32 accumulators do in some order: several
times faster, and within one bf16 unit of ``"exact"`` where a rounding flips).

The kernels are :mod:`ryzen_nb.npu.kernels`; the marked and lowered graphs :mod:`ryzen_nb.npu.lower`.
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
from ryzen_nb.graph.prepare import _default_opset, ort_session, run_with_outputs, upgrade_opset
from ryzen_nb.npu.bf16_passes import with_widened
from ryzen_nb.npu.compile import NPUProgram, compile
from ryzen_nb.npu.kernels import Kernel, match_kernels
from ryzen_nb.npu.lower import MARKER_DOMAIN, code_sources, lower, mark, marker_kernel, restored_codes
from ryzen_nb.spec.targets import Target

#: the first opset whose Cast takes bfloat16 (the bf16 rounding of float models' NPU operators)
BF16_CAST_OPSET = 13

__all__ = ["NPUSession"]


def _has_float16_weights(index: ModelIndex) -> bool:
    return any(t.data_type == onnx.TensorProto.FLOAT16 for t in index.graph.initializer)


class NPUSession:
    """Emulated inference with the ``onnxruntime.InferenceSession`` surface.

    ``model``: a path, bytes, an ``onnx.ModelProto``, a :class:`~ryzen_nb.graph.index.ModelIndex`
    (used as it is: not loaded or indexed again) or an :class:`~ryzen_nb.npu.compile.NPUProgram`
    (emulated as compiled; ``target`` and compile options do not apply then)."""

    def __init__(self, model: ModelLike | ModelIndex | NPUProgram, target: str | Target = "STX", *,
                 rounding: str = "half_up", accumulation: str = "exact", **compile_options: Any) -> None:
        if rounding not in ("half_up", "half_even"):
            raise ConfigError(f"rounding must be 'half_up' (DPU_ROUND) or 'half_even'; got {rounding!r}.")
        if accumulation not in ("exact", "fp32"):
            raise ConfigError(f"accumulation must be 'exact' or 'fp32' (faster BF16 kernels); got {accumulation!r}.")
        if isinstance(model, NPUProgram):
            if compile_options:
                raise ConfigError(f"compile options ({', '.join(compile_options)}) apply when NPUSession compiles "
                                  "the model; this NPUProgram is compiled already.")
            if _has_float16_weights(model.index):
                raise ConfigError("NPUSession emulates an FP16 model through a float32 copy it compiles itself: "
                                  "pass the model, not its NPUProgram.")
            program = model
        else:
            index = ModelIndex.of(model)  # loaded (copied) once; compile() and the kernels share this index
            if _default_opset(index.model) < BF16_CAST_OPSET:
                # bf16 rounding is a Cast to bfloat16, which ONNX has from opset 13 (PP-OCR exports opset 11)
                index = ModelIndex(upgrade_opset(index.model, BF16_CAST_OPSET))
            if _has_float16_weights(index):
                # an FP16 model: compile() places its operators on the NPU in BF16, as an FP32 model's,
                # but the kernels work on float32 tensors; emulate a float32 copy that keeps the
                # float16 inputs and outputs (as convert_bf16 does with FP16 models)
                index = ModelIndex(float16_to_float32(index.model, keep_io_types=True))
            program = compile(index, target, **compile_options)
        self.rounding = rounding
        self.accumulation = accumulation
        self.program: NPUProgram = program
        self.model = program.model
        kernels, declined = match_kernels(program)
        self.kernels: list[Kernel] = kernels
        #: NPU operators a registered kernel declined, and why (node position -> reason)
        self.declined: dict[int, str] = declined
        self.marked = mark(program, self.kernels)
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
        """pandas DataFrame: for each NPU operator, whether it computes with NPU arithmetic, and
        where a kernel of the emulator declined it, why (``reason``)."""
        import pandas as pd

        by_node = {id(n): k for k in self.kernels for n in k.replaced}
        rows = []
        for n, node in zip(self.program.nodes, self.model.graph.node):
            if n.device != "NPU" or n.quantizer:
                continue
            kernel = by_node.get(id(node))
            if kernel is not None:
                kind = kernel.arithmetic
            else:
                kind = "bf16 rounding" if n.precision in ("BF16", "BFP16", "MX") else "exact as in the QDQ simulation"
            rows.append({"node": n.name, "op": n.op_type, "precision": n.precision, "arithmetic": kind,
                         "reason": self.declined.get(n.index, "")})
        return pd.DataFrame(rows, columns=["node", "op", "precision", "arithmetic", "reason"])

    def tensor_values(self, names: Sequence[str], input_feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Values of tensors inside the emulated model for one input feed, by their names in the
        quantized model (and the graph outputs): what a kernel reads and writes, e.g. its output
        codes ``session.tensor_values([kernel.output.codes], feed)``. The emulated graph holds some
        codes otherwise, under another name (XINT8's uint8 codes centred as int8, codes only read as
        floats as float32 numbers: :func:`~ryzen_nb.npu.lower.code_sources`); they are given back
        as the codes the quantized model holds. A float32 copy of a bf16 tensor that the emulated
        graph dropped (:func:`~ryzen_nb.npu.bf16_passes.drop_bf16_round_trips`) is computed again."""
        sources = code_sources(self.emulated)
        wanted = [sources[t][0] if t in sources else t for t in names]
        values = run_with_outputs(with_widened(self.emulated, wanted), wanted, input_feed)
        for name in names:
            if name in sources and sources[name][0] in values:
                values[name] = restored_codes(values.pop(sources[name][0]), sources[name][1])
        return values

    def check_kernels(self, input_feed: Mapping[str, np.ndarray]) -> Any:
        """Recompute every NPU kernel with its numpy reference from the inputs it actually
        received in one emulated run, and compare its outputs bit for bit (pandas DataFrame: the
        elements that differ, and ``max_units``, the largest difference in codes for integer
        outputs and in bf16 units for float ones).

        Two kinds of kernel may differ by one bf16 unit without an error in the emulation: with
        ``accumulation="fp32"`` the float MAC kernels (the reference sums exactly), and the float
        evaluations of an integer model (Softmax, LayerNormalization, Div... computed in float32 on
        bf16 values and rounded to bf16), where onnxruntime's float32 function may miss the true
        value (the reference's, in float64) in the last bit and the bf16 rounding of a value on the
        edge then goes the other way (YOLOv8n XINT8: 2 of 134,400 Softmax values). Every other
        difference is a defect."""
        import pandas as pd

        markers = [n for n in self.marked.graph.node if n.domain == MARKER_DOMAIN]
        # a kernel may fold a constant it reads into its own (the emulated graph then drops it)
        consts = ModelIndex(self.marked, infer=False).constants | ModelIndex(self.emulated).constants
        wanted = sorted({t for n in markers for t in list(n.input) + list(n.output) if t and t not in consts})
        values = self.tensor_values(wanted, input_feed) | consts
        rows = []
        for n in markers:
            k = marker_kernel(n, self.kernels)
            expected = k.reference([values.get(t) if t else None for t in n.input], self.rounding)
            elements = mismatches = 0
            units = 0.0
            for name, want in zip(n.output, expected):
                if not name:
                    continue
                got = values[name]
                want = np.asarray(want, got.dtype)
                same = (got.view(np.uint8) == want.view(np.uint8)).reshape(got.size, -1).all(axis=1)
                elements += got.size
                mismatches += int((~same).sum())
                if not same.all():
                    units = max(units, _units_apart(got.ravel()[~same], want.ravel()[~same]))
            rows.append({"kernel": n.name, "op": k.op, "precision": k.precision, "class": type(k).__name__,
                         "elements": elements, "mismatches": mismatches, "max_units": units})
        return pd.DataFrame(rows, columns=["kernel", "op", "precision", "class", "elements", "mismatches", "max_units"])

    def reference_run(self, input_feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The whole model by onnx's ReferenceEvaluator with the numpy kernels (slow; for tests).

        Float operators outside the kernels (a float model's LayerNorm...) are computed by onnx's
        reference implementation there and by onnxruntime in :meth:`run`, which may differ in the
        last bit; :meth:`check_kernels` compares the kernels alone."""
        from onnx.reference import ReferenceEvaluator  # onnx's numpy evaluator: slow to import, for tests
        from onnx.reference.op_run import OpRun

        kernels, rounding = self.kernels, self.rounding

        class Kernel(OpRun):  # noqa: N801 - the evaluator finds an operator's implementation by its name
            op_domain = MARKER_DOMAIN

            def _run(self, *inputs: np.ndarray, kid: int | None = None) -> tuple[np.ndarray, ...]:  # type: ignore[override]
                assert kid is not None
                return tuple(kernels[kid].reference(list(inputs), rounding))

        evaluator = ReferenceEvaluator(self.marked, new_ops=[Kernel])
        return evaluator.run(None, dict(input_feed))

    def __repr__(self) -> str:
        return f"<NPUSession {self.program.target.name}: {self.program.summary()}, {len(self.kernels)} NPU kernels>"


def _units_apart(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference between ``got`` and ``want``: in codes for integers, in bf16 units
    for floats (2**(e - 8) at a reference value m * 2**e with 0.5 <= |m| < 1, and 2**-133, bf16's
    smallest step, near 0); inf where one is NaN or infinite and the other is not."""
    if got.dtype.kind != "f":
        return float(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64))))
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(got64) & np.isnan(want64)  # NaNs with different payloads
    got64, want64 = got64[~both_nan], want64[~both_nan]
    if not got64.size:
        return 0.0
    if not (np.isfinite(got64).all() and np.isfinite(want64).all()):
        return float("inf")
    _, exponent = np.frexp(want64)
    unit = np.maximum(np.ldexp(1.0, exponent - 8), 2.0**-133)
    return float(np.max(np.abs(got64 - want64) / unit))
