"""Quark's ``quark.onnx.operators``: ``custom_ops.get_library_path``."""
