"""Quantization benchmark: ryzen-nb vs onnxruntime's ``quantize_static`` vs AMD Quark, per preset.

The models are those of :mod:`benchmarks.models`: by default the sizes users run (a ResNet50 at
224x224, a BERT-base-class encoder at 128 tokens, EfficientNet-Lite0 and MiniLM from the zoo, and two
real-world ONNX models shipped in PyPI wheels: NudeNet's YOLOv8n and RapidOCR's PP-OCRv4 detector);
``--quick`` runs the tiny CNN and encoder of the earlier benchmark. For each model and preset, every
tool quantizes the same FP32 model with the same calibration samples, each run in a fresh subprocess.
Per run:

* ``quant_s``   wall time of load + preparation + calibration + quantization + save (the tool's
                import and the interpreter start are excluded; the import is ``import_s``); the
                fastest of ``--repeat`` runs (default 1), each in a fresh process
* ``rss_mb``    peak RSS of that subprocess (VmHWM; includes the interpreter and the tool's
                imports; not ``ru_maxrss``, which on Linux inherits the parent's size across exec)
* ``size_kb``   output model file size (plus external data, if any)
* ``cosine``    mean cosine similarity to the FP32 output on held-out samples (never the
                calibration ones); ``top1``: share of held-out samples whose arg-max agrees with
                FP32's (for the encoders: the arg-max of the pooled embedding, a strict proxy)
* ``latency_ms``, ``speed``  median latency in plain onnxruntime (CPU, default session options: the
                fused integer kernels a deployment runs) and FP32 latency / latency (1.0 = as fast as
                FP32; higher is faster). Timed in alternating rounds with the FP32 model (warm-up, then
                the median over runs, per round); the fastest round's median counts, since other load
                on the machine only ever adds time. ``vs_ort``: ``speed`` / the speed of onnxruntime's
                own QDQ model of the same network (its S8S8 model for XINT8 and A8W8, which it
                quantizes once and reuses).

onnxruntime runs only where it has the preset (A8W8 and, as the speed reference, XINT8: QDQ int8/int8
symmetric MinMax per tensor; A16W8: int16 activations), after its documented ``quant_pre_process`` (retried
without symbolic shape inference, then skipped, where it fails; the row's ``preprocess`` says which).
Every worker's address space is capped (``--worker-memory-gb``, default 8 GB; a run over it is reported as
"out of memory (cap N GB)" instead of taking the machine down). Each row is printed as it completes.
AMD Quark runs only when an interpreter where ``amd-quark`` imports is named (``--quark-python`` or
``RYZEN_NB_QUARK_PYTHON``); it is never a dependency of ryzen-nb. Quark's output models that use its
custom operators are run with its custom-op library (``quark.onnx.get_library_path``) registered.

    python -m benchmarks.quantize [--models resnet50,bert_base] [--presets XINT8,BF16] [--samples 16]
                                  [--quark-python /path/to/venv-quark/bin/python] [--csv F] [--json F]
    python -m benchmarks.quantize --quick      # the tiny models, three presets, short timing
    python -m benchmarks.quantize --presets BF16:WeightsOnly,BFP16:WeightsOnly   # a preset with extra options

A preset may carry extra options after colons (``BF16:WeightsOnly``, ``A8W8:Int32Bias=false``): each tool
quantizes with the preset's config and those ``extra_options`` (a bare name sets True). Such a row has the
base preset's speed goal, and onnxruntime runs only for the plain preset.
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
TOOLS = ["ryzen-nb", "onnxruntime", "quark"]
BLOCK_PRESETS = {"BFP16", "MX4", "MX6", "MX9", "MXINT8", "MXFP8E4M3", "MXFP8E5M2", "MXFP6E3M2", "MXFP6E2M3",
                 "MXFP4E2M1"}
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft"}

# onnxruntime.quantization.quantize_static settings closest to each preset (names resolved in the worker)
# (XINT8: onnxruntime has no power-of-two scales; its S8S8 model of the same network is the speed reference)
ORT_EQUIVALENT = {
    "XINT8": {"activation_type": "QInt8", "weight_type": "QInt8"},
    "A8W8": {"activation_type": "QInt8", "weight_type": "QInt8"},
    "A16W8": {"activation_type": "QInt16", "weight_type": "QInt8"},
}
#: speed goals in plain onnxruntime, FP32 latency / latency (issue 20); integer presets: at least
#: onnxruntime's own QDQ model of the same network (vs_ort >= 1)
SPEED_GOAL = {"BF16": 0.95, "BFP16": 0.7, **{p: 0.5 for p in BLOCK_PRESETS if p.startswith("MX")}}
INTEGER_PRESETS = {"XINT8", "A8W8", "A16W8"}


def preset_spec(spec: str) -> tuple[str, dict]:
    """``"BF16:WeightsOnly:CalibDataSize=8"`` -> ("BF16", {"WeightsOnly": True, "CalibDataSize": 8}): a
    preset and the extra options set on it (values read as JSON, else kept as text; a bare name is True)."""
    name, *options = spec.split(":")
    extra: dict = {}
    for option in options:
        key, _, value = option.partition("=")
        if not value:
            extra[key.strip()] = True
            continue
        try:
            extra[key.strip()] = json.loads(value)
        except ValueError:
            extra[key.strip()] = value
    return name.strip().upper(), extra


def _config(spec: str, get_default_config, config_class):
    """The tool's Config for a preset spec: the preset as a user gets it, plus the spec's extra options."""
    name, extra = preset_spec(spec)
    qc = get_default_config(name)
    qc.extra_options = {**(qc.extra_options or {}), **extra}
    return config_class(global_quant_config=qc)
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
    # np.asarray: a[i] of a stacked scalar input is a numpy scalar, which Quark refuses; a 0-d array it takes
    feeds = [{name: np.asarray(a[i]) for name, a in arrays.items()} for i in range(count)]

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
    from ryzen_nb.quantization.config import Config, get_default_config

    import_s = time.perf_counter() - t
    rss_import = _peak_rss_mb()
    t = time.perf_counter()
    reader = _worker_reader(job["calibration"])
    config = _config(job["preset"], get_default_config, Config)
    summary = ryzen_nb.quantize(job["model"], job["output"], config, reader, progress=False)
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
    source, route = _ort_pre_process(quant_pre_process, job["model"], pre)
    quantize_static(
        source, job["output"], reader,
        quant_format=QuantFormat.QDQ,
        activation_type=getattr(QuantType, settings["activation_type"]),
        weight_type=getattr(QuantType, settings["weight_type"]),
        calibrate_method=CalibrationMethod.MinMax,
        per_channel=False,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
    )
    quant_s = time.perf_counter() - t
    if os.path.exists(pre):
        os.remove(pre)
    return {"import_s": import_s, "rss_import_mb": rss_import, "quant_s": quant_s, "version": onnxruntime.__version__,
            "preprocess": route}


#: how onnxruntime's pre-processing went: its documented default, without symbolic shape inference, or not at all
PRE_PROCESS_ROUTES = ("symbolic", "no symbolic shape inference", "none (failed)")


def _ort_pre_process(quant_pre_process, model: str, pre: str) -> tuple[str, str]:
    """onnxruntime's documented first step (``python -m onnxruntime.quantization.preprocess``), which fails
    on many exported models ("Incomplete symbolic shape inference"): retried with ``skip_symbolic_shape``,
    then skipped. The model to quantize and the route taken (one of ``PRE_PROCESS_ROUTES``)."""
    for route, options in zip(PRE_PROCESS_ROUTES[:2], ({}, {"skip_symbolic_shape": True})):
        try:
            quant_pre_process(model, pre, **options)
            return pre, route
        except Exception as exc:  # noqa: BLE001 - the next route
            import traceback

            where = traceback.format_exc(limit=-1).strip().splitlines()[1:2]  # the frame that raised
            print(f"quant_pre_process({options or 'defaults'}) failed: {type(exc).__name__}: {exc} {where}",
                  file=sys.stderr, flush=True)
            if os.path.exists(pre):
                os.remove(pre)
    return model, PRE_PROCESS_ROUTES[2]


def _work_quark(job: dict) -> dict:
    t = time.perf_counter()
    from quark.onnx import ModelQuantizer, get_library_path
    from quark.onnx.quantization.config import Config, get_default_config

    import_s = time.perf_counter() - t
    rss_import = _peak_rss_mb()
    t = time.perf_counter()
    reader = _worker_reader(job["calibration"])
    config = _config(job["preset"], get_default_config, Config)  # the preset as a user gets it
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
#: default address-space cap of a worker, GB (Quark took 21 GB on one corpus model and the machine with it)
WORKER_MEMORY_GB = 8.0
#: what running out of memory looks like in a worker's error or log (Python, numpy, C++, onnxruntime, torch)
_MEMORY_MARKERS = ("MemoryError", "Unable to allocate", "bad_alloc", "bad allocation", "Cannot allocate memory",
                   "Failed to allocate memory", "out of memory", "DefaultCPUAllocator: can't allocate")


def _limit_memory(gb: float):
    """A ``preexec_fn`` capping the child's address space (RLIMIT_AS) at ``gb`` GB; None without a cap."""
    if not gb or gb <= 0:
        return None

    def limit() -> None:
        import resource

        cap = int(gb * 2**30)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))

    return limit


