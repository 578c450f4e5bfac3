"""The ``ryzen-nb`` command: demo, quantize, convert-bf16, evaluate, emulate, zoo, formats, presets."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ryzen_nb import formats, npu, zoo
from ryzen_nb._version import __version__
from ryzen_nb.demo import run_demo
from ryzen_nb.errors import RyzenNBError, UnknownNameError
from ryzen_nb.evaluation.folders import evaluate_folders
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.bf16 import convert_bf16
from ryzen_nb.quantization.config import PRESETS, Config, get_default_config

__all__ = ["main"]


def _shape(text: str) -> tuple[str, list[int]]:
    try:
        name, dims = text.split(":", 1)
        return name, [int(d) for d in dims.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME:D1,D2,... (e.g. input:1,3,224,224); got {text!r}") from None


def _cmd_demo(args: argparse.Namespace) -> int:
    run_demo(tuple(args.presets), calibration_samples=args.calibration_samples)
    return 0


def _cmd_zoo(args: argparse.Namespace) -> int:
    """List the zoo, or fetch models and data into the cache ahead of time (Binder images, a classroom's
    shared cache folder: ``RYZEN_NB_CACHE``)."""
    if args.action == "list":
        with pd.option_context("display.width", 160, "display.max_colwidth", 70):
            print(zoo.list_models()[["task", "needs", "description"]].to_string())
            print()
            print(zoo.list_datasets()[["task", "needs", "description"]].to_string())
        return 0
    names = args.names or [n for n, row in zoo.list_models().iterrows() if row.needs != "internet"] + \
        [n for n, row in zoo.list_datasets().iterrows() if row.needs != "internet"]
    models, datasets = set(zoo.list_models().index), set(zoo.list_datasets().index)
    for name in names:
        if name in models:
            print(f"model   {name}: {zoo.load_model(name).path}")
        elif name in datasets:
            print(f"dataset {name}: {len(zoo.load_dataset(name))} samples")
        else:
            raise UnknownNameError("zoo model or data set", name, sorted(models | datasets))
    print(f"cache: {zoo.cache_dir()}")
    return 0


def _cmd_quantize(args: argparse.Namespace) -> int:
    if args.config:
        config = Config.from_json(Path(args.config).read_text())
    else:
        qc = get_default_config(args.preset)
        qc.nodes_to_exclude.extend(args.exclude_nodes or [])
        qc.op_types_to_exclude.extend(args.exclude_op_types or [])
        config = Config(qc)
    summary = quantize(
        args.input,
        args.output,
        config,
        args.calib_data,
        input_shapes=dict(args.input_shape) if args.input_shape else None,
        limit=args.limit,
        progress=not args.quiet,
    )
    print(json.dumps(summary.as_dict(), indent=2) if args.json else repr(summary))
    return 0


def _cmd_convert_bf16(args: argparse.Namespace) -> int:
    result = convert_bf16(args.input, args.output, args.format)
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
        print("ryzen-nb evaluate: give --baseline_results_folder and --quantized_results_folder", file=sys.stderr)
        return 2
    comparison = evaluate_folders(baseline, quantized)
    if args.json:
        out = comparison.summary()
        if args.per_file:
            out["per_file"] = comparison.per_file.reset_index().to_dict(orient="records")
        print(json.dumps(out, indent=2))
    else:
        if args.per_file:
            print(comparison.per_file.to_string(float_format=lambda v: f"{v:.6g}"))
            print()
        print(comparison.report())
    return 0


def _cmd_emulate(args: argparse.Namespace) -> int:
    program = npu.compile(args.model, args.target)
    print(program.ep_log())
    print(program.summary())
    reasons = program.cpu_reasons()
    if len(reasons):
        print(f"\nOperators on the CPU ({len(reasons)}):")
        grouped = reasons.groupby(["op", "reason"]).size().reset_index(name="count")
        for row in grouped.itertuples():
            print(f"  {row.count:>4} x {row.op}: {row.reason}")
    estimate = npu.estimate_latency(program)
    print()
    print(estimate.summary())
    if args.per_op:
        table = estimate.per_op[estimate.per_op.time_us > 0].sort_values("time_us", ascending=False)
        print(table.head(args.per_op).to_string(index=False))
    if args.data:
        report = npu.divergence(program.model, args.data, program.target, limit=args.limit, per_layer=True)
        print()
        print(report.summary())
    if args.report:
        print(f"\nwrote {program.write_report(args.report)}")
    return 0


def _cmd_formats(args: argparse.Namespace) -> int:
    table = formats.table()[["family", "bits_per_element", "scale_kind", "block_size", "lowering"]]
    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        print(table.to_string())
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    width = max(len(n) for n in PRESETS)
    for name, preset in PRESETS.items():
        print(f"{name:<{width}}  {preset.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ryzen-nb",
        description="Quantize ONNX models the way AMD Ryzen AI expects, emulate the NPU, compare FP32 vs quantized.",
    )
    parser.add_argument("--version", action="version", version=f"ryzen-nb {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="quantize a packaged model to XINT8, BF16 and BFP16 and compare (offline)")
    p.add_argument("--presets", nargs="+", default=["XINT8", "BF16", "BFP16"], metavar="PRESET")
    p.add_argument("--calibration-samples", type=int, default=200, metavar="N")
    p.set_defaults(run=_cmd_demo)

    p = sub.add_parser("quantize", help="quantize an ONNX model with a preset or a config file")
    p.add_argument("input", help="FP32 ONNX model")
    p.add_argument("output", help="where to write the quantized model (never the input)")
    p.add_argument("--preset", default="XINT8", help="preset name (see `ryzen-nb presets`); default XINT8")
    p.add_argument("--config", help="a Config saved as JSON (Config.to_json()); overrides --preset")
    p.add_argument("--calib-data", help="folder of images or .npy/.npz files for calibration")
    p.add_argument("--limit", type=int, help="use at most N calibration samples")
    p.add_argument("--input-shape", type=_shape, action="append", metavar="NAME:D1,D2,...",
                   help="fix a dynamic input shape, e.g. input:1,3,224,224 (repeatable)")
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
    p.add_argument("--per-op", type=int, nargs="?", const=15, metavar="N",
                   help="also print the N slowest operators of the latency estimate (default 15)")
    p.add_argument("--data", metavar="PATH", help="inputs (folder of images, .npy/.npz): compare the NPU emulation "
                                                  "with the CPU QDQ simulation on them")
    p.add_argument("--limit", type=int, default=32, help="samples of --data to use (default 32)")
    p.set_defaults(run=_cmd_emulate)

    p = sub.add_parser("zoo", help="list the zoo's models and data, or fetch them into the cache ahead of time")
    p.add_argument("action", choices=["list", "fetch"])
    p.add_argument("names", nargs="*", help="models / data sets to fetch (default: all that need no internet)")
    p.set_defaults(run=_cmd_zoo)

    p = sub.add_parser("formats", help="list the numeric formats")
    p.set_defaults(run=_cmd_formats)
    p = sub.add_parser("presets", help="list the quantization presets")
    p.set_defaults(run=_cmd_presets)
    return parser


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
        print(f"ryzen-nb {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
