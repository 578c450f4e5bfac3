"""Loading and saving models: copies in, atomic writes out, errors that say what to do.

Every entry point of ryzen-nb takes a model as a path, bytes or ``onnx.ModelProto`` and works on a
copy: the user's file or object is never modified, and an output is never written over the input.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import onnx

from ryzen_nb.errors import ModelError, ModelNotFoundError

__all__ = ["ModelLike", "load_model", "save_model", "model_path_of", "same_file", "temporary_beside", "write_atomic"]

ModelLike = str | os.PathLike | bytes | onnx.ModelProto

#: protobuf cannot serialise a message above 2 GiB; larger models keep weights as external data
_PROTOBUF_LIMIT = 2**31 - 1


def model_path_of(model: ModelLike) -> Path | None:
    """The file a model came from, if it was given as a path."""
    if isinstance(model, (str, os.PathLike)):
        return Path(model)
    return None


def load_model(model: ModelLike, what: str = "model") -> onnx.ModelProto:
    """A private copy of ``model`` (path, bytes or ModelProto), external data included."""
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_model_from_string(bytes(model))
        except Exception as exc:  # protobuf raises DecodeError and friends
            raise ModelError(f"The {what} bytes are not a valid ONNX model ({exc}).") from exc
    if isinstance(model, (str, os.PathLike)):
        path = Path(model).expanduser()
        if not path.exists():
            near = sorted(p.name for p in path.parent.glob("*.onnx")) if path.parent.is_dir() else []
            hint = f" ONNX files in {path.parent}: {', '.join(near[:8])}." if near else ""
            raise ModelNotFoundError(f"The {what} file {str(path)!r} does not exist.{hint}")
        if path.is_dir():
            raise ModelError(f"The {what} path {str(path)!r} is a folder; give the .onnx file inside it.")
        try:
            return onnx.load(str(path), load_external_data=True)
        except Exception as exc:
            raise ModelError(
                f"Could not read {str(path)!r} as an ONNX model ({type(exc).__name__}: {exc}). "
                "Is it an .onnx file (not a PyTorch checkpoint or a Git LFS pointer)?"
            ) from exc
    raise ModelError(
        f"The {what} must be a file path, bytes or an onnx.ModelProto; got {type(model).__name__}."
    )


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def save_model(model: onnx.ModelProto, path: str | os.PathLike, *, protect: Path | None = None) -> Path:
    """Write ``model`` to ``path`` atomically (a temporary file in the same folder, then a rename).

    ``protect`` is the input model's path: writing over it is refused. Models above protobuf's
    2 GiB limit are saved with their weights in a ``<name>.data`` file next to them.
    """
    out = Path(path).expanduser()
    if protect is not None and (same_file(out, protect) or out.resolve() == protect.resolve()):
        raise ModelError(
            f"Refusing to write the output over the input model {str(protect)!r}; choose another output path."
        )
    if out.is_dir():
        raise ModelError(f"The output path {str(out)!r} is a folder; give a file name such as model_quant.onnx.")
    out.parent.mkdir(parents=True, exist_ok=True)
    with temporary_beside(out) as tmp:
        if model.ByteSize() > _PROTOBUF_LIMIT:
            data_name = out.name + ".data"
            onnx.save_model(model, str(tmp), save_as_external_data=True, all_tensors_to_one_file=True, location=data_name)
        else:
            onnx.save_model(model, str(tmp))
        os.replace(tmp, out)
    return out


@contextlib.contextmanager
def temporary_beside(dest: Path) -> Iterator[Path]:
    """A fresh temporary file in ``dest``'s folder (same file system, so ``os.replace`` onto
    ``dest`` is atomic); removed on the way out unless the caller renamed it into place."""
    handle, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    os.close(handle)
    temp = Path(name)
    try:
        yield temp
    finally:
        temp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically: readers never see half a file."""
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    with temporary_beside(out) as temp:
        temp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(temp, out)
    return out
