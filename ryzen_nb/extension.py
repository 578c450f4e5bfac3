"""The IPython extension: ``%load_ext ryzen_nb`` registers magics for the common one-liners.

::

    %load_ext ryzen_nb
    %rnb_quantize model.onnx model_xint8.onnx --preset XINT8 --data calib_images/
    %rnb_emulate model_xint8.onnx --target PHX            # compile report (add --view for the widget)
    %rnb_compare model.onnx model_xint8.onnx model_bf16.onnx --data images --labels labels
    %rnb_presets                                           # the presets table

Arguments that name a variable of the notebook (``--data images``) use that object; anything else
is read as a path. Each magic returns its result object (QuantizationSummary, NPUProgram,
Comparison), which Jupyter displays as a rich HTML summary; errors are printed as one readable
line, not a traceback.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from ryzen_nb import npu, ui
from ryzen_nb.errors import RyzenNBError
from ryzen_nb.evaluation.compare import compare
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.config import PRESETS, Config

__all__ = ["load_ipython_extension", "MAGICS"]


def _parser(prog: str, description: str) -> Any:
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # an exception, not sys.exit, inside a notebook
            raise ValueError(f"{prog}: {message}\nusage: {self.format_usage().strip()}")

    return Parser(prog=prog, description=description, add_help=False)


def _value(token: str | None, namespace: dict[str, Any]) -> Any:
    """The notebook variable ``token`` names, else ``token`` itself (a path)."""
    if token is not None and token.isidentifier() and token in namespace:
        return namespace[token]
    return token


class _Magics:
    """The magics, as plain functions of (line, user namespace) so they are testable without IPython."""

    @staticmethod
    def rnb_quantize(line: str, ns: dict[str, Any]) -> Any:
        p = _parser("%rnb_quantize", "Quantize MODEL into OUTPUT with a preset or a config file.")
        p.add_argument("model")
        p.add_argument("output", nargs="?", help="output path (omit to keep the model in memory: summary.model)")
        p.add_argument("--preset", default="XINT8")
        p.add_argument("--config", help="a Config JSON file, or a variable holding a Config")
        p.add_argument("--data", help="calibration data: a folder, or a variable (array, list of feeds, reader)")
        p.add_argument("--limit", type=int, help="at most this many calibration samples")
        a = p.parse_args(shlex.split(line))
        config: Any = a.preset
        if a.config:
            config = _value(a.config, ns)
            if isinstance(config, str):
                config = Config.from_json(Path(config).expanduser().read_text())
        return quantize(_value(a.model, ns), a.output, config, _value(a.data, ns), limit=a.limit)

    @staticmethod
    def rnb_emulate(line: str, ns: dict[str, Any]) -> Any:
        p = _parser("%rnb_emulate", "What the NPU would run: partition, reasons, latency estimate.")
        p.add_argument("model")
        p.add_argument("--target", default="STX")
        p.add_argument("--view", action="store_true", help="return the PartitionView widget")
        a = p.parse_args(shlex.split(line))
        model = _value(a.model, ns)
        if a.view:
            return ui.PartitionView(model, target=a.target)
        return npu.compile(model, a.target)

    @staticmethod
    def rnb_compare(line: str, ns: dict[str, Any]) -> Any:
        p = _parser("%rnb_compare", "FP32 vs quantized on held-out data.")
        p.add_argument("reference")
        p.add_argument("variants", nargs="+", help="quantized models (paths or variables)")
        p.add_argument("--data", required=True, help="held-out data (never the calibration data)")
        p.add_argument("--labels", help="a variable with one label per sample")
        p.add_argument("--targets", default="PHX,STX", help="NPU targets for the latency estimate ('' for none)")
        p.add_argument("--dashboard", action="store_true", help="return the dashboard widget")
        a = p.parse_args(shlex.split(line))
        variants = {}
        for token in a.variants:
            value = _value(token, ns)
            name = token if value is not token else token.rsplit("/", 1)[-1].removesuffix(".onnx")
            variants[name] = value
        result = compare(_value(a.reference, ns), variants, _value(a.data, ns), labels=_value(a.labels, ns),
                         targets=tuple(t for t in a.targets.split(",") if t))
        return ui.dashboard(result) if a.dashboard else result

    @staticmethod
    def rnb_presets(line: str, ns: dict[str, Any]) -> Any:
        return pd.DataFrame([{"preset": p.name, "description": p.description} for p in PRESETS.values()])


MAGICS = {name: getattr(_Magics, name) for name in ("rnb_quantize", "rnb_emulate", "rnb_compare", "rnb_presets")}


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics (called by ``%load_ext ryzen_nb``)."""
    def register(name: str, fn: Any) -> None:
        def magic(line: str = "") -> Any:
            try:
                return fn(line, ipython.user_ns)
            except (RyzenNBError, ValueError, FileNotFoundError) as exc:
                # one readable line instead of a traceback: these are the user's input problems
                print(f"{type(exc).__name__}: {exc}")
                return None

        magic.__doc__ = fn.__doc__ or f"ryzen-nb: %{name}"
        ipython.register_magic_function(magic, magic_kind="line", magic_name=name)

    for name, fn in MAGICS.items():
        register(name, fn)