def _out_of_memory(text: str) -> bool:
    return any(marker in text for marker in _MEMORY_MARKERS)


def run_worker(python: str, job: dict, workdir: Path, timeout: float, memory_gb: float = WORKER_MEMORY_GB) -> dict:
    """Run one quantization in a fresh ``python`` process, its address space capped at ``memory_gb`` GB (0:
    no cap; a worker that dies of it is ``out of memory (cap N GB)``); the log goes to a file next to the
    output."""
    stem = f"{job['model_name']}_{job['preset']}_{job['tool']}".replace(":", "+").replace("=", "-")
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
                                  stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=workdir,
                                  preexec_fn=_limit_memory(memory_gb))
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"timed out after {timeout:.0f} s", "log": str(log_file)}
    wall = time.perf_counter() - wall
    result_file = Path(job["result"])
    oom = f"out of memory (cap {memory_gb:g} GB)" if memory_gb and memory_gb > 0 else "out of memory"
    if not result_file.exists():
        tail = log_file.read_text(errors="replace")[-3000:]
        if _out_of_memory(tail):
            return {"status": "error", "error": oom, "returncode": proc.returncode, "log": str(log_file)}
        if proc.returncode == -9:
            return {"status": "error", "error": f"killed (SIGKILL: {oom}?)", "log": str(log_file)}
        return {"status": "error", "error": f"worker exited with {proc.returncode} and no result: ...{tail[-600:]}",
                "log": str(log_file)}
    result = json.loads(result_file.read_text())
    if result["status"] != "ok" and (_out_of_memory(result.get("error", ""))
                                     or _out_of_memory(log_file.read_text(errors="replace")[-3000:])):
        result["error_detail"], result["error"] = result.get("error"), oom
    elif result["status"] == "ok" and _out_of_memory(log_file.read_text(errors="replace")):
        # the tool caught it and went on (Quark falls back from MinMSE to NonOverflow calibration): say so
        cap = f" under the {memory_gb:g} GB cap" if memory_gb and memory_gb > 0 else ""
        result["memory_note"] = f"ran out of memory{cap} and went on, see its log"
    result["process_s"] = wall
    result["log"] = str(log_file)
    if result["status"] == "ok":
        out = Path(job["output"])
        result["size_kb"] = (out.stat().st_size + sum(p.stat().st_size for p in out.parent.glob(out.name + ".data*"))) / 1e3
    return result


