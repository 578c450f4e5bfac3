"""Loading and saving models: copies in, atomic writes out, errors that say what to do.

Every entry point of ryzen-nb takes a model as a path, bytes or ``onnx.ModelProto`` and works on a
copy: the user's file or object is never modified, and an output is never written over the input.

The one output guard of the package lives here, and every writer (the API, the command line, the
widgets, the JupyterLab server) goes through it:

* :func:`check_output` refuses, before any work starts, an output path that resolves (symbolic
  links, relative paths, hard links, letter case on case-insensitive file systems) to something the
  same call reads — an :class:`Input`: the model, its external-data files (:func:`model_inputs`), a
  calibration folder or file, a config file (:func:`path_inputs`) — or that is a folder or lies
  under a file. The error names both paths.
* :func:`write_atomic` and :func:`save_model` check again, then write to a temporary file beside the
  target and rename it into place: readers never see half a file, no temporary file survives an
  error or Ctrl-C, and new files get the permissions the umask gives (an overwritten file keeps its
  own).
"""

from __future__ import annotations

import contextlib
import functools
import math
import mmap
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, external_data_helper

from ryzen_nb.errors import ModelError, ModelNotFoundError, OutputPathError, RyzenNBError
from ryzen_nb.graph.checks import walk_graphs

__all__ = ["ModelLike", "tensor_bytes", "without_weights", "with_weights", "load_model", "save_model", "model_path_of", "same_file", "temporary_beside", "write_atomic",
           "too_large_to_serialize", "serialized_size", "for_checker", "PROTOBUF_LIMIT", "graph_only", "Input", "model_inputs", "path_inputs",
           "external_data_files", "external_locations", "check_output"]

ModelLike = str | os.PathLike | bytes | onnx.ModelProto

#: protobuf cannot serialise a message above 2 GiB; larger models keep weights as external data
PROTOBUF_LIMIT = 2**31 - 1


def tensor_bytes(t: onnx.TensorProto) -> int:
    """An upper bound of the bytes ``t``'s data takes in the serialized model, counted without
    serializing it (protobuf's ByteSize encodes the whole message to count: 0.3-2 s on a 100 MB
    model, and the quantizer asks a dozen times); 10 bytes per element of a typed field, a varint's most.
    Raw data is counted from the dimensions: reading ``t.raw_data`` copies it (0.04 s for ResNet50's
    100 MB on every pass over the weights)."""
    typed = len(t.float_data) + len(t.int32_data) + len(t.int64_data) + len(t.double_data) + len(t.uint64_data)
    raw = math.prod(t.dims) * _item_bytes(t.data_type) if t.HasField("raw_data") else 0
    return raw + 10 * typed + sum(len(s) + 10 for s in t.string_data) + 256


@functools.lru_cache(maxsize=64)
def _item_bytes(data_type: int) -> int:
    """Bytes per element of an ONNX element type in raw data (1 for the packed 4-bit types: a bound)."""
    try:
        return max(1, onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize)
    except (KeyError, ValueError, TypeError):
        return 16


def too_large_to_serialize(model: onnx.ModelProto) -> bool:
    """Whether ``model`` is over protobuf's 2 GiB limit (SerializeToString would fail): it must go
    to onnxruntime and to disk with its weights as external data. Counted from the tensors and
    attributes (an upper bound; exact ByteSize only when that bound comes near the limit)."""
    total = 0
    for graph in walk_graphs(model.graph):
        total += sum(tensor_bytes(t) for t in graph.initializer)
        total += sum(tensor_bytes(t.values) + tensor_bytes(t.indices) for t in graph.sparse_initializer)
        for node in graph.node:
            total += 1024 + sum(10 * (len(a.ints) + len(a.floats)) + sum(len(x) + 10 for x in a.strings)
                                + (tensor_bytes(a.t) if a.HasField("t") else 0)
                                + sum(tensor_bytes(t) for t in a.tensors) for a in node.attribute)
    return total > PROTOBUF_LIMIT // 2 and model.ByteSize() > PROTOBUF_LIMIT


