"""Scale-out: the mixed-precision sensitivity analysis and ``ryzen_nb.sweep`` with 1 and with N
workers (local processes; ``--scheduler`` for a dask.distributed cluster).

The sensitivity analysis quantizes and evaluates the model once per layer unit, independently: the
executor spreads the units over its workers. Both runs are timed in alternating rounds (1 worker,
N workers, 1, N, ...) and the fastest of each counts (other load on the machine only adds time);
the load average is printed before and after. "1 worker" runs in this process with onnxruntime's
default threads; each of N workers gets its share of the cores (ryzen_nb.executor). The analysis is
also timed in this process on one thread: what one thread gains from a second core inside
onnxruntime bounds what N processes can gain over the threaded single worker (N / that gain, with
no start-up cost at all), and the benchmark prints that bound beside the speed-up.

    python -m benchmarks.scaling [--workers 2] [--rounds 2] [--width 32] [--size 64] [--samples 16]

Goal (issue 20): on 2 cores, 2 workers at least 1.8x faster than 1 on a sensitivity analysis.
"""

from __future__ import annotations

import argparse
import os
import time


def _analysis(model, data, samples: int, executor) -> tuple[float, float, object]:
    import ryzen_nb

    qc = ryzen_nb.get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "AnalysisOnly": True, "DataSize": samples}
    t = time.perf_counter()
    summary = ryzen_nb.quantize(model, None, qc, data, progress=False, executor=executor)
    report = summary.reports["mixed_precision"]
    return report.sensitivity_seconds, time.perf_counter() - t, report.table


def _sweep(model, data, executor) -> float:
    import ryzen_nb

    t = time.perf_counter()
    ryzen_nb.sweep(model, data, data=data[:4], presets=["XINT8", "A8W8", "A16W8", "BF16", "BFP16"],
                   targets=["PHX", "STX"], executor=executor, progress=False)
    return time.perf_counter() - t


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--scheduler", help="a dask.distributed scheduler address instead of local processes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--width", type=int, default=32, help="the CNN's base width (default 32)")
    parser.add_argument("--size", type=int, default=64, help="its input size (default 64x64)")
    parser.add_argument("--samples", type=int, default=16, help="samples per evaluation (default 16)")
    parser.add_argument("--no-sweep", action="store_true", help="only the sensitivity analysis")
    args = parser.parse_args(argv)

    import numpy as np

    from ryzen_nb.testing import random_images, resnet_cnn

    model = resnet_cnn(seed=0, width=args.width, image_size=args.size)
    data = random_images(args.samples, size=args.size)
    many = args.scheduler or args.workers
    load = os.getloadavg()
    from ryzen_nb.executor import SerialExecutor

    best = {"analysis 1": np.inf, "analysis N": np.inf, "analysis 1 thread": np.inf, "sweep 1": np.inf,
            "sweep N": np.inf}
    tables = {}
    for r in range(args.rounds):
        seconds, _, tables["1 thread"] = _analysis(model, data, args.samples, SerialExecutor(threads_per_worker=1))
        best["analysis 1 thread"] = min(best["analysis 1 thread"], seconds)
        print(f"round {r + 1}: sensitivity analysis, 1 worker on 1 thread: {seconds:.2f} s", flush=True)
        for key, executor in (("1", None), ("N", many)):
            seconds, total, tables[key] = _analysis(model, data, args.samples, executor)
            best[f"analysis {key}"] = min(best[f"analysis {key}"], seconds)
            print(f"round {r + 1}: sensitivity analysis, {key} worker(s): {seconds:.2f} s (quantize in all "
                  f"{total:.2f} s), load {os.getloadavg()[0]:.2f}", flush=True)
            if not args.no_sweep:
                seconds = _sweep(model, data, 1 if key == "1" else many)
                best[f"sweep {key}"] = min(best[f"sweep {key}"], seconds)
                print(f"round {r + 1}: sweep of 5 presets x 2 targets, {key} worker(s): {seconds:.2f} s", flush=True)
    same = np.allclose(tables["1"].sensitivity_l2, tables["N"].sensitivity_l2, rtol=1e-6)
    print(f"\nscale-out: resnet_cnn(width={args.width}) {args.size}x{args.size}, {args.samples} samples, "
          f"N = {many}; load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")
    speedup = best["analysis 1"] / best["analysis N"]
    threading_gain = best["analysis 1 thread"] / best["analysis 1"]
    workers = many if isinstance(many, int) else None
    print(f"  sensitivity analysis: 1 worker {best['analysis 1']:.2f} s, N workers {best['analysis N']:.2f} s, "
          f"speed-up {speedup:.2f}x (goal >= 1.8x with 2 workers: {'met' if speedup >= 1.8 else 'NOT met'}); "
          f"same sensitivities: {same}")
    print(f"  1 worker on 1 thread {best['analysis 1 thread']:.2f} s: onnxruntime's threads gain "
          f"{threading_gain:.2f}x on their own"
          + (f", so {workers} workers can gain at most {workers / threading_gain:.2f}x over the threaded worker; "
             f"over one thread they gain {best['analysis 1 thread'] / best['analysis N']:.2f}x" if workers else ""))
    if not args.no_sweep:
        print(f"  sweep: 1 worker {best['sweep 1']:.2f} s, N workers {best['sweep N']:.2f} s, "
              f"speed-up {best['sweep 1'] / best['sweep N']:.2f}x (no goal)")
    return best


if __name__ == "__main__":
    main()