def run_quantization(python: str, job: dict, workdir: Path, timeout: float, repeat: int,
                     memory_gb: float = WORKER_MEMORY_GB) -> dict:
    """``repeat`` fresh-process runs of one quantization: the fastest run's times (other load on the
    machine only ever adds time), the largest peak RSS; stops at the first failure."""
    runs = []
    for _ in range(max(1, repeat)):
        res = run_worker(python, job, workdir, timeout, memory_gb)
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
    """Each model (:mod:`benchmarks.models`) saved to ``workdir``, with its calibration samples (an
    .npz, one array per input) and held-out feeds."""
    import numpy as np
    import onnx

    from benchmarks import models as catalogue

    out = {}
    for name in models:
        model, calib, held = catalogue.build(name, samples, holdout)
        path = workdir / f"{name}_fp32.onnx"
        onnx.save(model, str(path))
        npz = workdir / f"{name}_calibration.npz"
        np.savez(npz, **catalogue.feeds_to_arrays(calib))
        out[name] = {"path": path, "calibration": npz, "holdout": held, "label": catalogue.LABELS[name]}
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
             quick: bool, repeats: int = 20) -> dict:
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
    kw = {"warmup": 1, "repeats": 3, "min_seconds": 0.02} if quick else {"repeats": repeats, "warmup": 2}
    fp32_ms, q_ms = [], []
    for _ in range(rounds):
        fp32_ms.append(time_call(lambda: fp32.run(None, feed), **kw)["median_ms"])
        q_ms.append(time_call(lambda: sess.run(None, feed), **kw)["median_ms"])
    # other load on the machine only ever adds time: the fastest round's median is the least disturbed
    fp, q = min(fp32_ms), min(q_ms)
    return {"cosine": float(np.mean(cos)), "top1": float(np.mean(agree)), "latency_ms": q, "fp32_ms": fp,
            "speed": fp / q, "custom_ops": ",".join(domains) or "-",
            "latency_rounds_ms": [round(v, 4) for v in q_ms], "fp32_rounds_ms": [round(v, 4) for v in fp32_ms]}


