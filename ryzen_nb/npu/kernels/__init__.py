"""The NPU kernels the emulator computes with NPU arithmetic: one class per operator, and a registry.

In the manner of onnx's reference evaluator, every kernel is a small class (:mod:`.base` says what
each one does: match a node, compute a numpy reference, lower itself to standard ONNX, declare its
test cases) and :data:`REGISTRY` maps an operator type to the classes that may compute it, tried in
order. :func:`extract_kernels` walks a compiled model and asks the registry about every NPU node.

=========================  ===================================================  ==================
kernel class               operators                                            precisions
=========================  ===================================================  ==================
IntegerConv, -Gemm,        Conv (2-D), Gemm, MatMul (also of two activations)   XINT8, A8W8, A16W8
-MatMul (:mod:`.mac`)
IntegerAdd, -Mul           Add, Mul                                             XINT8, A8W8, A16W8
IntegerAveragePool,        AveragePool, GlobalAveragePool (:mod:`.pool`)        XINT8, A8W8, A16W8
-GlobalAveragePool
IntegerLeakyRelu           LeakyRelu                                            XINT8, A8W8, A16W8
IntegerHardSigmoid         HardSigmoid, the DPU's (x + 3) * 2731 / 2**14        XINT8
FloatConv, -Gemm, -MatMul  Conv, Gemm, MatMul (:mod:`.float_mac`)               BF16, BFP16, MX
Bf16Evaluation             Softmax, Sigmoid, Erf, LayerNorm... (A13)            XINT8, A8W8, A16W8
=========================  ===================================================  ==================

Shared pieces: :mod:`.arithmetic` (numpy: multiplier, rne_shift, im2col...), :mod:`.lowering` and
:mod:`.exact_mac` (ONNX: exact requantisation, the exact float32 MAC), :mod:`.integer` (what the
integer kernels share), :mod:`.cases` (the test cases' graph builder).

Every other NPU operator computes as in the QDQ simulation (which for value-preserving operators —
Reshape, MaxPool, Concat with shared scales — is exact), rounded to bf16 in float models.
"""

from __future__ import annotations

from ryzen_nb.npu.compile import NPUProgram
from ryzen_nb.npu.kernels.arithmetic import bf16, multiplier, rne_shift
from ryzen_nb.npu.kernels.base import Kernel, KernelGraph, QuantRef
from ryzen_nb.npu.kernels.elementwise import IntegerAdd, IntegerHardSigmoid, IntegerLeakyRelu, IntegerMul
from ryzen_nb.npu.kernels.float_mac import FloatConv, FloatGemm, FloatMatMul
from ryzen_nb.npu.kernels.mac import IntegerConv, IntegerGemm, IntegerMatMul
from ryzen_nb.npu.kernels.nonlinear import NONLINEAR_OPS, Bf16Evaluation
from ryzen_nb.npu.kernels.pool import IntegerAveragePool, IntegerGlobalAveragePool

__all__ = ["KERNELS", "NONLINEAR_OPS", "REGISTRY", "Kernel", "KernelGraph", "QuantRef", "bf16", "candidates",
           "extract_kernels", "match_kernels", "multiplier", "rne_shift"]

#: every kernel class; for one operator type the registry tries them in this order (HardSigmoid:
#: the DPU's integer kernel before the bf16 evaluation)
KERNELS: tuple[type[Kernel], ...] = (
    IntegerConv, IntegerGemm, IntegerMatMul, IntegerAdd, IntegerMul, IntegerAveragePool, IntegerGlobalAveragePool,
    IntegerLeakyRelu, IntegerHardSigmoid,
    FloatConv, FloatGemm, FloatMatMul,
    Bf16Evaluation,
)

#: operator type -> the kernel classes that may compute it
REGISTRY: dict[str, tuple[type[Kernel], ...]] = {}
for _kernel in KERNELS:
    for _op in _kernel.op_types:
        REGISTRY[_op] = (*REGISTRY.get(_op, ()), _kernel)


def candidates(op_type: str, precision: str) -> tuple[type[Kernel], ...]:
    """The kernel classes that compute ``op_type`` in ``precision``, in the order to try them."""
    return tuple(k for k in REGISTRY.get(op_type, ()) if precision in k.precisions)


def match_kernels(program: NPUProgram) -> tuple[list[Kernel], dict[int, str]]:
    """The kernels of a compiled :class:`~ryzen_nb.npu.compile.NPUProgram` (its model's index is
    reused), and for the NPU nodes a registered kernel declined, why (node position -> reason)."""
    index = program.index
    graph = KernelGraph(index, program.nodes)
    kernels: list[Kernel] = []
    declined: dict[int, str] = {}
    taken: set[int] = set()  # nodes a kernel already stands for (its activation, its quantizer)
    for i, node in enumerate(index.nodes):
        a = program.nodes[i]
        if a.device != "NPU" or a.quantizer or i in taken:
            continue
        reasons = []
        for kernel_class in candidates(node.op_type, a.precision):
            found = kernel_class.match(node, a.precision, graph)
            if isinstance(found, Kernel):
                kernels.append(found)
                taken.update(index.index_of(n) for n in found.replaced)
                break
            reasons.append(found)
        else:
            if reasons:
                declined[i] = "; ".join(reasons)
    return kernels, declined


def extract_kernels(program: NPUProgram) -> list[Kernel]:
    """One :class:`Kernel` per NPU operator the emulator computes with NPU arithmetic."""
    return match_kernels(program)[0]
