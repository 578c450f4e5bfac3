"""Checking calibration feeds against the model's inputs before any calibration work starts.

AMD Quark only logs a mismatch and returns without an output file; here every problem is an error
that names the input, what the model expects, what came, and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.prepare import InputSpec

__all__ = ["check_feed"]


def _shape_text(shape: Sequence[object]) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in shape) + "]"


def check_feed(feed: Mapping[str, np.ndarray], inputs: Sequence[InputSpec], index: int = 0) -> None:
    """Raise :class:`CalibrationDataError` unless ``feed`` fits ``inputs`` exactly."""
    where = f"Calibration sample {index}"
    expected = {spec.name: spec for spec in inputs}
    missing = [n for n in expected if n not in feed]
    extra = [n for n in feed if n not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"is missing input(s) {missing}")
        if extra:
            parts.append(f"has input(s) {extra} the model does not have")
        hint = ""
        if len(missing) == 1 and len(extra) == 1:
            hint = f" Rename {extra[0]!r} to {missing[0]!r} in your reader's get_next()."
        raise CalibrationDataError(
            f"{where} " + " and ".join(parts) + ". The model's inputs are: "
            + "; ".join(s.describe() for s in inputs) + "." + hint
        )
    for name, spec in expected.items():
        value = feed[name]
        if not isinstance(value, np.ndarray):
            raise CalibrationDataError(
                f"{where}, input {name!r}: expected a numpy array, got {type(value).__name__}. Wrap it with np.asarray()."
            )
        if value.dtype != spec.dtype:
            raise CalibrationDataError(
                f"{where}, input {name!r}: dtype {value.dtype}, but the model expects {spec.dtype}. "
                f"Convert it with .astype(np.{spec.dtype.name})."
            )
        if value.ndim != len(spec.shape):
            hint = ""
            if value.ndim == len(spec.shape) - 1:
                hint = " Add the batch dimension with x[None] (or np.expand_dims(x, 0))."
            elif value.ndim == len(spec.shape) + 1:
                hint = " Remove the extra leading dimension, or give the samples one by one."
            raise CalibrationDataError(
                f"{where}, input {name!r}: rank {value.ndim} (shape {list(value.shape)}), but the model expects "
                f"rank {len(spec.shape)} {_shape_text(spec.shape)}.{hint}"
            )
        wrong = [
            i for i, (got, want) in enumerate(zip(value.shape, spec.shape)) if isinstance(want, int) and got != want
        ]
        if wrong:
            hint = ""
            if len(spec.shape) == 4 and value.shape[1] == spec.shape[3] and value.shape[3] == spec.shape[1]:
                hint = " The layout looks swapped: transpose NHWC <-> NCHW."
            raise CalibrationDataError(
                f"{where}, input {name!r}: shape {list(value.shape)}, but the model expects "
                f"{_shape_text(spec.shape)} (dimension(s) {wrong} differ).{hint}"
            )
        if value.dtype.kind == "f" and value.size:
            bad = ~np.isfinite(value)
            if bad.any():
                kind = "NaN" if np.isnan(value).any() else "Inf"
                raise CalibrationDataError(
                    f"{where}, input {name!r}: holds {int(bad.sum())} {kind} value(s) (first at flat index "
                    f"{int(np.argmax(bad.reshape(-1)))}). Clean the data (e.g. np.nan_to_num) — a single NaN "
                    "would corrupt every calibration range downstream."
                )