def row_line(row: dict) -> str:
    """One finished row of the table, for printing as soon as it is measured."""
    head = f"row: {row['model']:14s} {row['preset']:10s} {row['tool']:11s} {row.get('status', '?')}"
    if row.get("status") != "ok":
        return f"{head} {row.get('error') or ''}".rstrip()
    values = [(k, row.get(k)) for k in ("quant_s", "rss_mb", "size_kb", "cosine", "top1", "latency_ms", "speed")]
    pre = f"  pre-process: {row['preprocess']}" if row.get("preprocess") not in (None, "symbolic") else ""
    memory = f"  ({row['memory_note']})" if row.get("memory_note") else ""
    return head + "".join(f"  {k} {v:.4g}" for k, v in values if isinstance(v, (int, float))) + pre + memory


def _verdict(value: float, goal: float | None, higher_is_better: bool = True) -> str:
    """met / NOT met against a goal; a row without a goal (or without a measurement) is neither."""
    import math

    if goal is None or value is None or (isinstance(value, float) and math.isnan(value)):
        return "no goal" if goal is None else "not measured"
    return "met" if (value >= goal if higher_is_better else value <= goal) else "NOT met"


def goals(table, quark_status: str) -> list[str]:
    """The issue's goals, computed from the measured rows; a row a goal does not cover says so."""
    lines = []
    get = {(r.model, r.preset, r.tool): r for r in table.itertuples()}

    def ok(model, preset, tool):
        r = get.get((model, preset, tool))
        return r if r is not None and r.status == "ok" else None

    models = list(dict.fromkeys(table["model"]))
    presets = list(dict.fromkeys(table["preset"]))
    lines.append("1. speed in plain onnxruntime (FP32 latency / latency, alternating rounds): integer presets at "
                 "least onnxruntime.quantization's QDQ model of the same network (vs_ort >= 1); BF16 >= 0.95, "
                 "BFP16 >= 0.7, MX >= 0.5 (Quark's speed beside, when measured)")
    for m in models:
        for p in presets:
            ours, theirs, ort_ = ok(m, p, "ryzen-nb"), ok(m, p, "quark"), ok(m, p, "onnxruntime")
            if ours is None:
                lines.append(f"   {m:18s} {p:10s} not measured (ryzen-nb failed)")
                continue
            quark = f"Quark {theirs.speed:.3f}x" if theirs is not None else "Quark not measured"
            base = preset_spec(p)[0]
            if base in INTEGER_PRESETS:
                vs = ours.speed / ort_.speed if ort_ is not None else float("nan")
                lines.append(f"   {m:18s} {p:10s} {ours.speed:.3f}x FP32, {vs:.2f}x onnxruntime's "
                             f"(goal >= 1)  {_verdict(vs, 1.0 if ort_ is not None else None)}   {quark}")
            else:
                goal = SPEED_GOAL.get(base)
                lines.append(f"   {m:18s} {p:10s} {ours.speed:.3f}x FP32 (goal >= {goal})  {_verdict(ours.speed, goal)}"
                             f"   {quark}")
    lines.append("2. quantize time: ryzen-nb quant_s / Quark quant_s <= 0.5 for every preset "
                 "(in brackets: including each tool's import)")
    for m in models:
        for p in presets:
            ours, theirs = ok(m, p, "ryzen-nb"), ok(m, p, "quark")
            if ours is None or theirs is None:
                why = ("ryzen-nb failed" if ours is None else
                       f"Quark {quark_status}" if quark_status != "ok" else "Quark failed")
                lines.append(f"   {m:18s} {p:10s} not measured ({why})")
                continue
            ratio = ours.quant_s / theirs.quant_s
            with_import = (ours.quant_s + ours.import_s) / (theirs.quant_s + theirs.import_s)
            lines.append(f"   {m:18s} {p:10s} {ours.quant_s:7.2f} s / {theirs.quant_s:7.2f} s = {ratio:5.2f} "
                         f"[{with_import:4.2f}]  {_verdict(ratio, 0.5, higher_is_better=False)}")
    lines.append("3. fidelity: ryzen-nb >= Quark (cosine difference >= -1e-4 and top-1 difference >= 0)")
    for m in models:
        for p in presets:
            ours, theirs = ok(m, p, "ryzen-nb"), ok(m, p, "quark")
            if ours is None or theirs is None:
                lines.append(f"   {m:18s} {p:10s} not measured")
                continue
            dc, dt = ours.cosine - theirs.cosine, ours.top1 - theirs.top1
            lines.append(f"   {m:18s} {p:10s} cosine {ours.cosine:.5f} - {theirs.cosine:.5f} = {dc:+.5f}, "
                         f"top-1 {ours.top1:.2f} - {theirs.top1:.2f} = {dt:+.2f}  "
                         f"{'met' if dc >= -1e-4 and dt >= 0 else 'NOT met'}")
    return lines


