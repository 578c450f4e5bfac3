"""ryzen_nb.sweep, the executor under it and the Pareto view: the same results in this process, in
local worker processes and on a real dask.distributed LocalCluster (small models, a few configs)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

import ryzen_nb
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.evaluation import pareto_figure, pareto_front
from ryzen_nb.executor import (
    DaskExecutor,
    ProcessExecutor,
    SerialExecutor,
    busy_cores,
    free_threads,
    get_executor,
    ort_threads,
)
from ryzen_nb.testing import random_images, resnet_cnn

distributed = pytest.importorskip("distributed")


def _square_plus(context, item):  # module level: worker processes import it by name
    return item * item + context


def _threads(context, item):
    from threadpoolctl import threadpool_info

    return ort_threads(), max((p["num_threads"] for p in threadpool_info()), default=1)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as c, distributed.Client(c) as client:
        yield client


@pytest.fixture(scope="module")
def model():
    return resnet_cnn(seed=0, width=8, blocks=(1, 1))


def test_every_executor_gives_the_results_in_order(cluster) -> None:
    items = list(range(11))
    expected = [i * i + 100 for i in items]
    for executor in (SerialExecutor(), ProcessExecutor(2), DaskExecutor(cluster)):
        # a generator: the executor must not need the length or read ahead without bound
        assert executor.map(_square_plus, (i for i in items), context=100) == expected, executor


def test_workers_get_their_share_of_the_threads() -> None:
    ort, blas = ProcessExecutor(2, threads_per_worker=1).map(_threads, [0, 1])[0]
    assert ort == 1 and blas == 1
    assert ort_threads() == 0  # this process is untouched


def test_free_threads_leave_the_cores_another_process_holds() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        busy = busy_cores(0.3)
        threads = free_threads(0.3)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy >= 0.7
    assert threads is not None and threads <= max(1, (os.cpu_count() or 1) - 1)


def test_free_threads_leave_the_threads_alone_under_a_cpu_quota(monkeypatch) -> None:
    """In a container with a CPU quota (Binder) /proc/stat counts the whole host's load: no limit then."""
    import ryzen_nb.executor as executor

    monkeypatch.setattr(executor, "_cpu_quota", lambda: 0.5)
    assert executor._usable_cpus() is None
    assert executor.busy_cores(0.01) == 0.0 and executor.free_threads(0.01) is None
    monkeypatch.setattr(executor, "_cpu_quota", lambda: float(len(os.sched_getaffinity(0))))
    assert executor._usable_cpus() == set(os.sched_getaffinity(0))


def test_get_executor_reads_what_users_pass(cluster) -> None:
    assert isinstance(get_executor(None), SerialExecutor)
    assert isinstance(get_executor(1), SerialExecutor)
    assert get_executor(3).workers == 3
    assert isinstance(get_executor(cluster), DaskExecutor)
    address = get_executor(cluster.scheduler.address)
    try:
        assert isinstance(address, DaskExecutor) and address.workers == 2
    finally:
        address.close()
    for bad in (0, True, "nowhere", 2.5):
        with pytest.raises(ConfigError):
            get_executor(bad)


def test_pareto_front_keeps_exactly_the_undominated_rows() -> None:
    table = pd.DataFrame({
        "metric": [0.90, 0.80, 0.95, 0.80, 0.99, np.nan],
        "npu_latency_ms": [1.0, 1.0, 2.0, 0.5, 3.0, 0.1],
        "size_mb": [1.0, 1.0, 4.0, 1.0, 4.0, 0.1],
        "target": ["STX"] * 6,
    })
    # row 1 is beaten by row 0 (same latency and size, lower metric); row 5 failed (no metric)
    assert pareto_front(table).tolist() == [True, False, True, True, True, False]
    table.loc[2, "target"] = "PHX"  # alone in its group: on its front
    assert pareto_front(table)[2]


