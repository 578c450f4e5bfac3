"""Training the linear head of ``minilm_sentiment`` on sentence embeddings, with numpy only.

The head is multinomial logistic regression on the L2-normalised all-MiniLM-L6-v2 embedding:
``logits = W @ embedding + b``. It is trained by full-batch gradient descent (Adam) from zeros, so
there is no randomness at all: the same embeddings always give the same head. The repository
script ``scripts/train_minilm_sentiment.py`` runs it once and ships the result.
"""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy", "train_linear_head"]


def train_linear_head(
    embeddings: np.ndarray,
    labels: np.ndarray,
    num_classes: int = 2,
    l2: float = 1e-4,
    steps: int = 3000,
    learning_rate: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """Weight ``[num_classes, dim]`` and bias ``[num_classes]`` minimising mean cross-entropy + ``l2 * |W|^2``.

    Embeddings are unit vectors with small coordinates, so the weights need to grow large; Adam's
    per-coordinate step size gets there in a few thousand full-batch steps (about a second).
    """
    x = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    onehot = np.eye(num_classes)[y]
    params = [np.zeros((num_classes, x.shape[1])), np.zeros(num_classes)]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        weight, bias = params
        logits = x @ weight.T + bias
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        error = (probabilities - onehot) / len(x)
        grads = [error.T @ x + 2 * l2 * weight, error.sum(axis=0)]
        for p, g, m, v in zip(params, grads, moments, squares, strict=True):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            p -= learning_rate * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + eps)
    return params[0].astype(np.float32), params[1].astype(np.float32)


def accuracy(embeddings: np.ndarray, labels: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> float:
    predictions = (np.asarray(embeddings) @ weight.T + bias).argmax(axis=1)
    return float((predictions == np.asarray(labels)).mean())
