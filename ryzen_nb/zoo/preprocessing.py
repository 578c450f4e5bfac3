"""Turning a user's sample (an image, a sentence) into the feeds a zoo model takes, and back.

Images may be given as a ``PIL.Image``, a path, or a numpy array (H x W x 3 RGB, or H x W grey;
uint8 0..255). Sentences are ``str``. Tokenisation uses the ``tokenizers`` package with a fixed
sequence length (longer texts are truncated, shorter ones padded), because the NPU wants static
shapes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb.errors import RyzenNBError

__all__ = [
    "Prediction",
    "TextEncoder",
    "as_rgb_image",
    "center_crop_resize",
    "softmax",
]


class SampleError(RyzenNBError, TypeError):
    """A sample given to ``ZooModel.preprocess`` is not of a kind the model takes."""


@dataclass(frozen=True)
class Prediction:
    """A classifier's answer: the top class, its probability, and every class's probability."""

    index: int
    label: str
    probability: float
    probabilities: np.ndarray = field(repr=False)
    labels: tuple[str, ...] = field(repr=False, default=())

    @classmethod
    def from_logits(cls, logits: np.ndarray, labels: list[str] | tuple[str, ...]) -> Prediction:
        probabilities = softmax(np.asarray(logits).reshape(-1))
        index = int(np.argmax(probabilities))
        return cls(index, labels[index], float(probabilities[index]), probabilities, tuple(labels))

    def top(self, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most probable classes as (label, probability), most probable first."""
        order = np.argsort(-self.probabilities)[:k]
        return [(self.labels[i], float(self.probabilities[i])) for i in order]


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.asarray(logits, dtype=np.float64) - np.max(logits)
    exp = np.exp(shifted)
    return exp / exp.sum()


def as_rgb_image(sample: Any) -> Any:
    """A ``PIL.Image`` in RGB from a PIL image, a file path or a uint8 array."""
    from PIL import Image

    if isinstance(sample, Image.Image):
        return sample.convert("RGB")
    if isinstance(sample, (str, os.PathLike)):
        path = Path(sample)
        if not path.exists():
            raise SampleError(f"Image file {str(path)!r} does not exist.")
        with Image.open(path) as image:
            return image.convert("RGB")
    if isinstance(sample, np.ndarray):
        array = sample
        if array.dtype != np.uint8:
            if array.min() < 0 or array.max() > 255:
                raise SampleError(
                    f"An image array must hold pixel values 0..255; got values from {array.min()} to {array.max()}."
                )
            array = array.round().astype(np.uint8)
        if array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (3, 4)):
            return Image.fromarray(array).convert("RGB")
        raise SampleError(f"An image array must be H x W or H x W x 3 (RGB); got shape {array.shape}.")
    raise SampleError(
        f"An image sample must be a PIL image, a file path or a numpy array; got {type(sample).__name__}."
    )


def center_crop_resize(image: Any, size: int, crop_fraction: float = 0.875) -> np.ndarray:
    """The central ``crop_fraction`` of the shorter side, resized (bicubic) to ``size`` x ``size``; uint8 HWC.

    0.875 = 224/256 is the usual ImageNet evaluation crop (resize to 256, keep the central 224).
    """
    from PIL import Image

    width, height = image.size
    crop = crop_fraction * min(width, height)
    left, top = (width - crop) / 2, (height - crop) / 2
    resized = image.resize((size, size), Image.Resampling.BICUBIC, box=(left, top, left + crop, top + crop))
    return np.asarray(resized, dtype=np.uint8)


class TextEncoder:
    """A ``tokenizers.Tokenizer`` padding/truncating every text to one fixed length."""

    def __init__(self, tokenizer: Any, sequence_length: int) -> None:
        self.sequence_length = sequence_length
        self.tokenizer = tokenizer
        self.tokenizer.enable_truncation(max_length=sequence_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        self.tokenizer.enable_padding(length=sequence_length, pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")

    @classmethod
    def from_tokenizer_json(cls, path: Path, sequence_length: int) -> TextEncoder:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)), sequence_length)

    @classmethod
    def from_wordpiece_vocab(cls, path: Path, sequence_length: int, lowercase: bool = True) -> TextEncoder:
        """BERT's WordPiece tokenizer built from a ``vocab.txt`` (for checkpoints without tokenizer.json)."""
        from tokenizers.implementations import BertWordPieceTokenizer

        return cls(BertWordPieceTokenizer(str(path), lowercase=lowercase)._tokenizer, sequence_length)

    def __call__(self, text: str) -> dict[str, np.ndarray]:
        """Feeds ``input_ids`` and ``attention_mask``, int64, shape [1, sequence_length]."""
        if not isinstance(text, str):
            raise SampleError(f"A text sample must be a str; got {type(text).__name__}.")
        encoding = self.tokenizer.encode(text)
        return {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
        }

    def batch(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Feeds for several texts at once, shape [len(texts), sequence_length]."""
        encodings = self.tokenizer.encode_batch(list(texts))
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }

    def token_count(self, text: str) -> int:
        """How many tokens ``text`` has before truncation (to see what a fixed length cuts off)."""
        saved = self.tokenizer.truncation
        self.tokenizer.no_truncation()
        try:
            return int(sum(self.tokenizer.encode(text).attention_mask))
        finally:
            self.tokenizer.enable_truncation(**{k: v for k, v in saved.items() if k == "max_length"})
