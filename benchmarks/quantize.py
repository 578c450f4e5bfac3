"""Quantization benchmark: ryzen-nb vs onnxruntime's ``quantize_static`` vs AMD Quark, per preset.

For each model (a seeded ResNet18-style CNN and a 4-layer BERT-style encoder, built here) and each
preset, every tool quantizes the same FP32 model with the same calibration samples, each run in a
fresh subprocess. Per run:

* ``quant_s``   wall time of load + preparation + calibration + quantization + save (the tool's
                import and the interpreter start are excluded; the import is ``import_s``); the
                fastest of ``--repeat`` runs (default 3), each in a fresh process
* ``rss_mb``    peak RSS of that subprocess (VmHWM; includes the interpreter and the tool's
                imports; not ``ru_maxrss``, which on Linux inherits the parent's size across exec)
* ``size_kb``   output model file size (plus external data, if any)
* ``cosine``    mean cosine similarity to the FP32 output on held-out samples (never the
                calibration ones); ``top1``: share of held-out samples whose arg-max agrees with
                FP32's (for the encoder: the arg-max of the pooled embedding, a strict proxy)
* ``latency_ms``, ``speed``  median latency in plain onnxruntime (CPU) and FP32 latency / latency
                (1.0 = as fast as FP32; higher is faster). Timed in alternating rounds with the
                FP32 model (warm-up, then the median over runs, per round); the fastest round's
                median counts, since other load on the machine only ever adds time.

onnxruntime runs only where it has the preset (A8W8: QDQ int8/int8 symmetric MinMax per tensor;
A16W8: int16 activations), after its documented ``quant_pre_process``. AMD Quark runs only when an
interpreter where ``amd-quark`` imports is named (``--quark-python`` or ``RYZEN_NB_QUARK_PYTHON``);
it is never a dependency of ryzen-nb. Quark's output models that use its custom operators are run
with its custom-op library (``quark.onnx.get_library_path``) registered.

    python -m benchmarks.quantize [--samples 100] [--holdout 50] [--presets XINT8,BF16]
                                  [--quark-python /path/to/venv-quark/bin/python] [--csv F] [--json F]
    # speed at full size (few samples: the latencies are what counts there)
    python -m benchmarks.quantize --models resnet224,bert768 --samples 8 --holdout 4
"""

from __future__ import annotations

# Only the standard library at module level: this file is also the worker that runs inside the
# subprocesses, including in Quark's interpreter where neither ryzen-nb nor pandas may exist.
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRESETS = ["XINT8", "A8W8", "A16W8", "BF16", "BFP16", "MX6", "MX9", "MXINT8", "MXFP8E4M3", "MXFP4E2M1"]
QUICK_PRESETS = ["A8W8", "BF16", "BFP16"]
MODELS = ["resnet", "bert"]
#: every model the benchmark can build: the two defaults, small enough to quantize with every tool in
#: minutes, and full-size twins (ResNet18 at 224x224, a 4-layer BERT-base encoder at 128 tokens) whose
#: latencies show the speed users see on real models, where per-operator overhead matters less
MODEL_BUILDERS = {
    "resnet": ("resnet_cnn(seed=0) 1x3x32x32", "input", dict()),
    "bert": ("bert_encoder(seed=0) 4 layers", "input_ids", dict()),
    "resnet224": ("resnet_cnn(seed=0, width=64, image_size=224) ResNet18 1x3x224x224", "input",
                  dict(width=64, image_size=224, stem_stride=2, num_classes=1000)),
    "bert768": ("bert_encoder(seed=0, hidden=768, heads=12, seq_len=128) 4 layers", "input_ids",
                dict(hidden=768, heads=12, seq_len=128)),
}
TOOLS = ["ryzen-nb", "onnxruntime", "quark"]
BLOCK_PRESETS = {"BFP16", "MX4", "MX6", "MX9", "MXINT8", "MXFP8E4M3", "MXFP8E5M2", "MXFP6E3M2", "MXFP6E2M3",
                 "MXFP4E2M1"}
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft"}

