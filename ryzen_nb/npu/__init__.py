"""The NPU emulator: targets, supported operators, partitioning, compile report, numerics, latency.

>>> program = ryzen_nb.npu.compile("model_xint8.onnx", target="STX")   # doctest: +SKIP
>>> session = ryzen_nb.npu.NPUSession("model_xint8.onnx", target="STX")  # doctest: +SKIP
>>> ryzen_nb.npu.divergence("model_xint8.onnx", images, target="STX")   # doctest: +SKIP
>>> ryzen_nb.npu.estimate_latency("model_xint8.onnx", target="STX")     # doctest: +SKIP
"""

from ryzen_nb.npu.compile import NPUProgram, compile
from ryzen_nb.npu.divergence import DivergenceReport, divergence
from ryzen_nb.npu.latency import LatencyAssumptions, LatencyEstimate, estimate_latency
from ryzen_nb.npu.partition import NodeAssignment, PartitionOptions
from ryzen_nb.npu.session import NPUSession
from ryzen_nb.spec.operators import SUPPORTED, is_supported, supported_ops
from ryzen_nb.spec.targets import TARGETS, Target, get_target, target_names

__all__ = [
    "SUPPORTED",
    "TARGETS",
    "DivergenceReport",
    "LatencyAssumptions",
    "LatencyEstimate",
    "NPUProgram",
    "NPUSession",
    "NodeAssignment",
    "PartitionOptions",
    "Target",
    "compile",
    "divergence",
    "estimate_latency",
    "get_target",
    "is_supported",
    "supported_ops",
    "target_names",
]
