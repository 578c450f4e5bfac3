"""NPU emulation speed: ``NPUSession.run`` time relative to the FP32 model in plain onnxruntime.

For each model of :mod:`benchmarks.models` (by default the sizes users run; ``--quick`` the tiny
ones) and precision: the model is quantized (8 calibration samples; BF16 is the FP32 model itself,
which VAIML compiles as BF16 on Strix), an :class:`ryzen_nb.npu.NPUSession` is built for Strix, and
three things are timed in alternating rounds on the same input — the FP32 model, the QDQ model in
plain onnxruntime (the CPU simulation), and the emulated NPU model. Other load on the machine only
adds time, so the fastest round's median counts, and the load average is printed.

    python -m benchmarks.emulator [--models resnet50,bert_base] [--precisions XINT8,BF16] [--quick] [--threads N]

Goals (issue 20): emulated time at most 1.5x FP32 for XINT8, A8W8 and A16W8, 2x for BF16 with exact
accumulation, 3x for BFP16. ``+fp32`` rows use ``NPUSession(accumulation="fp32")``: float kernels
accumulate in float32 instead of exactly (no goal: shown for comparison).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks._timing import session, time_call

#: "+fp32": the float kernels accumulate in float32 (NPUSession(accumulation="fp32")) instead of exactly
PRECISIONS = ["XINT8", "A8W8", "A16W8", "BF16", "BF16+FP32", "BFP16", "BFP16+FP32"]
GOAL = {"XINT8": 1.5, "A8W8": 1.5, "A16W8": 1.5, "BF16": 2.0, "BFP16": 3.0}  # emulated / FP32


def verdict(ratio: float, goal: float | None) -> str:
    """met / NOT met; a precision without a goal is neither (a missing goal is not a miss)."""
    if goal is None:
        return "no goal"
    if ratio != ratio:  # NaN: not measured
        return "not measured"
    return "met" if ratio <= goal else "NOT met"


def measure(name: str, precisions: list[str], threads: int, rounds: int, repeats: int = 20) -> list[dict]:
    import ryzen_nb
    from benchmarks.models import LABELS, build
    from ryzen_nb.graph.prepare import ort_session
    from ryzen_nb.npu import NPUSession

    model, calibration, held = build(name, 8, 1)
    label, feed = LABELS[name], held[0]
    fp32 = session(model, threads)
    rows = []
    for p in precisions:
        preset, _, accumulation = p.partition("+")
        t0 = time.perf_counter()
        try:
            q = model if preset == "BF16" else ryzen_nb.quantize(model, None, preset, calibration, progress=False).model
        except Exception as exc:  # noqa: BLE001 - one failing precision is a row, not the end of the run
            print(f"[{name} {p}] quantization FAILED: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"model": name, "label": label, "precision": p, "error": f"{type(exc).__name__}: {exc}"[:200],
                         "goal": GOAL.get(p), "emulated_vs_fp32": float("nan")})
            continue
        quant_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            emulated = NPUSession(q, "STX", accumulation=accumulation.lower() or "exact")
        except Exception as exc:  # noqa: BLE001
            print(f"[{name} {p}] emulation FAILED: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"model": name, "label": label, "precision": p, "error": f"{type(exc).__name__}: {exc}"[:200],
                         "goal": GOAL.get(p), "emulated_vs_fp32": float("nan")})
            continue
        setup_s = time.perf_counter() - t0
        # the emulated model with NPUSession's own session options (its quantizers as written, never
        # fused by onnxruntime), with the threads of the others
        emulated_session = ort_session(emulated.emulated, **({"intra_op_num_threads": threads} if threads else {}))
        qdq = session(q, threads)
        best = {"fp32": np.inf, "qdq": np.inf, "npu": np.inf}
        for _ in range(rounds):
            for key, s in (("fp32", fp32), ("qdq", qdq), ("npu", emulated_session)):
                best[key] = min(best[key], time_call(lambda s=s: s.run(None, feed), repeats=repeats)["median_ms"])
        rows.append({
            "model": name, "label": label, "precision": p + (" (FP32 model)" if preset == "BF16" else ""),
            "program": emulated.program.summary(), "kernels": len(emulated.kernels),
            "fp32_ms": best["fp32"], "qdq_ms": best["qdq"], "emulated_ms": best["npu"],
            "emulated_vs_fp32": best["npu"] / best["fp32"], "goal": GOAL.get(p), "quantize_s": quant_s,
            "emulator_setup_s": setup_s, "error": "",
        })
        print(f"[{name} {p}] FP32 {best['fp32']:.3f} ms, QDQ {best['qdq']:.3f} ms, emulated {best['npu']:.3f} ms "
              f"({best['npu'] / best['fp32']:.2f}x FP32)  {verdict(best['npu'] / best['fp32'], GOAL.get(p))}",
              flush=True)
    return rows


def main(argv: list[str] | None = None):
    from benchmarks.models import ALL, DEFAULT, QUICK

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", help=f"comma-separated, from {','.join(ALL)} (default: {','.join(DEFAULT)}; "
                                         f"with --quick {','.join(QUICK)})")
    parser.add_argument("--quick", action="store_true", help="the tiny models")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0 = default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per session per round (default 20)")
    parser.add_argument("--csv", help="also write the table to this CSV file")
    args = parser.parse_args(argv)

    import onnxruntime as ort
    import pandas as pd

    models = [m for m in args.models.split(",") if m] if args.models else (QUICK if args.quick else DEFAULT)
    precisions = [p.strip().upper() for p in args.precisions.split(",") if p.strip()]
    load = os.getloadavg()
    rows = [row for m in models for row in measure(m, precisions, args.threads, args.rounds, args.repeats)]
    table = pd.DataFrame(rows)
    for column in ("fp32_ms", "qdq_ms", "emulated_ms", "kernels", "emulator_setup_s", "error"):
        if column not in table:
            table[column] = float("nan")
    print(f"\nNPU emulation (target STX) vs FP32 in onnxruntime {ort.__version__} (threads={args.threads or 'default'}); "
          f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")
    for _, part in table.groupby("model", sort=False):
        print(f"\n{part.label.iloc[0]}")
        view = part[["precision", "fp32_ms", "qdq_ms", "emulated_ms", "emulated_vs_fp32", "kernels", "emulator_setup_s"]]
        print(view.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    print("\nGoals: emulated time <= 1.5x FP32 for XINT8, A8W8, A16W8; <= 2x for BF16 (exact accumulation); "
          "<= 3x for BFP16")
    for row in table.itertuples():
        why = f"  ({row.error})" if isinstance(row.error, str) and row.error else ""
        print(f"  {row.model:<20} {row.precision:<12} {row.emulated_vs_fp32:6.2f}x  "
              f"{verdict(row.emulated_vs_fp32, row.goal if row.goal == row.goal else None)}{why}")
    if args.csv:
        table.to_csv(args.csv, index=False)
    return table


if __name__ == "__main__":
    main()
