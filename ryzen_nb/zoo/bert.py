"""BERT-family encoders written as ONNX from a safetensors checkpoint (no torch, no transformers).

Covered: checkpoints whose ``config.json`` says ``model_type`` ``"bert"`` (``BertModel``, with
absolute position embeddings and GELU) or ``"distilbert"``. Among them: all-MiniLM-L6-v2,
thenlper/gte-small (and gte-base/large), BAAI/bge-*-en-v1.5, bert-base-uncased,
distilbert-base-uncased-finetuned-sst-2-english.

Not covered (refused with a ModelError that says so): RoBERTa/XLM-R (position ids offset by the
padding index), ALBERT (factorised, shared layers), DeBERTa (disentangled relative attention),
MPNet (all-mpnet-base-v2: relative position bias), ModernBERT, nomic-bert and jina-bert (rotary /
ALiBi positions) and Alibaba-NLP/gte-*-en-v1.5 (its own "NewModel" with rotary positions and
gated MLPs, shipped as remote code).

The graph has static shapes ``[batch_size, sequence_length]`` (batch 1 in the zoo): inputs
``input_ids`` and ``attention_mask`` (int64). Single sentences have all-zero token types, so row 0 of the token-type embedding is
folded into the position embeddings instead of being a third input.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import onnx
from onnx import TensorProto

from ryzen_nb.errors import ModelError
from ryzen_nb.zoo._onnx import WeightedGraph, tensor_info

__all__ = ["BertConfig", "build_bert", "load_safetensors"]

#: added to the attention scores of padding positions; exp(-10000) is exactly 0 in float32
_MASK_VALUE = -10000.0

Pooling = Literal["mean", "cls"]


@dataclass(frozen=True)
class BertConfig:
    """The few ``config.json`` fields the builder needs, normalised across BERT and DistilBERT."""

    model_type: str
    hidden_size: int
    num_heads: int
    num_layers: int
    intermediate_size: int
    layer_norm_eps: float
    activation: str
    max_positions: int
    num_labels: int

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "config.json") -> BertConfig:
        cfg = json.loads(text)
        model_type = cfg.get("model_type", "?")
        if model_type == "bert":
            if cfg.get("position_embedding_type", "absolute") != "absolute":
                raise ModelError(
                    f"{source}: position_embedding_type {cfg['position_embedding_type']!r} is not covered; "
                    "ryzen-nb's BERT builder writes absolute position embeddings only."
                )
            config = cls(
                model_type="bert",
                hidden_size=cfg["hidden_size"],
                num_heads=cfg["num_attention_heads"],
                num_layers=cfg["num_hidden_layers"],
                intermediate_size=cfg["intermediate_size"],
                layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
                activation=cfg.get("hidden_act", "gelu"),
                max_positions=cfg.get("max_position_embeddings", 512),
                num_labels=len(cfg.get("id2label", {})) or 2,
            )
        elif model_type == "distilbert":
            config = cls(
                model_type="distilbert",
                hidden_size=cfg["dim"],
                num_heads=cfg["n_heads"],
                num_layers=cfg["n_layers"],
                intermediate_size=cfg["hidden_dim"],
                layer_norm_eps=1e-12,  # hard-coded in transformers' DistilBERT
                activation=cfg.get("activation", "gelu"),
                max_positions=cfg.get("max_position_embeddings", 512),
                num_labels=len(cfg.get("id2label", {})) or 2,
            )
        else:
            raise ModelError(
                f"{source}: model_type {model_type!r} is not covered by ryzen-nb's BERT builder, which writes "
                "'bert' and 'distilbert' checkpoints (RoBERTa, ALBERT, DeBERTa, MPNet, ModernBERT and "
                "gte-*-en-v1.5 are not)."
            )
        if config.activation not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
            raise ModelError(f"{source}: activation {config.activation!r} is not covered (gelu or gelu_new are).")
        if config.hidden_size % config.num_heads:
            raise ModelError(
                f"{source}: hidden size {config.hidden_size} is not divisible by {config.num_heads} heads."
            )
        return config


def load_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file as float32 numpy arrays (fp16/bf16 checkpoints are widened)."""
    from safetensors.numpy import load

    try:
        tensors = load(data)
    except Exception as exc:  # safetensors raises its own SafetensorError
        if b'"dtype":"BF16"' in data[:100_000]:
            tensors = _load_bf16(data)
        else:
            raise ModelError(f"Could not read the safetensors weights ({exc}).") from exc
    return {k: v.astype(np.float32, copy=False) if v.dtype.kind == "f" else v for k, v in tensors.items()}


