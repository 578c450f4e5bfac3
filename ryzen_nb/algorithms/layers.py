"""The MAC layers the fine-tuning algorithms train, in numpy: forward and weight gradient.

Each layer is written as a matrix product over im2col columns, so the forward pass and the
gradient are two BLAS calls: ``Y = W @ cols + b`` and ``dW = dY @ cols.T``. A convolution's columns
are laid out ``[C*kh*kw, N*Ho*Wo]`` and its output ``[Co, N*Ho*Wo]`` (channels first, then every
position of every item), so that both products are single GEMMs on contiguous operands: the
item-major ``[N, C*k, L]`` columns needed a transposed copy for the gradient's sum over items and
positions, which cost more than the products (a 16-channel 3x3 layer at 32x32: 2.5 ms against
0.85 ms per batch of 4). Targets meet outputs in that layout (:meth:`Layer.output_layout`).
ConvTranspose is the adjoint: ``Y = col2im(W.T @ X)`` and ``dW = X @ im2col(dY).T``. Activations
are float32 (as the model computes them); the forward pass runs in their precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from ryzen_nb.graph.attributes import attributes

__all__ = ["Activation", "Layer", "activation_after", "layer_for"]


@dataclass(frozen=True)
class Activation:
    """A clipping activation after a layer (ReLU, ReLU6, Clip): the reconstruction loss is taken
    after it, as in AdaRound's paper and Quark, so errors it cuts off do not count."""

    lo: float = 0.0
    hi: float = float("inf")

    def __call__(self, y: np.ndarray) -> np.ndarray:
        return np.clip(y, self.lo, self.hi)

    def passes(self, y: np.ndarray) -> np.ndarray:
        """Where the gradient flows through."""
        return (y > self.lo) & (y < self.hi)


def activation_after(node: onnx.NodeProto, readers: list[onnx.NodeProto], constants: dict[str, np.ndarray],
                     graph_outputs: set[str]) -> Activation | None:
    """The ReLU / Clip with constant bounds that alone reads ``node``'s output, if any."""
    if len(readers) != 1 or node.output[0] in graph_outputs:
        return None
    act = readers[0]
    if act.op_type == "Relu":
        return Activation()
    if act.op_type == "Clip":
        bounds = []
        for k in (1, 2):
            name = act.input[k] if len(act.input) > k else ""
            if name and name not in constants:
                return None
            bounds.append(float(np.ravel(constants[name])[0]) if name else None)
        lo, hi = bounds
        return Activation(-np.inf if lo is None else lo, np.inf if hi is None else hi)
    return None