#: initializers of at least this many bytes travel beside the graph (:func:`without_weights`); the
#: ones shape inference reads for their values (shapes, axes, pads, scales) are far smaller
DETACHED_BYTES = 4096
#: element types onnxruntime takes from numpy arrays (bfloat16 and strings stay in the graph)
_DETACHABLE = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                         TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32,
                         TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL})
#: the location a stub of :func:`without_weights` names: no file, its data is held in memory
IN_MEMORY = "ryzen_nb:in-memory"


def _copy_except(message: Any, target: Any, skip: str) -> None:
    """Copy every set field of a protobuf ``message`` but ``skip`` into ``target``, without copying
    ``skip`` first (a ModelProto's CopyFrom would copy every weight)."""
    for field, value in message.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.type == field.TYPE_MESSAGE:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)


def without_weights(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, TensorProto]]:
    """``model`` whose large main-graph initializers are stubs (name, type, dims, external data held
    in memory), and those initializers by name.

    Serializing a model for onnxruntime or onnx's shape inference then costs its graph, not its
    weights: on a 100 MB ResNet50 one serialization took 0.3 s, and the quantizer made a dozen.
    onnxruntime takes the weights as arrays (:func:`ryzen_nb.graph.prepare.ort_session`); shape
    inference and the version converter need only their types (:func:`graph_only`)."""
    graph = onnx.GraphProto()
    _copy_except(model.graph, graph, "initializer")
    weights: dict[str, TensorProto] = {}
    for t in model.graph.initializer:
        if t.data_type in _DETACHABLE and t.data_location != TensorProto.EXTERNAL and \
                tensor_bytes(t) - 256 >= DETACHED_BYTES:
            stub = graph.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims,
                                         data_location=TensorProto.EXTERNAL)
            stub.external_data.add(key="location", value=IN_MEMORY)
            weights[t.name] = t
        else:
            graph.initializer.append(t)
    skeleton = onnx.ModelProto()
    _copy_except(model, skeleton, "graph")
    skeleton.graph.CopyFrom(graph)
    return skeleton, weights


