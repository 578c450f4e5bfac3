"""Quark's ``ModelQuantizer`` (``quark.onnx.quantization.api``): ``ModelQuantizer(config)
.quantize_model(input, output, reader)``, onto :func:`ryzen_nb.quantize`."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import onnx

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.config import Config, QuantizationConfig
from ryzen_nb.quantization.run import QuantizationSummary, as_settings
from ryzen_nb.quark.calibration.data_readers import PathDataReader
from ryzen_nb.quark.quantization.config.algorithm import apply_algorithms
from ryzen_nb.quark.quantization.config.config import QConfig
from ryzen_nb.quark.quantization.config.presets import get_default_config

__all__ = ["ModelQuantizer", "as_config"]

log = logging.getLogger(__name__)


def as_config(config: Any) -> Config:
    """A :class:`Config` from what Quark's ModelQuantizer takes: a Config or a QConfig — and, as
    ryzen-nb adds, a QuantizationConfig or a preset name."""
    if isinstance(config, QConfig):
        return Config(config.to_legacy())
    if isinstance(config, str):
        return Config(get_default_config(config))
    if isinstance(config, QuantizationConfig):
        return Config(config)
    if isinstance(config, Config):
        return config
    raise ConfigError(f"ModelQuantizer(config) takes a Config, a QConfig, a QuantizationConfig or a preset name; got "
                      f"{type(config).__name__}.")


class ModelQuantizer:
    """Quark's call shape: ``ModelQuantizer(config).quantize_model(input, output, reader)``.

    The config is checked here, so a bad one fails at construction with an error naming what is
    wrong (an unknown option, a feature ryzen-nb lacks) — as Quark checks its config up front.
    """

    def __init__(self, config: Config | QConfig | QuantizationConfig | str) -> None:
        self.settings, self.config = as_settings(as_config(config))
        self.summary: QuantizationSummary | None = None

    def set_logging_level(self) -> None:
        """Quark 0.x's switch to the config's ``log_severity_level`` (0 debug ... 4 fatal)."""
        level = self.config.global_quant_config.log_severity_level
        if level is not None:
            logging.getLogger("ryzen_nb").setLevel([logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR,
                                                    logging.CRITICAL][min(max(int(level), 0), 4)])

    def quantize_model(
        self,
        model_input: ModelLike,
        model_output: str | Path | None = None,
        calibration_data_reader: Any = None,
        calibration_data_path: str | Path | None = None,
        algorithms: list[Any] | None = None,
        *,
        input_shapes: dict[str, Any] | None = None,
        limit: int | None = None,
        progress: bool = True,
    ) -> onnx.ModelProto:
        """Quantize, write ``model_output`` (if given) atomically, and return the quantized model.

        ``algorithms`` (``[CLEConfig(), AdaRoundConfig(...)]``) add accuracy algorithms to this run.
        As in Quark, ``calibration_data_path`` is a folder of .npy files (or one sub-folder of them
        per input) read when no reader is given. Unlike Quark — which logs a data/model mismatch and
        returns None without writing anything — a mismatch raises an error naming the input and
        the fix. ``input_shapes``, ``limit`` and ``progress`` are :func:`ryzen_nb.quantize`'s; the
        run's :class:`QuantizationSummary` is kept in ``self.summary``.
        """
        config = self.config
        if algorithms:  # Quark's call shape: the list applies to this run only
            config = copy.deepcopy(self.config)
            apply_algorithms(config.global_quant_config, list(algorithms))
        if calibration_data_reader is not None and calibration_data_path is not None:
            log.warning("both a calibration reader and a calibration path were given; using the reader (as Quark)")
        data = calibration_data_reader
        if data is None and calibration_data_path is not None:  # Quark reads the folder for this model's inputs
            data = PathDataReader(model_input, calibration_data_path)
        self.summary = quantize(model_input, model_output, config, data, input_shapes=input_shapes, limit=limit,
                                progress=progress)
        if config.global_quant_config.print_summary:
            log.info("%r", self.summary)
        assert self.summary.model is not None  # quantize() always returns the model it wrote
        return self.summary.model
