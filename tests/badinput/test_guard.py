"""The one output guard and the one way outputs are written (ryzen_nb.graph.io): refused before
any work, written beside the target and renamed, no temporary file left by an error or Ctrl-C, the
permissions a new file normally gets, and an existing file's own permissions kept."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import onnx
import pytest

import ryzen_nb
from ryzen_nb.errors import ConfigError, ModelError, OutputPathError
from ryzen_nb.graph import io
from ryzen_nb.graph.io import Input, check_output, load_model, model_inputs, save_model, write_atomic
from ryzen_nb.testing import resnet_cnn
from tests.badinput.harness import Snapshot

#: a model with weights above save_model's 1 kB external-data threshold (the workspace's are smaller)
WIDE = resnet_cnn(0, blocks=(1,), width=16, image_size=8)


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_new_outputs_get_the_umask_permissions(ws: Path, mask: int) -> None:
    expected = 0o666 & ~mask
    model = load_model("m.onnx")
    with umask(mask):
        write_atomic("report.json", "{}")
        save_model(model, "inline.onnx")
        save_model(WIDE, "external.onnx", external_data=True)
        ryzen_nb.quantize("m.onnx", "q_cli.onnx", "XINT8", "calib", progress=False)
    for name in ("report.json", "inline.onnx", "external.onnx", "external.onnx.data", "q_cli.onnx"):
        assert _mode(ws / name) == expected, name


def test_an_overwritten_file_keeps_its_permissions(ws: Path) -> None:
    (ws / "report.json").write_text("old")
    os.chmod(ws / "report.json", 0o640)
    write_atomic("report.json", "new")
    assert (ws / "report.json").read_text() == "new" and _mode(ws / "report.json") == 0o640


@pytest.mark.parametrize("failure", [RuntimeError("disk on fire"), KeyboardInterrupt()], ids=["error", "ctrl-c"])
@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
def test_no_temporary_file_survives_a_failed_write(ws: Path, monkeypatch, failure, external: bool) -> None:
    model = WIDE
    real_save = onnx.save_model

    def save_then_fail(proto, path, *args, **kwargs):
        real_save(proto, path, *args, **kwargs)  # the files are on disk when the failure comes
        raise failure

    monkeypatch.setattr(io.onnx, "save_model", save_then_fail)
    before = Snapshot.take(ws)
    with pytest.raises(type(failure)):
        save_model(model, "new/deeper/out.onnx", external_data=external)
    assert before.compare() == ([], [])  # nothing left: no .part file, no data file, no folder made for it


def test_a_failed_rename_names_the_file(ws: Path, monkeypatch) -> None:
    def refuse(*_args):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(io.os, "replace", refuse)
    before = Snapshot.take(ws)
    with pytest.raises(OutputPathError, match=r"Could not write the output path 'out\.json': Permission denied"):
        write_atomic("out.json", "{}")
    assert before.compare() == ([], [])


def test_an_output_replaces_the_old_file_whole(ws: Path) -> None:
    write_atomic("out.json", "x" * 100_000)
    write_atomic("out.json", "short")
    assert (ws / "out.json").read_text() == "short"
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith(".")) == []


def test_an_external_data_save_replaces_a_stale_data_file(ws: Path) -> None:
    (ws / "out.onnx.data").write_bytes(b"stale" * 1000)
    save_model(WIDE, "out.onnx", external_data=True)
    again = onnx.load("out.onnx")
    assert again.SerializeToString() == load_model("out.onnx").SerializeToString()  # the weights load back
    assert b"stale" not in (ws / "out.onnx.data").read_bytes()


def test_the_data_file_of_an_output_never_replaces_an_input(ws: Path) -> None:
    """ext.onnx keeps its weights in ext.onnx.data: an output b.onnx saved with external data
    writes b.onnx.data, so an input named b.onnx.data is protected too."""
    os.rename(ws / "ext.onnx.data", ws / "b.onnx.data")
    proto = onnx.load("ext.onnx", load_external_data=False)
    for t in proto.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = "b.onnx.data"
    onnx.save(proto, "a.onnx")
    before = Snapshot.take(ws)
    with pytest.raises(OutputPathError, match=r"b\.onnx\.data"):
        save_model(load_model("a.onnx"), "b.onnx", protect=Path("a.onnx"), external_data=True)
    assert before.compare() == ([], [])


def test_the_guard_speaks_the_callers_names(ws: Path) -> None:
    inputs = model_inputs("ext.onnx", "--input model")
    assert [i.path.name for i in inputs] == ["ext.onnx", "ext.onnx.data"]
    with pytest.raises(OutputPathError, match=r"The --output path 'ext.onnx.data' is 'ext.onnx.data', the external "
                                              r"data of the --input model 'ext.onnx'"):
        check_output("ext.onnx.data", inputs, "--output path")


def test_a_model_whose_bytes_merely_say_location_has_no_external_data(ws: Path) -> None:
    """The guard finds external data by scanning for the key "location" before it parses; a model
    holding the word elsewhere is parsed, and has none."""
    proto = onnx.load("m.onnx")
    proto.doc_string = "camera location: lab 2"
    onnx.save(proto, "doc.onnx")
    assert [i.path.name for i in model_inputs("doc.onnx")] == ["doc.onnx"]
    assert [i.path.name for i in model_inputs("ext.onnx")] == ["ext.onnx", "ext.onnx.data"]


def test_the_guard_allows_what_is_not_an_input(ws: Path) -> None:
    inputs = model_inputs("m.onnx") + [Input("calibration_data", Path("calib"), (".npy",))]
    for fine in ("m_q.onnx", "outdir/m.onnx", "new/folder/m.onnx", "calib/report.json", "M.onnx"):
        if fine == "M.onnx" and Path("M.onnx").exists():  # a case-insensitive file system: M.onnx is m.onnx
            continue
        assert check_output(fine, inputs) == Path(fine)


def test_old_except_clauses_still_catch_it(ws: Path) -> None:
    with pytest.raises(ConfigError):
        ryzen_nb.quantize("m.onnx", "m.onnx", "XINT8", "calib", progress=False)
    with pytest.raises(ModelError):
        save_model(load_model("m.onnx"), "m.onnx", protect=Path("m.onnx"))


def test_another_letter_case_is_the_same_file_where_the_file_system_says_so(ws: Path) -> None:
    if not Path("M.ONNX").exists():
        pytest.skip("a case-sensitive file system: M.ONNX is another file")
    with pytest.raises(OutputPathError, match="M.ONNX"):
        check_output("M.ONNX", model_inputs("m.onnx"))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write anywhere")
def test_a_folder_you_cannot_write_is_refused_before_the_work(ws: Path) -> None:
    os.chmod(ws / "outdir", 0o555)
    try:
        with pytest.raises(OutputPathError, match="not writable"):
            ryzen_nb.quantize("m.onnx", "outdir/q.onnx", "XINT8", "calib", progress=False)
    finally:
        os.chmod(ws / "outdir", 0o755)
