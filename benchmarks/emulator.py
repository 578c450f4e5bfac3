"""NPU emulation speed: ``NPUSession.run`` time relative to the FP32 model in plain onnxruntime.

For each model and precision: the model is quantized (16 calibration samples; BF16 is the FP32
model itself, which VAIML compiles as BF16 on Strix), an :class:`ryzen_nb.npu.NPUSession` is built
for Strix, and three things are timed in alternating rounds on the same input — the FP32 model,
the QDQ model in plain onnxruntime (the CPU simulation), and the emulated NPU model. Other load on
the machine only adds time, so the fastest round's median counts.

    python -m benchmarks.emulator [--models resnet,bert] [--precisions XINT8,BF16] [--full] [--threads N]

Goal (issue 5): emulation within 2x the FP32 time for INT8 and BF16. ``--full`` adds the
full-size models (ResNet18 at 224x224, a BERT-base-width encoder at 128 tokens). ``+fp32`` rows
use ``NPUSession(accumulation="fp32")``: float kernels accumulate in float32 instead of exactly.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks._timing import session, time_call

#: "+fp32": the float kernels accumulate in float32 (NPUSession(accumulation="fp32")) instead of exactly
PRECISIONS = ["XINT8", "A8W8", "A16W8", "BF16", "BF16+FP32", "BFP16", "BFP16+FP32"]
GOAL = {"XINT8": 2.0, "A8W8": 2.0, "BF16": 2.0, "BF16+FP32": 2.0}  # emulated / FP32 (INT8 and BF16)


def build(name: str):
    from ryzen_nb.testing import bert_encoder, random_images, random_tokens, resnet_cnn

    if name == "resnet":
        return "resnet_cnn(seed=0) 1x3x32x32", resnet_cnn(seed=0), "input", random_images(17)
    if name == "bert":
        return "bert_encoder(seed=0) 4 layers", bert_encoder(seed=0), "input_ids", random_tokens(17)
    if name == "resnet224":
        model = resnet_cnn(seed=0, width=64, image_size=224, stem_stride=2, num_classes=1000)
        return "ResNet18 1x3x224x224", model, "input", random_images(17, size=224)
    if name == "bert768":
        model = bert_encoder(seed=0, hidden=768, heads=12, seq_len=128)
        return "BERT 768 hidden, 4 layers, 128 tokens", model, "input_ids", random_tokens(17, seq_len=128)
    raise SystemExit(f"unknown model {name!r}: resnet, bert, resnet224, bert768")


def measure(name: str, precisions: list[str], threads: int, rounds: int) -> list[dict]:
    import ryzen_nb
    from ryzen_nb.npu import NPUSession

    label, model, input_name, samples = build(name)
    feed = {input_name: samples[-1:]}
    fp32 = session(model, threads)
    rows = []
    for p in precisions:
        preset, _, accumulation = p.partition("+")
        t0 = time.perf_counter()
        q = model if preset == "BF16" else ryzen_nb.quantize(model, None, preset, samples[:16], progress=False).model
        quant_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        emulated = NPUSession(q, "STX", accumulation=accumulation.lower() or "exact")
        setup_s = time.perf_counter() - t0
        emulated_session = session(emulated.emulated, threads)  # same options as the others
        qdq = session(q, threads)
        best = {"fp32": np.inf, "qdq": np.inf, "npu": np.inf}
        for _ in range(rounds):
            for key, s in (("fp32", fp32), ("qdq", qdq), ("npu", emulated_session)):
                best[key] = min(best[key], time_call(lambda s=s: s.run(None, feed), repeats=20)["median_ms"])
        rows.append({
            "model": name, "label": label, "precision": p + (" (FP32 model)" if preset == "BF16" else ""),
            "program": emulated.program.summary(), "kernels": len(emulated.kernels),
            "fp32_ms": best["fp32"], "qdq_ms": best["qdq"], "emulated_ms": best["npu"],
            "emulated_vs_fp32": best["npu"] / best["fp32"], "goal": GOAL.get(p), "quantize_s": quant_s,
            "emulator_setup_s": setup_s,
        })
        goal = GOAL.get(p)
        verdict = "" if goal is None else ("  met" if best["npu"] / best["fp32"] <= goal else "  NOT met")
        print(f"[{name} {p}] FP32 {best['fp32']:.3f} ms, QDQ {best['qdq']:.3f} ms, emulated {best['npu']:.3f} ms "
              f"({best['npu'] / best['fp32']:.2f}x FP32){verdict}", flush=True)
    return rows


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet,bert")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--full", action="store_true", help="also the full-size models (resnet224, bert768)")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0 = default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    import pandas as pd

    models = [m for m in args.models.split(",") if m] + (["resnet224", "bert768"] if args.full else [])
    precisions = [p.strip().upper() for p in args.precisions.split(",") if p.strip()]
    load = os.getloadavg()[0]
    rows = [row for m in models for row in measure(m, precisions, args.threads, args.rounds)]
    table = pd.DataFrame(rows)
    print(f"\nNPU emulation (target STX) vs FP32 in onnxruntime {ort.__version__} (threads={args.threads or 'default'}); "
          f"load average {load:.2f} before on {os.cpu_count()} CPUs")
    for _, part in table.groupby("model", sort=False):
        print(f"\n{part.label.iloc[0]}")
        view = part[["precision", "fp32_ms", "qdq_ms", "emulated_ms", "emulated_vs_fp32", "kernels", "emulator_setup_s"]]
        print(view.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nGoal: emulated time <= 2x FP32 for INT8 and BF16")
    for row in table.itertuples():
        if row.goal:
            status = "met" if row.emulated_vs_fp32 <= row.goal else "NOT met"
            print(f"  {row.model:<10} {row.precision:<20} {row.emulated_vs_fp32:5.2f}x  {status}")
    if args.csv:
        table.to_csv(args.csv, index=False)
    return table


if __name__ == "__main__":
    main()
