"""The Pareto view of a sweep: which configurations no other one beats on task metric, emulated NPU
latency and model size at once.

>>> table = ryzen_nb.sweep("model.onnx", calibration, data=held_out, labels=labels)   # doctest: +SKIP
>>> pareto_front(table)                       # True for the configurations on the front
>>> pareto_figure(table)                      # plotly: latency x metric, marker size = model size
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["pareto_figure", "pareto_front"]


def pareto_front(table: Any, *, metric: str = "metric", latency: str = "npu_latency_ms", size: str = "size_mb",
                 by: str | None = "target") -> Any:
    """A boolean Series: is each row on the Pareto front (higher ``metric``, lower ``latency`` and
    ``size``), among the rows of its ``by`` group (each NPU target separately; None: all rows)?
    Rows missing a value (a failed configuration) are never on the front."""
    import pandas as pd

    front = pd.Series(False, index=table.index)
    groups = table.groupby(by, sort=False) if by and by in table else [(None, table)]
    for _, part in groups:
        values = part[[metric, latency, size]].to_numpy(dtype=float, copy=True)
        values[:, 0] = -values[:, 0]  # all three: lower is better
        ok = np.isfinite(values).all(axis=1)
        for i, row in enumerate(values):
            if not ok[i]:
                continue
            others = values[ok]
            dominated = np.any(np.all(others <= row, axis=1) & np.any(others < row, axis=1))
            front.loc[part.index[i]] = not dominated
    return front


def pareto_figure(table: Any, *, metric: str = "metric", latency: str = "npu_latency_ms", size: str = "size_mb",
                  label: str = "config", by: str | None = "target") -> Any:
    """A plotly figure of a sweep: emulated NPU latency (x) against the task metric (y), marker area
    proportional to model size, one colour per ``by`` group; the Pareto front of each group joined by
    a line, the other configurations faded. Hover shows the configuration."""
    import plotly.graph_objects as go

    ok = table.dropna(subset=[metric, latency, size])
    on_front = pareto_front(ok, metric=metric, latency=latency, size=size, by=by)
    fig = go.Figure()
    groups = ok.groupby(by, sort=False) if by and by in ok else [("all", ok)]
    largest = float(ok[size].max()) if len(ok) else 1.0
    for name, part in groups:
        marker_size = 10 + 30 * np.sqrt(part[size].to_numpy(dtype=float) / (largest or 1.0))
        front = on_front.loc[part.index].to_numpy()
        text = [f"{r[label]}<br>{metric} {r[metric]:.4g}<br>{latency} {r[latency]:.3g}<br>{size} {r[size]:.3g}"
                for _, r in part.iterrows()]
        fig.add_trace(go.Scatter(x=part[latency], y=part[metric], mode="markers", name=str(name),
                                 marker={"size": marker_size, "opacity": [0.9 if f else 0.35 for f in front]},
                                 text=text, hovertemplate="%{text}<extra></extra>"))
        line = part[front].sort_values(latency)
        if len(line) > 1:
            fig.add_trace(go.Scatter(x=line[latency], y=line[metric], mode="lines", showlegend=False,
                                     line={"dash": "dot", "width": 1}, hoverinfo="skip"))
    fig.update_layout(title="Sweep: task metric vs emulated NPU latency (marker size: model size; "
                            "dotted: Pareto front)",
                      xaxis_title=f"{latency} (estimate)", yaxis_title=metric, template="plotly_white")
    return fig