# onnxruntime.quantization.quantize_static settings closest to each preset (names resolved in the worker)
ORT_EQUIVALENT = {
    "A8W8": {"activation_type": "QInt8", "weight_type": "QInt8"},
    "A16W8": {"activation_type": "QInt16", "weight_type": "QInt8"},
}
ORT_NA_REASON = {"XINT8": "n/a (no power-of-two scales)"}
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------------
# worker: runs in a fresh interpreter, quantizes once, writes a JSON result
# ------------------------------------------------------------------------------------------------
def _peak_rss_mb() -> float:
    """Peak RSS of this process. On Linux from /proc/self/status VmHWM: ``getrusage``'s ru_maxrss
    (self or children) keeps the high-water mark of the memory image replaced by exec, which for a
    process that subprocess starts with vfork is the *parent's*, so it would report the benchmark
    process's own size instead of the worker's."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    import resource

    scale = 1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0  # bytes on macOS, KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def _worker_reader(npz_path: str):
    import numpy as np

    with np.load(npz_path) as npz:  # each npz[name] reads the file again: read every array once
        arrays = {name: npz[name] for name in npz.files}
    count = len(next(iter(arrays.values())))
    feeds = [{name: a[i] for name, a in arrays.items()} for i in range(count)]

    class Reader:
        """The onnxruntime CalibrationDataReader protocol, duck-typed (all three tools accept it). The
        samples live in a closure, not in the object: Quark logs ``vars(reader)``, and printing 100
        arrays would be charged to it."""

        def __init__(self) -> None:
            self.position = 0

        def get_next(self):
            if self.position >= len(feeds):
                return None
            self.position += 1
            return feeds[self.position - 1]

        def rewind(self) -> None:
            self.position = 0

        def __len__(self) -> int:
            return len(feeds)

    return Reader()


def _work_ryzen_nb(job: dict) -> dict:
    t = time.perf_counter()
    import ryzen_nb

    import_s = time.perf_counter() - t
    rss_import = _peak_rss_mb()
    t = time.perf_counter()
    reader = _worker_reader(job["calibration"])
    summary = ryzen_nb.quantize(job["model"], job["output"], job["preset"], reader, progress=False)
    quant_s = time.perf_counter() - t
    return {"import_s": import_s, "rss_import_mb": rss_import, "quant_s": quant_s,
            "version": ryzen_nb.__version__, "tool_s": summary.total_seconds, "calib_s": summary.calibration_seconds}


def _work_onnxruntime(job: dict) -> dict:
    t = time.perf_counter()
    import onnxruntime
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quant_pre_process, quantize_static

    import_s = time.perf_counter() - t
    rss_import = _peak_rss_mb()
    settings = ORT_EQUIVALENT[job["preset"]]
    t = time.perf_counter()
    reader = _worker_reader(job["calibration"])
    pre = str(Path(job["output"]).with_suffix(".pre.onnx"))
    quant_pre_process(job["model"], pre)  # the documented first step (python -m onnxruntime.quantization.preprocess)
    quantize_static(
        pre, job["output"], reader,
        quant_format=QuantFormat.QDQ,
        activation_type=getattr(QuantType, settings["activation_type"]),
        weight_type=getattr(QuantType, settings["weight_type"]),
        calibrate_method=CalibrationMethod.MinMax,
        per_channel=False,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
    )
    quant_s = time.perf_counter() - t
    os.remove(pre)
    return {"import_s": import_s, "rss_import_mb": rss_import, "quant_s": quant_s, "version": onnxruntime.__version__}


def _work_quark(job: dict) -> dict:
    t = time.perf_counter()
    from quark.onnx import ModelQuantizer, get_library_path
    from quark.onnx.quantization.config import Config, get_default_config

    import_s = time.perf_counter() - t
    rss_import = _peak_rss_mb()
    t = time.perf_counter()
    reader = _worker_reader(job["calibration"])
    config = Config(global_quant_config=get_default_config(job["preset"]))  # the preset as a user gets it
    ModelQuantizer(config).quantize_model(job["model"], job["output"], reader)
    quant_s = time.perf_counter() - t
    if not Path(job["output"]).exists():
        raise RuntimeError("quark.onnx ModelQuantizer.quantize_model wrote no output model (see the log)")
    result = {"import_s": import_s, "rss_import_mb": rss_import, "quant_s": quant_s}
    try:
        from importlib.metadata import version

        result["version"] = version("amd-quark")
    except Exception:
        result["version"] = "?"
    try:  # for running its custom-op models in another interpreter's onnxruntime
        import torch

        result["custom_op_library"] = get_library_path("CPU")
        result["torch_lib_dir"] = str(Path(torch.__file__).parent / "lib")
    except Exception as exc:
        result["custom_op_library_error"] = f"{type(exc).__name__}: {exc}"
    return result


def worker_main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    try:
        result = {"tool": job["tool"], "status": "ok",
                  **{"ryzen-nb": _work_ryzen_nb, "onnxruntime": _work_onnxruntime, "quark": _work_quark}[job["tool"]](job)}
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failed run
        import traceback

        traceback.print_exc()
        result = {"tool": job["tool"], "status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    result["rss_mb"] = _peak_rss_mb()
    Path(job["result"]).write_text(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------------------------
# parent
# ------------------------------------------------------------------------------------------------
def run_worker(python: str, job: dict, workdir: Path, timeout: float) -> dict:
    """Run one quantization in a fresh ``python`` process; the log goes to a file next to the output."""
    stem = f"{job['model_name']}_{job['preset']}_{job['tool']}"
    job = {**job, "result": str(workdir / f"{stem}.result.json")}
    job_file = workdir / f"{stem}.job.json"
    job_file.write_text(json.dumps(job))
    Path(job["result"]).unlink(missing_ok=True)  # never read a previous run's result
    log_file = workdir / f"{stem}.log"
    env = dict(os.environ)
    if job["tool"] != "quark":  # measure this checkout's ryzen-nb, whatever is installed
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    wall = time.perf_counter()
    try:
        with open(log_file, "w") as log:
            proc = subprocess.run([python, str(Path(__file__).resolve()), "--worker", str(job_file)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=workdir)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {timeout:.0f} s", "log": str(log_file)}
    wall = time.perf_counter() - wall
    result_file = Path(job["result"])
    if not result_file.exists():
        tail = log_file.read_text(errors="replace")[-600:]
        return {"status": "error", "error": f"worker exited with {proc.returncode} and no result: ...{tail}",
                "log": str(log_file)}
    result = json.loads(result_file.read_text())
    result["process_s"] = wall
    result["log"] = str(log_file)
    if result["status"] == "ok":
        out = Path(job["output"])
        result["size_kb"] = (out.stat().st_size + sum(p.stat().st_size for p in out.parent.glob(out.name + ".data*"))) / 1e3
    return result


def run_quantization(python: str, job: dict, workdir: Path, timeout: float, repeat: int) -> dict:
    """``repeat`` fresh-process runs of one quantization: the fastest run's times (other load on the
    machine only ever adds time), the largest peak RSS; stops at the first failure."""
    runs = []
    for _ in range(max(1, repeat)):
        res = run_worker(python, job, workdir, timeout)
        if res["status"] != "ok":
            return res
        runs.append(res)
    best = dict(min(runs, key=lambda r: r["quant_s"]))
    best["rss_mb"] = max(r["rss_mb"] for r in runs)
    best["quant_runs_s"] = [round(r["quant_s"], 4) for r in runs]
    return best


def quark_probe(python: str | None) -> tuple[str | None, str]:
    """(version or None, status text) of amd-quark in ``python``."""
    if not python:
        return None, "not installed"
    if not Path(python).exists() and not shutil.which(python):
        return None, f"not installed (no interpreter {python})"
    code = ("import importlib.metadata as m, quark.onnx; from quark.onnx import ModelQuantizer, get_library_path; "
            "print('QUARK_VERSION', m.version('amd-quark'))")
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=900)
    except Exception as exc:  # noqa: BLE001
        return None, f"not installed ({type(exc).__name__}: {exc})"
    for line in proc.stdout.splitlines():
        if line.startswith("QUARK_VERSION"):
            return line.split()[1], "ok"
    return None, f"not installed (import failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]})"


def build_models(workdir: Path, samples: int, holdout: int, models: list[str]) -> dict:
    """Each model saved to ``workdir``, with calibration samples (an .npz) and held-out feeds."""
    import numpy as np
    import onnx

    from ryzen_nb.testing import bert_encoder, random_images, random_tokens, resnet_cnn

    out = {}
    for name in models:
        if name not in MODEL_BUILDERS:
            raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODEL_BUILDERS)}")
        label, input_name, kwargs = MODEL_BUILDERS[name]
        if name.startswith("resnet"):
            model = resnet_cnn(seed=0, **kwargs)
            size = kwargs.get("image_size", 32)
            calib, held = random_images(samples, size=size, seed=1), random_images(holdout, size=size, seed=2)
        else:
            model = bert_encoder(seed=0, **kwargs)
            tokens = kwargs.get("seq_len", 32)
            calib, held = random_tokens(samples, seq_len=tokens, seed=1), random_tokens(holdout, seq_len=tokens, seed=2)
        calib, held = calib[:, None], held[:, None]  # one batch-1 sample per run
        path = workdir / f"{name}_fp32.onnx"
        onnx.save(model, str(path))
        npz = workdir / f"{name}_calibration.npz"
        np.savez(npz, **{input_name: calib})
        out[name] = {"path": path, "calibration": npz, "holdout": [{input_name: x} for x in held], "label": label}
    return out


_preloaded: set[str] = set()


def _session_options_for(custom: dict | None):
    """Session options registering Quark's custom-op library (its torch libraries preloaded globally so
    the library resolves them without Quark's interpreter)."""
    import ctypes

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if custom:
        lib_dir = custom.get("torch_lib_dir")
        if lib_dir and lib_dir not in _preloaded:
            for name in ("libc10.so", "libtorch_cpu.so", "libtorch.so"):
                if (Path(lib_dir) / name).exists():
                    ctypes.CDLL(str(Path(lib_dir) / name), mode=ctypes.RTLD_GLOBAL)
            _preloaded.add(lib_dir)
        options.register_custom_ops_library(custom["custom_op_library"])
    return options


