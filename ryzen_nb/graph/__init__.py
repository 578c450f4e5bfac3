"""ONNX graph utilities: building subgraphs, loading/saving models, and preparing them for quantization."""

from ryzen_nb.graph.builder import IR_VERSION, OPSET, RYZEN_NB_DOMAIN, GraphBuilder, make_model
from ryzen_nb.graph.io import ModelLike, load_model, save_model
from ryzen_nb.graph.prepare import InputSpec, PreparedModel, input_specs, ort_session, prepare

__all__ = [
    "IR_VERSION",
    "OPSET",
    "RYZEN_NB_DOMAIN",
    "GraphBuilder",
    "InputSpec",
    "ModelLike",
    "PreparedModel",
    "input_specs",
    "load_model",
    "make_model",
    "ort_session",
    "prepare",
    "save_model",
]