def _field_bytes(body: int) -> int:
    """Bytes of a length-delimited protobuf field of ``body`` bytes whose number is below 16 (a
    one-byte tag, the length as a varint, the body)."""
    return 1 + max(1, (body.bit_length() + 6) // 7) + body


def _tensor_size(t: TensorProto) -> int:
    """``t.ByteSize()``, with its raw data counted by length instead of encoded."""
    if not t.HasField("raw_data"):
        return t.ByteSize()
    header = TensorProto()
    _copy_except(t, header, "raw_data")
    return header.ByteSize() + _field_bytes(len(t.raw_data))


def serialized_size(model: onnx.ModelProto) -> int:
    """``model.ByteSize()`` (the bytes of the serialized model), exactly, without encoding its
    weights: protobuf's ByteSize encodes the whole message to count it (0.66 s for BERT-base's
    340 MB, against 0.1 s here). The graph is measured without its large weights, and each one's
    field is counted from its length."""
    skeleton, weights = without_weights(model)
    skeleton_graph = skeleton.graph.ByteSize()
    graph = skeleton_graph
    for stub in skeleton.graph.initializer:
        if stub.name in weights and _is_stub(stub):
            graph += _field_bytes(_tensor_size(weights[stub.name])) - _field_bytes(stub.ByteSize())
    return skeleton.ByteSize() - _field_bytes(skeleton_graph) + _field_bytes(graph)


def _is_stub(t: TensorProto) -> bool:
    """Whether ``t`` is a stub of :func:`without_weights` (its data held in memory, not in a file)."""
    return t.data_location == TensorProto.EXTERNAL and \
        any(e.key == "location" and e.value == IN_MEMORY for e in t.external_data)


def with_weights(model: onnx.ModelProto, weights: dict[str, TensorProto]) -> onnx.ModelProto:
    """``model`` (in place, and returned), a pass's result over a :func:`without_weights` skeleton,
    with the stubs of ``weights`` holding their data again."""
    for t in model.graph.initializer:
        if t.name in weights and _is_stub(t):
            t.CopyFrom(weights[t.name])
    return model


def for_checker(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as onnx's checker should see it: each large weight an empty tensor of its name and
    type. The checker serializes what it gets (0.56 s of BERT-base's 0.57 s went to its 340 MB of
    weights) and refuses a stub of :func:`without_weights`, whose data is in no file; it checks the
    graph's structure, which this keeps, while onnxruntime's load checks the weights.

    Values declared without a shape (exporters often leave graph outputs so, and onnxruntime accepts
    it) get an empty one: the checker stops at its first complaint, and "Field 'shape' of 'type' is
    required" came before any node was checked, so an unknown operator went through."""
    skeleton, _ = without_weights(model)
    for t in skeleton.graph.initializer:
        if _is_stub(t):
            del t.external_data[:]
            t.ClearField("data_location")
            del t.dims[:]
            t.dims.append(0)
    _declare_shapes(skeleton.graph)
    return skeleton


def _declare_shapes(graph: onnx.GraphProto) -> None:
    """An empty shape on each tensor value of ``graph`` and its subgraphs declared without one (only
    for the checker, which does not infer shapes)."""
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape"):
            value.type.tensor_type.shape.SetInParent()
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                _declare_shapes(sub)


def graph_only(model: onnx.ModelProto, fn: Callable[[onnx.ModelProto], onnx.ModelProto]) -> onnx.ModelProto:
    """``fn(model)`` for a pass that serializes the model (shape inference, the version converter)
    and reads its weights only for their types: it runs on the graph without them
    (:func:`without_weights`: 0.03 s instead of 0.7 s of shape inference on ResNet50), and they go
    back into its result by name. Should the pass rename a weight it runs again on the whole model;
    a graph over 2 GiB even without its weights goes through a temporary folder as external data."""
    skeleton, weights = without_weights(model)
    if not too_large_to_serialize(skeleton):
        result = with_weights(fn(skeleton), weights)
        if not any(_is_stub(t) for t in result.graph.initializer):
            return result
        if not too_large_to_serialize(model):
            return fn(model)
    with tempfile.TemporaryDirectory(prefix="ryzen_nb_graph_") as tmp:
        path = Path(tmp) / "model.onnx"
        save_model(model, path, external_data=True)
        result = fn(onnx.load(str(path), load_external_data=False))
        external_data_helper.load_external_data_for_model(result, tmp)
    return result


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
            proto = onnx.load_model_from_string(bytes(model))
        except Exception as exc:  # protobuf raises DecodeError and friends
            raise ModelError(f"The {what} bytes are not a valid ONNX model ({exc}).") from exc
        _refuse_graphless(proto, f"The {what} bytes ({len(model)})")
        return proto
    if isinstance(model, (str, os.PathLike)):
        path = Path(model).expanduser()
        if not path.exists():
            near = sorted(p.name for p in path.parent.glob("*.onnx")) if path.parent.is_dir() else []
            hint = f" ONNX files in {path.parent}: {', '.join(near[:8])}." if near else ""
            raise ModelNotFoundError(f"The {what} file {str(path)!r} does not exist.{hint}")
        if path.is_dir():
            raise ModelError(f"The {what} path {str(path)!r} is a folder; give the .onnx file inside it.")
        try:
            # the graph first, without its weights: a missing external data file is then an error that
            # names it, instead of protobuf's or onnx's message about a tensor
            model_proto = onnx.load(str(path), load_external_data=False)
        except Exception as exc:
            raise ModelError(
                f"Could not read {str(path)!r} as an ONNX model ({type(exc).__name__}: {exc}). "
                "Is it an .onnx file (not a PyTorch checkpoint or a Git LFS pointer)?"
            ) from exc
        _refuse_graphless(model_proto, f"The {what} file {str(path)!r} ({path.stat().st_size} bytes)")
        _load_external_data(model_proto, path)
        return model_proto
    raise ModelError(
        f"The {what} must be a file path, bytes or an onnx.ModelProto; got {type(model).__name__}."
    )


def _refuse_graphless(model: onnx.ModelProto, what: str) -> None:
    """Protobuf reads an empty file (and some other bytes) as an empty message without complaint:
    a model with neither a graph nor an IR version is no ONNX model."""
    if not model.HasField("graph") or model.ir_version == 0:
        raise ModelError(f"{what} holds no ONNX model (no graph or no IR version): an empty or cut-off file? "
                         "Export or download the .onnx file again.")


def external_locations(model: onnx.ModelProto) -> list[str]:
    """The external-data file names a model's tensors point at (relative to the model's folder)."""
    tensors = [t for g in walk_graphs(model.graph) for t in list(g.initializer)
               + [a.t for n in g.node for a in n.attribute if a.type == onnx.AttributeProto.TENSOR]]
    return sorted({entry.value for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL
                   for entry in t.external_data if entry.key == "location"})


def _load_external_data(model: onnx.ModelProto, path: Path) -> None:
    """Read the weights a model keeps in external files (beside ``path``) into it."""
    locations = external_locations(model)
    if not locations:
        return
    missing = [loc for loc in locations if not (path.parent / loc).is_file()]
    if missing:
        raise ModelError(
            f"The model {str(path)!r} keeps its weights in external data file(s) {missing}, which are not in "
            f"{str(path.parent)!r}. Copy them next to the .onnx file (they are part of the model)."
        )
    try:
        external_data_helper.load_external_data_for_model(model, str(path.parent))
    except Exception as exc:
        raise ModelError(f"Could not read the external data of {str(path)!r} ({type(exc).__name__}: {exc}).") from exc


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same inode (symbolic and hard links, letter case on
    a case-insensitive file system), or, when either does not exist, the same resolved path."""
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


# -- the output guard ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Input:
    """A file or folder a call reads, which no output of the same call may overwrite.

    ``what`` names it as the caller knows it — a Python parameter (``calibration_data``) or a
    command-line option (``--calib-data``) — so the error speaks the caller's language. In a folder,
    an existing file is protected, and so is a new file with one of the ``reads`` suffixes (it would
    join the data the next time the folder is read); ``reads=None`` protects any new file too."""

    what: str
    path: Path
    reads: tuple[str, ...] | None = None


def model_inputs(model: Any, what: str = "input model") -> list[Input]:
    """The files a model given as a path is read from: the .onnx file and its external-data files
    (``[]`` for bytes or a ModelProto)."""
    if not isinstance(model, (str, os.PathLike)):
        return []
    path = Path(model).expanduser()
    return [Input(what, path)] + [Input(f"external data of the {what} {str(path)!r}", f) for f in external_data_files(path)]


def path_inputs(data: Any, what: str, reads: Iterable[str] | None = None) -> list[Input]:
    """``data`` as an :class:`Input` if it is a path (a file or a folder), else ``[]`` (arrays,
    readers and other in-memory data cannot be overwritten)."""
    if not isinstance(data, (str, os.PathLike)) or not str(data):
        return []
    return [Input(what, Path(data).expanduser(), None if reads is None else tuple(s.lower() for s in reads))]


def external_data_files(path: Path) -> list[Path]:
    """The external-data files the ONNX file ``path`` names, read from its graph alone (not its
    weights); ``[]`` for a file that is not an ONNX model (loading it reports that)."""
    try:
        info = path.stat()
    except OSError:
        return []
    if not stat.S_ISREG(info.st_mode):
        return []
    return [path.parent / name for name in _external_names(str(path.resolve()), info.st_mtime_ns, info.st_size)]


@functools.lru_cache(maxsize=32)
def _external_names(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    # cached by path, time and size: a large model is parsed once for the check before the work and
    # once more for the check at write time, not on every call
    try:
        # every external tensor names its file under the key "location": a file without those bytes
        # has none, which a scan at disk speed tells (ResNet50's 100 MB: 0.06 s, where parsing takes 0.2-0.5 s)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(b"location") < 0:
                return ()
        return tuple(external_locations(onnx.load(path, load_external_data=False)))
    except Exception:  # noqa: BLE001 - not an ONNX file: it has no external data to protect
        return ()


def check_output(path: str | os.PathLike, inputs: Iterable[Input] = (), what: str = "output path") -> Path:
    """Refuse ``path`` as an output of a call that reads ``inputs``; returns it (``~`` expanded).

    Call it before any work starts. An :class:`~ryzen_nb.errors.OutputPathError` names both paths
    when the output is an input (through a symbolic or hard link, a relative path, another letter
    case), lies in an input folder (see :class:`Input`), is a folder, or lies under a file."""
    if not str(path).strip():
        raise OutputPathError(f"The {what} is empty; give a file path.")
    given = Path(path).expanduser()
    try:
        real = given.resolve()
    except (OSError, ValueError) as exc:  # a NUL byte, a symbolic-link loop
        raise OutputPathError(f"The {what} {str(path)!r} is not a usable path ({exc}).") from None
    for inp in inputs:
        _refuse_alias(given, real, inp, what)
    if given.is_dir():
        raise OutputPathError(f"The {what} {str(given)!r} is a folder; give a file path (a name inside the folder).")
    blocker = next((p for p in real.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise OutputPathError(f"The {what} {str(given)!r} lies under {str(blocker)!r}, which is a file, not a "
                              f"folder; choose a path in a folder.")
    if blocker is not None and not os.access(blocker, os.W_OK | os.X_OK):
        raise OutputPathError(f"The {what} {str(given)!r} cannot be written: the folder {str(blocker)!r} is not "
                              "writable by you. Choose a folder you may write to.")
    return given


def _refuse_alias(given: Path, real: Path, inp: Input, what: str) -> None:
    source = inp.path
    if not source.exists():
        return  # nothing there to lose: the reader reports the missing input
    if source.is_dir():
        if same_file(given, source):
            raise OutputPathError(f"The {what} {str(given)!r} is {str(source)!r}, the {inp.what}: a folder this call "
                                  f"reads. Give a file path outside it.")
        if not _inside(real, source):
            return
        if given.exists():
            raise OutputPathError(
                f"The {what} {str(given)!r} is a file inside {str(source)!r}, the {inp.what}, which this call reads; "
                f"refusing to write over it. Choose a path outside {str(source)!r}.")
        if inp.reads is None or real.suffix.lower() in inp.reads:
            raise OutputPathError(
                f"The {what} {str(given)!r} would add a file to {str(source)!r}, the {inp.what}, which this call reads "
                f"(it would become part of that data). Choose a path outside {str(source)!r}.")
        return
    if _inside(real, source):  # m.onnx/out.json: a path under the input file itself
        raise OutputPathError(f"The {what} {str(given)!r} lies under {str(source)!r}, the {inp.what}, which is a file, "
                              "not a folder; choose a path in a folder.")
    if same_file(given, source) or real == source.resolve():
        how = "" if os.path.normcase(os.path.abspath(given)) == os.path.normcase(os.path.abspath(source)) else \
            " (the same file under another name: a link, a relative path or another letter case)"
        raise OutputPathError(
            f"The {what} {str(given)!r} is {str(source)!r}, the {inp.what}{how}; refusing to write over the "
            f"{inp.what} (it would be lost). Choose another {what}.")


def _inside(real: Path, folder: Path) -> bool:
    """Whether the resolved path ``real`` lies inside ``folder`` (the same folder through any link
    or letter case counts)."""
    return any(same_file(parent, folder) for parent in real.parents if parent.exists())


# -- atomic writes -----------------------------------------------------------------------------------------
def save_model(model: onnx.ModelProto, path: str | os.PathLike, *,
               protect: Path | str | Iterable[Input] | None = None, external_data: bool = False,
               what: str = "output path") -> Path:
    """Write ``model`` to ``path`` atomically (a temporary file in the same folder, then a rename).

    ``protect`` is what the call read: the input model's path (its external-data files are
    protected with it) or a list of :class:`Input`; see :func:`check_output`. With
    ``external_data`` (Quark's ``use_external_data_format``), and always for models above
    protobuf's 2 GiB limit, the weights go to a ``<name>.data`` file next to it; ``model`` itself
    keeps its weights.
    """
    inputs = model_inputs(protect) if isinstance(protect, (str, os.PathLike)) else list(protect or ())
    out = check_output(path, inputs, what)
    external = external_data or too_large_to_serialize(model)
    data_name = out.name + ".data"
    if external:
        check_output(out.parent / data_name, inputs, f"external data file of the {what}")
    with _parents_made(out, what):
        if not external:
            with temporary_beside(out) as tmp:
                onnx.save_model(model, str(tmp))
                _replace(tmp, out, what)
            return out
        copy = onnx.ModelProto()
        copy.CopyFrom(model)  # saving with external data empties the tensors of the model it is given
        with _folder_beside(out) as folder:
            # onnx writes the data file beside the .onnx it saves: both go to a private folder first,
            # then each is renamed into place (a failure leaves the old files as they were)
            # onnx refuses a location that exists relative to the *current* folder; a name that
            # exists nowhere gets past that check, and the tensors then get the real name
            placeholder = f"{data_name}.{secrets.token_hex(8)}"
            external_data_helper.convert_model_to_external_data(copy, all_tensors_to_one_file=True,
                                                                location=placeholder, size_threshold=1024)
            for graph in walk_graphs(copy.graph):
                for tensor in graph.initializer:
                    for entry in tensor.external_data:
                        if entry.key == "location" and entry.value == placeholder:
                            entry.value = data_name
            onnx.save_model(copy, str(folder / out.name))
            if (folder / data_name).exists():
                # onnx creates the data file 0600; it gets what the .onnx beside it got from the umask
                shutil.copymode(folder / out.name, folder / data_name)
                _replace(folder / data_name, out.parent / data_name, what)
            else:  # every tensor under the threshold: no data file, and an old one would be stale
                (out.parent / data_name).unlink(missing_ok=True)
            _replace(folder / out.name, out, what)
    return out


def write_atomic(path: str | os.PathLike, data: bytes | str, *, protect: Iterable[Input] = (),
                 what: str = "output path") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically: readers never see half a file, and
    nothing in ``protect`` is overwritten (:func:`check_output`)."""
    out = check_output(path, protect, what)
    with _parents_made(out, what), temporary_beside(out) as temp:
        temp.write_bytes(data.encode() if isinstance(data, str) else data)
        _replace(temp, out, what)
    return out


@contextlib.contextmanager
def temporary_beside(dest: Path) -> Iterator[Path]:
    """A fresh, empty temporary file in ``dest``'s folder (same file system, so ``os.replace`` onto
    ``dest`` is atomic); removed on the way out (an error, Ctrl-C) unless the caller renamed it
    into place. It is created as any new file is, so the umask sets its permissions
    (``tempfile.mkstemp`` would make it 0600, and the output would keep that)."""
    temp = _fresh(dest, lambda name: os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)))
    try:
        yield temp
    finally:
        temp.unlink(missing_ok=True)


