"""What every widget of ryzen-nb shares: errors shown inside the widget, front-end assets, and
small display helpers.

Exceptions raised in an ipywidgets callback (``observe``, ``on_click``) are swallowed by the
kernel's comm handler: the user clicks and nothing happens. Every callback here is wrapped by
:func:`surfaces_errors`, which shows the error in the widget's own :class:`ErrorBox` (and keeps it
on ``widget.last_error`` for tests and scripts).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

import ipywidgets as w

from ryzen_nb._html import esc, table_html

__all__ = ["ErrorBox", "surfaces_errors", "asset", "esc", "figure_output", "show_figure", "table_html"]

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

def asset(name: str) -> str:
    """The text of a widget's front-end file (``partition_view.js``, ``partition_view.css``...).

    The files sit beside the Python class that owns them, in this package (anywidget's layout), so a
    wheel, an editable install and a source checkout all read them from the same place."""
    source = resources.files(__package__) / name
    if not source.is_file():
        raise FileNotFoundError(f"ryzen-nb's front-end file {name!r} is missing from {source}; reinstall ryzen-nb.")
    return source.read_text(encoding="utf-8")


def figure_output() -> w.Output:
    """The place of a plotly figure in a widget: an Output widget that :func:`show_figure` fills.

    Not a plotly FigureWidget: changes made to one before the browser has drawn it (a widget that
    fills its figure in ``__init__``) are lost, and later ones can fail in the front end ("Error
    setting state"), leaving an empty frame; each one also carries plotly.js (about 5 MB) to the
    browser. A figure in an Output is drawn by the front end's own plotly renderer (JupyterLab's
    jupyterlab-plotly, which comes with plotly; VS Code's)."""
    return w.Output(layout=w.Layout(width="100%"))


def show_figure(out: w.Output, fig: Any) -> None:
    """Make ``out`` show ``fig``, replacing what it showed. The figure goes into the Output's state
    (not through a captured ``display``), so it shows wherever and whenever the widget is drawn,
    also when set before the widget is displayed or from a callback."""
    import plotly.io as pio

    bundle = pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict())
    title = fig.layout.title.text or "figure"
    bundle["text/plain"] = f"<plotly figure: {title}>"
    out.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


class ErrorBox(w.HTML):
    """A red message under a widget: the error of its last callback, or nothing.

    Empty, it is not displayed at all (``layout.display = "none"``), so that no page style can
    draw an empty box; its class is the widgets' own, ``rnb-widget-error``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(value="", **kwargs)
        self.add_class("rnb-widget-error")
        self.layout.display = "none"
        self.last_error: BaseException | None = None

    def show(self, error: BaseException | str, context: str = "") -> None:
        self.last_error = error if isinstance(error, BaseException) else None
        kind = type(error).__name__ if isinstance(error, BaseException) else "Problem"
        where = f"{esc(context)}: " if context else ""
        self.value = (f'<div class="rnb-error-box" style="color:#b00020;border-left:3px solid #b00020;'
                      f'padding:4px 8px;margin:4px 0;white-space:pre-wrap"><b>{esc(kind)}</b> {where}{esc(error)}</div>')
        self.layout.display = ""

    def clear(self) -> None:
        self.last_error = None
        self.value = ""
        self.layout.display = "none"


def surfaces_errors(context: str = "") -> Callable[[F], F]:
    """Decorate a widget method used as a callback: an exception is shown in ``self.errors`` (an
    :class:`ErrorBox`) and logged instead of vanishing; success clears the box."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                result = method(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - shown to the user, who can act on it
                log.debug("callback %s failed", method.__name__, exc_info=True)
                self.errors.show(exc, context)
                return None
            self.errors.clear()
            return result

        return run  # type: ignore[return-value]

    return wrap


