"""The emulator's partition against AMD's own published Vitis AI EP logs.

Each reference below is a line the EP printed for a model AMD publishes, copied with its source.
ryzen-nb cannot load AMD's files (no model hub here), so each is compared on a model of the same
architecture built offline — same operators, same counts before quantization (asserted), quantized
by ryzen-nb with the same preset — and the test checks what does not depend on the exporter's
details: the operators left on the CPU, the number of NPU subgraphs and the NPU share.

Sources (all in github.com/amd/RyzenAI-SW, read at commit 0b65628 unless said):

* ``CNN-examples/quark_quantization/models/resnet{18,34,50}_{XINT8,A8W8,A16W8}.log`` — Ryzen AI 1.6,
  Quark 0.10, a Strix laptop ("AMD64 Family 26 Model 36"), torchvision models at 224x224. The
  "Float Model" table of each log gives the operator counts; "VITIS_EP_CPU 2" are the two boundary
  conversions (the input QuantizeLinear and the output DequantizeLinear).
* ``example/gte-large-en-v1.5-bf16/README.md`` at commit 28859cd (Ryzen AI 1.6): the FP32
  gte-large-en-v1.5 (opset 17) compiled by VAIML as BF16: "CPU 7 VAIML 1178", one NPU subgraph.
* ``CNN-examples/getting_started_resnet/bf16/README.md``: the FP32 CIFAR-10 ResNet of the getting
  started tutorial on the NPU: "VAIML 124", nothing on the CPU.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.graph.prepare import prepare
from ryzen_nb.spec import operators
from ryzen_nb.testing import bert_encoder, random_images, random_tokens, resnet_cnn


@dataclass(frozen=True)
class EPLog:
    model: str
    precision: str  #: the preset; "FP32" for a float model VAIML converts to BF16
    cpu: int  #: "CPU" + "VITIS_EP_CPU" of the log line
    npu: int
    subgraphs: int
    source: str
    line: str  #: the log line, as published


_QUARK = "amd/RyzenAI-SW CNN-examples/quark_quantization/models/{}.log (Ryzen AI 1.6)"
PUBLISHED = [
    EPLog("resnet50", "XINT8", 2, 393, 1, _QUARK.format("resnet50_XINT8"),
          "[Vitis AI EP] No. of Operators :   NPU   393 VITIS_EP_CPU     2"),
    EPLog("resnet50", "A8W8", 2, 392, 1, _QUARK.format("resnet50_A8W8"),
          "[Vitis AI EP] No. of Operators :   NPU   392 VITIS_EP_CPU     2"),
    EPLog("resnet50", "A16W8", 2, 392, 1, _QUARK.format("resnet50_A16W8"),
          "[Vitis AI EP] No. of Operators :   NPU   392 VITIS_EP_CPU     2"),
    EPLog("resnet34", "XINT8", 2, 292, 1, _QUARK.format("resnet34_XINT8"),
          "[Vitis AI EP] No. of Operators :   NPU   292 VITIS_EP_CPU     2"),
    EPLog("resnet18", "XINT8", 2, 164, 1, _QUARK.format("resnet18_XINT8"),
          "[Vitis AI EP] No. of Operators :   NPU   164 VITIS_EP_CPU     2"),
    EPLog("resnet18", "A8W8", 2, 163, 1, _QUARK.format("resnet18_A8W8"),
          "[Vitis AI EP] No. of Operators :   NPU   163 VITIS_EP_CPU     2"),
    EPLog("resnet18", "A16W8", 2, 163, 1, _QUARK.format("resnet18_A16W8"),
          "[Vitis AI EP] No. of Operators :   NPU   163 VITIS_EP_CPU     2"),
]
GTE_BF16 = EPLog("gte-large-en-v1.5", "FP32", 7, 1178, 1,
                 "amd/RyzenAI-SW example/gte-large-en-v1.5-bf16/README.md at 28859cd (Ryzen AI 1.6)",
                 "[Vitis AI EP] No. of Operators :   CPU     7  VAIML  1178")
RESNET_CIFAR_BF16 = EPLog("getting_started_resnet", "FP32", 0, 124, 1,
                          "amd/RyzenAI-SW CNN-examples/getting_started_resnet/bf16/README.md",
                          "[Vitis AI EP] No. of Operators : VAIML   124")

#: the "Float Model" table of each log (torchvision's export, BatchNorm folded)
FLOAT_OPS = {
    "resnet50": {"Conv": 53, "Relu": 49, "MaxPool": 1, "Add": 16, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
    "resnet34": {"Conv": 36, "Relu": 33, "MaxPool": 1, "Add": 16, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
    "resnet18": {"Conv": 20, "Relu": 17, "MaxPool": 1, "Add": 8, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1},
}
#: QuantizeLinear and DequantizeLinear nodes amd-quark 0.13 writes for the architectures below
#: (``ModelQuantizer(Config(global_quant_config=get_default_config(preset)))``, XINT8, A8W8 and A16W8
#: alike; measured by ryzen-nb's developers, 2026-11-28): one quantizer per Conv/Add -> Relu, after the Relu.
#: The published logs count 1 + one per residual block more (Quark 0.10, torchvision's export).
QUARK_QDQ = {"resnet50": (74, 182), "resnet34": (57, 131), "resnet18": (33, 75)}
#: the same architectures (ImageNet stem: 7x7 stride-2 conv and max pool). Partition and counts do not
#: depend on the resolution or width, so they are built small to keep the test quick.
ARCHITECTURES = {"resnet50": dict(blocks=(3, 4, 6, 3), bottleneck=True), "resnet34": dict(blocks=(3, 4, 6, 3)),
                 "resnet18": dict(blocks=(2, 2, 2, 2))}


def _resnet(name: str):
    return resnet_cnn(seed=0, width=8, image_size=64, stem_stride=2, **ARCHITECTURES[name])


def _share(cpu: int, npu_: int) -> float:
    return npu_ / (cpu + npu_)


@pytest.mark.parametrize("log", PUBLISHED, ids=lambda r: f"{r.model}-{r.precision}")
def test_quantized_resnets_partition_as_amds_logs(log: EPLog) -> None:
    model = _resnet(log.model)
    prepared = prepare(model, sample={"input": random_images(1, size=64)}).model
    assert dict(Counter(n.op_type for n in prepared.graph.node)) == FLOAT_OPS[log.model]
    quantized = ryzen_nb.quantize(model, None, log.precision, random_images(4, size=64), progress=False).model
    ops = Counter(n.op_type for n in quantized.graph.node)
    assert (ops["QuantizeLinear"], ops["DequantizeLinear"]) == QUARK_QDQ[log.model]
    program = npu.compile(quantized, "STX")
    assert program.cpu_operators == log.cpu, program.cpu_reasons()
    assert [n.op_type for n in program.cpu_nodes] == ["QuantizeLinear", "DequantizeLinear"]
    assert len(program.subgraphs) == log.subgraphs
    # the published models hold a few more nodes than Quark 0.13's (see QUARK_QDQ): the share on the
    # NPU is the published one to 0.3 percentage points
    assert abs(program.npu_share - _share(log.cpu, log.npu)) < 0.003, (program.summary(), log.line)


def test_fp32_cnn_compiles_whole_on_the_npu_as_the_bf16_tutorial() -> None:
    program = npu.compile(resnet_cnn(seed=0, width=8), "STX")
    assert program.cpu_operators == RESNET_CIFAR_BF16.cpu
    assert len(program.subgraphs) == RESNET_CIFAR_BF16.subgraphs


@pytest.fixture(scope="module")
def encoder():
    """A BERT-class encoder in FP32 (opset 18, LayerNormalization, Softmax, erf GELU), as gte's export."""
    return bert_encoder(seed=0, layers=4, hidden=64, heads=4, seq_len=16)


