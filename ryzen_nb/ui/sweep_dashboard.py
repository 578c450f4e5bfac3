"""The Pareto view of a sweep: ``ryzen_nb.ui.dashboard(ryzen_nb.sweep(...))``.

A figure of task metric against emulated NPU latency (marker size: model size; the Pareto front of
each target joined), a choice of target, and the table of configurations sorted by metric with the
front marked and failed configurations listed with their error.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ryzen_nb.evaluation.pareto import pareto_figure
from ryzen_nb.ui._base import ErrorBox, esc, figure_output, show_figure, surfaces_errors, table_html

__all__ = ["SweepDashboard"]

#: the columns shown, in this order, when the table has them
_COLUMNS = ("config", "target", "metric", "cosine", "npu_latency_ms", "npu_share", "size_mb", "quantize_s", "pareto",
            "error")
ALL_TARGETS = "all targets"
_NOTE = ("pareto: no other configuration of the same target has a higher metric, a lower latency and a "
         "smaller size at once; the latency is the emulator's estimate")


class SweepDashboard(w.VBox):
    """The table of :func:`ryzen_nb.sweep` as a Pareto figure and a sorted table, per target."""

    def __init__(self, table: Any, **kwargs: Any) -> None:
        missing = [c for c in ("config", "metric", "npu_latency_ms", "size_mb") if c not in table]
        if missing:
            raise ValueError(f"not a sweep table: it lacks the column(s) {', '.join(missing)}; "
                             "give the DataFrame ryzen_nb.sweep(...) returns.")
        self.table = table
        self.errors = ErrorBox()
        targets = list(dict.fromkeys(table["target"])) if "target" in table else []
        self.target = w.Dropdown(options=[ALL_TARGETS, *targets] if len(targets) > 1 else targets or [ALL_TARGETS],
                                 description="target")
        self.figure_view = figure_output()
        self.table_view = w.HTML()
        failed = int((table["error"].astype(str) != "").sum()) if "error" in table else 0
        header = w.HTML(f"<b>Sweep</b> — {table['config'].nunique()} configurations"
                        + (f" × {len(targets)} targets" if targets else "")
                        + (f"; <span style='color:#b00020'>{failed} row(s) failed (see the error column)</span>"
                           if failed else ""))
        super().__init__([header, self.target, self.figure_view, self.table_view, self.errors], **kwargs)
        self.add_class("rnb-sweep-dashboard")
        self.target.observe(self._show, names="value")
        self._show()

    def rows(self) -> Any:
        """The rows of the chosen target, best metric first."""
        t = self.table
        if "target" in t and self.target.value != ALL_TARGETS:
            t = t[t["target"] == self.target.value]
        return t.sort_values("metric", ascending=False, na_position="last")

    @surfaces_errors("sweep view")
    def _show(self, change: dict | None = None) -> None:
        rows = self.rows()
        self.figure = pareto_figure(rows)
        show_figure(self.figure_view, self.figure)
        shown = rows[[c for c in _COLUMNS if c in rows]]
        self.table_view.value = (f"<div style='overflow-x:auto'>{table_html(shown)}</div>"
                                 f"<div style='color:#555;font-size:12px'>{esc(_NOTE)}</div>")
