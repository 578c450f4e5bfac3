"""The facts layer: what ryzen-nb knows about Ryzen AI NPUs, defined once, each figure with its source.

* :mod:`ryzen_nb.spec.targets` — the NPU targets (Phoenix, Hawk Point, Strix, Krackan, Strix Halo);
* :mod:`ryzen_nb.spec.precisions` — the precisions of the partition (XINT8 ... BF16, MX, FP32) and
  the devices, with the labels and colours every view uses;
* :mod:`ryzen_nb.spec.operators` — the supported-operator table, the MAC operators, fused activations;
* :mod:`ryzen_nb.spec.dpu` — fixed-point constants of the integer datapath and the X1 shift limits.

The sources and the status of every figure (published, derived, third-party, not published, our
assumption) are in ``docs/npu.md`` and the pages it links. :func:`facts` exports all of it as JSON
for the front ends (the partition view, the JupyterLab extension), so none of them types a fact again.

Everything above this layer (quantizer, emulator, CLI, widgets, the JupyterLab extension) reads
these; nothing here imports the rest of ryzen-nb except :mod:`ryzen_nb.errors`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ryzen_nb.spec import dpu, operators
from ryzen_nb.spec.precisions import DEVICES, PRECISIONS
from ryzen_nb.spec.targets import DEFAULT_TARGET, TARGETS

__all__ = ["facts"]


def facts() -> dict[str, Any]:
    """Every fact of this layer as JSON-able data (dicts, lists, strings, numbers), in a fixed order.

    ``precisions`` and ``devices`` (name, label, colour, description, formats, the targets that run
    each), ``targets`` (every field of a :class:`~ryzen_nb.spec.targets.Target`), ``default_target``,
    ``operators`` (the supported-operator table by column, the MAC operators, the fused activations),
    ``dpu`` (the fixed-point constants) and ``docs``, where each part is explained.
    """
    return {
        "precisions": [p.as_dict() for p in PRECISIONS.values()],
        "devices": [d.as_dict() for d in DEVICES.values()],
        "targets": [t.as_dict() for t in TARGETS.values()],
        "default_target": DEFAULT_TARGET,
        "operators": {
            "columns": list(operators.PRECISION_COLUMNS),
            "supported": {op: [c for c in operators.PRECISION_COLUMNS if c in cols]
                          for op, cols in operators.SUPPORTED.items()},
            "mac_ops": sorted(operators.MAC_OPS),
            "fused_activations": sorted(operators.FUSED_ACTIVATIONS),
        },
        "dpu": {
            "hard_sigmoid_multiplier": dpu.HARD_SIGMOID_MULTIPLIER,
            "hard_sigmoid_shift": dpu.HARD_SIGMOID_SHIFT,
            "leaky_relu_steps": dpu.LEAKY_RELU_STEPS,
            "max_multiplier": dpu.MAX_MULTIPLIER,
            "shift_limits": {k: list(v) if isinstance(v, tuple) else v
                             for k, v in dataclasses.asdict(dpu.SHIFT_LIMITS).items()},
        },
        "docs": {
            "index": "docs/npu.md",
            "targets": "docs/npu-hardware.md#the-targets-in-ryzen-nb",
            "precisions": "docs/npu-compilers.md#precisions",
            "operators": "docs/npu-operators.md#the-supported-operator-table",
            "dpu": "docs/npu-numerics.md#xint8",
            "assumptions": "docs/npu-assumptions.md",
        },
    }
