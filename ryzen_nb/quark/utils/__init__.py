"""Quark's ``quark.onnx.utils``: ``deploy_utils.dump_model``."""

from ryzen_nb.quark.utils.deploy_utils import dump_model

__all__ = ["dump_model"]
