"""AdaRound and AdaQuant: layer-wise reconstruction on calibration data, in numpy.

For each Conv / ConvTranspose / Gemm / MatMul with a constant weight, in graph order, the layer's
quantized output is fitted to its float output, ``min E ||W_q x_q + b - (W x_f + b)||^2``, where
``x_q`` is the layer's input as the quantized network (with the layers before it already tuned)
delivers it, ``x_f`` its float input:

* **AdaRound** (Nagel et al. 2020, "Up or Down? Adaptive Rounding for Post-Training Quantization")
  learns, per weight, whether to round down or up: ``W_q = s (clip(floor(W/s) + h(V) + z) - z)``
  with ``h`` a rectified sigmoid, plus a regulariser ``λ Σ 1 - |2h - 1|^β`` (β annealed from 20 to
  2 after a warm start) that drives ``h`` to 0 or 1. Integer weight formats only.
* **AdaQuant** (Hubara et al. 2021, "Accurate Post Training Quantization With Small Calibration
  Sets") trains the weights themselves (and, optionally, the bias) through the quantizer with a
  straight-through gradient — any weight format, so also BF16, BFP16 and MX, where there is no
  rounding decision to learn.

Both use Adam, a fixed seed, ``batch_size`` samples per step, and the quantizer parameters the
quantizer chose (scales do not move). The result lands in the prepared model's weights — on the
integer grid for AdaRound — so the quantizer then writes exactly the learned codes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ryzen_nb.algorithms._rig import LayerRig, Target
from ryzen_nb.errors import ConfigError
from ryzen_nb.executor import limit_threads
from ryzen_nb.quantization.options import FineTuneOptions
from ryzen_nb.quantization.run import QuantizationRun

__all__ = ["FineTuneReport", "fast_finetune"]

log = logging.getLogger(__name__)

ZETA, GAMMA = 1.1, -0.1  # AdaRound's rectified sigmoid stretch
#: samples per layer when FastFinetune has no DataSize: bounds memory (samples x one layer's tensors)
DEFAULT_DATA_SIZE = 64
_CHUNK = 16  # samples per forward pass when measuring a layer's loss
#: a layer whose reconstruction loss tuning multiplies by more than this keeps its weights, whatever
#: SelectiveUpdate says: Adam moves every weight by about the learning rate per step, and PP-OCRv4's
#: head has a Conv whose weights (its BatchNormalization folded in) are 3e-5 RMS, where AdaQuant's 1e-5
#: is a third of them per step: its loss went 0.0003 -> 1.09, and the network's cosine 0.9996 -> 0.92
REGRESSED = 2.0


@dataclass
class FineTuneReport:
    """Per layer: reconstruction loss before and after, iterations run, whether the update was kept."""

    algorithm: str
    table: Any = field(repr=False)  #: pandas DataFrame
    skipped: list[tuple[str, str]] = field(default_factory=list)  #: (layer, why)
    interrupted: bool = False
    seconds: float = 0.0
    samples: int = 0

    def __repr__(self) -> str:
        kept = int(self.table.kept.sum()) if len(self.table) else 0
        gain = ""
        if len(self.table):
            before, after = self.table.loss_before.sum(), self.table.loss_after.sum()
            gain = f", reconstruction loss {before:.4g} -> {after:.4g}"
        return (f"<FineTuneReport {self.algorithm}: {kept} of {len(self.table)} layer(s) updated{gain}, "
                f"{self.samples} samples, {self.seconds:.1f} s" + (", INTERRUPTED" if self.interrupted else "") + ">")


class _Adam:
    def __init__(self, lr: float) -> None:
        self.lr, self.t = lr, 0
        self.m: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        for k, g in grads.items():
            m = self.m.setdefault(k, np.zeros_like(g))
            v = self.v.setdefault(k, np.zeros_like(g))
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            params[k] -= self.lr * (m / (1 - b1**self.t)) / (np.sqrt(v / (1 - b2**self.t)) + eps)


def _reconstruction(y: np.ndarray, target: np.ndarray, axis: int) -> tuple[float, np.ndarray]:
    """Squared error summed over channels, averaged over the rest (AdaRound's loss) and its gradient."""
    diff = y - target
    count = diff.size / diff.shape[axis]
    return float((diff * diff).sum() / count), 2.0 * diff / count


def fast_finetune(run: QuantizationRun, options: FineTuneOptions) -> FineTuneReport:
    """Run AdaRound or AdaQuant on ``run``.

    One thread for BLAS and for the onnxruntime sessions that collect each layer's data: the two
    alternate, layer after layer, and each pool busy-waits after its work. On cores other processes
    share (a Jupyter kernel, a second job) OpenBLAS's spinning threads took a CNN's AdaRound from
    11 s to 40 s, and to 700 s on a machine loaded seven times over (108 s with one thread); the
    matrices of one layer's batch are too small for a second thread to gain much on a quiet machine.
    """
    with limit_threads(1):
        return _fast_finetune(run, options)


def _fast_finetune(run: QuantizationRun, options: FineTuneOptions) -> FineTuneReport:
    import pandas as pd
    from tqdm.auto import tqdm

    start = time.perf_counter()
    samples = run.samples(options.data_size or DEFAULT_DATA_SIZE)
    rig = LayerRig(run, options.target_op_types, samples, float_inputs=options.drop_ratio < 1.0)
    if options.algorithm == "adaround":
        floats = [(t.name, t.wq.fmt.name) for t in rig.targets if not t.wq.integer]
        if floats:
            raise ConfigError(
                f"AdaRound learns integer rounding, but {len(floats)} layer(s) have {floats[0][1]} weights "
                f"(e.g. {floats[0][0]!r}): use FastFinetune OptimAlgorithm 'adaquant' for BF16, BFP16 and MX "
                "weights (as Quark requires)."
            )
    rng = np.random.default_rng(options.fixed_seed)
    rows: list[dict[str, Any]] = []
    interrupted = False
    bar = tqdm(rig.targets, desc=options.algorithm, unit="layer", disable=not run.progress, leave=False)
    try:
        for t in bar:
            t0 = time.perf_counter()
            row = _tune_layer(rig, t, options, rng)
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            bar.set_postfix(layer=t.name[-24:], loss=f"{row['loss_after']:.3g}")
    except KeyboardInterrupt:
        interrupted = True
        log.warning("fine-tuning interrupted after %d of %d layers; the layers done so far are kept", len(rows),
                    len(rig.targets))
    finally:
        bar.close()
    regressed = [r for r in rows if r["regressed"] is not None]
    if regressed:
        worst = max(regressed, key=lambda r: r["regressed"] / max(r["loss_before"], 1e-30))
        message = (f"{options.algorithm}: {len(regressed)} layer(s) came out worse by more than {REGRESSED:g}x and keep "
                   f"their weights (Quark would keep the update without SelectiveUpdate), e.g. {worst['layer']!r}: loss "
                   f"{worst['loss_before']:.3g} -> {worst['regressed']:.3g}, weights {worst['weight_rms']:.2g} RMS against "
                   f"a learning rate of {worst['lr']:.2g}. A smaller LearningRate (or LRAdjust) suits such layers.")
        log.warning("%s", message)
        run.notes.append(message)
    table = pd.DataFrame(rows, columns=["layer", "op", "iterations", "loss_before", "loss_after", "kept", "seconds"])
    report = FineTuneReport(options.algorithm, table, rig.skipped, interrupted, time.perf_counter() - start, len(samples))
    skipped = (f"; {len(rig.skipped)} layer(s) not tuned ({rig.skipped[0][0]!r}: {rig.skipped[0][1]})"
               if rig.skipped else "")
    run.notes.append(f"{options.algorithm}: {int(table.kept.sum()) if len(table) else 0} of {len(table)} layer(s) "
                     f"updated on {len(samples)} samples in {report.seconds:.1f} s{skipped}")
    return report


class _Objective:
    """One layer's reconstruction problem on its collected data: the quantized network's input
    ``x_q`` (mixed with the float input ``x_f`` for QDrop), and the float output as the target,
    after the layer's ReLU/Clip when it has one."""

    def __init__(self, rig: LayerRig, t: Target, o: FineTuneOptions, rng: np.random.Generator) -> None:
        data = list(rig.activations(t, float_input=o.drop_ratio < 1.0))
        self.x_q = np.concatenate([d["x_q"] for d in data])
        # a batch draws items of the model's batch (images, token sequences), not single rows of a
        # Gemm's input: a MatMul on [batch, tokens, K] that preparation turned into a Gemm reads
        # tokens rows per sequence, and a batch of 4 rows saw 4 tokens instead of 4 sequences
        self.rows = t.rows_per_item if len(self.x_q) % t.rows_per_item == 0 else 1
        self.x_f = np.concatenate([d["x_f"] for d in data]) if o.drop_ratio < 1.0 else None
        y_f = np.concatenate([d["y_f"] for d in data])
        del data
        self.target = t.activation(y_f) if t.activation else y_f
        self.t, self.o, self.rng = t, o, rng
        self.iterations = 0  #: run so far (early stop may end before NumIterations)

    def batch(self) -> tuple[Any, _Target]:
        """A random batch: (prepared input, target)."""
        o = self.o
        count = o.batch_size * o.num_batches
        items = len(self.x_q) // self.rows
        idx = self.rng.choice(items, size=count, replace=count > items)
        if self.rows > 1:  # the rows of the items drawn
            idx = (idx[:, None] * self.rows + np.arange(self.rows)).ravel()
        x = self.x_q[idx]
        if self.x_f is not None:  # QDrop: a share of the elements from the float network
            x = np.where(self.rng.random(x.shape) < o.drop_ratio, x, self.x_f[idx])
        return self.t.layer.prepare(x), self._target(self.target[idx])

    def _target(self, y: np.ndarray) -> _Target:
        return _Target(self.t.layer.output_layout(y), y.shape)

    def loss(self, prep: Any, w_q: np.ndarray, b_q: np.ndarray | None, target: _Target) -> tuple[float, np.ndarray]:
        """Reconstruction loss and its gradient with respect to the layer's output before the activation
        (both in the layer's output layout)."""
        act, layer = self.t.activation, self.t.layer
        pre = layer.forward(prep, w_q, b_q, target.shape)
        loss, dy = _reconstruction(act(pre) if act else pre, target.values, layer.channel_axis)
        return loss, (dy * act.passes(pre) if act else dy)

    def loss_over_all(self, w_q: np.ndarray, b_q: np.ndarray | None) -> float:
        total = 0.0
        for i in range(0, len(self.x_q), _CHUNK):
            y = self.target[i : i + _CHUNK]
            total += self.loss(self.t.layer.prepare(self.x_q[i : i + _CHUNK]), w_q, b_q, self._target(y))[0] * len(y)
        return total / len(self.x_q)


@dataclass
class _Target:
    """A batch's target in the layer's output layout, and its shape as the model holds it."""

    values: np.ndarray
    shape: tuple[int, ...]


def _tune_layer(rig: LayerRig, t: Target, o: FineTuneOptions, rng: np.random.Generator) -> dict[str, Any]:
    objective = _Objective(rig, t, o, rng)
    w0, b0 = rig.weight(t), rig.bias(t)
    bias_q = (t.bq(b0) if t.bq else b0) if b0 is not None else None
    before = objective.loss_over_all(t.wq(w0), bias_q)
    # LRAdjust (threshold, rate): a layer whose loss starts above the threshold trains at that rate
    lr = float(o.lr_adjust[1]) if o.lr_adjust and before > float(o.lr_adjust[0]) else o.lr
    if o.algorithm == "adaround":
        w_new, b_new = _adaround(objective, w0, bias_q, lr), None
    else:
        w_new, b_new = _adaquant(objective, w0, b0, bias_q, lr)
    ran = objective.iterations
    after = objective.loss_over_all(t.wq(w_new), ((t.bq(b_new) if t.bq else b_new) if b_new is not None else bias_q))
    # Quark keeps every update unless SelectiveUpdate; an update that multiplies the loss is not a
    # trade-off but a broken layer, and is never kept (see REGRESSED)
    regressed = bool(after > REGRESSED * before)
    keep = (after < before if o.selective_update else True) and not regressed
    if keep:
        rig.set_weight(t, w_new)
        if b_new is not None:
            rig.set_bias(t, b_new)
    log.debug("%s %s: %d iterations, loss %.4g -> %.4g%s", o.algorithm, t.name, ran, before, after,
              "" if keep else " (not kept)")
    return {"layer": t.name, "op": t.layer.op, "iterations": ran, "loss_before": before,
            "loss_after": after if keep else before, "kept": keep, "regressed": after if regressed else None,
            "weight_rms": float(np.sqrt(np.mean(np.square(w0, dtype=np.float64)))), "lr": lr}


def _adaround(obj: _Objective, w0: np.ndarray, bias_q: np.ndarray | None, lr: float) -> np.ndarray:
    """Learn, per weight, rounding down or up; returns the weights on the integer grid. The
    rounding variables live in float32: they only need to land on the right side of 0.5."""
    t, o = obj.t, obj.o
    s, zp, qmin, qmax = t.wq.scale, t.wq.zp, t.wq.qmin, t.wq.qmax
    base = np.floor(w0 / s)
    rest = np.clip(w0 / s - base, 1e-6, 1 - 1e-6)
    # h(v) = rest: start at the float weights
    params = {"v": (-np.log((ZETA - GAMMA) / (rest - GAMMA) - 1.0)).astype(np.float32)}
    lo, hi = (qmin - zp - base).astype(np.float32), (qmax - zp - base).astype(np.float32)  # the grid's ends, in h
    base_w = (s * base).astype(np.float32)
    s32 = np.asarray(s, np.float32)
    iters = o.num_iterations
    warm = int(o.warm_start * iters)
    beta_hi, beta_lo = o.beta_range
    adam, stopper = _Adam(lr), _EarlyStop(o)

    def h_of(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sig = 1.0 / (1.0 + np.exp(-v))
        raw = sig * np.float32(ZETA - GAMMA) + np.float32(GAMMA)
        return np.clip(raw, 0.0, 1.0), sig, raw

    for it in range(iters):
        prep, y = obj.batch()
        h, sig, raw = h_of(params["v"])
        w_q = base_w + s32 * np.clip(h, lo, hi)  # s * (clip(base + h + zp) - zp)
        loss, dy = obj.loss(prep, w_q, bias_q, y)
        dh = t.layer.weight_grad(prep, dy, w0.shape) * s32 * ((h >= lo) & (h <= hi))
        if it >= warm:  # the regulariser drives h to 0 or 1, its exponent decayed from beta_hi to beta_lo (cosine)
            beta = beta_lo + 0.5 * (beta_hi - beta_lo) * (1.0 + np.cos(np.pi * (it - warm) / max(iters - warm, 1)))
            d = 2.0 * h - 1.0
            a = np.abs(d)
            a_b1 = a ** np.float32(beta - 1.0)
            loss += o.reg_param * float((1.0 - a_b1 * a).sum())
            dh = dh - np.float32(2.0 * o.reg_param * beta) * a_b1 * np.sign(d)
        adam.step(params, {"v": dh * np.float32(ZETA - GAMMA) * sig * (1.0 - sig) * ((raw > 0.0) & (raw < 1.0))})
        obj.iterations = it + 1
        if stopper(loss) and it >= warm:
            break
    h, _, _ = h_of(params["v"])
    return s * (np.clip(base + (h >= 0.5) + zp, qmin, qmax) - zp)  # on the grid: the emitted codes


def _adaquant(obj: _Objective, w0: np.ndarray, b0: np.ndarray | None, bias_q: np.ndarray | None,
              lr: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Train the weights (and, with UpdateBias, the bias) through the quantizer, straight-through."""
    t, o = obj.t, obj.o
    params = {"w": w0.copy()}
    train_bias = o.update_bias and b0 is not None
    if train_bias:
        params["b"] = b0.copy()
    adam, stopper = _Adam(lr), _EarlyStop(o)
    for it in range(o.num_iterations):
        prep, y = obj.batch()
        b_q = (t.bq(params["b"]) if t.bq else params["b"]) if train_bias else bias_q
        loss, dy = obj.loss(prep, t.wq(params["w"]), b_q, y)
        grads = {"w": t.layer.weight_grad(prep, dy, w0.shape) * t.wq.in_range(params["w"])}
        if train_bias:
            grads["b"] = t.layer.bias_grad(dy)
        adam.step(params, grads)
        obj.iterations = it + 1
        if stopper(loss):
            break
    return params["w"], params.get("b")


class _EarlyStop:
    """With EarlyStop: True once the loss has not improved for a tenth of the iterations (at least 10)."""

    def __init__(self, o: FineTuneOptions) -> None:
        self.enabled = o.early_stop
        self.patience = max(10, o.num_iterations // 10)
        self.best, self.since = np.inf, 0

    def __call__(self, loss: float) -> bool:
        if loss < self.best * (1 - 1e-4):
            self.best, self.since = loss, 0
        else:
            self.since += 1
        return bool(self.enabled and self.since >= self.patience)


