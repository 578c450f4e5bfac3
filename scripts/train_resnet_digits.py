"""Train the zoo's ``resnet_digits`` model and write the digits data it was trained on.

Development tool, not part of the package: it needs torch==2.13.0 and scikit-learn
(``pip install torch==2.13.0 scikit-learn``). Run from the repository root:

    python scripts/train_resnet_digits.py

It writes, under ``ryzen_nb/zoo/data/``:

* ``digits.npz``: scikit-learn's ``load_digits`` (1797 8x8 images, pixel values 0..16) as uint8,
  with the fixed, seeded, stratified split: ``train_index`` (70%), ``calibration_index`` (10%)
  and ``evaluation_index`` (20%), pairwise disjoint;
* ``resnet_digits.onnx``: a small ResNet trained on the train split only (opset 17, input
  ``image`` 1x1x8x8 = pixels / 16, output ``logits`` 1x10), BatchNorms folded, written with onnx's
  helpers from the trained weights;
* ``resnet_digits.json``: the training settings and the measured accuracies.

Everything is seeded; on the same machine and versions a rerun writes the same files.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from sklearn.datasets import load_digits
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ryzen_nb.zoo._onnx import WeightedGraph, fold_batch_norm, tensor_info  # noqa: E402

DATA = ROOT / "ryzen_nb" / "zoo" / "data"
SEED = 0
EPOCHS = 60
BATCH = 64
CHANNELS = (16, 32, 64)
REQUIRED_ACCURACY = 0.98


def split_indices(labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Stratified 70/10/20 split of the sample indices into train, calibration and evaluation."""
    rng = np.random.default_rng(seed)
    parts: dict[str, list[int]] = {"train": [], "calibration": [], "evaluation": []}
    for digit in range(10):
        members = rng.permutation(np.flatnonzero(labels == digit))
        n_eval = round(0.2 * len(members))
        n_cal = round(0.1 * len(members))
        parts["evaluation"] += members[:n_eval].tolist()
        parts["calibration"] += members[n_eval : n_eval + n_cal].tolist()
        parts["train"] += members[n_eval + n_cal :].tolist()
    return {name: np.sort(np.array(idx, dtype=np.int16)) for name, idx in parts.items()}


class Block(nn.Module):
    """A basic ResNet block: two 3x3 conv-BN, a shortcut (1x1 conv-BN when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class DigitsResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        c1, c2, c3 = CHANNELS
        self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, 1, 1, bias=False), nn.BatchNorm2d(c1))
        self.blocks = nn.Sequential(Block(c1, c1, 1), Block(c1, c2, 2), Block(c2, c3, 2))  # 8x8 -> 4x4 -> 2x2
        self.fc = nn.Linear(c3, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.stem(x)))
        return self.fc(x.mean(dim=(2, 3)))


def shift_augment(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Move each image by up to one pixel in each direction (zero fill): handwriting is not centred."""
    padded = nn.functional.pad(images, (1, 1, 1, 1))
    dy, dx = torch.randint(0, 3, (2,), generator=generator).tolist()
    return padded[:, :, dy : dy + 8, dx : dx + 8]


