"""ONNX graph utilities: building subgraphs, and (later) loading, checking and preparing models."""

from ryzen_nb.graph.builder import IR_VERSION, OPSET, RYZEN_NB_DOMAIN, GraphBuilder, make_model

__all__ = ["IR_VERSION", "OPSET", "RYZEN_NB_DOMAIN", "GraphBuilder", "make_model"]
