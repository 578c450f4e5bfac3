"""``ryzen-nb demo``: the package's main job on a model it ships, with no download.

A small ResNet trained on scikit-learn's 8x8 digits (shipped inside the package with its data) is
quantized to XINT8, BF16 and BFP16; FP32 and each variant run on held-out digits that calibration
never saw, and a table compares accuracy, fidelity to FP32 and size.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

import numpy as np
import onnx
import pandas as pd

from ryzen_nb import zoo
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.metrics import agreement, cosine, sqnr
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.config import get_default_config

__all__ = ["run_demo", "DEMO_FORMATS"]

DEMO_FORMATS = ("XINT8", "BF16", "BFP16")


def _run(session, feeds: list[dict[str, np.ndarray]]) -> np.ndarray:
    return np.concatenate([session.run(None, f)[0] for f in feeds])


def run_demo(
    presets: tuple[str, ...] = DEMO_FORMATS,
    calibration_samples: int = 200,
    out: TextIO | None = sys.stdout,
) -> pd.DataFrame:
    """Quantize the packaged digits ResNet with each preset; return (and print) the comparison."""
    say = (lambda *a: print(*a, file=out)) if out is not None else (lambda *a: None)  # noqa: E731
    model = zoo.load_model("resnet_digits")
    calib = zoo.load_dataset("digits", split="calibration")
    test = zoo.load_dataset("digits", split="evaluation")
    n_cal = min(calibration_samples, len(calib))
    say(f"ryzen-nb demo: {model.description}")
    say(f"Calibration: {n_cal} digits of the calibration split; evaluation: {len(test)} held-out digits it never saw.\n")
    calib_feeds = [model.preprocess(s) for s in calib.samples[:n_cal]]
    test_feeds = [model.preprocess(s) for s in test.samples]
    labels = np.asarray(test.labels)
    float_model = onnx.load(str(model.path))
    reference = _run(ort_session(float_model), test_feeds)
    rows = [{
        "format": "FP32", "top-1 (%)": 100 * float(np.mean(reference.argmax(1) == labels)),
        "agreement (%)": 100.0, "cosine": 1.0, "SQNR (dB)": float("inf"),
        "weights (kB)": _weight_bytes(float_model) / 1e3, "file (kB)": model.path.stat().st_size / 1e3,
        "quantize (s)": 0.0,
    }]
    for preset in presets:
        config = get_default_config(preset)
        if preset == "BF16":
            # as the Ryzen AI docs do for the NPU compiler: Cast pairs, weights stored in bf16
            config.extra_options["BF16QDQToCast"] = True
        start = time.perf_counter()
        summary = quantize(float_model, None, config, calib_feeds, progress=False)
        seconds = time.perf_counter() - start
        outputs = _run(ort_session(summary.model), test_feeds)
        per_sample_cos = [cosine(a, b) for a, b in zip(reference, outputs)]
        rows.append({
            "format": preset,
            "top-1 (%)": 100 * float(np.mean(outputs.argmax(1) == labels)),
            "agreement (%)": 100 * agreement(reference, outputs),
            "cosine": float(np.mean(per_sample_cos)),
            "SQNR (dB)": sqnr(reference, outputs),
            "weights (kB)": summary.effective_bits_after / 8 / 1e3,
            "file (kB)": summary.size_after / 1e3,
            "quantize (s)": seconds,
        })
    table = pd.DataFrame(rows).set_index("format")
    with pd.option_context("display.width", 120, "display.float_format", "{:.4g}".format):
        say(table.to_string())
    say("\nweights: storage at each format's bits per value; file: the ONNX file as written "
        "(block formats keep float32 weights on their grid, so their files do not shrink).")
    return table


def _weight_bytes(model) -> int:
    return sum(int(np.prod(t.dims)) * 4 for t in model.graph.initializer if t.data_type == 1)
