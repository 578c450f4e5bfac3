"""Accuracy-recovery benchmark: wall time and fidelity of CLE, AdaRound, AdaQuant, bias correction and
automatic mixed precision, ryzen-nb vs AMD Quark, on the seeded ResNet18-style CNN and BERT-style
encoder of ``benchmarks.quantize``.

Each run quantizes the FP32 model with one preset plus one algorithm, in a fresh subprocess, on
the same calibration samples for both tools and with the same knobs (iterations, batch size,
learning rate, samples per layer). Per run:

* ``seconds``  wall time of the quantization call (load, calibration, the algorithm, save)
* ``rss_mb``   peak RSS of the subprocess
* ``cosine``, ``l2``, ``top1``  on held-out samples (never the calibration ones) against FP32:
               mean cosine, mean L2 distance of the outputs (Quark's L2), share of arg-max agreement
* ``gain``     how much of the preset's own L2 error the algorithm removed: 1 - l2 / l2(preset alone)

AdaRound and AdaQuant draw random batches: each runs with ``--seeds`` seeds (default 3), and the
table shows the mean, with the spread of ``l2`` over the seeds in ``l2_range``. At 50 iterations the
seed moves the result by several percent for both tools.

The automatic mixed-precision runs start from A16W8 and switch layers to 8-bit activations while
the L2 distance on the calibration samples stays below a target halfway between all-A16W8 and
all-A8W8 (measured here first); ``int16`` counts the 16-bit activation tensors left.

``--busy N`` runs every job a second time while N other processes keep N cores busy (a Jupyter
kernel computing, a second job), right after its quiet run, and reports that time as
``busy_seconds`` and its ratio to the quiet one as ``loaded``: the goal is at most 1.5x. The busy
processes are plain Python loops, one core each, started before the run and stopped after it.

AMD Quark runs only when an interpreter where ``amd-quark`` imports is named (``--quark-python``
or ``RYZEN_NB_QUARK_PYTHON``); it is never a dependency of ryzen-nb. Quark's legacy configs turn CLE
on by default; here it is on only in the CLE rows, for both tools, so each algorithm is measured alone.

    python -m benchmarks.algorithms [--iterations 50] [--samples 64] [--holdout 64]
                                    [--models resnet,bert] [--algorithms cle,adaround,...]
                                    [--busy N] [--quark-python /path/to/venv-quark/bin/python]
                                    [--csv F] [--json F]
"""

from __future__ import annotations

# Only the standard library at module level: this file is also the worker that runs inside the
# subprocesses, including in Quark's interpreter where ryzen-nb is not installed.
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: (model, preset, algorithm) runs; "none" is the preset alone, the reference for ``gain``
RUNS = {
    "resnet": [("XINT8", "none"), ("XINT8", "cle"), ("XINT8", "adaround"), ("XINT8", "adaquant"),
               ("XINT8", "bias_correction"), ("A8W8", "none"), ("A8W8", "adaround"), ("A8W8", "adaquant"),
               ("A16W8", "none"), ("A16W8", "auto_mp")],
    "bert": [("A8W8", "none"), ("A8W8", "adaround"), ("A8W8", "adaquant"), ("A8W8", "bias_correction"),
             ("BF16", "none"), ("BF16", "adaquant"), ("A16W8", "none"), ("A16W8", "auto_mp")],
}
ALGORITHMS = ["none", "cle", "adaround", "adaquant", "bias_correction", "auto_mp"]
TOOLS = ["ryzen-nb", "quark"]
LEARNING_RATE = {"adaround": 0.1, "adaquant": 1e-5}
#: a loaded machine may cost at most this multiple of the quiet time
LOADED_GOAL = 1.5


# ------------------------------------------------------------------------------------------------
# worker: runs in a fresh interpreter, quantizes once, writes a JSON result
# ------------------------------------------------------------------------------------------------
def _finetune_params(job: dict) -> dict:
    return {"OptimAlgorithm": job["algorithm"], "NumIterations": job["iterations"], "BatchSize": job["batch_size"],
            "LearningRate": LEARNING_RATE[job["algorithm"]], "DataSize": job["data_size"], "FixedSeed": job["seed"],
            "UpdateBias": False}


