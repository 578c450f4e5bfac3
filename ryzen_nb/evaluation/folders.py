"""The ``evaluate`` tool: compare FP32 and quantized results saved as files in two folders.

As Quark's ``python -m quark.onnx.tools.evaluate``: files are paired by identical name
(``.npy`` arrays, ``.png``/``.jpg`` images read with Pillow), and the summary gives mean/min cosine
similarity, mean/max L2 distance, mean/min PSNR and mean/min SSIM — plus SQNR and the largest
absolute difference, which Quark does not report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ryzen_nb.calibration.files import read_array, read_image
from ryzen_nb.errors import RyzenNBError
from ryzen_nb.metrics import cosine, l2, max_abs, psnr, sqnr, ssim

__all__ = ["FolderComparison", "evaluate_folders", "RESULT_SUFFIXES"]

RESULT_SUFFIXES = (".npy", ".png", ".jpg", ".jpeg")


class EvaluationError(RyzenNBError, ValueError):
    """The result folders cannot be compared (missing, empty, nothing in common, shape mismatch)."""


@dataclass
class FolderComparison:
    per_file: pd.DataFrame  #: one row per paired file
    only_baseline: list[str] = field(default_factory=list)
    only_quantized: list[str] = field(default_factory=list)

    @property
    def non_finite_files(self) -> list[str]:
        """Files whose results hold NaN or Inf: their metrics are NaN, and so is every summary figure."""
        return [str(f) for f in self.per_file.index[self.per_file["cosine"].isna()]]

    def summary(self) -> dict[str, float]:
        t = self.per_file
        # skipna=False: a file with NaN/Inf results makes the summary NaN instead of vanishing from it
        mean = lambda c: float(t[c].mean(skipna=False))  # noqa: E731
        low = lambda c: float(t[c].min(skipna=False))  # noqa: E731
        high = lambda c: float(t[c].max(skipna=False))  # noqa: E731
        sqnr = t["sqnr"]
        if sqnr.isna().any():
            mean_sqnr = float("nan")
        else:  # identical files (infinite SQNR) are left out of the mean
            mean_sqnr = float(sqnr.replace(np.inf, np.nan).mean()) if np.isfinite(sqnr).any() else float("inf")
        return {
            "files": int(len(t)),
            "mean_cosine": mean("cosine"), "min_cosine": low("cosine"),
            "mean_l2": mean("l2"), "max_l2": high("l2"),
            "mean_psnr": mean("psnr"), "min_psnr": low("psnr"),
            "mean_ssim": mean("ssim"), "min_ssim": low("ssim"),
            "mean_sqnr": mean_sqnr,
            "max_abs_diff": high("max_abs"),
            "non_finite_files": len(self.non_finite_files),
        }

    def report(self) -> str:
        """Quark's summary lines, then ours."""
        s = self.summary()
        lines = [
            f"Mean cos similarity: {s['mean_cosine']:.6f}", f"Min cos similarity: {s['min_cosine']:.6f}",
            f"Mean l2 distance: {s['mean_l2']:.6f}", f"Max l2 distance: {s['max_l2']:.6f}",
            f"Mean psnr: {s['mean_psnr']:.4f}", f"Min psnr: {s['min_psnr']:.4f}",
            f"Mean ssim: {s['mean_ssim']:.6f}", f"Min ssim: {s['min_ssim']:.6f}",
            f"Mean sqnr: {s['mean_sqnr']:.4f} dB", f"Max abs difference: {s['max_abs_diff']:.6g}",
            f"Files compared: {s['files']}",
        ]
        if self.non_finite_files:
            bad = self.non_finite_files
            lines.append(f"NaN/Inf in {len(bad)} file(s) ({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}): "
                         "their metrics, and the summary, are NaN")
        if self.only_baseline or self.only_quantized:
            lines.append(f"Unpaired files: {len(self.only_baseline)} only in the baseline folder, "
                         f"{len(self.only_quantized)} only in the quantized folder")
        return "\n".join(lines)


def _load(path: Path) -> np.ndarray:
    if path.suffix.lower() == ".npy":
        return read_array(path, EvaluationError)
    with read_image(path, EvaluationError) as img:
        return np.asarray(img)


def _results(folder: str | Path, label: str) -> dict[str, Path]:
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise EvaluationError(f"The {label} results folder {str(path)!r} does not exist or is not a folder.")
    files = {p.name: p for p in sorted(path.iterdir()) if p.suffix.lower() in RESULT_SUFFIXES}
    if not files:
        raise EvaluationError(f"The {label} results folder {str(path)!r} holds no .npy, .png or .jpg files.")
    return files


def evaluate_folders(baseline_results_folder: str | Path, quantized_results_folder: str | Path) -> FolderComparison:
    """Compare every file present (by name) in both folders."""
    base = _results(baseline_results_folder, "baseline")
    quant = _results(quantized_results_folder, "quantized")
    common = [n for n in base if n in quant]
    if not common:
        raise EvaluationError(
            f"No file name appears in both folders (baseline: {', '.join(list(base)[:3])}...; quantized: "
            f"{', '.join(list(quant)[:3])}...). Save results of the same inputs under the same names."
        )
    rows = []
    for name in common:
        a, b = _load(base[name]), _load(quant[name])
        if a.shape != b.shape:
            raise EvaluationError(f"{name}: baseline shape {a.shape} differs from quantized shape {b.shape}.")
        rows.append({"file": name, "cosine": cosine(a, b), "l2": l2(a, b), "psnr": psnr(a, b), "ssim": ssim(a, b),
                     "sqnr": sqnr(a, b), "max_abs": max_abs(a, b)})
    return FolderComparison(
        per_file=pd.DataFrame(rows).set_index("file"),
        only_baseline=[n for n in base if n not in quant],
        only_quantized=[n for n in quant if n not in base],
    )