def test_fp32_encoder_compiles_as_gte_on_vaiml(encoder) -> None:
    ops = Counter(n.op_type for n in encoder.graph.node)
    assert ops["LayerNormalization"] == 9 and ops["Softmax"] == 4 and ops["Erf"] == 4
    program = npu.compile(encoder, "STX")
    assert program.cpu_operators <= GTE_BF16.cpu, program.cpu_reasons()
    assert len(program.subgraphs) == GTE_BF16.subgraphs
    assert program.npu_share >= _share(GTE_BF16.cpu, GTE_BF16.npu)


def test_bf16_encoder_from_ryzen_nb_keeps_layernorm_softmax_and_gelu_on_the_npu(encoder) -> None:
    """ryzen-nb's BF16 conversion raises the opset to 21 and fuses the erf GELU into Gelu: neither may
    send operators back to the CPU (before, LayerNormalization, Softmax and Gelu went to the CPU and
    split the encoder into a dozen NPU subgraphs)."""
    quantized = ryzen_nb.quantize(encoder, None, "BF16", [{"input_ids": random_tokens(1, seq_len=16, seed=3)[0:1]}],
                                  progress=False).model
    ops = {n.op_type for n in quantized.graph.node}
    assert {"LayerNormalization", "Softmax", "Gelu"} <= ops
    program = npu.compile(quantized, "STX")
    assert len(program.subgraphs) == 1, program.cpu_reasons()
    assert program.cpu_operators <= GTE_BF16.cpu
    assert not any(n.op_type in operators.VAIML_FROM_LOGS for n in program.cpu_nodes)


def test_the_log_derived_operators_are_what_makes_the_encoder_agree(encoder, monkeypatch) -> None:
    """Without the operators the published logs add, the table alone leaves the encoder split."""
    monkeypatch.setattr(operators, "VAIML_FROM_LOGS", frozenset())
    program = npu.compile(encoder, "STX")
    assert len(program.subgraphs) > GTE_BF16.subgraphs
    assert program.cpu_operators > GTE_BF16.cpu
    assert np.isclose(program.npu_share + program.cpu_operators / len(program.nodes), 1.0)
