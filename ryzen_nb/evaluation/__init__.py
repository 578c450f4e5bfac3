"""Metrics and evaluation tools: fidelity vs FP32, task accuracy, folder comparison."""

from ryzen_nb import metrics
from ryzen_nb.evaluation.compare import Comparison, compare
from ryzen_nb.evaluation.folders import FolderComparison, evaluate_folders
from ryzen_nb.evaluation.pareto import pareto_figure, pareto_front
from ryzen_nb.metrics import (
    FIDELITY_METRICS,
    agreement,
    cosine,
    fidelity,
    l2,
    max_abs,
    mse,
    psnr,
    sqnr,
    ssim,
    topk_accuracy,
)

__all__ = [
    "metrics",
    "Comparison",
    "compare",
    "FIDELITY_METRICS",
    "FolderComparison",
    "evaluate_folders",
    "pareto_figure",
    "pareto_front",
    "ssim",
    "agreement",
    "cosine",
    "fidelity",
    "l2",
    "max_abs",
    "mse",
    "psnr",
    "sqnr",
    "topk_accuracy",
]
