"""The ``ryzen-nb`` command: demo, quantize, convert-bf16, evaluate, emulate, zoo, formats, presets.

A user error (a bad path, option, file or model) prints one line, ``ryzen-nb COMMAND: error: ...``
with the fix, and exits with status 2; an output that would overwrite something the command reads
is refused before any work starts. Anything else is a bug of ryzen-nb and says so (status 1). The
traceback is printed only with ``--debug``. Messages name options as they are typed here
(``--calib-data``, not the Python parameter ``calibration_data``).

Results print as tables (rich) at most :data:`MAX_WIDTH` columns wide, or the terminal's width
when it is narrower; colours only on a terminal, plain text in a pipe or a log.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import logging
import re
import shutil
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ryzen_nb import formats, npu, zoo
from ryzen_nb._version import __version__
from ryzen_nb.calibration.recipe import Recipe
from ryzen_nb.calibration.recipe_target import DATASET_FOR_MODEL
from ryzen_nb.demo import run_demo
from ryzen_nb.errors import ConfigError, RyzenNBError, UnknownNameError
from ryzen_nb.evaluation.folders import evaluate_folders
from ryzen_nb.graph.io import check_output, load_model, model_inputs, path_inputs, write_atomic
from ryzen_nb.graph.shapes import with_input_shapes
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.bf16 import convert_bf16
from ryzen_nb.quantization.config import PRESETS, Config, QuantizationConfig, get_default_config
from ryzen_nb.quantization.run import CALIBRATION_SUFFIXES, run_inputs

__all__ = ["main", "MAX_WIDTH"]

#: the widest the command's output gets: tables stay readable in a 100-column terminal or log
MAX_WIDTH = 100


class _Command(str):
    """A line holding a command to copy: printed whole, never wrapped."""


def _show(*items: Any) -> None:
    """Print tables and lines on standard output at the terminal's width, up to MAX_WIDTH (MAX_WIDTH in
    a pipe). Rich pads every line to the table's width: in a pipe or a log the padding is cut off. No
    markup: names and reasons from a model may hold brackets ("[Vitis AI EP]", shapes)."""
    console = Console(width=min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH), highlight=False,
                      markup=False)
    def show() -> None:
        for item in items:  # one per line: print(*items) would run strings together
            console.print(item, soft_wrap=isinstance(item, _Command))

    if console.is_terminal:
        show()
        return
    with console.capture() as captured:
        show()
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _table(*columns: str, title: str = "", **options: Any) -> Table:
    """A table with the command's look: a rule under the header, no frame, the title on the left."""
    return Table(*columns, title=title or None, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                 pad_edge=False, **options)


def _fields(rows: list[tuple[str, str]], title: str) -> Table:
    """A summary as a table of fields, each named as this command line names it."""
    table = Table.grid(padding=(0, 2))
    table.title, table.title_justify, table.title_style = title, "left", "bold"
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    return table


def _shape(text: str) -> tuple[str, list[int | str]]:
    """``NAME:D1,D2,...``: sizes, or a name (``N``) for a dimension to keep dynamic."""
    name, _, dims = text.partition(":")
    parts = [d.strip() for d in dims.split(",")] if dims else []
    if not name or not parts or not all(parts):
        raise argparse.ArgumentTypeError(f"expected NAME:D1,D2,... (e.g. input:1,3,224,224, or input:N,3,224,224 to "
                                         f"keep the batch dynamic); got {text!r}")
    return name, [int(d) if d.lstrip("-").isdigit() else d for d in parts]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number; got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse with the command's one error format: one line with the way to help (argparse's
    own prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}. See `{self.prog} --help`.\n")


def _must_exist(path: str | None, option: str, what: str) -> None:
    if path is not None and not Path(path).expanduser().exists():
        raise ConfigError(f"{option} {path!r} does not exist; give {what}.")


