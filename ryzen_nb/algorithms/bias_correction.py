"""Empirical bias correction (Nagel et al. 2019 §4.2; Banner et al. 2019).

Quantizing a layer's weights shifts the mean of its outputs, ``E[W_q x] != E[W x]``, and the shift
adds up through the network. For each layer with a bias, in graph order, the mean output per
channel of the quantized network (with the layers before it already corrected) is measured on the
calibration data against the float network's, and the difference is added to the bias.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ryzen_nb.algorithms._rig import LayerRig
from ryzen_nb.executor import limit_threads
from ryzen_nb.quantization.run import QuantizationRun
from ryzen_nb.spec.operators import MAC_OPS

__all__ = ["BiasCorrectionReport", "bias_correction"]

DEFAULT_DATA_SIZE = 64


@dataclass
class BiasCorrectionReport:
    table: Any = field(repr=False)  #: pandas DataFrame: layer, op, mean |shift|, max |shift| (in output units)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    samples: int = 0

    def __repr__(self) -> str:
        return f"<BiasCorrectionReport: {len(self.table)} bias(es) corrected on {self.samples} samples, {self.seconds:.1f} s>"


def bias_correction(run: QuantizationRun, data_size: int = DEFAULT_DATA_SIZE) -> BiasCorrectionReport:
    """Correct the biases of ``run``'s Conv/ConvTranspose/Gemm layers (a QuantizationRun).

    One thread, as in fine-tuning: layer after layer, onnxruntime runs a few nodes and numpy takes
    the means, too little work for a second thread to gain (the benchmark's CNN and encoder: 0.99
    and 1.17 s with onnxruntime's threads, 1.05 and 1.15 s with one), while on cores that another
    process keeps busy their spinning threads cost a fifth to a third more (1.31 and 1.40 s,
    against 1.00 and 1.17 s with one).
    """
    with limit_threads(1):
        return _bias_correction(run, data_size)


def _bias_correction(run: QuantizationRun, data_size: int) -> BiasCorrectionReport:
    import pandas as pd
    from tqdm.auto import tqdm

    start = time.perf_counter()
    samples = run.samples(data_size)
    rig = LayerRig(run, tuple(sorted(MAC_OPS)), samples)
    rows = []
    skipped = list(rig.skipped)
    for t in tqdm(rig.targets, desc="bias correction", unit="layer", disable=not run.progress, leave=False):
        if t.bias is None:
            skipped.append((t.name, "no bias to correct"))
            continue
        axis = 1 if t.layer.op in ("Conv", "ConvTranspose") else -1
        total_f = total_q = 0.0
        n = 0
        for item in rig.activations(t, quant_output=True):
            reduce = tuple(i for i in range(item["y_f"].ndim) if i != axis % item["y_f"].ndim)
            total_f = total_f + item["y_f"].mean(axis=reduce, dtype=np.float64)
            total_q = total_q + item["y_q"].mean(axis=reduce, dtype=np.float64)
            n += 1
        shift = (total_f - total_q) / max(n, 1)
        rig.set_bias(t, rig.bias(t) + shift.reshape(rig.bias(t).shape))
        rows.append({"layer": t.name, "op": t.layer.op, "mean_abs_shift": float(np.abs(shift).mean()),
                     "max_abs_shift": float(np.abs(shift).max())})
    report = BiasCorrectionReport(pd.DataFrame(rows, columns=["layer", "op", "mean_abs_shift", "max_abs_shift"]),
                                  skipped, time.perf_counter() - start, len(samples))
    run.notes.append(f"bias correction: {len(rows)} bias(es) corrected on {len(samples)} samples")
    return report