@contextlib.contextmanager
def _folder_beside(dest: Path) -> Iterator[Path]:
    """A private temporary folder in ``dest``'s folder, removed with its contents on the way out."""
    folder = _fresh(dest, lambda name: os.mkdir(name, 0o777))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fresh(dest: Path, create: Callable[[Path], None]) -> Path:
    """A new hidden name beside ``dest`` (``.<name>.<random>.part``), created by ``create``."""
    for _ in range(100):
        name = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.part"
        try:
            create(name)
        except FileExistsError:
            continue
        return name
    raise OutputPathError(f"Could not create a temporary file beside {str(dest)!r}; is its folder full of .part files?")


def _replace(temp: Path, dest: Path, what: str) -> None:
    """Rename ``temp`` onto ``dest``; an existing ``dest`` passes its permissions on."""
    with contextlib.suppress(OSError):
        if dest.is_file():
            shutil.copymode(dest, temp)
    try:
        os.replace(temp, dest)
    except OSError as exc:
        raise OutputPathError(f"Could not write the {what} {str(dest)!r}: {exc.strerror or exc}.") from exc


@contextlib.contextmanager
def _parents_made(out: Path, what: str) -> Iterator[None]:
    """Create ``out``'s missing folders; remove the ones made here if the write fails, and turn an
    operating-system error into one that names the file."""
    missing = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        yield
    except BaseException as exc:
        for folder in missing:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, OSError) and not isinstance(exc, RyzenNBError):
            raise OutputPathError(f"Could not write the {what} {str(out)!r}: {exc.strerror or exc}. Check that the "
                                  "disk has room and that you may write there.") from exc
        raise
