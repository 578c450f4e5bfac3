"""The notebook layer: widgets that build the same objects a script would, and show the code.

* :class:`ConfigBuilder` — a quantization config from a preset and controls, validated live;
* :class:`CalibrationWizard` — calibration and held-out data for a model, step by step;
* :class:`ComparisonDashboard` — FP32 vs quantized (:func:`ryzen_nb.compare`); :func:`dashboard`
  makes one for a comparison: ``ryzen_nb.ui.dashboard(result)``;
* :class:`PartitionView` — which operators the NPU runs, at which precision, and why not;
* :class:`SweepDashboard` — the Pareto view of :func:`ryzen_nb.sweep`:
  ``ryzen_nb.ui.dashboard(table)``.

Every widget reports the errors of its callbacks inside itself (``widget.errors``) and uses only
standard ipywidgets/anywidget mechanisms, so it works in JupyterLab 4, Notebook 7 and VS Code.
Imports are lazy: ``import ryzen_nb.ui`` does not load ipywidgets or plotly until a widget is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["CalibrationWizard", "ComparisonDashboard", "ConfigBuilder", "PartitionView", "SweepDashboard",
           "dashboard"]

_WHERE = {
    "CalibrationWizard": "ryzen_nb.ui.wizard",
    "ComparisonDashboard": "ryzen_nb.ui.comparison_dashboard",
    "ConfigBuilder": "ryzen_nb.ui.config_builder",
    "PartitionView": "ryzen_nb.ui.partition",
    "SweepDashboard": "ryzen_nb.ui.sweep_dashboard",
}


def dashboard(result: Any) -> Any:
    """The interactive dashboard of a :func:`ryzen_nb.compare` result (tabs of tables and plotly
    figures: overview, fidelity, latency, per-layer error, mixed precision, histograms, export) or of
    a :func:`ryzen_nb.sweep` table (its Pareto view)."""
    if type(result).__name__ == "DataFrame":  # a sweep's table (pandas is not imported here: ui loads lazily)
        return __getattr__("SweepDashboard")(result)
    return __getattr__("ComparisonDashboard")(result)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        # the widget modules load ipywidgets/anywidget: imported when a widget is first used
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'ryzen_nb.ui' has no attribute {name!r}")
