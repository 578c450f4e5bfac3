"""Exception types of ryzen-nb.

Every error the package raises on bad input is one of these, and its message is written for a
person: it names the argument or thing that is wrong, what was expected, what came, and the fix.
They subclass the built-in type a Python user would try to catch (``ValueError``, ``KeyError``
is avoided because it quotes its message), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

__all__ = [
    "RyzenNBError",
    "FormatError",
    "ModelError",
    "ModelNotFoundError",
    "CalibrationDataError",
    "ConfigError",
    "OutputPathError",
    "UnknownNameError",
    "closest_first",
]


class RyzenNBError(Exception):
    """Base class of every error raised by ryzen-nb."""


class FormatError(RyzenNBError, ValueError):
    """A numeric-format argument is invalid (scale, zero point, axis, rounding, input dtype...)."""


class ModelError(RyzenNBError, ValueError):
    """The model cannot be used as given (invalid ONNX, dynamic shapes left, unsupported opset...)."""


class ModelNotFoundError(RyzenNBError, FileNotFoundError):
    """A model path does not exist."""


class CalibrationDataError(RyzenNBError, ValueError):
    """Calibration data does not fit the model (names, shapes, dtypes, NaN/Inf, empty)."""


class ConfigError(RyzenNBError, ValueError):
    """A quantization configuration is inconsistent or names something that does not exist."""


class OutputPathError(ConfigError, ModelError):
    """An output path cannot be written: it is (or lies in) a file or folder the same call reads, it
    is a folder, or it lies under a file. Raised before any work starts, naming both paths.

    It subclasses the two errors these checks raised before (``ConfigError`` from ``quantize``,
    ``ModelError`` from saving a model), so existing ``except`` clauses keep catching it.
    """


class UnknownNameError(RyzenNBError, ValueError):
    """A name (format, preset, option, target...) is not one ryzen-nb knows.

    ``choices`` holds every valid name, closest to the given one first.
    """

    def __init__(self, kind: str, name: object, choices: Iterable[str], hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.choices = closest_first(str(name), choices)
        close = [c for c in self.choices[:3] if _similar(str(name), c)]
        guess = f" Did you mean {close[0]!r}?" if close else ""
        listed = ", ".join(repr(c) for c in self.choices)
        msg = f"Unknown {kind} {name!r}.{guess} Choose one of (closest first): {listed}."
        if hint:
            msg += f" {hint}"
        super().__init__(msg)


def _similar(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a in b or b in a or difflib.SequenceMatcher(None, a, b).ratio() >= 0.6


def closest_first(name: str, choices: Iterable[str]) -> list[str]:
    """Return ``choices`` sorted by similarity to ``name`` (most similar first, ties by order)."""
    key = name.lower()
    items = list(dict.fromkeys(choices))

    def score(choice: str) -> float:
        c = choice.lower()
        ratio = difflib.SequenceMatcher(None, key, c).ratio()
        if key and (key in c or c in key):
            ratio += 0.5  # a substring ("mxfp4" in "MXFP4E2M1") is a strong hint
        prefix = len(os.path.commonprefix([key, c]))
        return ratio + 0.5 * prefix / max(len(key), len(c), 1)  # so is a shared prefix

    return sorted(items, key=lambda c: -score(c))
