"""The plotly figures of a :class:`~ryzen_nb.evaluation.compare.Comparison`, shared by the inline
dashboard (:func:`ryzen_nb.ui.dashboard`) and the static HTML report (plotly only: no widgets, so
they also work outside Jupyter). plotly is imported when a figure is made, not with ryzen-nb.

>>> figs = comparison_figures(result)        # {"task": Figure, "fidelity": ..., "latency": ..., ...}
>>> histogram_figure(result, "conv1_output", "XINT8")                                  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ryzen_nb._html import esc, table_html

__all__ = ["comparison_figures", "comparison_html", "histogram_figure"]

#: one colour per model, the reference first (plotly's default qualitative sequence, FP32 in grey)
REFERENCE_COLOUR = "#7f7f7f"
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
TASK_COLUMNS = {
    "top1": "top-1 accuracy", "top5": "top-5 accuracy", "agreement_top1": "top-1 agreement with FP32",
    "embedding_cosine": "cosine to FP32 embedding", "retrieval_at_1": "self-retrieval @1",
}


def _colours(models: list[str]) -> dict[str, str]:
    return {m: (REFERENCE_COLOUR if i == 0 else COLOURS[(i - 1) % len(COLOURS)]) for i, m in enumerate(models)}


def _layout(fig: Any, title: str, height: int = 320) -> Any:
    fig.update_layout(title=title, height=height, margin=dict(l=50, r=20, t=50, b=40), template="plotly_white",
                      legend=dict(orientation="h", y=-0.2))
    return fig


def comparison_figures(c: Any) -> dict[str, Any]:
    """Figures by name: task, fidelity, latency, size, per_layer, and sensitivity (when a
    variant carries a mixed-precision table)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    t = c.table
    models = list(t.index)
    colour = _colours(models)
    figs: dict[str, Any] = {}

    task_cols = [col for col in TASK_COLUMNS if col in t]
    fig = go.Figure()
    for m in models:
        fig.add_bar(name=m, x=[TASK_COLUMNS[col] for col in task_cols], y=[t.loc[m, col] for col in task_cols],
                    marker_color=colour[m], text=[f"{t.loc[m, col]:.3f}" for col in task_cols], textposition="auto")
    figs["task"] = _layout(fig, f"Task metric on {c.samples} held-out samples")
    figs["task"].update_yaxes(range=[0, 1.05])

    variants = models[1:]
    fid = [("cosine", "cosine to FP32"), ("sqnr_db", "output SQNR (dB)"), ("psnr_db", "PSNR (dB)")]
    fig = make_subplots(rows=1, cols=len(fid), subplot_titles=[label for _, label in fid])
    for k, (col, _) in enumerate(fid, start=1):
        fig.add_bar(x=variants, y=[t.loc[m, col] for m in variants], marker_color=[colour[m] for m in variants],
                    showlegend=False, row=1, col=k)
    figs["fidelity"] = _layout(fig, "Output fidelity against FP32 (higher is closer)")

    fig = go.Figure()
    fig.add_bar(name="CPU (onnxruntime, median)", x=models, y=t["cpu_ms"],
                error_y=dict(type="data", symmetric=False, array=(t["cpu_p90_ms"] - t["cpu_ms"]).clip(lower=0)),
                marker_color="#8c8c8c")
    for k, target in enumerate(c.targets):
        col = f"npu_ms_{target}"
        if col in t:
            fig.add_bar(name=f"NPU {target} (estimate)", x=models, y=t[col], marker_color=COLOURS[k % len(COLOURS)])
    figs["latency"] = _layout(fig, "Latency per inference, ms (CPU measured here: median, bar to p90; NPU estimated)")
    figs["latency"].update_layout(barmode="group")

    fig = go.Figure(go.Bar(x=models, y=t["size_mb"], marker_color=[colour[m] for m in models],
                           text=[f"{v:.2f} MB" for v in t["size_mb"]], textposition="auto"))
    figs["size"] = _layout(fig, "Model size (MB)")

    pl = c.per_layer
    fig = go.Figure()
    for m in variants:
        rows = pl[(pl.model == m) & (pl.kind == "activation")].sort_values("order")
        if len(rows):
            fig.add_scatter(name=m, x=list(range(len(rows))), y=rows.sqnr_db.clip(upper=120),
                            mode="lines+markers", marker_color=colour[m], customdata=rows[["tensor", "format"]],
                            hovertemplate="%{customdata[0]}<br>%{customdata[1]}: %{y:.1f} dB<extra>" + m + "</extra>")
    fig.update_xaxes(title="quantized activation, in graph order")
    fig.update_yaxes(title="SQNR vs FP32 (dB)")
    figs["per_layer"] = _layout(fig, "Per-layer error: where it enters and how it grows", 360)

    for m, table in c.sensitivity.items():
        col = next((x for x in ("sensitivity_top1_drop", "sensitivity_l2") if x in table), None)
        if col is None:
            continue
        rows = table.sort_values(col)
        fig = go.Figure(go.Bar(x=rows[col], y=rows["layers"].str.slice(0, 40), orientation="h",
                               marker_color=np.where(rows["switched"], "#2ca02c", "#d62728"),
                               hovertemplate="%{y}: %{x:.4g}<extra></extra>"))
        fig.update_xaxes(title=col.replace("sensitivity_", "") + " with only this layer switched")
        figs[f"sensitivity {m}"] = _layout(fig, f"{m}: mixed-precision sensitivity (green: switched to the cheaper "
                                                f"format)", 120 + 18 * len(rows))
    return figs


