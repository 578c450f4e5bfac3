"""Shared machinery of the block formats (BFP16, MX4/6/9, OCP MX): numpy and ONNX.

Blocks run along one axis. A tensor is viewed as ``[pre, L, post]`` around that axis, ``L`` is
zero-padded to a multiple of the block size and split into ``[pre, L/B, B, post]``; statistics
reduce over the ``B`` dimension. Zero padding never changes a block's maximum, so padded and
unpadded blocks quantize alike. No transposes are needed, which keeps the ONNX lowering cheap.

Powers of two are computed exactly in ONNX without bit casts (onnxruntime runs none):

* fast path: Rump's ``ufp`` ("unit in the first place", Rump 2009, *Ultimately fast accurate
  summation*, Alg. 3.5): ``q = (2**23 + 1) * t; ufp(t) = |(1 - 2**-24) * q - q|`` is exactly
  ``2**floor(log2 t)`` for every float32 t in [0, 2**104] (subnormals included) — three flops;
* exact path for any input: a float log2 estimate, corrected by one comparison each way against a
  gathered table of 2**k (k = -149..128).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from ryzen_nb.formats.base import biased_exponent, ceil_div
from ryzen_nb.graph.builder import GraphBuilder

#: 2**k for k in [POW2_LO, POW2_HI]; 2**128 overflows to +inf, which is what the comparisons need.
POW2_LO, POW2_HI = -149, 128
_POW2_TABLE = np.array([np.ldexp(np.float64(1.0), k) for k in range(POW2_LO, POW2_HI + 1)], dtype=np.float64)
with np.errstate(over="ignore"):
    POW2_TABLE = _POW2_TABLE.astype(np.float32)

MIN_NORMAL = np.float32(2.0**-126)


# -- numpy ----------------------------------------------------------------------------------------------
def to_blocks(
    x: np.ndarray, axis: int, block: int, sub_block: int | None = None
) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """View ``x`` as ``[pre, nblocks, nsub, sub, post]`` (zero padded); return it and the inverse.

    Without sub-blocks ``nsub`` is 1 and ``sub`` the block size, so every block format reduces a
    block over axes (2, 3) and a sub-block over axis 3.
    """
    sub = sub_block or block
    shape = x.shape if x.ndim else (1,)
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    length = shape[axis]
    post = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    nblocks = ceil_div(length, block)
    x3 = x.reshape(pre, length, post)
    if nblocks * block != length:
        x3 = np.concatenate([x3, np.zeros((pre, nblocks * block - length, post), x.dtype)], axis=1)
    blocks = x3.reshape(pre, nblocks, block // sub, sub, post)

    def restore(y: np.ndarray) -> np.ndarray:
        return y.reshape(pre, nblocks * block, post)[:, :length, :].reshape(x.shape)

    return blocks, restore


def block_stats_to_tensor(stats: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Per-block (or per-sub-block) statistics ``[pre, n, 1, 1, post]`` or ``[pre, nb, nsub, 1, post]``
    reshaped to the tensor's shape with ``axis`` replaced by the number of (sub-)blocks."""
    s = list(shape if shape else (1,))
    s[axis] = -1
    return np.ascontiguousarray(stats).reshape(s)


def block_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=(2, 3), keepdims=True)`` of a ``[pre, nblocks, nsub, sub, post]`` view."""
    a = sub_block_max(a)
    return a.max(axis=2, keepdims=True) if a.shape[2] > 1 else a


def sub_block_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=3, keepdims=True)`` of a ``[pre, nblocks, nsub, sub, post]`` view, by halving the
    sub-block axis with elementwise maxima: numpy reduces a short axis element by element, 2-3x
    slower (ResNet50's weights in BFP16: 0.24 s against 0.09 s). The formats give it magnitudes: where
    -0 and +0 tie, the order of comparison decides which comes back."""
    n = a.shape[3]
    while n > 1:
        half = n // 2
        m = np.maximum(a[:, :, :, :half], a[:, :, :, half : 2 * half])
        if n % 2:  # an odd length: the last element joins the first pair
            m[:, :, :, :1] = np.maximum(m[:, :, :, :1], a[:, :, :, 2 * half :])
        a, n = m, half
    return a


def floor_log2(a: np.ndarray) -> np.ndarray:
    """max(floor(log2 a), -127) for finite a >= 0, exactly, from the float32 exponent field."""
    return (biased_exponent(a) - 127).clip(-127, None).astype(np.int32)


