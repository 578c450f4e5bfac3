"""Which operators the Ryzen AI NPU runs, per quantization type: one table for the partitioner,
the compile report and the widgets.

Reproduced mechanically from the official "Supported Operators" page (amd/ryzen-ai-documentation
``docs/ops_support.rst``, https://ryzenai.docs.amd.com/en/latest/ops_support.html, identical in Ryzen AI
1.5–1.8), quirks included (Relu unmarked for BF16, Sigmoid unmarked for XINT8, LayerNormalization only
XINT8, ...): see docs/npu-operators.md#the-supported-operator-table, which describes this table and
does not copy it. Columns: BF16 (VAIML, XDNA2), A16W8, A8W8, XINT8. "Y" = broad coverage.
Attribute-level rules (static shapes, group convolutions, Q/DQ zero points...) live in
:mod:`ryzen_nb.npu.partition` (docs/npu-operators.md#fallback-rules).
"""

from __future__ import annotations

__all__ = ["SUPPORTED", "PRECISION_COLUMNS", "MAC_OPS", "FUSED_ACTIVATIONS", "FUSING_PRODUCERS", "VAIML_FROM_LOGS",
           "is_supported", "supported_ops"]

#: multiply-accumulate operators: a weight, an optional bias added in the accumulator, MACs that
#: dominate compute (quantizer, accuracy algorithms, partitioner and latency model read this one set;
#: docs/npu-hardware.md#mac-rates-per-tile)
MAC_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})

#: activations the compilers fuse into the operator before them: X1 folds them into the convolution
#: (docs/npu-numerics.md#xint8-requantization), and VAIML evidently does for BF16 — ResNet50 and gte run
#: whole on the NPU although the operator table leaves Relu unmarked for BF16 (ryzen-nb's assumption F1,
#: docs/npu-operators.md#fused-activations)
FUSED_ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "PRelu", "HardSigmoid", "HardSwish"})
#: ... and the operators they fuse into
FUSING_PRODUCERS = MAC_OPS | {"Add", "BatchNormalization"}

#: operators AMD's published BF16 (VAIML) compile logs show on the NPU although the table leaves them
#: unmarked for BF16 (ryzen-nb's assumption F3, docs/npu-operators.md#what-the-published-logs-add):
#: gte-large-en-v1.5 in FP32, compiled as BF16, reads "CPU 7 VAIML 1178" in one NPU subgraph
#: (amd/RyzenAI-SW, Ryzen AI 1.6, example/gte-large-en-v1.5-bf16/README.md), yet each of its 24
#: encoder layers holds two LayerNormalization and a Softmax. Gelu: the operator a BF16 conversion at
#: opset 20+ fuses from Div-Erf-Add-Mul-Mul, every one of which the BF16 column marks (the table marks
#: Gelu for the INT8 columns only)
VAIML_FROM_LOGS = frozenset({"LayerNormalization", "Softmax", "Gelu"})

#: the table's columns, in the page's order
PRECISION_COLUMNS = ("BF16", "A16W8", "A8W8", "XINT8")

# op type                column flags in the order of PRECISION_COLUMNS
_TABLE = """
Abs                      Y--Y
Add                      YYYY
And                      Y--Y
ArgMax                   Y--Y
ArgMin                   Y--Y
AveragePool              YYYY
BatchNormalization       YYYY
BitShift                 Y--Y
BitwiseAnd               Y--Y
BitwiseNot               Y--Y
BitwiseOr                Y--Y
BitwiseXor               Y--Y
Cast                     Y--Y
Ceil                     Y--Y
Celu                     ---Y
Clip                     -YYY
Concat                   YYYY
Constant                 YYYY
ConstantOfShape          YYYY
Conv                     YYYY
ConvTranspose            YYY-
Cos                      -YY-
CumSum                   Y--Y
DepthToSpace             YYYY
DequantizeLinear         -YYY
Div                      YYYY
Einsum                   Y---
Elu                      -Y-Y
Equal                    Y--Y
Erf                      Y--Y
Exp                      YY--
Expand                   YYYY
Flatten                  YYYY
Floor                    Y--Y
Gather                   Y---
GatherElements           YY--
Gelu                     -YYY
Gemm                     YYYY
GlobalAveragePool        YYYY
GlobalMaxPool            -YYY
Greater                  Y--Y
GreaterOrEqual           ---Y
GridSample               Y---
GroupConv                Y---
GroupNormalization       -YYY
HardSigmoid              --Y-
HardSwish                --YY
Identity                 YYYY
InstanceNormalization    YYYY
LSTM                     Y---
LayerNormalization       ---Y
LeakyRelu                -YYY
Less                     Y--Y
LessOrEqual              ---Y
Log                      Y--Y
MatMul                   YYYY
Max                      YYYY
MaxPool                  YYYY
Min                      YYYY
Mish                     ---Y
Mod                      Y---
Mul                      YYYY
Neg                      Y--Y
Not                      Y---
Or                       Y--Y
Pad                      YYYY
Pow                      Y--Y
QLinearConv              -YY-
QLinearMatMul            --Y-
QuantizeLinear           -YY-
Range                    ---Y
Reciprocal               YYYY
ReduceMax                YYYY
ReduceMean               Y-YY
ReduceMin                Y-YY
ReduceSum                Y-YY
Relu                     -YYY
Reshape                  YYYY
Resize                   Y-YY
Round                    Y--Y
STFT                     ---Y
ScatterND                Y---
Shape                    YYYY
Shrink                   ---Y
Sigmoid                  YYY-
Sign                     Y--Y
Sin                      YYY-
Size                     Y---
Slice                    YYYY
Softmax                  -YYY
Softsign                 ---Y
Split                    YY--
Sqrt                     YYYY
Squeeze                  YYYY
Sub                      YYYY
Tanh                     YY-Y
ThresholdedRelu          ---Y
Tile                     Y--Y
TopK                     -Y-Y
Transpose                YYYY
Unsqueeze                YYYY
Upsample                 -YYY
Upsample (deprecated)    Y---
Where                    YY-Y
Xor                      Y---
"""


def _parse() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for line in _TABLE.strip().splitlines():
        *name, flags = line.split()
        op = " ".join(name)
        out[op] = frozenset(p for p, f in zip(PRECISION_COLUMNS, flags) if f == "Y")
    return out


#: op type -> precisions with "Y" (BFP16 on XDNA2 follows the BF16 column: VAIML compiles both,
#: docs/npu-operators.md#the-supported-operator-table)
SUPPORTED: dict[str, frozenset[str]] = _parse()


def _column(precision: str) -> str:
    return "BF16" if precision in ("BF16", "BFP16", "FP32") else precision


def is_supported(op_type: str, precision: str) -> bool:
    column = _column(precision)
    return column in SUPPORTED.get(op_type, frozenset()) or (column == "BF16" and op_type in VAIML_FROM_LOGS)


def supported_ops(precision: str) -> list[str]:
    """The operators the table marks for ``precision`` (:func:`is_supported` adds, for BF16, what the
    published logs show: :data:`VAIML_FROM_LOGS`)."""
    col = _column(precision)
    return sorted(op for op, cols in SUPPORTED.items() if col in cols)