def _work_ryzen_nb(job: dict) -> dict:
    import ryzen_nb
    from benchmarks.quantize import _worker_reader

    qc = ryzen_nb.get_default_config(job["preset"])
    algorithm = job["algorithm"]
    qc.include_cle = algorithm == "cle"
    if algorithm in ("adaround", "adaquant"):
        qc.include_fast_ft = True
        qc.extra_options["FastFinetune"] = _finetune_params(job)
    elif algorithm == "bias_correction":
        qc.extra_options["BiasCorrection"] = True
    elif algorithm == "auto_mp":
        qc.include_auto_mp = True
        qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "L2Target": job["l2_target"],
                                                "DataSize": job["data_size"]}
    t = time.perf_counter()
    summary = ryzen_nb.quantize(job["model"], job["output"], qc, _worker_reader(job["calibration"]), progress=False)
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "version": ryzen_nb.__version__,
            "int16": sum(1 for name, f in summary.formats_by_tensor.items() if f == "int16")}


def _work_quark(job: dict) -> dict:
    from quark.onnx import ModelQuantizer

    from benchmarks.quantize import _worker_reader

    algorithm = job["algorithm"]
    if algorithm == "auto_mp":  # Quark 0.13 spells automatic mixed precision in its new API only
        from quark.onnx import AutoMixprecisionConfig, QConfig
        from quark.onnx.quantization.config.spec import Int8Spec, Int16Spec, QLayerConfig

        config = QConfig(global_config=QLayerConfig(input_tensors=Int16Spec(), weight=Int8Spec()),
                         algo_config=[AutoMixprecisionConfig(
                             target_layer_config=QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()),
                             metric_threshold=job["l2_target"], data_size=job["data_size"])],
                         extra_options={"ForceQuantizeNoInputCheck": True, "AlignSlice": False, "FoldRelu": True,
                                        "AlignConcat": True, "AlignEltwiseQuantType": True})
    else:
        from quark.onnx.quantization.config import Config, get_default_config

        qc = get_default_config(job["preset"])
        qc.include_cle = algorithm == "cle"  # on by default in Quark's legacy configs
        if algorithm in ("adaround", "adaquant"):
            qc.include_fast_ft = True
            qc.extra_options["FastFinetune"] = _finetune_params(job)
        elif algorithm == "bias_correction":
            qc.extra_options["BiasCorrection"] = True
        config = Config(global_quant_config=qc)
    t = time.perf_counter()
    ModelQuantizer(config).quantize_model(job["model"], job["output"], _worker_reader(job["calibration"]))
    seconds = time.perf_counter() - t
    if not Path(job["output"]).exists():
        raise RuntimeError("quark.onnx ModelQuantizer.quantize_model wrote no output model (see the log)")
    import onnx

    model = onnx.load(job["output"])
    int16 = sum(1 for n in model.graph.node if n.op_type == "QuantizeLinear" and len(n.input) > 2
                and any(i.name == n.input[2] and i.data_type in (onnx.TensorProto.INT16, onnx.TensorProto.UINT16)
                        for i in model.graph.initializer))
    from importlib.metadata import version

    result = {"seconds": seconds, "version": version("amd-quark"), "int16": int16}
    try:  # its BF16/BFP models need its custom-op library to run (in the parent's onnxruntime)
        import torch
        from quark.onnx import get_library_path

        result["custom_op_library"] = get_library_path("CPU")
        result["torch_lib_dir"] = str(Path(torch.__file__).parent / "lib")
    except Exception as exc:  # noqa: BLE001
        result["custom_op_library_error"] = f"{type(exc).__name__}: {exc}"
    return result