def _read_config(path: str) -> Config:
    """The ``--config`` file as a Config; every problem names the file and what is wrong with it."""
    file = Path(path).expanduser()
    how = "Save a config with Config.to_json() (the config builder shows it), or use --preset."
    if not file.exists():
        raise ConfigError(f"The --config file {path!r} does not exist. {how}")
    if file.is_dir():
        raise ConfigError(f"The --config path {path!r} is a folder; give the JSON file. {how}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"The --config file {path!r} is not UTF-8 text, so not a JSON config. {how}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"The --config file {path!r} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                          f"column {exc.colno}. {how}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"The --config file {path!r} holds a JSON {type(data).__name__}; a config is an object "
                          f'{{"global_quant_config": {{...}}}}. {how}')
    _check_kinds(data.get("global_quant_config"), path)
    try:
        config = Config.from_dict(data)
        config.global_quant_config.validate()
    except RyzenNBError as exc:
        raise ConfigError(f"The --config file {path!r}: {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:  # a field holding a value of the wrong kind
        raise ConfigError(f"The --config file {path!r} holds a value ryzen-nb cannot use ({exc}). {how}") from None
    return config


_JSON_KINDS = {str: "a string", list: "a list", bool: "true or false", int: "a whole number", dict: "an object"}


def _check_kinds(fields: object, path: str) -> None:
    """Each field of a config file holds the JSON kind its default has (a list for nodes_to_exclude,
    true/false for per_channel...): a wrong kind would otherwise fail deep inside without a name."""
    if not isinstance(fields, dict):
        return
    defaults = QuantizationConfig()
    for key, value in fields.items():
        default = getattr(defaults, key, None)
        kind = type(default)
        if default is None or value is None or kind not in _JSON_KINDS:
            continue  # an unknown name or a free-form value: Config.from_dict and validate() judge those
        fits = isinstance(value, int) and not isinstance(value, bool) if kind is int else isinstance(value, kind)
        if not fits:
            raise ConfigError(f"The --config file {path!r}: {key} must be {_JSON_KINDS[kind]} (such as "
                              f"{json.dumps(default)}); it holds {json.dumps(value)}.")


def _input_shape_option(p: argparse.ArgumentParser) -> None:
    """``--input-shape`` (and ``--input-shapes``), on every command that loads a model."""
    p.add_argument("--input-shape", "--input-shapes", type=_shape, action="append", metavar="NAME:D1,D2,...",
                   help="fix a dynamic input shape, e.g. input:1,3,224,224 (repeatable); a dynamic batch stays "
                        "dynamic in a quantized model")


def _cmd_demo(args: argparse.Namespace) -> int:
    run_demo(tuple(args.presets), calibration_samples=args.calibration_samples)
    return 0


def _cmd_zoo(args: argparse.Namespace) -> int:
    """List the zoo, fetch models and data into the cache ahead of time (Binder images, a classroom's
    shared cache folder: ``RYZEN_NB_CACHE``), or write a data set's calibration samples."""
    if args.action == "calib-data":
        return _zoo_calib_data(args)
    if args.action == "list":
        tables = []
        for title, listing, extra in (("Models (ryzen-nb zoo get NAME)", zoo.list_models(), ()),
                                      ("Data sets (ryzen-nb zoo calib-data NAME DIR)", zoo.list_datasets(),
                                       ("splits",))):
            table = _table("name", *extra, "needs", "description", title=title)
            table.columns[0].no_wrap = True  # the description says the task: the name and it get the room
            for name, row in listing.iterrows():
                table.add_row(name, *(row[c].replace(", all", "") for c in extra), row.needs, row.description)
            tables.append(table)
        _show(*tables, f"cache: {zoo.cache_dir()}")
        return 0
    names = args.names or [n for n, row in zoo.list_models().iterrows() if row.needs != "internet"] + \
        [n for n, row in zoo.list_datasets().iterrows() if row.needs != "internet"]
    models, datasets = set(zoo.list_models().index), set(zoo.list_datasets().index)
    for name in names:
        if name not in models | datasets:
            raise UnknownNameError("zoo model or data set", name, sorted(models | datasets))
    table = _table("kind", "name", "in the cache", title="Fetched")
    for name in names:
        if name in models:
            table.add_row("model", name, str(zoo.load_model(name).path))
        else:
            table.add_row("data set", name, f"{len(zoo.load_dataset(name))} samples")
    _show(table, f"cache: {zoo.cache_dir()}")
    return 0


def _zoo_calib_data(args: argparse.Namespace) -> int:
    """``zoo calib-data NAME DIR``: the data set's calibration samples, prepared for a model, as .npy
    files (.npz for several inputs) that ``quantize --calib-data DIR`` reads. Never over a file."""
    datasets = list(zoo.list_datasets().index)
    if args.name not in datasets:
        raise UnknownNameError("zoo data set", args.name, datasets)
    models = list(zoo.list_models().index)
    model = args.model or next((m for m, d in DATASET_FOR_MODEL.items() if d == args.name), None)
    if model is None:
        raise ConfigError(f"The data set {args.name!r} is not any zoo model's: give the zoo model its samples are "
                          f"prepared for, --model MODEL (one of {', '.join(models)}).")
    if model not in models:
        if Path(model).suffix.lower() == ".onnx":
            raise ConfigError(f"--model {model!r}: the samples are prepared with a zoo model's preprocessing, so "
                              "--model names a zoo model (see `ryzen-nb zoo list`). For your own model, save its "
                              "preprocessed inputs as .npy files and give that folder to --calib-data.")
        raise UnknownNameError("zoo model", model, models)
    data = Recipe.for_model(model, source="zoo", dataset=args.name, calibration_size=args.count,
                            evaluation_size=0).build(model)
    feeds = data.calibration_feeds
    single = len(feeds[0]) == 1
    folder = Path(args.dir).expanduser()
    files = [folder / f"{args.name}_{i:04d}{'.npy' if single else '.npz'}" for i in range(len(feeds))]
    taken = [f for f in files if f.exists()]
    if taken:
        raise ConfigError(f"{len(taken)} of the files to write are in {str(folder)!r} already ({taken[0].name}, ...); "
                          "nothing was written. Give an empty folder as DIR, or delete them.")
    others = [p for p in folder.glob("*") if p.suffix.lower() in (".npy", ".npz")] if folder.is_dir() else []
    for file, feed in zip(files, feeds):
        buffer = io.BytesIO()
        if single:
            np.save(buffer, next(iter(feed.values())))
        else:
            np.savez(buffer, **feed)
        write_atomic(file, buffer.getvalue(), what="DIR")
    shapes = ", ".join(f"{k} {v.dtype} [{', '.join(map(str, v.shape))}]" for k, v in feeds[0].items())
    notes = [f"{folder} held {len(others)} other .npy/.npz files; --calib-data reads them all"] if others else []
    _show(_fields([("wrote", f"{len(files)} files to {folder} ({files[0].name} ... {files[-1].name})"),
                   ("samples", f"{args.name}, calibration split, prepared for {data.target.label}"),
                   ("each file", shapes)] + [("note", n) for n in notes + data.notes], "Calibration data"),
          _Command(f"next: ryzen-nb quantize {data.target.path or 'MODEL.onnx'} OUTPUT.onnx --calib-data {folder}"))
    return 0


def _cmd_quantize(args: argparse.Namespace) -> int:
    # before any work: the output must not be (or land in) the model, its external data, the
    # calibration folder or the config file
    inputs = run_inputs(args.input, args.calib_data, "INPUT model", "--calib-data folder")
    check_output(args.output, inputs + path_inputs(args.config, "--config file"), "OUTPUT path")
    _must_exist(args.calib_data, "--calib-data", "the folder of images or .npy/.npz files to calibrate with")
    if args.config and args.preset:
        raise ConfigError("Give --preset or --config, not both: the config file holds its own settings.")
    if args.config:
        config = _read_config(args.config)
    else:
        config = Config(get_default_config(args.preset or "XINT8"))
    # the exclusions add to the config file's, as they add to the preset's
    config.global_quant_config.nodes_to_exclude.extend(args.exclude_nodes or [])
    config.global_quant_config.op_types_to_exclude.extend(args.exclude_op_types or [])
    if args.weights_only:
        config.global_quant_config.extra_options["WeightsOnly"] = True
    summary = quantize(
        args.input,
        args.output,
        config,
        args.calib_data,
        input_shapes=dict(args.input_shape) if args.input_shape else None,
        limit=args.limit,
        progress=not args.quiet,
    )
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
    else:
        _print_quantization(summary, args)
    return 0


def _print_quantization(summary: Any, args: argparse.Namespace) -> None:
    """The summary as a table, each field named as this command names it (not QuantizationSummary's repr)."""
    formats_used = sorted(summary.tensors_by_format.items(), key=lambda kv: -kv[1])
    kb = lambda n: f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"  # noqa: E731
    rows = [("OUTPUT", str(summary.output_path or args.output)),
            # the preset asked for: the summary names none once options changed it (--weights-only)
            ("--config" if args.config else "--preset", args.config or (args.preset or "XINT8").upper()
             + (", weights only" if args.weights_only else "")),
            ("tensors", f"{sum(summary.tensors_by_format.values())}: "
                        + ", ".join(f"{n} {name}" for name, n in formats_used)),
            ("--calib-data", f"{summary.calibration_samples} samples"
                             + (f" from {args.calib_data}" if args.calib_data else
                                " (none needed: no activation is quantized)" if not summary.calibration_samples else
                                " (random: no --calib-data given)")
                             + (f", at most --limit {args.limit}" if args.limit else "")
                             + f", {summary.calibration_seconds:.1f} s"),
            ("weights", f"{kb(summary.effective_bits_before / 8)} -> {kb(summary.effective_bits_after / 8)} "
                        f"({summary.compression:.1f}x smaller)"),
            ("file", f"{kb(summary.size_before)} -> {kb(summary.size_after)}"),
            ("time", f"{summary.total_seconds:.1f} s")]
    rows += [("prepared" if i == 0 else "", _as_typed(step, args)) for i, step in enumerate(summary.preparation)]
    rows += [("note" if i == 0 else "", _as_typed(note, args)) for i, note in enumerate(summary.notes)]
    _show(_fields(rows, f"Quantized {Path(args.input).name}"),
          _Command(f"next: ryzen-nb emulate {summary.output_path or args.output} --target STX"))


def _cmd_convert_bf16(args: argparse.Namespace) -> int:
    check_output(args.output, model_inputs(args.input, "--input model"), "--output path")
    result = convert_bf16(args.input, args.output, args.format,
                          input_shapes=dict(args.input_shape) if args.input_shape else None)
    print(f"wrote {result.output_path} ({'FP16' if result.from_float16 else 'FP32'} -> BF16, format {result.format})")
    if result.runs_on_cpu:
        print("the model runs on plain onnxruntime (CPU)")
    else:
        print("note: plain onnxruntime on CPU cannot execute this model (" + result.cpu_message + "). "
              "It is meant for bf16-capable runtimes (onnxruntime-gpu, the NPU compiler); use --format with_cast "
              "to simulate bf16 on CPU.")
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    baseline = args.baseline_results_folder or args.baseline
    quantized = args.quantized_results_folder or args.quantized
    if not baseline or not quantized:
        raise ConfigError("Give the two folders: --baseline_results_folder A --quantized_results_folder B "
                          "(or A B).")
    comparison = evaluate_folders(baseline, quantized)
    if args.json:
        out = comparison.summary()
        if args.per_file:
            out["per_file"] = comparison.per_file.reset_index().to_dict(orient="records")
        print(json.dumps(out, indent=2))
    else:
        if args.per_file:
            frame = comparison.per_file.reset_index()
            table = _table(*map(str, frame.columns), title="Per file")
            for row in frame.itertuples(index=False):
                table.add_row(*(f"{v:.6g}" if isinstance(v, float) else str(v) for v in row))
            _show(table)
        print(comparison.report())
    return 0


def _cmd_emulate(args: argparse.Namespace) -> int:
    if args.report is not None:  # before any work: never over the model, its external data or the --data files
        inputs = model_inputs(args.model, "MODEL") + path_inputs(args.data, "--data folder", CALIBRATION_SUFFIXES)
        check_output(args.report, inputs, "--report path")
    _must_exist(args.data, "--data", "a folder of images or .npy/.npz files")
    model = with_input_shapes(load_model(args.model), dict(args.input_shape)) if args.input_shape else args.model
    program = npu.compile(model, args.target)
    estimate = npu.estimate_latency(program)
    latency = _table("part", "ms")
    latency.columns[1].justify = "right"
    for part, ms in estimate.breakdown_ms.items():
        latency.add_row(part, f"{ms:.3f}")
    fallbacks = _cpu_fallbacks(program)
    _show(program.ep_log(), f"{program.summary()}; {100 * program.npu_share:.1f}% on the NPU", "",
          *([fallbacks, ""] if isinstance(fallbacks, str) else [fallbacks]),  # a table ends with a blank line
          Text.assemble((f"Estimated latency on {estimate.target.label} ({estimate.target.name}): "
                         f"{estimate.total_ms:.2f} ms per inference", "bold"),
                        " (an estimate from a roofline model, not a measurement)"), latency)
    if args.per_op:
        slowest = estimate.per_op[estimate.per_op.time_us > 0].sort_values("time_us", ascending=False)
        table = _table("node", "op", "device", "precision", "µs", "bound", title=f"The {args.per_op} slowest operators")
        table.columns[0].overflow, table.columns[4].justify = "ellipsis", "right"
        for row in slowest.head(args.per_op).itertuples():
            table.add_row(row.node, row.op, row.device, row.precision or "-", f"{row.time_us:.1f}", row.bound)
        _show(table)
    if args.data:
        report = npu.divergence(program.model, args.data, program.target, limit=args.limit, per_layer=True)
        print()
        print(report.summary())
    if args.report is not None:
        print(f"\nwrote {program.write_report(args.report)}")
    return 0


def _cpu_fallbacks(program: Any) -> Table | str:
    """The operators on the CPU grouped by why, the commonest reason first."""
    reasons = program.cpu_reasons()
    if not len(reasons):
        return "Every operator runs on the NPU (quantizer nodes at the CPU side of a boundary aside)."
    quantizers = program.cpu_operators - len(reasons)  # the EP log counts them; they only convert
    table = _table("nodes", "op types", "why on the CPU", title=f"CPU fallbacks: {len(reasons)} operators"
                   + (f" (and {quantizers} quantizer nodes at the CPU side of a boundary)" if quantizers else ""))
    table.columns[0].justify = "right"
    for reason, group in sorted(reasons.groupby("reason"), key=lambda kv: -len(kv[1])):
        ops = group.op.value_counts()
        table.add_row(str(len(group)), ", ".join(f"{op} {n}" if len(ops) > 1 else op for op, n in ops.items()), reason)
    return table


def _cmd_formats(args: argparse.Namespace) -> int:
    table = _table("name", "family", "bits", "scale", "block", "lowered to", title="Numeric formats")
    table.columns[2].justify = table.columns[4].justify = "right"
    for name, row in formats.table().iterrows():
        block = "" if row.block_size != row.block_size or row.block_size is None else str(int(row.block_size))
        table.add_row(name, row.family, f"{row.bits_per_element:g}", row.scale_kind, block, row.lowering)
    _show(table)
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    table = _table("preset", "what it does", title="Presets (ryzen-nb quantize --preset NAME)")
    for name, preset in PRESETS.items():
        table.add_row(name, preset.description)
    _show(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ryzen-nb",
        description="Quantize ONNX models the way AMD Ryzen AI expects, emulate the NPU, compare FP32 vs quantized.",
    )
    parser.add_argument("--version", action="version", version=f"ryzen-nb {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="quantize a packaged model to XINT8, BF16 and BFP16 and compare (offline)")
    p.add_argument("--presets", nargs="+", default=["XINT8", "BF16", "BFP16"], metavar="PRESET")
    p.add_argument("--calibration-samples", type=_positive_int, default=200, metavar="N")
    p.set_defaults(run=_cmd_demo)

    p = sub.add_parser("quantize", help="quantize an ONNX model with a preset or a config file")
    p.add_argument("input", help="FP32 ONNX model")
    p.add_argument("output", help="where to write the quantized model (never the input)")
    p.add_argument("--preset", help="preset name (see `ryzen-nb presets`); default XINT8")
    p.add_argument("--config", help="a Config saved as JSON (Config.to_json()); overrides --preset")
    p.add_argument("--calib-data", help="folder of images or .npy/.npz files for calibration")
    p.add_argument("--limit", type=_positive_int, metavar="N", help="use at most N calibration samples")
    _input_shape_option(p)
    p.add_argument("--weights-only", action="store_true",
                   help="quantize the weights only, activations stay float32 (Quark's WeightsOnly); needs no "
                        "--calib-data")
    p.add_argument("--exclude-nodes", nargs="*", metavar="NODE", help="node names to keep in float")
    p.add_argument("--exclude-op-types", nargs="*", metavar="OP", help="op types to keep in float")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_cmd_quantize)

    p = sub.add_parser("convert-bf16", help="convert an FP32/FP16 model to BF16 (Quark's convert_fp32_to_bf16)")
    p.add_argument("--input", required=True, help="FP32 or FP16 ONNX model")
    p.add_argument("--output", required=True, help="where to write the BF16 model")
    p.add_argument("--format", default="with_cast", choices=["with_cast", "bf16", "simulate_bf16", "customqdq"],
                   help="with_cast (default): Cast pairs, runs anywhere; bf16: pure bf16 inside; simulate_bf16: bf16 "
                        "weights stored as float32; customqdq: one QuantizeDequantize node per tensor")
    _input_shape_option(p)
    p.set_defaults(run=_cmd_convert_bf16)

    p = sub.add_parser("evaluate", help="compare FP32 and quantized results saved in two folders (.npy/.png/.jpg)")
    p.add_argument("baseline", nargs="?", help="baseline results folder (or --baseline_results_folder)")
    p.add_argument("quantized", nargs="?", help="quantized results folder (or --quantized_results_folder)")
    p.add_argument("--baseline_results_folder", "--baseline-results-folder", dest="baseline_results_folder")
    p.add_argument("--quantized_results_folder", "--quantized-results-folder", dest="quantized_results_folder")
    p.add_argument("--per-file", action="store_true", help="also print one row per file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_evaluate)

    p = sub.add_parser("emulate", help="what the Ryzen AI NPU would do with a model: partition, latency, numerics")
    p.add_argument("model", help="an FP32 or quantized ONNX model")
    p.add_argument("--target", default="STX", help="PHX, HPT, STX, KRK or STXH (default STX)")
    p.add_argument("--report", metavar="JSON", help="write the compile report (vitisai_ep_report.json schema)")
    p.add_argument("--per-op", type=_positive_int, nargs="?", const=15, metavar="N",
                   help="also print the N slowest operators of the latency estimate (default 15)")
    p.add_argument("--data", metavar="PATH", help="inputs (folder of images, .npy/.npz): compare the NPU emulation "
                                                  "with the CPU QDQ simulation on them")
    p.add_argument("--limit", type=_positive_int, default=32, metavar="N", help="samples of --data to use (default 32)")
    _input_shape_option(p)
    p.set_defaults(run=_cmd_emulate)

    p = sub.add_parser("zoo", help="the zoo: list it, get models and data sets, write calibration data")
    p.set_defaults(run=_cmd_zoo)
    actions = p.add_subparsers(dest="action", metavar="{list,get,calib-data}", required=True)
    actions.add_parser("list", help="the models and data sets, what each needs")
    z = actions.add_parser("get", aliases=["fetch"], help="fetch models / data sets into the cache ahead of time")
    z.add_argument("names", nargs="*", metavar="NAME", help="models / data sets (default: all that need no internet)")
    z = actions.add_parser("calib-data", help="write a data set's calibration samples as .npy files for "
                                              "`quantize --calib-data DIR` (never over a file)")
    z.add_argument("name", metavar="NAME", help="a zoo data set (see `ryzen-nb zoo list`)")
    z.add_argument("dir", metavar="DIR", help="the folder to write to (made if missing)")
    z.add_argument("--model", metavar="MODEL", help="the zoo model whose preprocessing prepares the samples "
                                                    "(default: the data set's model)")
    z.add_argument("--count", type=_positive_int, default=100, metavar="N",
                   help="samples to write (default 100, at most the calibration split)")
    for action in set(actions.choices.values()):  # "fetch" is "get" again
        action.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    p = sub.add_parser("formats", help="list the numeric formats")
    p.set_defaults(run=_cmd_formats)
    p = sub.add_parser("presets", help="list the quantization presets")
    p.set_defaults(run=_cmd_presets)
    for command in sub.choices.values():  # --debug after the command too (SUPPRESS: keep the main parser's value)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


#: Python parameter names as this command line spells them: an error raised deep in the library
#: names the parameter; the user typed the option
_TYPED = {
    "quantize": {"calibration_data": "--calib-data", "input_shapes": "--input-shape", "output_path": "OUTPUT",
                 "nodes_to_exclude": "--exclude-nodes", "op_types_to_exclude": "--exclude-op-types"},
    "convert-bf16": {"input_shapes": "--input-shape", "output_path": "--output"},
    "emulate": {"input_shapes": "--input-shape"},
}


def _as_typed(message: str, args: argparse.Namespace) -> str:
    names = dict(_TYPED.get(args.command, {}))
    if getattr(args, "config", None) and not (args.exclude_nodes or args.exclude_op_types):
        # the exclusions came from the config file, where they are spelled as in Python
        names.pop("nodes_to_exclude"), names.pop("op_types_to_exclude")
    for name, typed in names.items():
        message = re.sub(rf"(?<![\w-]){name}(?![\w-])", typed, message)
    return message


_OS_HINTS = {errno.EACCES: "Check the file's permissions.", errno.EPERM: "Check the file's permissions.",
             errno.ENOSPC: "Free some disk space and try again.", errno.EROFS: "Write to another folder."}


def _fail(args: argparse.Namespace, exc: BaseException, text: str, status: int) -> int:
    """One line on stderr (the traceback above it only with --debug); returns the exit status."""
    if getattr(args, "debug", False):
        traceback.print_exception(exc)
    print(f"ryzen-nb {args.command}: " + " ".join(text.split()), file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "run", None):
        parser.print_help()
        return 1
    try:
        return int(args.run(args) or 0)
    except RyzenNBError as exc:
        return _fail(args, exc, f"error: {_as_typed(str(exc), args)}", 2)
    except KeyboardInterrupt:
        print(f"ryzen-nb {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # the file system said no (permissions, a full disk), or a file is unreadable
        where = f" ({exc.filename!r})" if exc.filename else ""
        return _fail(args, exc, f"error: {exc.strerror or exc}{where}. {_OS_HINTS.get(exc.errno, '')}", 2)
    except Exception as exc:  # noqa: BLE001 - anything else is a bug of ryzen-nb: say so, keep the details
        return _fail(args, exc, f"internal error (a bug in ryzen-nb; please report it with the command): "
                                f"{type(exc).__name__}: {exc}. Run it again with --debug for the traceback.", 1)


if __name__ == "__main__":
    sys.exit(main())
