"""Every NPU kernel in every precision it computes, with every activation it takes fused: the lowered
graph run by onnxruntime equals the kernel's numpy reference bit for bit.

The cases are the kernels' own (``Kernel.cases()``): a kernel class cannot be registered without
cases covering each of its operator types x precisions x fused activations, and a kernel class that
is not registered fails :func:`test_every_kernel_class_is_registered`.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.npu import NPUSession
from ryzen_nb.npu.compile import NPUProgram
from ryzen_nb.npu.graph import is_quantizer
from ryzen_nb.npu.kernels import KERNELS, REGISTRY, Kernel
from ryzen_nb.npu.kernels.cases import UNDER_TEST, Case, CaseGraph
from ryzen_nb.npu.partition import NodeAssignment
from ryzen_nb.spec.targets import get_target


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_kernel_class_is_registered() -> None:
    concrete = {c for c in _subclasses(Kernel) if not inspect.isabstract(c)}
    assert concrete == set(KERNELS), f"not registered: {concrete - set(KERNELS)}"
    assert set(REGISTRY) == {op for k in KERNELS for op in k.op_types}


def _on_the_npu(case: Case) -> NPUProgram:
    """The case's model with every node on the NPU at the case's precision (the kernels are under
    test here, not the partitioner: the XINT8 HardSigmoid, say, reaches the NPU only fused)."""
    index = ModelIndex(case.model)
    nodes = [NodeAssignment(i, n.name, n.op_type, n.domain, "NPU", "" if is_quantizer(n) else case.precision,
                            quantizer=is_quantizer(n), inputs=list(n.input), outputs=list(n.output))
             for i, n in enumerate(index.nodes)]
    return NPUProgram(index, get_target("STX"), nodes, [list(range(len(nodes)))], {})


def _check(kernel: type[Kernel], case: Case, rounding: str) -> None:
    label = f"{case.name} ({rounding})"
    session = NPUSession(_on_the_npu(case), rounding=rounding)
    ours = [k for k in session.kernels if k.node.name == UNDER_TEST]
    assert [type(k) for k in ours] == [kernel], f"{label}: kernels {ours}, declined {session.declined}"
    fused = ours[0].activation[0] if ours[0].activation else None
    assert fused == case.activation, f"{label}: fused {fused}"
    ops = Counter(n.op_type for n in session.emulated.graph.node)
    assert {op: ops[op] for op in case.route} == case.route, f"{label}: lowered to {dict(ops)}"
    checked = session.check_kernels(case.feed)
    assert checked.elements.sum() > 0 and checked.mismatches.sum() == 0, f"{label}:\n{checked}"
    y = session.run(None, case.feed)[0]
    assert len(np.unique(y)) > 1, f"{label}: a constant output tests little"
    if case.saturates:
        info = np.iinfo(y.dtype)
        assert np.isin(y, [info.min, info.max]).any(), f"{label}: nothing saturates"


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.__name__)
def test_kernel_equals_its_reference_bit_for_bit(kernel: type[Kernel]) -> None:
    cases = list(kernel.cases())
    assert cases, f"{kernel.__name__} declares no test cases"
    wanted = {(op, p, a) for op in kernel.op_types for p in kernel.precisions for a in (None, *kernel.activations)}
    missing = wanted - {(c.op, c.precision, c.activation) for c in cases}
    assert not missing, f"{kernel.__name__} has no case for {sorted(missing, key=str)}"
    for case in cases:
        for rounding in case.roundings:
            _check(kernel, case, rounding)


def test_a_declined_operator_says_why() -> None:
    """An NPU operator that a registered kernel declines computes as in the QDQ simulation, and the
    emulation table says why (here: a padded average pool that leaves the padding out of its count)."""
    g = CaseGraph("padded_average_pool", "XINT8")
    x = g.codes("x", [1, 2, 4, 4], 2.0**-4, 128, np.uint8)
    y = g.op("AveragePool", [x], under_test=True, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    session = NPUSession(_on_the_npu(g.case(g.quantize(y, 2.0**-4, 128, np.uint8))))
    assert not session.kernels
    row = session.emulation().set_index("node").loc[UNDER_TEST]
    assert row.arithmetic == "exact as in the QDQ simulation" and "count_include_pad" in row.reason