def worker_main(job_path: str) -> int:
    from benchmarks.quantize import _peak_rss_mb

    job = json.loads(Path(job_path).read_text())
    try:
        result = {"status": "ok", **{"ryzen-nb": _work_ryzen_nb, "quark": _work_quark}[job["tool"]](job)}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failed run
        import traceback

        traceback.print_exc()
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    result["rss_mb"] = _peak_rss_mb()
    Path(job["result"]).write_text(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------------------------
# parent
# ------------------------------------------------------------------------------------------------
def run_worker(python: str, job: dict, workdir: Path, timeout: float) -> dict:
    stem = f"{job['model_name']}_{job['preset']}_{job['algorithm']}_{job['tool']}_{job['seed']}{job.get('variant', '')}"
    job = {**job, "result": str(workdir / f"{stem}.result.json")}
    job_file = workdir / f"{stem}.job.json"
    job_file.write_text(json.dumps(job))
    Path(job["result"]).unlink(missing_ok=True)
    log_file = workdir / f"{stem}.log"
    env = dict(os.environ)
    # the worker imports benchmarks.quantize (and, for ryzen-nb, this checkout's ryzen_nb) from the root
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    try:
        with open(log_file, "w") as log:
            subprocess.run([python, str(Path(__file__).resolve()), "--worker", str(job_file)],
                           stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=workdir)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {timeout:.0f} s", "log": str(log_file)}
    if not Path(job["result"]).exists():
        tail = log_file.read_text(errors="replace")[-600:]
        return {"status": "error", "error": f"worker wrote no result: ...{tail}", "log": str(log_file)}
    return {**json.loads(Path(job["result"]).read_text()), "log": str(log_file)}


def run_loaded(python: str, job: dict, workdir: Path, timeout: float, busy: int) -> dict:
    """The same job again while ``busy`` other processes each keep a core busy (a spinning Python
    loop: another job, a Jupyter kernel computing); its result under ``busy_*`` keys."""
    job = {**job, "output": str(Path(job["output"]).with_suffix(".busy.onnx")), "variant": "busy"}
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        time.sleep(0.2)  # the spinners are running before the job starts
        res = run_worker(python, job, workdir, timeout)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    Path(job["output"]).unlink(missing_ok=True)
    if res["status"] != "ok":
        return {"status": "error", "error": f"loaded run: {res.get('error')}", "log": res.get("log")}
    return {"busy_seconds": res["seconds"]}


def fidelity(path: Path, holdout: list, reference: list, custom: dict | None = None) -> dict:
    import numpy as np
    import onnx
    import onnxruntime as ort

    from benchmarks.quantize import _session_options_for, custom_domains

    model = onnx.load(str(path))
    domains = custom_domains(model)
    if domains and not (custom and custom.get("custom_op_library")):
        raise RuntimeError(f"the model uses custom operators {domains} and no library for them was found")
    options = _session_options_for(custom if domains else None)
    # both tools' models scored as written (no fused integer kernels, which saturate on CPUs without
    # VNNI and would score onnxruntime's kernel instead of the quantized model)
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outs = [np.asarray(sess.run(None, feed)[0], np.float64).ravel() for feed in holdout]
    refs = [r.ravel() for r in reference]
    cos = [float(y @ r / (np.linalg.norm(y) * np.linalg.norm(r) + 1e-30)) for y, r in zip(outs, refs)]
    return {"cosine": float(np.mean(cos)), "l2": float(np.mean([np.linalg.norm(y - r) for y, r in zip(outs, refs)])),
            "top1": float(np.mean([np.argmax(y) == np.argmax(r) for y, r in zip(outs, refs)]))}


def l2_target(info: dict, data_size: int) -> float:
    """Halfway between the L2 distance of all-A16W8 and all-A8W8 (ryzen-nb, on the calibration samples
    the analysis sees): a target automatic mixed precision can meet only by keeping some 16-bit layers."""
    import numpy as np
    import onnxruntime as ort

    import ryzen_nb
    from benchmarks.quantize import _worker_reader

    reader = _worker_reader(str(info["calibration"]))
    feeds = [reader.get_next() for _ in range(min(data_size, len(reader)))]
    fp32 = ort.InferenceSession(str(info["path"]), providers=["CPUExecutionProvider"])
    ref = [fp32.run(None, f)[0] for f in feeds]
    l2s = []
    for preset in ("A16W8", "A8W8"):
        q = ryzen_nb.quantize(str(info["path"]), None, preset, feeds, progress=False).model
        as_written = ort.SessionOptions()
        as_written.add_session_config_entry("session.disable_quant_qdq", "1")
        s = ort.InferenceSession(q.SerializeToString(), as_written, providers=["CPUExecutionProvider"])
        l2s.append(float(np.mean([np.linalg.norm(s.run(None, f)[0] - r) for f, r in zip(feeds, ref)])))
    return l2s[0] + 0.5 * (l2s[1] - l2s[0])


def _combine(runs: list[dict]) -> dict:
    """One row from the runs of several seeds: the mean of each figure, the spread of ``l2``; the
    first failure if any run failed."""
    failed = [r for r in runs if r["status"] != "ok"]
    if failed:
        return {k: failed[0].get(k) for k in ("status", "error", "log", "seconds", "rss_mb")}
    out = {"status": "ok", "version": runs[0].get("version"), "log": runs[0].get("log"), "seeds": len(runs)}
    for key in ("seconds", "busy_seconds", "rss_mb", "int16", "cosine", "l2", "top1"):
        values = [r[key] for r in runs if r.get(key) is not None]
        out[key] = sum(values) / len(values) if values else None
    l2s = [r["l2"] for r in runs]
    out["l2_range"] = f"{min(l2s):.4g}-{max(l2s):.4g}" if len(l2s) > 1 else "-"
    return out


def goals(table) -> list[str]:
    lines = ["1. time: at most half of Quark's, per algorithm (no goal where Quark was not measured)"]
    ok = table[table.status == "ok"]
    get = {(r.model, r.preset, r.algorithm, r.tool): r for r in ok.itertuples()}
    for (model, preset, algorithm, tool), r in get.items():
        if tool != "ryzen-nb" or algorithm == "none":
            continue
        q = get.get((model, preset, algorithm, "quark"))
        if q is None:
            lines.append(f"   {model:6s} {preset:6s} {algorithm:15s} {r.seconds:6.1f} s  no goal (Quark not measured)")
            continue
        ratio = r.seconds / q.seconds
        lines.append(f"   {model:6s} {preset:6s} {algorithm:15s} {r.seconds:6.1f} s vs {q.seconds:.1f} s ({ratio:.2f}x)  "
                     f"{'met' if ratio <= 0.5 else 'NOT met'}")
    lines.append("2. fidelity at least Quark's: mean held-out L2 of ryzen-nb <= Quark's (+1%)")
    for (model, preset, algorithm, tool), r in get.items():
        if tool != "ryzen-nb" or algorithm in ("none", "auto_mp"):
            continue
        q = get.get((model, preset, algorithm, "quark"))
        if q is None:
            lines.append(f"   {model:6s} {preset:6s} {algorithm:15s} not measured (Quark)")
            continue
        lines.append(f"   {model:6s} {preset:6s} {algorithm:15s} L2 {r.l2:.4g} vs {q.l2:.4g}  "
                     f"{'met' if r.l2 <= q.l2 * 1.01 else 'NOT met'}")
    lines.append("3. automatic mixed precision: fewer 16-bit tensors than all-A16W8 and a lower held-out L2 than "
                 "all-A8W8 (Quark's figures beside)")
    for (model, preset, algorithm, tool), r in get.items():
        if tool != "ryzen-nb" or algorithm != "auto_mp":
            continue
        high, low = get.get((model, "A16W8", "none", tool)), get.get((model, "A8W8", "none", tool))
        q = get.get((model, preset, algorithm, "quark"))
        quark = f"Quark: {q.int16:.0f} int16, L2 {q.l2:.4g}" if q is not None else "Quark not measured"
        if high is None or low is None:
            lines.append(f"   {model:6s} not measured (the A16W8 or A8W8 rows are missing)")
            continue
        met = r.int16 < high.int16 and r.l2 < low.l2
        lines.append(f"   {model:6s} {r.int16:.0f} of {high.int16:.0f} int16, L2 {r.l2:.4g} (A8W8 {low.l2:.4g}, "
                     f"target {r.l2_target:.4g} on calibration data)  {'met' if met else 'NOT met'}  ({quark})")
    if "loaded" in table and table.loaded.notna().any():
        lines.append(f"4. on a loaded machine (other processes busy on {int(table.busy.max())} of the cores): at most "
                     f"{LOADED_GOAL}x the quiet time")
        for r in ok[ok.loaded.notna()].itertuples():
            mark = ("no goal (the preset alone)" if r.algorithm == "none"
                    else "met" if r.loaded <= LOADED_GOAL else "NOT met")
            lines.append(f"   {r.model:6s} {r.preset:6s} {r.algorithm:15s} {r.tool:8s} {r.seconds:6.1f} s quiet, "
                         f"{r.busy_seconds:.1f} s loaded ({r.loaded:.2f}x)  {mark}")
    return lines


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=64, help="calibration samples (default 64)")
    parser.add_argument("--holdout", type=int, default=64, help="held-out samples for fidelity (default 64)")
    parser.add_argument("--iterations", type=int, default=50, help="AdaRound/AdaQuant iterations (default 50)")
    parser.add_argument("--batch-size", type=int, default=4, help="AdaRound/AdaQuant batch size (default 4)")
    parser.add_argument("--seeds", type=int, default=3, help="runs of AdaRound/AdaQuant, one per seed (default 3)")
    parser.add_argument("--data-size", type=int, default=64,
                        help="samples per layer for fine-tuning and mixed-precision analysis (default 64)")
    parser.add_argument("--models", default="resnet,bert", help="comma-separated: resnet,bert")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS), help=f"comma-separated from {ALGORITHMS}")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated: ryzen-nb,quark")
    parser.add_argument("--quark-python", default=os.environ.get("RYZEN_NB_QUARK_PYTHON"),
                        help="interpreter where amd-quark is importable (env RYZEN_NB_QUARK_PYTHON)")
    parser.add_argument("--busy", type=int, default=0,
                        help="also time each run while this many other processes keep a core busy each (default 0: not)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per run")
    parser.add_argument("--keep", help="keep the models, logs and results in this folder")
    parser.add_argument("--csv", help="also write the results to this CSV file")
    parser.add_argument("--json", help="also write the results (and the goals) to this JSON file")
    args = parser.parse_args(argv)

    import numpy as np
    import onnxruntime as ort
    import pandas as pd

    from benchmarks.quantize import build_models, quark_probe

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    for a in algorithms:
        if a not in ALGORITHMS:
            raise SystemExit(f"unknown algorithm {a!r}; choose from {', '.join(ALGORITHMS)}")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    quark_version, quark_status = quark_probe(args.quark_python) if "quark" in tools else (None, "not run")
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ryzen_nb_algos_"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = []
    try:
        data = build_models(workdir, args.samples, args.holdout, models)
        for m, info in data.items():
            fp32 = ort.InferenceSession(str(info["path"]), providers=["CPUExecutionProvider"])
            reference = [np.asarray(fp32.run(None, f)[0], np.float64) for f in info["holdout"]]
            target = None
            presets = {p for p, a in RUNS[m] if a in algorithms}  # each with its "none" reference row
            if "auto_mp" in algorithms:
                presets.add("A8W8")  # the all-8-bit reference of mixed precision
            for preset, algorithm in RUNS[m]:
                if algorithm not in algorithms and not (algorithm == "none" and preset in presets):
                    continue
                if algorithm == "auto_mp" and target is None:
                    target = l2_target(info, args.data_size)
                for tool in tools:
                    row = {"model": m, "preset": preset, "algorithm": algorithm, "tool": tool}
                    if tool == "quark" and quark_status != "ok":
                        rows.append({**row, "status": quark_status})
                        continue
                    seeds = range(1, args.seeds + 1) if algorithm in ("adaround", "adaquant") else [1]
                    runs = []
                    for seed in seeds:
                        out = workdir / f"{m}_{preset}_{algorithm}_{tool}_{seed}.onnx"
                        job = {"tool": tool, "preset": preset, "algorithm": algorithm, "model": str(info["path"]),
                               "model_name": m, "calibration": str(info["calibration"]), "output": str(out),
                               "iterations": args.iterations, "batch_size": args.batch_size, "seed": seed,
                               "data_size": args.data_size, "l2_target": target}
                        print(f"[{m} {preset} {algorithm} {tool} seed {seed}] ...", end=" ", flush=True, file=sys.stderr)
                        res = run_worker(args.quark_python if tool == "quark" else sys.executable, job, workdir,
                                         args.timeout)
                        if res["status"] == "ok":
                            try:
                                res.update(fidelity(out, info["holdout"], reference, res))
                            except Exception as exc:  # noqa: BLE001
                                res.update({"status": "eval error", "error": f"{type(exc).__name__}: {exc}"[:300]})
                        if res["status"] == "ok" and args.busy:
                            res.update(run_loaded(args.quark_python if tool == "quark" else sys.executable, job,
                                                  workdir, args.timeout, args.busy))
                        print(f"{res.get('seconds', float('nan')):.1f} s"
                              + (f" ({res['busy_seconds']:.1f} s loaded)" if "busy_seconds" in res else "")
                              + f", L2 {res.get('l2', float('nan')):.4g}"
                              if res["status"] == "ok" else f"FAILED: {res.get('error')}", file=sys.stderr)
                        runs.append(res)
                        if res["status"] != "ok":
                            break
                    row.update(_combine(runs))
                    if algorithm == "auto_mp":
                        row["l2_target"] = target
                    rows.append(row)
    finally:
        failed_runs = any(r.get("status") in ("error", "eval error") for r in rows)
        if not args.keep and not failed_runs:
            shutil.rmtree(workdir, ignore_errors=True)
        elif failed_runs and not args.keep:
            print(f"some runs failed: models and logs kept in {workdir}", file=sys.stderr)

    table = pd.DataFrame(rows)
    numeric = ["seconds", "busy_seconds", "rss_mb", "int16", "cosine", "l2", "top1", "l2_target"]
    for col in numeric + ["version", "error", "log", "l2_range"]:
        if col not in table:
            table[col] = np.nan
    table[numeric] = table[numeric].astype(float)
    table["loaded"] = table.busy_seconds / table.seconds
    table["busy"] = args.busy
    base = {(r.model, r.preset, r.tool): r.l2 for r in table.itertuples() if r.algorithm == "none"}
    table["gain"] = [1.0 - r.l2 / base[(r.model, r.preset, r.tool)] if (r.model, r.preset, r.tool) in base
                     and r.algorithm != "none" else np.nan for r in table.itertuples()]
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(f"\nalgorithms benchmark: {args.samples} calibration samples, {args.holdout} held-out, "
          f"{args.iterations} iterations, batch {args.batch_size}, {args.data_size} samples per layer, "
          f"{args.seeds} seed(s) per fine-tuning run (means shown); "
          f"onnxruntime {ort.__version__}; Quark: {quark_status}" + (f" {quark_version}" if quark_version else "")
          + f"; {time.perf_counter() - started:.0f} s in all on {os.cpu_count()} CPUs")
    shown = ["status", "seconds", *(["busy_seconds", "loaded"] if args.busy else []), "rss_mb", "cosine", "l2",
             "l2_range", "gain", "top1", "int16"]
    for m in models:
        part = table[table.model == m].set_index(["preset", "algorithm", "tool"])[shown]
        print(f"\n{data[m]['label']}")
        print(part.to_string(float_format=lambda v: f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}", na_rep="-"))
    for r in table[table.status.isin(["error", "eval error"])].itertuples():
        print(f"\nFAILED {r.model} {r.preset} {r.algorithm} {r.tool}: {r.error}  (log: {r.log})")
    goal_lines = goals(table)
    print("\nGoals")
    print("\n".join(goal_lines))
    if args.csv:
        table.to_csv(args.csv, index=False)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": json.loads(table.to_json(orient="records")),
                                               "goals": goal_lines, "quark": quark_status,
                                               "quark_version": quark_version}, indent=1))
    return table


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        here = Path(__file__).resolve().parent
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
        sys.path.insert(0, str(ROOT))
        sys.exit(worker_main(sys.argv[2]))
    main()
