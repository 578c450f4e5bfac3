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

from ryzen_nb.evaluation.report import comparison_figures, histogram_figure
from ryzen_nb.ui._base import ErrorBox, esc, surfaces_errors, table_html

__all__ = ["ComparisonDashboard"]


def _figure_widget(fig: Any) -> Any:
    """A plotly FigureWidget (anywidget-based in plotly 6+: JupyterLab, Notebook 7, VS Code), for the
    figure that changes (the histogram): each one carries plotly.js, about 5 MB, to the browser."""
    import plotly.graph_objects as go

    return go.FigureWidget(fig)


def _static_figure(fig: Any) -> Any:
    """A figure that never changes, as plotly's own output in an Output widget: JupyterLab's and VS
    Code's plotly renderers draw it with the plotly.js they already have."""
    from IPython.display import display

    out = w.Output(layout=w.Layout(width="100%"))
    with out:
        display(fig)
    return out


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
        header = w.HTML(f"<b>FP32 vs quantized</b> — {c.samples} held-out samples, task: {esc(c.task)}"
                        + (", labels given" if c.labels_given else "") + f"; models: {esc(', '.join(c.models))}")
        notes = w.HTML("".join(f"<div style='color:#666;font-size:12px'>{esc(n)}</div>" for n in c.notes))
        pages: list[tuple[str, Any]] = [
            ("Overview", w.VBox([_scrolling(table_html(c.table.reset_index())), self._fig("task"), self._fig("size")])),
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
        return _static_figure(self.figures[name])

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
        self.histogram = _figure_widget(self._histogram_figure())
        self.hist_model.observe(self._model_changed, names="value")
        self.hist_tensor.observe(self._tensor_changed, names="value")
        return w.VBox([w.HBox([self.hist_model, self.hist_tensor]), self.histogram])

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
        fig = self._histogram_figure()
        with self.histogram.batch_update():
            self.histogram.data = []
            for trace in fig.data:
                self.histogram.add_trace(trace)
            self.histogram.layout = fig.layout

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
        path = Path(self.export_path.value).expanduser()
        if not path.name or path.is_dir():
            raise ValueError(f"{str(path)!r} is a folder; give a file name ending in .html.")
        self.comparison.to_html(path)
        self.export_status.value = f"Written: <code>{esc(path.resolve())}</code>"
        return path