def _load_bf16(data: bytes) -> dict[str, np.ndarray]:
    """numpy has no bfloat16, so safetensors' numpy API refuses BF16; ml_dtypes has one."""
    import ml_dtypes

    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    dtypes = {"BF16": ml_dtypes.bfloat16, "F16": np.float16, "F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(dtypes[info["dtype"]])
        out[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"]).astype(np.float32)
    return out


class _Weights:
    """Looks tensors up by their transformers name, with or without the ``bert.``/``distilbert.`` prefix."""

    def __init__(self, tensors: dict[str, np.ndarray], model_type: str) -> None:
        prefix = f"{model_type}."
        self.tensors = {k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in tensors.items()}

    def __call__(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        if key not in self.tensors:
            raise ModelError(
                f"The checkpoint has no tensor {key!r}; it does not match the architecture its config names."
            )
        value = self.tensors[key]
        if value.shape != shape:
            raise ModelError(f"Checkpoint tensor {key!r} has shape {value.shape}; expected {shape}.")
        return value

    def has(self, key: str) -> bool:
        return key in self.tensors


def _names(config: BertConfig, layer: int) -> dict[str, str]:
    """transformers' tensor names of one encoder layer, per family."""
    if config.model_type == "distilbert":
        base = f"transformer.layer.{layer}"
        return {
            "q": f"{base}.attention.q_lin",
            "k": f"{base}.attention.k_lin",
            "v": f"{base}.attention.v_lin",
            "o": f"{base}.attention.out_lin",
            "ln1": f"{base}.sa_layer_norm",
            "ff1": f"{base}.ffn.lin1",
            "ff2": f"{base}.ffn.lin2",
            "ln2": f"{base}.output_layer_norm",
        }
    base = f"encoder.layer.{layer}"
    return {
        "q": f"{base}.attention.self.query",
        "k": f"{base}.attention.self.key",
        "v": f"{base}.attention.self.value",
        "o": f"{base}.attention.output.dense",
        "ln1": f"{base}.attention.output.LayerNorm",
        "ff1": f"{base}.intermediate.dense",
        "ff2": f"{base}.output.dense",
        "ln2": f"{base}.output.LayerNorm",
    }


class _BertWriter:
    def __init__(self, weights: _Weights, config: BertConfig, batch_size: int) -> None:
        self.w = weights
        self.config = config
        self.batch_size = batch_size
        self.graph = WeightedGraph()

    def linear(self, x: str, key: str, n_in: int, n_out: int) -> str:
        """``x @ W^T + b`` as MatMul + Add (the weight stored transposed, as quantizers expect for MatMul)."""
        weight = self.graph.weight(f"{key}.weight", self.w(f"{key}.weight", (n_out, n_in)).T)
        bias = self.graph.weight(f"{key}.bias", self.w(f"{key}.bias", (n_out,)))
        return self.graph.op("Add", self.graph.op("MatMul", x, weight), bias)

    def layer_norm(self, x: str, key: str) -> str:
        h = self.config.hidden_size
        gamma = self.graph.weight(f"{key}.weight", self.w(f"{key}.weight", (h,)))
        beta = self.graph.weight(f"{key}.bias", self.w(f"{key}.bias", (h,)))
        return self.graph.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=self.config.layer_norm_eps)

    def gelu(self, x: str) -> str:
        g = self.graph
        if self.config.activation == "gelu":  # exact: 0.5 x (1 + erf(x / sqrt 2)); opset 17 has no Gelu op
            erf = g.op("Erf", g.op("Div", x, g.const(np.float32(math.sqrt(2.0)))))
            return g.op("Mul", g.op("Mul", x, g.const(np.float32(0.5))), g.op("Add", erf, g.const(np.float32(1.0))))
        # tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.const(np.float32(0.044715))))
        tanh = g.op("Tanh", g.op("Mul", inner, g.const(np.float32(math.sqrt(2.0 / math.pi)))))
        return g.op("Mul", g.op("Mul", x, g.const(np.float32(0.5))), g.op("Add", tanh, g.const(np.float32(1.0))))

    def embeddings(self, length: int) -> str:
        """Word + position (+ token type 0, BERT only) embeddings, then LayerNorm."""
        c, g = self.config, self.graph
        h = c.hidden_size
        if length > c.max_positions:
            raise ModelError(f"Sequence length {length} exceeds the checkpoint's {c.max_positions} positions.")
        key = "embeddings.word_embeddings.weight"
        vocab = self.w.tensors[key].shape[0] if self.w.has(key) else 0
        word = self.w(key, (vocab, h))
        positions = self.w("embeddings.position_embeddings.weight", (c.max_positions, h))[:length]
        if self.w.has("embeddings.token_type_embeddings.weight"):  # BERT; DistilBERT has no token types
            positions = positions + self.w.tensors["embeddings.token_type_embeddings.weight"][0]
        tokens = g.op("Gather", g.weight(key, word), "input_ids", axis=0)
        x = g.op("Add", tokens, g.weight("embeddings.position_and_type", positions[np.newaxis]))
        return self.layer_norm(x, "embeddings.LayerNorm")

    def attention_bias(self) -> str:
        """[batch, 1, 1, L]: 0 where the mask is 1, -10000 where it is 0 (padding)."""
        g = self.graph
        mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
        bias = g.op("Mul", g.op("Sub", g.const(np.float32(1.0)), mask), g.const(np.float32(_MASK_VALUE)))
        return g.op("Unsqueeze", bias, g.const(np.array([1, 2], dtype=np.int64)))

    def layer(self, x: str, index: int, length: int, bias: str) -> str:
        c, g = self.config, self.graph
        h, heads = c.hidden_size, c.num_heads
        head_dim = h // heads
        n = _names(c, index)
        split = g.const(np.array([self.batch_size, length, heads, head_dim], dtype=np.int64))
        # scale q before the product: one [L, d] multiply instead of an [L, L] one
        q = g.op("Mul", self.linear(x, n["q"], h, h), g.const(np.float32(1.0 / math.sqrt(head_dim))))
        q = g.op("Transpose", g.op("Reshape", q, split), perm=[0, 2, 1, 3])  # [batch, heads, L, d]
        k = g.op(
            "Transpose", g.op("Reshape", self.linear(x, n["k"], h, h), split), perm=[0, 2, 3, 1]
        )  # [batch, heads, d, L]
        v = g.op("Transpose", g.op("Reshape", self.linear(x, n["v"], h, h), split), perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("MatMul", q, k), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)  # [batch, heads, L, d]
        context = g.op(
            "Reshape",
            g.op("Transpose", context, perm=[0, 2, 1, 3]),
            g.const(np.array([self.batch_size, length, h], dtype=np.int64)),
        )
        x = self.layer_norm(g.op("Add", self.linear(context, n["o"], h, h), x), n["ln1"])
        ff = self.linear(self.gelu(self.linear(x, n["ff1"], h, c.intermediate_size)), n["ff2"], c.intermediate_size, h)
        return self.layer_norm(g.op("Add", ff, x), n["ln2"])

    def mean_pool(self, x: str) -> str:
        """Average of the token vectors where attention_mask is 1 (sentence-transformers' Pooling)."""
        g = self.graph
        mask = g.op(
            "Unsqueeze", g.op("Cast", "attention_mask", to=TensorProto.FLOAT), g.const(np.array([2], dtype=np.int64))
        )
        summed = g.op("ReduceSum", g.op("Mul", x, mask), g.const(np.array([1], dtype=np.int64)), keepdims=0)
        count = g.op("ReduceSum", mask, g.const(np.array([1], dtype=np.int64)), keepdims=0)
        return g.op("Div", summed, g.op("Max", count, g.const(np.array([[1e-9]], dtype=np.float32))))

    def l2_normalize(self, x: str) -> str:
        """``x / max(||x||, 1e-12)``, as torch.nn.functional.normalize (sentence-transformers' Normalize)."""
        g = self.graph
        norm = g.op("ReduceL2", x, axes=[1], keepdims=1)  # axes is an attribute until opset 18
        return g.op("Div", x, g.op("Max", norm, g.const(np.array([[1e-12]], dtype=np.float32))))

    def cls_token(self, x: str) -> str:
        """The vector of the first token, [CLS]: [batch, H]."""
        g = self.graph
        return g.op("Gather", x, g.const(np.array(0, dtype=np.int64)), axis=1)


def build_bert(
    tensors: dict[str, np.ndarray],
    config: BertConfig,
    sequence_length: int,
    output: Literal["sentence_embedding", "logits"],
    pooling: Pooling = "mean",
    normalize: bool = True,
    head: tuple[np.ndarray, np.ndarray] | None = None,
    name: str = "bert",
    batch_size: int = 1,
) -> onnx.ModelProto:
    """A BERT/DistilBERT encoder as ONNX, with static input shape ``[batch_size, sequence_length]``.

    ``output="sentence_embedding"``: pooled (``pooling``), L2-normalised if ``normalize``, ``[batch, H]``.
    ``output="logits"``: a classifier. With ``head=(weight [labels, H], bias [labels])`` the head is
    that linear layer on the pooled, normalised embedding (ryzen-nb's own heads, e.g. minilm_sentiment);
    without it, the checkpoint's own sequence-classification head (BERT pooler + classifier on [CLS];
    DistilBERT pre_classifier + ReLU + classifier on [CLS]).
    """
    writer = _BertWriter(_Weights(tensors, config.model_type), config, batch_size)
    g, h = writer.graph, config.hidden_size
    x = writer.embeddings(sequence_length)
    bias = writer.attention_bias()
    for index in range(config.num_layers):
        x = writer.layer(x, index, sequence_length, bias)

    if output == "sentence_embedding" or head is not None:
        pooled = writer.mean_pool(x) if pooling == "mean" else writer.cls_token(x)
        if normalize:
            pooled = writer.l2_normalize(pooled)
        if head is None:
            g.builder.op("Identity", pooled, outputs=["sentence_embedding"])
            out_info = tensor_info("sentence_embedding", [batch_size, h])
        else:
            weight, head_bias = head
            labels = weight.shape[0]
            g.builder.op(
                "Gemm",
                pooled,
                g.weight("head.weight", weight),
                g.weight("head.bias", head_bias),
                transB=1,
                outputs=["logits"],
            )
            out_info = tensor_info("logits", [batch_size, labels])
    else:
        cls = writer.cls_token(x)
        w = writer.w
        if config.model_type == "distilbert":
            hidden = g.op("Relu", writer.linear(cls, "pre_classifier", h, h))
        elif w.has("pooler.dense.weight"):
            hidden = g.op("Tanh", writer.linear(cls, "pooler.dense", h, h))
        else:
            raise ModelError("The checkpoint has no pooler, so it has no sequence-classification head to build.")
        labels = w.tensors.get("classifier.weight", np.zeros((0, h))).shape[0]
        if not labels:
            raise ModelError("The checkpoint has no 'classifier' weights: it is an encoder, not a classifier.")
        logits = writer.linear(hidden, "classifier", h, labels)
        g.builder.op("Identity", logits, outputs=["logits"])
        out_info = tensor_info("logits", [batch_size, labels])

    inputs = [
        tensor_info("input_ids", [batch_size, sequence_length], TensorProto.INT64),
        tensor_info("attention_mask", [batch_size, sequence_length], TensorProto.INT64),
    ]
    return g.to_model(inputs, [out_info], name=name)
