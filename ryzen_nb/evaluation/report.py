"""The plotly figures of a :class:`~ryzen_nb.evaluation.compare.Comparison`, shared by the inline
dashboard (:func:`ryzen_nb.ui.dashboard`) and the static HTML report (plotly only: no widgets, so
they also work outside Jupyter). plotly is imported when a figure is made, not with ryzen-nb.

>>> figs = comparison_figures(result)        # {"task": Figure, "fidelity": ..., "latency": ..., ...}
>>> histogram_figure(result, "conv1_output", "XINT8")                                  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ryzen_nb._html import esc, table_html

__all__ = ["comparison_figures", "comparison_html", "display_table", "histogram_figure", "latency_notes",
           "log_axis"]

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


def log_axis(values: Any) -> dict[str, Any]:
    """Settings for a plotly log axis over ``values`` that reads at a glance: one labelled tick per
    power of ten (10⁻³, 10⁻⁴ ...) and none between (plotly's default labels 2 and 5 of every decade
    too), over whole decades, at least one, so that a tick always shows; the smallest value at least
    a third of a decade above the bottom, so that its bar shows (bars start at the bottom)."""
    finite = np.asarray([v for v in np.asarray(values, dtype=np.float64).ravel() if np.isfinite(v) and v > 0])
    low, high = (np.log10(finite.min()), np.log10(finite.max())) if len(finite) else (0.0, 1.0)
    start, stop = np.floor(low - 0.3), np.ceil(high)
    if stop - start < 1:
        stop = start + 1
    return dict(type="log", range=[float(start), float(stop)], dtick=1, exponentformat="power",
                showexponent="all", minor=dict(ticks="", showgrid=False))


def _share(t: Any, model: str, target: str) -> float:
    """The model's share of operators on ``target``'s NPU (0..1; NaN when unknown)."""
    col = f"npu_share_{target}"
    return float(t.loc[model, col]) if col in t else float("nan")


def _on_npu(t: Any, model: str, target: str) -> bool:
    """Whether anything of the model runs on the NPU: an NPU latency means nothing otherwise."""
    share = _share(t, model, target)
    return bool(np.isfinite(share) and share > 0)


#: the comparison table's columns as people read them; columns not listed keep their name
LABELS = {
    "top1": "top-1 accuracy", "top5": "top-5 accuracy", "agreement_top1": "top-1 agreement with FP32",
    "agreement": "top-1 agreement with FP32", "embedding_cosine": "cosine to FP32 embedding",
    "retrieval_at_1": "self-retrieval @1", "cosine": "cosine to FP32", "l2": "L2 distance to FP32",
    "psnr_db": "PSNR (dB)", "sqnr_db": "SQNR (dB)", "size_mb": "size (MB)", "cpu_ms": "CPU latency (ms, median)",
    "cpu_p90_ms": "CPU latency (ms, p90)",
}


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return "–" if not np.isfinite(value) else f"{value:.4g}"
    return str(value)


def display_table(c: Any) -> Any:
    """The comparison table for people: one row per measure, one column per model (a few models
    and many measures fit any width this way), with readable names, the NPU share in percent, and
    no NPU latency for a model that runs nothing on that NPU (it would be a CPU figure under an NPU
    heading). ``c.table`` keeps the raw numbers."""
    t = c.table
    rows: dict[str, list[str]] = {}
    for col in t.columns:
        values = list(t[col])
        label = LABELS.get(col, col)
        for target in c.targets:
            if col == f"npu_ms_{target}":
                label = f"NPU {target} latency (ms, estimate)"
                values = [v if _on_npu(t, m, target) else np.nan for m, v in zip(t.index, values)]
            elif col == f"npu_share_{target}":
                label = f"operators on the {target} NPU"
                values = [f"{100 * v:.0f} %" if np.isfinite(v) else np.nan for v in values]
        rows[label] = [_cell(v) for v in values]
    frame = pd.DataFrame(rows, index=list(t.index)).T
    frame.index.name = "measure"
    return frame.reset_index()


def latency_notes(c: Any) -> list[str]:
    """What the latency figure does not say by itself: why a quantized model is slower than FP32 on
    the CPU, and which models have no NPU estimate because nothing of them runs on an NPU."""
    t, notes = c.table, []
    reference = c.models[0]
    base = float(t.loc[reference, "cpu_ms"]) if "cpu_ms" in t else float("nan")
    slower = [(m, float(t.loc[m, "cpu_ms"]) / base) for m in c.models[1:]
              if np.isfinite(base) and base > 0 and np.isfinite(t.loc[m, "cpu_ms"]) and t.loc[m, "cpu_ms"] > 1.1 * base]
    if slower:
        which = ", ".join(f"{m} ({ratio:.1f}x)" for m, ratio in slower)
        notes.append(f"Slower than {reference} on this CPU: {which}. onnxruntime runs a quantized model as "
                     "QuantizeLinear/DequantizeLinear pairs (or casts) around float operators: it simulates the "
                     "quantized arithmetic, which adds work to the float model's. The NPU runs the integers (or "
                     "bfloat16) themselves: its estimate is the figure to read for the NPU.")
    for target in c.targets:
        idle = [m for m in c.models if np.isfinite(_share(t, m, target)) and not _on_npu(t, m, target)]
        if idle:
            notes.append(f"No NPU estimate on {target} for {', '.join(idle)}: none of its operators run on that "
                         f"NPU (see ryzen_nb.npu.compile(model, '{target}').cpu_reasons()).")
    return notes


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
    figs["fidelity"] = _fidelity_figure(c, models[1:], colour, make_subplots)
    figs["latency"] = _latency_figure(c, go)

    fig = go.Figure(go.Bar(x=models, y=t["size_mb"], marker_color=[colour[m] for m in models],
                           text=[f"{v:.2f} MB" for v in t["size_mb"]], textposition="auto"))
    figs["size"] = _layout(fig, "Model size (MB)")

    pl = c.per_layer
    fig = go.Figure()
    for m in models[1:]:
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


def _fidelity_figure(c: Any, variants: list[str], colour: dict[str, str], make_subplots: Any) -> Any:
    """1 - cosine on a log axis (cosine 0.99 and 0.999 are a decade apart there, not 0.009 of a 0..1
    axis) and output SQNR in dB, which is logarithmic already."""
    t = c.table
    distance = [max(1.0 - float(t.loc[m, "cosine"]), 0.0) for m in variants]
    # a model equal to FP32 has 1 - cosine 0, which a log axis cannot show: drawn at the axis' floor
    floor = min([d for d in distance if d > 0], default=1e-6) / 10
    fig = make_subplots(rows=1, cols=2, subplot_titles=["1 − cosine to FP32 (lower is closer)",
                                                        "output SQNR, dB (higher is closer)"])
    fig.add_bar(x=variants, y=[max(d, floor) for d in distance], marker_color=[colour[m] for m in variants],
                text=[f"cos {t.loc[m, 'cosine']:.6f}" for m in variants], textposition="outside",
                hovertemplate="%{x}: 1 − cosine %{y:.2e}<extra></extra>", showlegend=False, row=1, col=1)
    fig.add_bar(x=variants, y=[t.loc[m, "sqnr_db"] for m in variants], marker_color=[colour[m] for m in variants],
                text=[f"{t.loc[m, 'sqnr_db']:.1f} dB" for m in variants], textposition="auto",
                hovertemplate="%{x}: %{y:.1f} dB<extra></extra>", showlegend=False, row=1, col=2)
    axis = log_axis([*distance, *([floor] if 0.0 in distance else [])])
    axis["range"][1] += 0.5  # room above the tallest bar for its label
    fig.update_yaxes(**axis, row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=1, col=2)
    _layout(fig, "Output fidelity against FP32")
    return fig.update_layout(margin=dict(t=90))  # the panels' titles go under the figure's


def _latency_figure(c: Any, go: Any) -> Any:
    """CPU latency measured here, and the NPU estimate of each target for the models with operators
    on that NPU; a log axis when the bars differ by 10x or more (an NPU estimate beside a CPU time)."""
    t = c.table
    models = list(t.index)
    fig = go.Figure()
    fig.add_bar(name="CPU (onnxruntime, median)", x=models, y=t["cpu_ms"],
                error_y=dict(type="data", symmetric=False, array=(t["cpu_p90_ms"] - t["cpu_ms"]).clip(lower=0)),
                marker_color="#8c8c8c")
    shown = list(t["cpu_ms"])
    for k, target in enumerate(c.targets):
        col = f"npu_ms_{target}"
        if col not in t:
            continue
        values = [t.loc[m, col] if _on_npu(t, m, target) else None for m in models]
        if any(v is not None for v in values):
            fig.add_bar(name=f"NPU {target} (estimate)", x=models, y=values, marker_color=COLOURS[k % len(COLOURS)])
            shown += [v for v in values if v is not None]
    finite = [v for v in shown if v is not None and np.isfinite(v) and v > 0]
    if finite and max(finite) >= 10 * min(finite):
        fig.update_yaxes(**log_axis(finite))
    fig.update_yaxes(title="ms per inference")
    _layout(fig, "Latency per inference (CPU measured here: median, bar to p90; NPU estimated)")
    return fig.update_layout(barmode="group")


def histogram_figure(c: Any, tensor: str, model: str, samples: int = 4, bins: int = 80) -> Any:
    """Value histogram of FP32 ``tensor`` in the reference and in ``model``, overlaid."""
    import plotly.graph_objects as go

    ref, test = c.tensor_values(tensor, model, samples)
    lo, hi = float(min(ref.min(), test.min())), float(max(ref.max(), test.max()))
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    fig = go.Figure()
    counts = []
    for name, values, colour in ((c.reference, ref, REFERENCE_COLOUR), (model, test, _colours(c.models)[model])):
        counts.append(np.histogram(values, edges)[0])
        fig.add_bar(name=name, x=(edges[:-1] + edges[1:]) / 2, y=counts[-1], marker_color=colour, opacity=0.6)
    fig.update_layout(barmode="overlay", bargap=0)
    fig.update_xaxes(title="value")
    fig.update_yaxes(title="count", **log_axis(np.concatenate(counts)))
    return _layout(fig, f"{tensor}: FP32 vs {model} ({len(ref)} values)", 320)


def comparison_html(c: Any) -> str:
    """A self-contained page that opens offline: plotly.js is inlined once (never loaded from a
    CDN), then the tables, figures and notes."""
    import plotly.io as pio

    parts = []
    for k, fig in enumerate(comparison_figures(c).values()):
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=(k == 0), config={"displaylogo": False}))
    per_layer = c.per_layer.sort_values(["model", "order"]).drop(columns=["order"])
    notes = "".join(f"<li>{esc(n)}</li>" for n in [*c.notes, *latency_notes(c)])
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ryzen-nb: FP32 vs quantized</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}
table.rnb-table{{border-collapse:collapse;font-size:13px}} .rnb-table td,.rnb-table th{{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}} .rnb-table td:first-child,
.rnb-table th:first-child,.rnb-per-layer td:nth-child(-n+4),.rnb-per-layer th:nth-child(-n+4){{text-align:left}}
</style></head><body>
<h1>FP32 vs quantized</h1>
<p>{c.samples} held-out samples; task: {esc(c.task)}; models: {esc(', '.join(c.models))}.</p>
{table_html(display_table(c))}
<ul>{notes}</ul>
{''.join(parts)}
<h3>Per-layer SQNR (dB)</h3>
<div class="rnb-per-layer">{table_html(per_layer, max_rows=5000)}</div>
<p style="color:#777">Made by ryzen-nb.</p>
</body></html>"""