def train(x: torch.Tensor, y: torch.Tensor) -> DigitsResNet:
    generator = torch.Generator().manual_seed(SEED)
    model = DigitsResNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = EPOCHS * ((len(x) + BATCH - 1) // BATCH)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x), generator=generator)
        total = 0.0
        for start in range(0, len(x), BATCH):
            batch = order[start : start + BATCH]
            loss = nn.functional.cross_entropy(model(shift_augment(x[batch], generator)), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(batch)
        if epoch % 10 == 9:
            print(f"epoch {epoch + 1}: train loss {total / len(x):.4f}")
    return model.eval()


def to_onnx(model: DigitsResNet) -> onnx.ModelProto:
    """The trained network written with onnx's helpers, BatchNorms folded into the convolutions."""
    graph = WeightedGraph()

    def conv_bn(x: str, conv: nn.Conv2d, bn: nn.BatchNorm2d, name: str, relu: bool) -> str:
        weight, bias = fold_batch_norm(
            conv.weight.detach().numpy(),
            None,
            bn.weight.detach().numpy(),
            bn.bias.detach().numpy(),
            bn.running_mean.numpy(),
            bn.running_var.numpy(),
            bn.eps,
        )
        k, s, p = conv.kernel_size[0], conv.stride[0], conv.padding[0]
        y = graph.op(
            "Conv", x, graph.weight(f"{name}.weight", weight), graph.weight(f"{name}.bias", bias),
            kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p],
        )  # fmt: skip
        return graph.op("Relu", y) if relu else y

    x = conv_bn("image", model.stem[0], model.stem[1], "stem", relu=True)
    for i, block in enumerate(model.blocks):
        y = conv_bn(x, block.conv1, block.bn1, f"block{i}.conv1", relu=True)
        y = conv_bn(y, block.conv2, block.bn2, f"block{i}.conv2", relu=False)
        shortcut = (
            x
            if block.shortcut is None
            else conv_bn(x, block.shortcut[0], block.shortcut[1], f"block{i}.shortcut", relu=False)
        )
        x = graph.op("Relu", graph.op("Add", y, shortcut))
    x = graph.op("Flatten", graph.op("GlobalAveragePool", x), axis=1)
    graph.builder.op(
        "Gemm", x,
        graph.weight("fc.weight", model.fc.weight.detach().numpy()),
        graph.weight("fc.bias", model.fc.bias.detach().numpy()),
        transB=1, outputs=["logits"],
    )  # fmt: skip
    return graph.to_model(
        [tensor_info("image", [1, 1, 8, 8])],
        [tensor_info("logits", [1, 10])],
        name="resnet_digits",
        doc="Small ResNet trained by ryzen-nb's scripts/train_resnet_digits.py on scikit-learn's digits (train split).",
    )


def main() -> None:
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # one thread: the same summation order every run

    digits = load_digits()
    images = digits.images.astype(np.uint8)  # integers 0..16
    labels = digits.target.astype(np.uint8)
    splits = split_indices(labels, SEED)
    for a in splits:
        for b in splits:
            assert a == b or not set(splits[a]) & set(splits[b]), f"{a} and {b} overlap"
    np.savez_compressed(
        DATA / "digits.npz",
        images=images,
        labels=labels,
        train_index=splits["train"],
        calibration_index=splits["calibration"],
        evaluation_index=splits["evaluation"],
    )

    x = torch.from_numpy(images.astype(np.float32) / 16.0).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    start = time.perf_counter()
    model = train(x[splits["train"]], y[splits["train"]])
    seconds = time.perf_counter() - start

    onnx_model = to_onnx(model)
    onnx.save(onnx_model, DATA / "resnet_digits.onnx")
    session = ort.InferenceSession(str(DATA / "resnet_digits.onnx"), providers=["CPUExecutionProvider"])
    metrics: dict[str, float] = {}
    worst = 0.0
    with torch.no_grad():
        for name, index in splits.items():
            correct = 0
            for i in index:
                logits = session.run(None, {"image": x[i : i + 1].numpy()})[0]
                worst = max(worst, float(np.abs(logits - model(x[i : i + 1]).numpy()).max()))
                correct += int(logits.argmax() == labels[i])
            metrics[f"{name}_accuracy"] = correct / len(index)
    size = (DATA / "resnet_digits.onnx").stat().st_size
    report = {
        "seed": SEED,
        "epochs": EPOCHS,
        "batch": BATCH,
        "channels": CHANNELS,
        "split_sizes": {name: len(index) for name, index in splits.items()},
        **metrics,
        "max_abs_diff_onnx_vs_torch": worst,
        "onnx_bytes": size,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(seconds, 1),
        "torch": torch.__version__,
    }
    (DATA / "resnet_digits.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    if metrics["evaluation_accuracy"] < REQUIRED_ACCURACY:
        raise SystemExit(f"evaluation accuracy {metrics['evaluation_accuracy']:.4f} < {REQUIRED_ACCURACY}")
    if size >= 1 << 20:
        raise SystemExit(f"resnet_digits.onnx is {size} bytes; it must stay under 1 MB")


if __name__ == "__main__":
    main()