def histogram_figure(c: Any, tensor: str, model: str, samples: int = 4, bins: int = 80) -> Any:
    """Value histogram of FP32 ``tensor`` in the reference and in ``model``, overlaid."""
    import plotly.graph_objects as go

    ref, test = c.tensor_values(tensor, model, samples)
    lo, hi = float(min(ref.min(), test.min())), float(max(ref.max(), test.max()))
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    fig = go.Figure()
    for name, values, colour in ((c.reference, ref, REFERENCE_COLOUR), (model, test, _colours(c.models)[model])):
        counts, _ = np.histogram(values, edges)
        fig.add_bar(name=name, x=(edges[:-1] + edges[1:]) / 2, y=counts, marker_color=colour, opacity=0.6)
    fig.update_layout(barmode="overlay", bargap=0)
    fig.update_xaxes(title="value")
    fig.update_yaxes(title="count", type="log")
    return _layout(fig, f"{tensor}: FP32 vs {model} ({len(ref)} values)", 320)


def comparison_html(c: Any) -> str:
    """A self-contained page (plotly.js inlined once): tables, figures, notes."""
    import plotly.io as pio

    parts = []
    for k, (name, fig) in enumerate(comparison_figures(c).items()):
        parts.append(f"<h3>{esc(name)}</h3>" + pio.to_html(fig, full_html=False, include_plotlyjs=(k == 0)))
    per_layer = c.per_layer.sort_values(["model", "order"]).drop(columns=["order"])
    notes = "".join(f"<li>{esc(n)}</li>" for n in c.notes)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ryzen-nb: FP32 vs quantized</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}
table.rnb-table{{border-collapse:collapse;font-size:13px}} .rnb-table td,.rnb-table th{{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:right}}</style></head><body>
<h1>FP32 vs quantized</h1>
<p>{c.samples} held-out samples; task: {esc(c.task)}; models: {esc(', '.join(c.models))}.</p>
{table_html(c.table.reset_index())}
<ul>{notes}</ul>
{''.join(parts)}
<h3>Per-layer SQNR (dB)</h3>
{table_html(per_layer, max_rows=5000)}
<p style="color:#777">Made by ryzen-nb.</p>
</body></html>"""
