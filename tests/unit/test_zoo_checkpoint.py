"""The PyTorch checkpoint reader, on checkpoints written here without torch in both layouts.

A stand-in ``torch`` module in ``sys.modules`` lets the standard pickler write the very opcodes
``torch.save`` writes (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, persistent ids);
the integration parity tests compare against files written by real torch.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import sys
import types
import zipfile

import numpy as np
import pytest

from ryzen_nb.errors import ModelError
from ryzen_nb.zoo.checkpoint import load_state_dict

_STORAGE_NAMES = {
    np.dtype("float32"): "FloatStorage",
    np.dtype("int64"): "LongStorage",
    np.dtype("float16"): "HalfStorage",
}


class _Storage:
    def __init__(self, key: str, flat: np.ndarray) -> None:
        self.key, self.flat = key, flat


class _Tensor:
    """Pickles as ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``."""

    def __init__(self, storage: _Storage, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]) -> None:
        self.args = (storage, offset, shape, stride, False, collections.OrderedDict())

    def __reduce__(self):  # noqa: ANN204
        return sys.modules["torch._utils"]._rebuild_tensor_v2, self.args


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):  # noqa: ANN002, ANN202
        raise AssertionError("only pickled, never called")

    _rebuild_tensor_v2.__module__ = "torch._utils"
    _rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    for name in _STORAGE_NAMES.values():
        setattr(torch, name, type(name, (), {"__module__": "torch"}))
    torch._utils = utils
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):  # noqa: ANN001, ANN201
        if isinstance(obj, _Storage):
            storage_type = getattr(sys.modules["torch"], _STORAGE_NAMES[obj.flat.dtype])
            return ("storage", storage_type, obj.key, "cpu", obj.flat.size)
        return None


def _state() -> tuple[dict[str, _Tensor], dict[str, np.ndarray], list[_Storage]]:
    """A state dict with a transposed (non-contiguous) view, a shared storage with an offset, int64 and fp16."""
    rng = np.random.default_rng(0)
    shared = _Storage("0", rng.standard_normal(12).astype(np.float32))
    count = _Storage("1", np.array([7], dtype=np.int64))
    half = _Storage("2", rng.standard_normal(4).astype(np.float16))
    tensors = collections.OrderedDict(
        weight_t=_Tensor(shared, 0, (3, 2), (1, 3)),  # the transpose of a 2x3 block
        tail=_Tensor(shared, 6, (6,), (1,)),  # same storage, offset 6
        steps=_Tensor(count, 0, (), ()),
        half=_Tensor(half, 0, (2, 2), (2, 1)),
    )
    expected = {
        "weight_t": shared.flat[:6].reshape(2, 3).T,
        "tail": shared.flat[6:],
        "steps": np.array(7, dtype=np.int64),
        "half": half.flat.reshape(2, 2),
    }
    return tensors, expected, [shared, count, half]


def _zip_checkpoint(obj: object, storages: list[_Storage]) -> bytes:
    payload = io.BytesIO()
    _Pickler(payload, protocol=2).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", payload.getvalue())
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")
        for storage in storages:
            archive.writestr(f"archive/data/{storage.key}", storage.flat.tobytes())
    return out.getvalue()


def _legacy_checkpoint(obj: object, storages: list[_Storage]) -> bytes:
    out = io.BytesIO()
    pickle.dump(0x1950A86A20F9469CFC6C, out, protocol=2)
    pickle.dump(1001, out, protocol=2)
    pickle.dump({"protocol_version": 1001, "little_endian": True, "type_sizes": {}}, out, protocol=2)
    _Pickler(out, protocol=2).dump(obj)
    pickle.dump([s.key for s in storages], out, protocol=2)
    for storage in storages:
        out.write(np.int64(storage.flat.size).tobytes())
        out.write(storage.flat.tobytes())
    return out.getvalue()


@pytest.mark.parametrize("layout", [_zip_checkpoint, _legacy_checkpoint], ids=["zip", "legacy"])
def test_reads_both_layouts(fake_torch: types.ModuleType, layout, tmp_path) -> None:  # noqa: ANN001
    tensors, expected, storages = _state()
    path = tmp_path / "model.pth"
    path.write_bytes(layout(tensors, storages))
    for source in (path, path.read_bytes()):
        state = load_state_dict(source)
        assert list(state) == list(expected)
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and state[key].shape == value.shape, key
            np.testing.assert_array_equal(state[key], value, err_msg=key)
            assert state[key].flags.c_contiguous and state[key].flags.owndata


def test_training_checkpoint_wrapping_the_state_dict(fake_torch: types.ModuleType) -> None:
    tensors, expected, storages = _state()
    state = load_state_dict(_zip_checkpoint({"epoch": 3, "state_dict": tensors}, storages))
    np.testing.assert_array_equal(state["tail"], expected["tail"])


class _Evil:
    def __reduce__(self):  # noqa: ANN204
        return os.system, ("echo pwned",)


def test_refuses_to_run_code_named_by_the_pickle(fake_torch: types.ModuleType) -> None:
    with pytest.raises(ModelError, match=r"posix\.system|os\.system|refuses to unpickle"):
        load_state_dict(_zip_checkpoint({"x": _Evil()}, []), name="evil.pth")


def test_not_a_checkpoint() -> None:
    with pytest.raises(ModelError, match="not a PyTorch checkpoint|neither a zip nor"):
        load_state_dict(b"this is not a checkpoint at all")


def test_truncated_legacy_checkpoint(fake_torch: types.ModuleType) -> None:
    tensors, _, storages = _state()
    data = _legacy_checkpoint(tensors, storages)
    with pytest.raises(ModelError, match="truncated"):
        load_state_dict(data[:-3])