def custom_domains(model) -> list[str]:
    """Operator domains that are neither standard nor the model's own functions (i.e. need a library)."""
    local = {f.domain for f in model.functions}
    return sorted({n.domain for n in model.graph.node} - STANDARD_DOMAINS - local)


def evaluate(path: Path, fp32, holdout: list, reference: list, threads: int, rounds: int, custom: dict | None,
             quick: bool) -> dict:
    """Fidelity on held-out feeds and latency relative to FP32 (alternating rounds)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from benchmarks._timing import time_call

    model = onnx.load(str(path))
    domains = custom_domains(model)
    options = _session_options_for(custom if domains else None)
    if threads:
        options.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    cos, agree = [], []
    for feed, ref in zip(holdout, reference, strict=True):
        y = np.asarray(sess.run(None, feed)[0], np.float64).ravel()
        r = ref.ravel()
        cos.append(float(y @ r / (np.linalg.norm(y) * np.linalg.norm(r) + 1e-30)))
        agree.append(int(np.argmax(y)) == int(np.argmax(r)))
    feed = holdout[0]
    kw = {"warmup": 1, "repeats": 3, "min_seconds": 0.02} if quick else {}
    fp32_ms, q_ms = [], []
    for _ in range(rounds):
        fp32_ms.append(time_call(lambda: fp32.run(None, feed), **kw)["median_ms"])
        q_ms.append(time_call(lambda: sess.run(None, feed), **kw)["median_ms"])
    # other load on the machine only ever adds time: the fastest round's median is the least disturbed
    fp, q = min(fp32_ms), min(q_ms)
    return {"cosine": float(np.mean(cos)), "top1": float(np.mean(agree)), "latency_ms": q, "fp32_ms": fp,
            "speed": fp / q, "custom_ops": ",".join(domains) or "-",
            "latency_rounds_ms": [round(v, 4) for v in q_ms], "fp32_rounds_ms": [round(v, 4) for v in fp32_ms]}


def goals(table, quark_status: str) -> list[str]:
    """The issue's goals, computed from the measured rows."""
    import math

    lines = []
    get = {(r.model, r.preset, r.tool): r for r in table.itertuples()}

    def ok(model, preset, tool):
        r = get.get((model, preset, tool))
        return r if r is not None and r.status == "ok" else None

    def verdict(cond):
        return "met" if cond else "NOT met"

    models = list(dict.fromkeys(table["model"]))
    presets = list(dict.fromkeys(table["preset"]))
    lines.append("1. quantize time: ryzen-nb quant_s / Quark quant_s <= 0.5 for every preset "
                 "(in brackets: including each tool's import)")
    for m in models:
        for p in presets:
            ours, theirs = ok(m, p, "ryzen-nb"), ok(m, p, "quark")
            if ours is None or theirs is None:
                why = ("ryzen-nb failed" if ours is None else
                       f"Quark {quark_status}" if quark_status != "ok" else "Quark failed")
                lines.append(f"   {m:6s} {p:10s} not measured ({why})")
                continue
            ratio = ours.quant_s / theirs.quant_s
            with_import = (ours.quant_s + ours.import_s) / (theirs.quant_s + theirs.import_s)
            lines.append(f"   {m:6s} {p:10s} {ours.quant_s:7.2f} s / {theirs.quant_s:7.2f} s = {ratio:5.2f} "
                         f"[{with_import:4.2f}]  {verdict(ratio <= 0.5)}")
    lines.append("2. fidelity: ryzen-nb >= Quark (cosine difference >= -1e-4 and top-1 difference >= 0)")
    for m in models:
        for p in presets:
            ours, theirs = ok(m, p, "ryzen-nb"), ok(m, p, "quark")
            if ours is None or theirs is None:
                lines.append(f"   {m:6s} {p:10s} not measured")
                continue
            dc, dt = ours.cosine - theirs.cosine, ours.top1 - theirs.top1
            lines.append(f"   {m:6s} {p:10s} cosine {ours.cosine:.5f} - {theirs.cosine:.5f} = {dc:+.5f}, "
                         f"top-1 {ours.top1:.2f} - {theirs.top1:.2f} = {dt:+.2f}  {verdict(dc >= -1e-4 and dt >= 0)}")
    lines.append("3. speed in plain onnxruntime, FP32 latency / latency: ryzen-nb BF16 >= 0.8, BFP16/MX >= 0.3 "
                 "(Quark's for comparison)")
    for m in models:
        for p in presets:
            if p != "BF16" and p not in BLOCK_PRESETS:
                continue
            goal = 0.8 if p == "BF16" else 0.3
            ours, theirs = ok(m, p, "ryzen-nb"), ok(m, p, "quark")
            if ours is None:
                lines.append(f"   {m:6s} {p:10s} not measured (ryzen-nb failed)")
                continue
            q = f"{theirs.speed:.3f}x" if theirs is not None and not math.isnan(theirs.speed) else "not measured"
            lines.append(f"   {m:6s} {p:10s} {ours.speed:.3f}x (goal >= {goal}x)  {verdict(ours.speed >= goal)}"
                         f"   Quark: {q}")
    return lines


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100, help="calibration samples (default 100)")
    parser.add_argument("--holdout", type=int, default=50, help="held-out samples for fidelity (default 50)")
    parser.add_argument("--presets", help=f"comma-separated presets (default: {','.join(PRESETS)})")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, from {','.join(MODEL_BUILDERS)} (default: {','.join(MODELS)})")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated: ryzen-nb,onnxruntime,quark")
    parser.add_argument("--quick", action="store_true", help=f"smoke-test mode: presets {QUICK_PRESETS}, short timing")
    parser.add_argument("--quark-python", default=os.environ.get("RYZEN_NB_QUARK_PYTHON"),
                        help="interpreter where amd-quark is importable (env RYZEN_NB_QUARK_PYTHON)")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0 = default)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating FP32/quantized timing rounds (default 5)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="quantization runs per tool and preset, each in a fresh process; the fastest counts "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per quantization run")
    parser.add_argument("--keep", help="keep the models, logs and results in this folder")
    parser.add_argument("--csv", help="also write the results to this CSV file")
    parser.add_argument("--json", help="also write the results (and the goals) to this JSON file")
    args = parser.parse_args(argv)

    import numpy as np
    import onnxruntime as ort
    import pandas as pd

    presets = [p.strip().upper() for p in args.presets.split(",")] if args.presets else (
        QUICK_PRESETS if args.quick else PRESETS)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    rounds = 1 if args.quick else args.rounds
    repeat = 1 if args.quick else args.repeat
    quark_version, quark_status = quark_probe(args.quark_python) if "quark" in tools else (None, "not run")

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ryzen_nb_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rows = []
    try:
        data = build_models(workdir, args.samples, args.holdout, models)
        for m, info in data.items():
            options = ort.SessionOptions()
            options.log_severity_level = 3
            if args.threads:
                options.intra_op_num_threads = args.threads
            fp32 = ort.InferenceSession(str(info["path"]), options, providers=["CPUExecutionProvider"])
            reference = [np.asarray(fp32.run(None, f)[0], np.float64) for f in info["holdout"]]
            for p in presets:
                for tool in tools:
                    row = {"model": m, "preset": p, "tool": tool}
                    if tool == "onnxruntime" and p not in ORT_EQUIVALENT:
                        rows.append({**row, "status": ORT_NA_REASON.get(p, "n/a")})
                        continue
                    if tool == "quark" and quark_status != "ok":
                        rows.append({**row, "status": quark_status})
                        continue
                    python = args.quark_python if tool == "quark" else sys.executable
                    out = workdir / f"{m}_{p}_{tool}.onnx"
                    job = {"tool": tool, "preset": p, "model": str(info["path"]), "model_name": m,
                           "calibration": str(info["calibration"]), "output": str(out)}
                    print(f"[{m} {p} {tool}] quantizing ...", end=" ", flush=True, file=sys.stderr)
                    res = run_quantization(python, job, workdir, args.timeout, repeat)
                    row.update({k: res.get(k) for k in ("status", "quant_s", "import_s", "calib_s", "rss_mb",
                                                         "rss_import_mb", "size_kb", "version", "error", "log",
                                                         "quant_runs_s")})
                    if res["status"] == "ok":
                        custom = res if res.get("custom_op_library") else None
                        try:
                            row.update(evaluate(out, fp32, info["holdout"], reference, args.threads, rounds, custom,
                                                args.quick))
                        except Exception as exc:  # noqa: BLE001 - e.g. a model onnxruntime cannot load
                            row.update({"status": "eval error", "error": f"{type(exc).__name__}: {exc}"[:300]})
                        print(f"{row.get('quant_s', float('nan')):.2f} s, cosine {row.get('cosine', float('nan')):.5f}, "
                              f"speed {row.get('speed', float('nan')):.3f}x", file=sys.stderr)
                    else:
                        print(f"FAILED: {res.get('error')}", file=sys.stderr)
                    rows.append(row)
    finally:
        failed_runs = any(r.get("status") in ("error", "eval error") for r in rows)
        if not args.keep and not failed_runs:
            shutil.rmtree(workdir, ignore_errors=True)
        elif failed_runs and not args.keep:
            print(f"some runs failed: models and logs kept in {workdir}", file=sys.stderr)

    table = pd.DataFrame(rows)
    numeric = ["quant_s", "import_s", "calib_s", "rss_mb", "rss_import_mb", "size_kb", "cosine", "top1", "latency_ms",
               "fp32_ms", "speed"]
    for col in numeric + ["custom_ops", "version", "error", "log"]:
        if col not in table:
            table[col] = np.nan
    table[numeric] = table[numeric].astype(float)

    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    versions = {t: table.loc[(table.tool == t) & (table.status == "ok"), "version"].dropna().unique().tolist()
                for t in tools}
    print(f"\nquantize benchmark: {args.samples} calibration samples, {args.holdout} held-out samples, "
          f"quant_s the fastest of {repeat} run(s), speed the fastest of {rounds} timing round(s), "
          f"onnxruntime {ort.__version__} (threads={args.threads or 'default'}), "
          f"versions {versions}, Quark: {quark_status}" + (f" {quark_version}" if quark_version else ""))
    print(f"{time.perf_counter() - started:.0f} s; 1-minute load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs (other work on the machine skews the "
          "latencies; speed is measured in alternating rounds against FP32 to limit that)")
    shown = ["status", "quant_s", "import_s", "rss_mb", "size_kb", "cosine", "top1", "latency_ms", "speed", "custom_ops"]
    for m in models:
        part = table[table.model == m].set_index(["preset", "tool"])[shown]
        fp32_ms = table.loc[table.model == m, "fp32_ms"].median()
        print(f"\n{data[m]['label']}  (FP32 median latency {fp32_ms:.3f} ms)")
        print(part.to_string(float_format=lambda v: f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}", na_rep="-"))
    failed = table[table.status.isin(["error", "eval error"])]
    for r in failed.itertuples():
        print(f"\nFAILED {r.model} {r.preset} {r.tool}: {r.error}  (log: {r.log})")
    goal_lines = goals(table, quark_status)
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
        # run as a script: do not let this folder's modules (quantize, formats) shadow anything
        here = Path(__file__).resolve().parent
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
        sys.exit(worker_main(sys.argv[2]))
    main()
