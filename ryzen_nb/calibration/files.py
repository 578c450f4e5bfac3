"""Reading the data files users point at (.npy, .npz, images), with errors that name the file.

numpy and Pillow fail on a truncated, empty or foreign file with messages that do not say which
file it was ("cannot reshape array", "Object arrays cannot be loaded...", "broken PNG file"): in a
folder of hundreds the user cannot act on that. Every reader of ryzen-nb goes through these.
"""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb.errors import CalibrationDataError, RyzenNBError

__all__ = ["read_array", "read_archive", "read_image"]

#: what numpy and Pillow raise for a file that is not what its name says (Pillow raises SyntaxError
#: for some broken PNG chunks)
_UNREADABLE = (ValueError, OSError, EOFError, SyntaxError, zipfile.BadZipFile, KeyError)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "allow_pickle" in text:
        return "it holds Python objects, not numbers (save a numeric array: np.save(path, array.astype(np.float32)))"
    return text[:200]


def read_array(path: Path, error: type[RyzenNBError] = CalibrationDataError) -> np.ndarray:
    """The array in a .npy file (never unpickled)."""
    try:
        return np.load(path, allow_pickle=False)
    except _UNREADABLE as exc:
        raise error(f"The file {str(path)!r} is not a readable .npy array: {_reason(exc)}. Write it with "
                    "np.save(path, array), or remove it from the folder.") from exc


def read_archive(path: Path, error: type[RyzenNBError] = CalibrationDataError) -> dict[str, np.ndarray]:
    """The arrays in a .npz file, by name (never unpickled)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except _UNREADABLE as exc:
        raise error(f"The file {str(path)!r} is not a readable .npz archive: {_reason(exc)}. Write it with "
                    "np.savez(path, input_name=array), or remove it from the folder.") from exc


@contextlib.contextmanager
def read_image(path: Path, error: type[RyzenNBError] = CalibrationDataError) -> Iterator[Any]:
    """``with read_image(path) as img:`` — a Pillow image whose decoding errors, inside the block
    too (Pillow decodes lazily), name the file."""
    from PIL import Image  # Pillow loads only where images are read

    try:
        with Image.open(path) as img:
            img.load()
            yield img
    except _UNREADABLE as exc:
        raise error(f"The file {str(path)!r} is not a readable image: {_reason(exc)}. Replace it with a valid "
                    ".png/.jpg file, or remove it from the folder.") from exc
