"""Two small HTML helpers every rich display of ryzen-nb uses (summaries, reports, widgets)."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["esc", "table_html"]


def esc(value: Any) -> str:
    """``value`` as text safe inside HTML."""
    return html.escape(str(value))


def table_html(frame: Any, float_format: str = "{:.4g}", max_rows: int = 200) -> str:
    """A pandas DataFrame as a compact HTML table (for widgets and static exports)."""
    return frame.head(max_rows).to_html(index=False, border=0, classes="rnb-table",
                                        float_format=lambda v: float_format.format(v), na_rep="–")