# -- ONNX -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """How a block-format function views its input; each layout is one ONNX function variant.

    * ``inner``: blocks run along the last, contiguous dimension (``post == 1``: transformer hidden
      sizes, weights). Broadcasting a per-block value over a run of 8 contiguous elements is slow
      in onnxruntime, so per-block scales are expanded with a K=1 MatMul against ones instead.
    * ``static``: the shape is known when lowering; it becomes a function attribute and
      onnxruntime folds all shape arithmetic into constants at load time.
    * ``padded``: the axis length is not a multiple of the block size (always assumed when the
      shape is dynamic), so the view needs Pad and the result a Slice.

    * ``single``: the tensor may hold a single value (its known dimensions are all 1, or its shape is
      unknown). Quark's BFP and MX operators return a one-value tensor unchanged (amd-quark 0.13,
      ``custom_op_bfp.cc`` and ``custom_op_mx.cc``: ``GetElementCount() == 1``), so this variant checks
      the size at run time first: a ``[-1, 1]`` output passes with a batch of 1 and is quantized with 2.

    A static ``shape`` may start with -1: a batch left free (:func:`~ryzen_nb.formats.block.free_batch_in_calls`).
    The dimensions before the axis only multiply into ``pre``, which Reshape then infers.
    """

    inner: bool
    static: bool
    padded: bool
    single: bool = False

    @classmethod
    def choose(cls, shape: tuple[int | None, ...] | None, rank: int, axis: int, block: int) -> Layout:
        static = shape is not None and all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape)
        known = [] if shape is None else [int(d) for d in shape if isinstance(d, (int, np.integer)) and d >= 0]
        single = shape is None or all(d == 1 for d in known)
        if static:
            post = int(np.prod(shape[axis + 1 :], dtype=np.int64))
            return cls(inner=post == 1, static=True, padded=shape[axis] % block != 0, single=single)
        return cls(inner=axis == rank - 1, static=False, padded=True, single=single)

    @property
    def suffix(self) -> str:
        return ("_inner" if self.inner else "") + ("_padded" if self.static and self.padded else "") + (
            "" if self.static else "_dynamic"
        ) + ("_single" if self.single else "")


class BlockView:
    """ONNX nodes viewing a tensor as blocks and back.

    Outer layout: ``[pre, nblocks, nsub, sub, post]``; inner layout (``post == 1``):
    ``[pre, nblocks, nsub, sub]``. Either way a block reduces over axes (2, 3) and a sub-block over
    axis 3. ``axis`` and ``shape`` are names of 1-D int64 tensors (function attributes);
    ``shape=None`` reads the shape at run time.
    """

    def __init__(
        self, b: GraphBuilder, x: str, axis: str, block: int, sub_block: int | None, layout: Layout, shape: str | None
    ) -> None:
        self.b, self.layout = b, layout
        self.sub = sub_block or block
        self.rank = 4 if layout.inner else 5  #: rank of ``blocks``
        i64 = lambda v: b.const(np.asarray(v, dtype=np.int64), hint="i64")  # noqa: E731
        ax1 = b.op("Add", axis, i64([1]))
        self.shape = shape if shape is not None else b.op("Shape", x)
        # -1 (a free batch, static layouts only) makes the product negative: Reshape infers pre then
        pre = b.op("Max", b.op("ReduceProd", b.op("Slice", self.shape, i64([0]), axis), keepdims=1), i64([-1]))
        self.length = b.op("Slice", self.shape, axis, ax1)
        post = b.op("ReduceProd", b.op("Slice", self.shape, ax1, i64([2**62])), keepdims=1)
        blk = i64([block])
        nblocks = b.op("Div", b.op("Add", self.length, i64([block - 1])), blk)
        padded = b.op("Mul", nblocks, blk)
        split = [nblocks, i64([block // self.sub]), i64([self.sub])]
        view_shape = b.op("Concat", pre, *split, *([] if layout.inner else [post]), axis=0)
        if layout.padded:
            zero = i64([0])
            x3 = b.op("Reshape", x, b.op("Concat", pre, self.length, post, axis=0))
            pads = b.op("Concat", zero, zero, zero, zero, b.op("Sub", padded, self.length), zero, axis=0)
            self.flat_shape = b.op("Concat", pre, padded, post, axis=0)
            self.blocks = b.op("Reshape", b.op("Pad", x3, pads), view_shape)
        else:
            self.blocks = b.op("Reshape", x, view_shape)
        self._i64 = i64

    def expand(self, b: GraphBuilder, stat: str) -> str:
        """A per-(sub-)block statistic ready to combine with the full blocks tensor."""
        if not self.layout.inner:
            return stat  # broadcasting over the long trailing dimension is fast
        return b.op("MatMul", stat, b.const(np.ones((1, self.sub), np.float32), hint="ones"))

    def restore(self, y_blocks: str) -> str:
        b = self.b
        if not self.layout.padded:
            return b.op("Reshape", y_blocks, self.shape)
        y3 = b.op("Reshape", y_blocks, self.flat_shape)
        y3 = b.op("Slice", y3, self._i64([0]), self.length, self._i64([1]))
        return b.op("Reshape", y3, self.shape)


def axes(b: GraphBuilder, *values: int) -> str:
    return b.const(np.array(values, dtype=np.int64), hint="axes")


def exp2(b: GraphBuilder, e: str) -> str:
    """2**e (float32) for an integer-valued float tensor e in [-149, 128]."""
    table = b.const(POW2_TABLE, hint="pow2_table")
    idx = b.op("Cast", b.op("Sub", e, b.const(np.float32(POW2_LO))), to=TensorProto.INT64)
    return b.op("Gather", table, idx, axis=0)


def onnx_floor_log2(b: GraphBuilder, a: str) -> str:
    """max(floor(log2 a), -127) as a float tensor for a >= 0 — exact, like :func:`floor_log2`.

    Inf and NaN count as 0 (callers handle non-finite blocks separately); meant for per-block
    statistics, so its dozen operators run on a fraction of the tensor.
    """
    finite = b.op("Less", a, b.const(np.float32(np.inf)))
    t = b.op("Max", b.op("Where", finite, a, b.const(np.float32(0.0))), b.const(np.float32(2.0**-127)))
    estimate = b.op("Floor", b.op("Mul", b.op("Log", t), b.const(np.float32(1.0 / np.log(2.0)))))
    estimate = b.clip(estimate, -127, 127)
    p = exp2(b, estimate)
    too_low = b.op("Cast", b.op("GreaterOrEqual", t, b.op("Add", p, p)), to=TensorProto.FLOAT)
    too_high = b.op("Cast", b.op("Less", t, p), to=TensorProto.FLOAT)
    return b.clip(b.op("Sub", b.op("Add", estimate, too_low), too_high), -127, 127)


UFP_PHI = np.float32(2.0**23 + 1)
UFP_ONE_MINUS_U = np.float32(1.0 - 2.0**-24)
#: ufp() is exact below 2**104; the fast paths run only when every |x| < 2**64 (see block.py)
UFP_LIMIT = 2.0**104


def ufp(t: np.ndarray) -> np.ndarray:
    """numpy twin of :func:`onnx_ufp` (used by tests to check onnxruntime computes the same)."""
    q = UFP_PHI * t
    return np.abs(UFP_ONE_MINUS_U * q - q)


def onnx_ufp(b: GraphBuilder, t: str) -> str:
    """2**floor(log2 |t|) for |t| <= 2**104 (0 for 0), exactly, in three flops and an Abs."""
    q = b.op("Mul", t, b.const(UFP_PHI))
    return b.op("Abs", b.op("Sub", b.op("Mul", q, b.const(UFP_ONE_MINUS_U)), q))


def onnx_pow2floor(b: GraphBuilder, t: str) -> str:
    """max(2**floor(log2 t), 2**-127) for finite 0 <= t <= 2**104: the fast path's block exponent,
    as a power of two (2**-127 for all-zero or all-subnormal blocks, like the exponent field 0)."""
    return b.op("Max", onnx_ufp(b, t), b.const(np.float32(2.0**-127)))


def nonfinite_blocks(b: GraphBuilder, x_blocks: str) -> str:
    """Bool per block: does it hold an Inf or NaN? (x*0 is NaN exactly for those; sums keep NaN,
    whereas onnxruntime's ReduceMax may drop a NaN.)"""
    probe = b.op("ReduceSum", b.op("Mul", x_blocks, b.const(np.float32(0.0))), axes(b, 2, 3), keepdims=1)
    return b.op("IsNaN", probe)