def _spelled(spec: str) -> str:
    """A preset spec as the table names it: the preset upper-cased, its extra options as written."""
    name, _, options = spec.strip().partition(":")
    return name.upper() + (":" + options if options else "")


def main(argv: list[str] | None = None):
    from benchmarks import models as catalogue

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=16, help="calibration samples (default 16; 100 with --quick)")
    parser.add_argument("--holdout", type=int, default=8, help="held-out samples for fidelity (default 8; 50 with --quick)")
    parser.add_argument("--presets", help=f"comma-separated presets (default: {','.join(PRESETS)})")
    parser.add_argument("--models", help=f"comma-separated, from {','.join(catalogue.ALL)} (default: "
                                          f"{','.join(catalogue.DEFAULT)}; with --quick {','.join(catalogue.QUICK)})")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated: ryzen-nb,onnxruntime,quark")
    parser.add_argument("--quick", action="store_true",
                        help=f"the tiny models, presets {QUICK_PRESETS}, one short timing round")
    parser.add_argument("--quark-python", default=os.environ.get("RYZEN_NB_QUARK_PYTHON"),
                        help="interpreter where amd-quark is importable (env RYZEN_NB_QUARK_PYTHON)")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0 = default)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating FP32/quantized timing rounds (default 5)")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per model per round (default 20)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="quantization runs per tool and preset, each in a fresh process; the fastest counts "
                             "(default 1)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed per quantization run")
    parser.add_argument("--worker-memory-gb", type=float, default=WORKER_MEMORY_GB,
                        help=f"address-space cap of each quantization subprocess, GB (default {WORKER_MEMORY_GB:g}; "
                             "0 = none); a tool that exceeds it is 'out of memory (cap N GB)'")
    parser.add_argument("--keep", help="keep the models, logs and results in this folder")
    parser.add_argument("--csv", help="also write the results to this CSV file")
    parser.add_argument("--json", help="also write the results (and the goals) to this JSON file")
    args = parser.parse_args(argv)

    import numpy as np
    import onnxruntime as ort
    import pandas as pd

    presets = [_spelled(p) for p in args.presets.split(",") if p.strip()] if args.presets else (
        QUICK_PRESETS if args.quick else PRESETS)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else (
        catalogue.QUICK if args.quick else catalogue.DEFAULT)
    if args.quick:
        args.samples = 100 if args.samples == 16 else args.samples
        args.holdout = 50 if args.holdout == 8 else args.holdout
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    rounds = 1 if args.quick else args.rounds
    repeat = 1 if args.quick else args.repeat
    quark_version, quark_status = quark_probe(args.quark_python) if "quark" in tools else (None, "not run")

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ryzen_nb_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rows = []
    ort_done: dict = {}
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
                        rows.append({**row, "status": "n/a"})
                        print(row_line(rows[-1]), flush=True)
                        continue
                    key = (m, json.dumps(ORT_EQUIVALENT.get(p), sort_keys=True))
                    if tool == "onnxruntime" and key in ort_done:  # the same S8S8 model: quantized once
                        rows.append({**ort_done[key], "preset": p})
                        print(row_line(rows[-1]), flush=True)
                        continue
                    if tool == "quark" and quark_status != "ok":
                        rows.append({**row, "status": quark_status})
                        print(row_line(rows[-1]), flush=True)
                        continue
                    python = args.quark_python if tool == "quark" else sys.executable
                    out = workdir / f"{m}_{p}_{tool}.onnx".replace(":", "+").replace("=", "-")
                    job = {"tool": tool, "preset": p, "model": str(info["path"]), "model_name": m,
                           "calibration": str(info["calibration"]), "output": str(out)}
                    print(f"[{m} {p} {tool}] quantizing ...", end=" ", flush=True, file=sys.stderr)
                    res = run_quantization(python, job, workdir, args.timeout, repeat, args.worker_memory_gb)
                    row.update({k: res.get(k) for k in ("status", "quant_s", "import_s", "calib_s", "rss_mb",
                                                         "rss_import_mb", "size_kb", "version", "error", "log",
                                                         "quant_runs_s", "preprocess", "memory_note")})
                    if res["status"] == "ok":
                        custom = res if res.get("custom_op_library") else None
                        try:
                            row.update(evaluate(out, fp32, info["holdout"], reference, args.threads, rounds, custom,
                                                args.quick, args.repeats))
                        except Exception as exc:  # noqa: BLE001 - e.g. a model onnxruntime cannot load
                            row.update({"status": "eval error", "error": f"{type(exc).__name__}: {exc}"[:300]})
                        print(f"{row.get('quant_s', float('nan')):.2f} s, cosine {row.get('cosine', float('nan')):.5f}, "
                              f"speed {row.get('speed', float('nan')):.3f}x", file=sys.stderr)
                    else:
                        print(f"FAILED: {res.get('error')}", file=sys.stderr)
                    rows.append(row)
                    print(row_line(row), flush=True)  # as it completes: a long run shows its rows as it goes
                    if tool == "onnxruntime" and row.get("status") == "ok":
                        ort_done[key] = row
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
    ort_speed = {(r.model, r.preset): r.speed for r in table.itertuples() if r.tool == "onnxruntime"}
    table["vs_ort"] = [r.speed / ort_speed[(r.model, r.preset)] if (r.model, r.preset) in ort_speed else np.nan
                       for r in table.itertuples()]

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
    shown = ["status", "quant_s", "import_s", "rss_mb", "size_kb", "cosine", "top1", "latency_ms", "speed", "vs_ort",
             "custom_ops"]
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
