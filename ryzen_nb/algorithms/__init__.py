"""Accuracy recovery: cross-layer equalization, AdaRound, AdaQuant, bias correction, mixed precision.

Usually switched on from a config, exactly as in Quark::

    qc = ryzen_nb.get_default_config("XINT8")
    qc.include_cle = True                                   # CLE before calibration
    qc.include_fast_ft = True                               # AdaRound (default) or AdaQuant after it
    qc.extra_options["FastFinetune"] = {"NumIterations": 50, "OptimAlgorithm": "adaround"}
    summary = ryzen_nb.quantize("model.onnx", "model_xint8.onnx", qc, images)
    summary.reports["finetune"].table                       # per layer: loss before / after

or as an algorithm list (Quark's ``algo_config`` / ``quantize_model(..., algorithms=[...])``):
``[CLEConfig(), AdaRoundConfig(num_iterations=50)]``. Everything runs in numpy and onnxruntime on
the CPU (no torch), shows progress, and can be interrupted with Ctrl-C, keeping the work done.
"""

from ryzen_nb.algorithms.bias_correction import BiasCorrectionReport, bias_correction
from ryzen_nb.algorithms.cle import CLEReport, cross_layer_equalize, replace_clip6_with_relu
from ryzen_nb.algorithms.finetune import FineTuneReport, fast_finetune
from ryzen_nb.algorithms.mixed_precision import MixedPrecisionReport, apply_mixed_precision

__all__ = [
    "BiasCorrectionReport",
    "CLEReport",
    "FineTuneReport",
    "MixedPrecisionReport",
    "apply_mixed_precision",
    "bias_correction",
    "cross_layer_equalize",
    "fast_finetune",
    "replace_clip6_with_relu",
]
