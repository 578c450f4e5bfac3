"""The inline FP32-vs-quantized dashboard: a :class:`~ryzen_nb.evaluation.compare.Comparison` as
tabs of tables and plotly figures.

>>> from ryzen_nb.evaluation import compare
>>> result = compare("model.onnx", {"XINT8": "model_xint8.onnx"}, images, labels=labels)   # doctest: +SKIP
>>> ComparisonDashboard(result)            # or ryzen_nb.ui.dashboard(result)                         # doctest: +SKIP

Tabs: Overview (the table, the task metric, sizes), Fidelity, Latency (CPU measured, NPU
estimated per target), Per-layer error, Mixed precision (when a variant has a sensitivity table),
Histograms (pick a tensor and a model), Export (a static HTML page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as w

from ryzen_nb.evaluation.report import comparison_figures, display_table, histogram_figure, latency_notes
from ryzen_nb.ui._base import ErrorBox, esc, figure_output, show_figure, surfaces_errors, table_html

__all__ = ["ComparisonDashboard"]


#: the dashboard's tables: one line per cell (a table wider than the tab scrolls), numbers right-aligned;
#: its tabs as wide as their titles (ipywidgets gives each tab the same width and cuts longer titles)
_STYLE = """<style>
.rnb-dashboard .jupyter-widgets.jupyter-widget-tab > .lm-TabBar .lm-TabBar-tab,
.rnb-dashboard .jupyter-widgets.widget-tab > .p-TabBar .p-TabBar-tab { flex: 0 0 auto; }
.rnb-dashboard table.rnb-table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
.rnb-dashboard table.rnb-table th, .rnb-dashboard table.rnb-table td {
  padding: 3px 12px; line-height: 1.4; border-bottom: 1px solid var(--jp-border-color2, #ddd); text-align: right;
  white-space: nowrap; }
.rnb-dashboard table.rnb-table th:first-child, .rnb-dashboard table.rnb-table td:first-child { text-align: left; }
</style>"""


def _scrolling(html: str) -> Any:
    """An HTML table that scrolls sideways instead of being cut at the tab's edge."""
    return w.HTML(f'<div style="overflow-x:auto;max-width:100%">{html}</div>')


class ComparisonDashboard(w.VBox):
    """Tabs of tables and figures for a Comparison; ``figures`` holds the plotly figures by name."""

    def __init__(self, comparison: Any, **kwargs: Any) -> None:
        self.comparison = comparison
        self.errors = ErrorBox()
        self.figures = comparison_figures(comparison)
        c = comparison
        header = w.HTML(_STYLE + f"<b>FP32 vs quantized</b> — {c.samples} held-out samples, task: {esc(c.task)}"
                        + (", labels given" if c.labels_given else "") + f"; models: {esc(', '.join(c.models))}")
        # why a quantized model is slower on the CPU, which models have no NPU estimate: said beside the figure
        notes = w.HTML("".join(f"<p style='color:#555;font-size:12px;margin:4px 0;white-space:normal'>{esc(n)}</p>"
                               for n in [*latency_notes(c), *c.notes]))
        pages: list[tuple[str, Any]] = [
            ("Overview", w.VBox([_scrolling(table_html(display_table(c))), self._fig("task"), self._fig("size")])),
            ("Fidelity", w.VBox([self._fig("fidelity")])),
            ("Latency", w.VBox([self._fig("latency"), notes])),
            ("Per-layer error", w.VBox([self._fig("per_layer"), self._worst_layers()])),
        ]
        sensitivity = [name for name in self.figures if name.startswith("sensitivity ")]
        if sensitivity:
            pages.append(("Mixed precision", w.VBox([self._fig(n) for n in sensitivity]
                                                    + [_scrolling(table_html(t)) for t in c.sensitivity.values()])))
        pages.append(("Histograms", self._histogram_page()))
        pages.append(("Export", self._export_page()))
        self.tabs = w.Tab(children=[page for _, page in pages])
        for i, (title, _) in enumerate(pages):
            self.tabs.set_title(i, title)
        super().__init__([header, self.tabs, self.errors], **kwargs)
        self.add_class("rnb-dashboard")

    def _fig(self, name: str) -> Any:
        out = figure_output()
        show_figure(out, self.figures[name])
        return out

    def _worst_layers(self) -> Any:
        pl = self.comparison.per_layer
        if not len(pl):
            return w.HTML("<i>No quantized tensor could be matched to an FP32 tensor.</i>")
        worst = pl.sort_values("sqnr_db").groupby("model").head(8).drop(columns=["order"])
        return _scrolling("<b>Lowest SQNR per model</b>" + table_html(worst))

    # -- histograms ------------------------------------------------------------------------------------
    def _histogram_page(self) -> Any:
        c = self.comparison
        variants = c.models[1:]
        self.hist_model = w.Dropdown(options=variants, value=variants[0], description="model")
        self.hist_tensor = w.Dropdown(options=c.tensors(variants[0]) or [""], description="tensor",
                                      layout=w.Layout(width="60%"))
        #: the histogram shown (a plotly Figure), drawn in histogram_view
        self.histogram = self._histogram_figure()
        self.histogram_view = figure_output()
        show_figure(self.histogram_view, self.histogram)
        self.hist_model.observe(self._model_changed, names="value")
        self.hist_tensor.observe(self._tensor_changed, names="value")
        return w.VBox([w.HBox([self.hist_model, self.hist_tensor]), self.histogram_view])

    def _histogram_figure(self) -> Any:
        import plotly.graph_objects as go

        if not self.hist_tensor.value:
            return go.Figure(layout=dict(title="no quantized tensor to show", height=200))
        return histogram_figure(self.comparison, self.hist_tensor.value, self.hist_model.value)

    @surfaces_errors("histogram")
    def _model_changed(self, change: dict) -> None:
        tensors = self.comparison.tensors(change["new"]) or [""]
        current = self.hist_tensor.value
        self.hist_tensor.options = tensors
        if current in tensors:  # options changed but the value stayed: redraw for the new model
            self._tensor_changed({"new": current})

    @surfaces_errors("histogram")
    def _tensor_changed(self, change: dict) -> None:
        self.histogram = self._histogram_figure()
        show_figure(self.histogram_view, self.histogram)

    # -- export ---------------------------------------------------------------------------------------------
    def _export_page(self) -> Any:
        self.export_path = w.Text(value="ryzen_nb_comparison.html", description="file")
        button = w.Button(description="Write HTML", icon="download")
        self.export_status = w.HTML()
        button.on_click(self.export)
        return w.VBox([w.HTML("A static page with the tables and figures; it opens in any browser, offline."),
                       w.HBox([self.export_path, button]), self.export_status])

    @surfaces_errors("export")
    def export(self, _button: Any = None) -> Path:
        """Write the static HTML page to the path in the Export tab; returns the path."""
        # a folder, an empty name or a compared model is refused by to_html's output guard, in its words
        typed = self.export_path.value.strip()
        path = Path(typed).expanduser() if typed else typed  # Path("") would be "." and hide the empty name
        self.comparison.to_html(path)
        self.export_status.value = f"Written: <code>{esc(path.resolve())}</code>"
        return path