def test_sweep_on_a_local_cluster_matches_this_process(model, cluster) -> None:
    calibration, held_out = random_images(8), random_images(6, seed=5)
    labels = [0, 1, 2, 3, 4, 5]
    kwargs = dict(data=held_out, labels=labels, presets=["XINT8", "BF16"], exclude=[[], ["stem.conv_2"]],
                  targets=["PHX", "STX"], progress=False)
    here = ryzen_nb.sweep(model, calibration, executor=1, **kwargs)
    there = ryzen_nb.sweep(model, calibration, executor=cluster, **kwargs)
    assert "DaskExecutor" in there.attrs["executor"]
    # FP32 + 2 presets x 2 exclusions, each on 2 targets
    assert len(here) == 10 and (here.error == "").all(), here.error.tolist()
    columns = ["config", "target", "metric", "cosine", "l2", "npu_share", "npu_latency_ms", "size_mb", "pareto"]
    pd.testing.assert_frame_equal(here[columns], there[columns])
    fp32 = here[here.preset == "FP32"]
    assert (fp32.cosine > 0.99999).all() and set(fp32.target) == {"PHX", "STX"}
    xint8 = here[(here.preset == "XINT8") & (here.excluded == 0)].set_index("target")
    assert xint8.size_mb.iloc[0] < 0.85 * fp32.size_mb.iloc[0]  # int8 weights (names and graph weigh much here)
    assert xint8.loc["PHX", "npu_share"] > 0.9 and fp32.set_index("target").loc["PHX", "npu_share"] == 0
    excluded = here[(here.preset == "XINT8") & (here.excluded == 1)]
    assert (excluded.npu_share.to_numpy() < xint8.npu_share.to_numpy()).all()  # the float stem stays on the CPU
    assert here.groupby("target").pareto.any().all()
    figure = pareto_figure(here)
    assert {trace.name for trace in figure.data if trace.mode == "markers"} == {"PHX", "STX"}


def test_a_configuration_with_nan_or_inf_outputs_gets_no_score() -> None:
    """A8W8 rounds the small inputs of a Log to 0 (-Inf out): its arg-max would "agree" with FP32's on
    every sample and score 1.0. It gets an error and no metric instead, and stays off the Pareto front."""
    from onnx import TensorProto, helper

    from ryzen_nb.graph.builder import make_model

    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Log", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "log_of_zero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    rng = np.random.default_rng(0)
    data = [np.concatenate([[100.0], rng.uniform(0.001, 0.01, 7)]).astype(np.float32)[None] for _ in range(4)]
    table = ryzen_nb.sweep(make_model(graph, opset=17), data, presets=["A8W8", "BF16"], executor=1, progress=False)
    a8w8, bf16 = (table[table.preset == p].iloc[0] for p in ("A8W8", "BF16"))
    assert "NaN or Inf" in a8w8.error and np.isnan(a8w8.metric) and np.isnan(a8w8.agreement)
    assert bf16.error == "" and bf16.metric == 1.0
    assert not pareto_front(table).loc[table.preset == "A8W8"].any()


def test_sweep_rejects_unknown_names_before_starting(model) -> None:
    with pytest.raises(UnknownNameError):
        ryzen_nb.sweep(model, random_images(2), presets=["XINT9"], executor=1, progress=False)
    with pytest.raises(UnknownNameError):
        ryzen_nb.sweep(model, random_images(2), algorithms=["adaroud"], executor=1, progress=False)


def test_sensitivity_analysis_on_a_cluster_and_processes_matches_this_process(model, cluster) -> None:
    def analysis(executor):
        qc = ryzen_nb.get_default_config("A16W8")
        qc.include_auto_mp = True
        qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "AnalysisOnly": True, "DataSize": 4}
        if isinstance(executor, int):  # numbers (and addresses) also go in the config, as any option
            qc.extra_options["AutoMixprecision"]["Executor"] = executor
            return ryzen_nb.quantize(model, None, qc, random_images(4), progress=False).reports["mixed_precision"].table
        summary = ryzen_nb.quantize(model, None, qc, random_images(4), progress=False, executor=executor)
        return summary.reports["mixed_precision"].table

    here = analysis(None)
    assert here.sensitivity_l2.notna().all() and len(here) > 3
    for executor in (cluster, 2):
        there = analysis(executor)
        np.testing.assert_allclose(there.sensitivity_l2, here.sensitivity_l2, rtol=1e-6)
        np.testing.assert_allclose(there.sensitivity_cosine, here.sensitivity_cosine, rtol=1e-6)
