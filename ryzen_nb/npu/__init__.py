"""The NPU emulator: targets, supported operators, partitioning and the compile report."""

from ryzen_nb.npu.compile import NPUProgram, compile
from ryzen_nb.npu.ops import SUPPORTED, is_supported, supported_ops
from ryzen_nb.npu.partition import NodeAssignment, PartitionOptions
from ryzen_nb.npu.session import NPUSession
from ryzen_nb.npu.targets import TARGETS, Target, get_target, target_names

__all__ = [
    "SUPPORTED",
    "TARGETS",
    "NPUProgram",
    "NPUSession",
    "NodeAssignment",
    "PartitionOptions",
    "Target",
    "compile",
    "get_target",
    "is_supported",
    "supported_ops",
    "target_names",
]