@dataclass
class Layer:
    """One trainable MAC operator: its kind, geometry and weight layout."""

    op: str
    weight_shape: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    #: axis of the stored weight holding output channels (per-channel scales, biases)
    out_axis: int = 0

    # -- shared geometry ------------------------------------------------------------------------------
    def _conv_geometry(self, spatial: tuple[int, int]) -> tuple[list[int], list[int], list[int], list[int]]:
        kernel = list(self.attrs.get("kernel_shape") or self.weight_shape[2:])
        strides = list(self.attrs.get("strides") or [1] * len(kernel))
        pads = list(self.attrs.get("pads") or [0] * (2 * len(kernel)))
        dilations = list(self.attrs.get("dilations") or [1] * len(kernel))
        return kernel, strides, pads, dilations

    @property
    def group(self) -> int:
        return int(self.attrs.get("group", 1))

    # -- forward / backward -----------------------------------------------------------------------------
    @property
    def channel_axis(self) -> int:
        """The output channels' axis in the layout :meth:`forward` computes."""
        return 1 if self.op == "ConvTranspose" else 0 if self.op == "Conv" else -1

    def output_layout(self, y: np.ndarray) -> np.ndarray:
        """A batch of the layer's outputs as the model holds them (``[N, Co, Ho, Wo]`` for a
        convolution) in the layout :meth:`forward` computes (``[Co, N*Ho*Wo]``)."""
        if self.op == "Conv":
            return np.ascontiguousarray(y.reshape(y.shape[0], y.shape[1], -1).transpose(1, 0, 2)).reshape(y.shape[1], -1)
        if self.op == "ConvTranspose":
            return y
        return y.reshape(-1, y.shape[-1])

    def prepare(self, x: np.ndarray) -> Any:
        """What forward and gradient need from an input batch (im2col columns, flattened rows)."""
        if self.op == "Conv":
            if x.ndim == 3:  # a 1-D convolution runs as a 2-D one of height 1 (see layer_for)
                x = x[:, :, None, :]
            kernel, strides, pads, dil = self._conv_geometry(x.shape[2:])
            return im2col(x, kernel, strides, pads, dil)  # [C*k, N*L]
        if self.op == "ConvTranspose":
            return x.reshape(x.shape[0], x.shape[1], -1)  # [N, Ci, H*W]
        return x.reshape(-1, x.shape[-1])  # [M, K]

    def forward(self, prepared: Any, w: np.ndarray, b: np.ndarray | None, out_shape: tuple[int, ...]) -> np.ndarray:
        """The layer's output in :meth:`output_layout`; ``out_shape`` is the batch's output shape as
        the model holds it."""
        w = w.astype(prepared.dtype, copy=False)
        if self.op == "Conv":
            co, g = w.shape[0], self.group
            if g == 1:
                y = w.reshape(co, -1) @ prepared  # [Co, N*L]
            else:  # one product per group
                y = np.matmul(w.reshape(g, co // g, -1), prepared.reshape(g, -1, prepared.shape[1])).reshape(co, -1)
            if b is not None:
                y += b.reshape(-1, 1).astype(y.dtype)
            return y
        if self.op == "ConvTranspose":
            n, ci, hw = prepared.shape
            cols = np.matmul(w.reshape(ci, -1).T, prepared)  # [N, Co*k, H*W]
            y = self._col2im(cols, out_shape)
            if b is not None:
                y = y + b.reshape(1, -1, 1, 1).astype(y.dtype)
            return y
        y = prepared @ self._gemm_weight(w)
        if b is not None:
            y = y + b.astype(y.dtype)
        return y

    def weight_grad(self, prepared: Any, dy: np.ndarray, w_shape: tuple[int, ...]) -> np.ndarray:
        """dLoss/dW from ``dy`` in :meth:`output_layout`."""
        if self.op == "Conv":
            co, g = w_shape[0], self.group
            if g == 1:  # Σ over items and positions: one GEMM
                return (dy @ prepared.T).reshape(w_shape)
            cols = prepared.reshape(g, -1, prepared.shape[1])
            return np.matmul(dy.reshape(g, co // g, -1), cols.transpose(0, 2, 1)).reshape(w_shape)
        if self.op == "ConvTranspose":
            dcols = self._im2col_out(dy)  # [N, Co*k, H*W]
            return np.tensordot(prepared, dcols, axes=([0, 2], [0, 2])).reshape(w_shape)
        dw = prepared.T @ dy
        return dw.T if self.op == "Gemm" and self.attrs.get("transB", 0) else dw

    def bias_grad(self, dy: np.ndarray) -> np.ndarray:
        """dLoss/db from ``dy`` in :meth:`output_layout`."""
        if self.op == "Conv":
            return dy.sum(axis=1)
        if self.op == "ConvTranspose":
            return dy.sum(axis=tuple(i for i in range(dy.ndim) if i != 1))
        return dy.sum(axis=0)

    def _gemm_weight(self, w: np.ndarray) -> np.ndarray:
        return w.T if self.op == "Gemm" and self.attrs.get("transB", 0) else w

    # -- ConvTranspose: the adjoint of a convolution over the output --------------------------------------
    def _col2im(self, cols: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
        kernel, strides, pads, dil = self._conv_geometry(out_shape[2:])
        n, co = out_shape[0], out_shape[1]
        ho, wo = out_shape[2], out_shape[3]
        hp, wp = ho + pads[0] + pads[2], wo + pads[1] + pads[3]
        h_in, w_in = self.attrs["_in_hw"]
        cols = cols.reshape(n, co, kernel[0], kernel[1], h_in, w_in)
        y = np.zeros((n, co, hp + strides[0], wp + strides[1]), cols.dtype)
        for a in range(kernel[0]):
            for c in range(kernel[1]):
                r0, c0 = a * dil[0], c * dil[1]
                y[:, :, r0 : r0 + strides[0] * h_in : strides[0], c0 : c0 + strides[1] * w_in : strides[1]] += cols[:, :, a, c]
        return y[:, :, pads[0] : pads[0] + ho, pads[1] : pads[1] + wo]

    def _im2col_out(self, dy: np.ndarray) -> np.ndarray:
        kernel, strides, pads, dil = self._conv_geometry(dy.shape[2:])
        h_in, w_in = self.attrs["_in_hw"]
        n, co = dy.shape[:2]
        hp, wp = dy.shape[2] + pads[0] + pads[2], dy.shape[3] + pads[1] + pads[3]
        padded = np.zeros((n, co, hp + strides[0] * h_in, wp + strides[1] * w_in), dy.dtype)
        padded[:, :, pads[0] : pads[0] + dy.shape[2], pads[1] : pads[1] + dy.shape[3]] = dy
        out = np.empty((n, co, kernel[0], kernel[1], h_in, w_in), dy.dtype)
        for a in range(kernel[0]):
            for c in range(kernel[1]):
                r0, c0 = a * dil[0], c * dil[1]
                out[:, :, a, c] = padded[:, :, r0 : r0 + strides[0] * h_in : strides[0], c0 : c0 + strides[1] * w_in : strides[1]]
        return out.reshape(n, co * kernel[0] * kernel[1], h_in * w_in)


def im2col(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dil: list[int]) -> np.ndarray:
    """[N, C, H, W] -> [C*kh*kw, N*Ho*Wo]: channels and kernel taps first (as ONNX weights
    [Co, C, kh, kw] flatten), then every position of every item (the layout :class:`Layer` multiplies in)."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3]))).transpose(1, 0, 2, 3)
    ho = (h + pads[0] + pads[2] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - dil[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    cols = np.empty((c, kernel[0], kernel[1], n, ho, wo), x.dtype)
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            r0, c0 = a * dil[0], b * dil[1]
            cols[:, a, b] = xp[:, :, r0 : r0 + strides[0] * (ho - 1) + 1 : strides[0], c0 : c0 + strides[1] * (wo - 1) + 1 : strides[1]]
    return cols.reshape(c * kernel[0] * kernel[1], n * ho * wo)


def layer_for(node: onnx.NodeProto, weight_shape: tuple[int, ...], input_shape: tuple[int, ...] | None) -> Layer | None:
    """The trainable view of a Conv / ConvTranspose / Gemm / MatMul node, or None if unsupported
    (3-D convolutions, grouped or 1-D ConvTranspose, Gemm with transA/alpha/beta)."""
    attrs = attributes(node)
    if node.op_type == "Conv":
        if len(weight_shape) not in (3, 4) or attrs.get("auto_pad", "NOTSET") != "NOTSET":
            return None
        if len(weight_shape) == 3:  # 1-D (audio: Silero VAD's encoder): a 2-D convolution of height 1,
            # whose [Co, C, k] weight flattens as the [Co, C, 1, k] one would
            k = attrs.get("kernel_shape") or [weight_shape[2]]
            p = list(attrs.get("pads") or [0, 0])
            attrs.update(kernel_shape=[1, k[0]], strides=[1, *(attrs.get("strides") or [1])],
                         pads=[0, p[0], 0, p[1]], dilations=[1, *(attrs.get("dilations") or [1])])
        return Layer("Conv", weight_shape, attrs, out_axis=0)
    if node.op_type == "ConvTranspose":
        if len(weight_shape) != 4 or int(attrs.get("group", 1)) != 1 or input_shape is None or len(input_shape) != 4 \
                or attrs.get("auto_pad", "NOTSET") != "NOTSET" or attrs.get("output_shape"):
            return None
        attrs["_in_hw"] = (input_shape[2], input_shape[3])
        return Layer("ConvTranspose", weight_shape, attrs, out_axis=1)
    if node.op_type == "Gemm":
        if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or len(weight_shape) != 2:
            return None
        return Layer("Gemm", weight_shape, attrs, out_axis=0 if attrs.get("transB", 0) else 1)
    if node.op_type == "MatMul" and len(weight_shape) == 2:
        return Layer("MatMul", weight_shape, attrs, out_axis=1)
    return None
