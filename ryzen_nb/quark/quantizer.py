"""Quark's call shape: ``ModelQuantizer(config).quantize_model(input, output, reader)``, onto
:func:`ryzen_nb.quantize`."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import onnx

from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.io import ModelLike
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.config import Config, QuantizationConfig, get_default_config
from ryzen_nb.quantization.run import QuantizationSummary, as_settings
from ryzen_nb.quark.qconfig import QConfig, apply_algorithms

__all__ = ["ModelQuantizer"]

log = logging.getLogger(__name__)


def as_config(config: Any) -> Config:
    """A :class:`Config` from what Quark's ModelQuantizer takes: a Config, a QuantizationConfig, a
    QConfig or a preset name."""
    if isinstance(config, QConfig):
        return Config(config.to_legacy())
    if isinstance(config, str):
        return Config(get_default_config(config))
    if isinstance(config, QuantizationConfig):
        return Config(config)
    if isinstance(config, Config):
        return config
    raise ConfigError(f"ModelQuantizer(config) takes a Config, a QuantizationConfig, a QConfig or a preset name; got "
                      f"{type(config).__name__}.")


class ModelQuantizer:
    """Quark's call shape: ``ModelQuantizer(config).quantize_model(input, output, reader)``."""

    def __init__(self, config: Any) -> None:
        # resolved here, so a bad config fails at construction (as in Quark)
        self.settings, self.config = as_settings(as_config(config))
        self.summary: QuantizationSummary | None = None

    def quantize_model(
        self,
        model_input: ModelLike,
        model_output: str | Path | None = None,
        calibration_data_reader: Any = None,
        calibration_data_path: str | Path | None = None,
        algorithms: Any = None,
        **kwargs: Any,
    ) -> onnx.ModelProto:
        """Quantize and write ``model_output`` (if given); return the quantized ModelProto.
        ``algorithms`` (CLEConfig(), AdaRoundConfig(...), ...) add accuracy algorithms to this run.

        As in Quark, ``calibration_data_path`` is a folder of .npy files (or one sub-folder of them
        per input) used when no reader is given. Unlike Quark, which logs a data/model mismatch and
        returns None without writing anything, a mismatch here raises an error naming the input
        and the fix. The run's :class:`QuantizationSummary` is kept in ``self.summary``.
        """
        config = self.config
        if algorithms:  # Quark's legacy call shape: the algorithm list applies to this run only
            config = copy.deepcopy(self.config)
            apply_algorithms(config.global_quant_config, list(algorithms))
        data = calibration_data_reader if calibration_data_reader is not None else calibration_data_path
        if calibration_data_reader is not None and calibration_data_path is not None:
            log.warning("both a calibration reader and a calibration path were given; using the reader (as Quark)")
        self.summary = quantize(model_input, model_output, config, data, **kwargs)
        if self.config.global_quant_config.print_summary:
            log.info("%r", self.summary)
        assert self.summary.model is not None
        return self.summary.model
