"""The config builder: a quantization config from a preset and controls, validated as you go, with
the Python code that builds the same config.

>>> from ryzen_nb.ui import ConfigBuilder
>>> builder = ConfigBuilder("model.onnx", preset="XINT8")          # doctest: +SKIP
>>> builder                                                          # the widget          # doctest: +SKIP
>>> ryzen_nb.quantize("model.onnx", "model_q.onnx", builder.config, images)               # doctest: +SKIP

Every control maps to a field of Quark's config (the code preview shows which); anything a control
does not cover — say ``BFPAttributes`` — is kept from the loaded preset or config. Exclusions and
tensor-wise mixed precision are picked from the model's own node, op-type and tensor names.
"""

from __future__ import annotations

import copy
from typing import Any

import ipywidgets as w

from ryzen_nb.calibration.methods import METHODS
from ryzen_nb.errors import RyzenNBError
from ryzen_nb.graph.io import load_model
from ryzen_nb.quantization.config import (
    PRESETS,
    QUANT_TYPE_FORMATS,
    Config,
    QuantizationConfig,
    get_default_config,
    matching_preset,
    preset_name,
    resolve,
)
from ryzen_nb.quantization.options import FINETUNE_ALGORITHM_DEFAULTS, default
from ryzen_nb.ui._base import ErrorBox, esc, surfaces_errors
from ryzen_nb.zoo.models import ZooModel

__all__ = ["ConfigBuilder"]



def _labelled() -> dict[str, Any]:
    """Checkbox options that show the whole label (ipywidgets' default width cuts long ones)."""
    return {"indent": False, "layout": w.Layout(width="auto", margin="0 16px 0 0")}


def _type_names() -> list[str]:
    return list(QUANT_TYPE_FORMATS) + ["QBFP", "QMX"]


def _method_names() -> list[str]:
    return list(METHODS)


def _model_names(model: Any) -> tuple[list[str], list[str], list[str]]:
    """(node names, op types, activation tensor names) of a model given as a path, ModelProto or zoo model."""
    m = load_model(model.path if isinstance(model, ZooModel) else model)
    inits = {t.name for t in m.graph.initializer}
    nodes = [n.name for n in m.graph.node if n.name]
    ops = sorted({n.op_type for n in m.graph.node})
    tensors = [i.name for i in m.graph.input if i.name not in inits]
    tensors += [o for n in m.graph.node for o in n.output if o]
    return nodes, ops, list(dict.fromkeys(tensors))


class ConfigBuilder(w.VBox):
    """Build a :class:`~ryzen_nb.quantization.config.Config` with controls; ``.config`` returns it."""

    def __init__(self, model: Any = None, preset: str = "XINT8", **kwargs: Any) -> None:
        self.errors = ErrorBox()
        self._syncing = False
        self._base = get_default_config(preset)
        self._mixed: dict[str, list[str]] = {}
        self.nodes, self.op_types, self.tensors = _model_names(model) if model is not None else ([], [], [])

        # the names only: a description in the menu is cut off in the closed drop-down; it shows below it
        self.preset = w.Dropdown(options=list(PRESETS), value=self._preset_key(preset), description="preset",
                                 layout=w.Layout(width="340px"))
        self.preset_help = w.HTML(layout=w.Layout(flex="1 1 auto", margin="0 0 0 12px"))
        reset = w.Button(description="Reset to preset", icon="undo", layout=w.Layout(width="auto", flex="0 0 auto"))
        reset.on_click(self._reset_clicked)

        # types and calibration
        self.activation_type = w.Dropdown(options=_type_names(), description="activations")
        self.weight_type = w.Dropdown(options=_type_names(), description="weights")
        self.calibrate_method = w.Dropdown(options=_method_names(), description="calibration")
        self.per_channel = w.Checkbox(description="per-channel weights", **_labelled())
        self.activation_symmetric = w.Checkbox(description="symmetric activations", **_labelled())
        self.weight_symmetric = w.Checkbox(description="symmetric weights", **_labelled())
        # WeightsOnly: what the weights alone cost; needs no calibration data
        self.weights_only = w.Checkbox(description="weights only (activations stay float32)", **_labelled())
        types = w.VBox([w.HBox([self.activation_type, self.weight_type]), self.calibrate_method,
                        w.HBox([self.per_channel, self.activation_symmetric, self.weight_symmetric]),
                        self.weights_only])

        # accuracy recovery
        self.cle = w.Checkbox(description="cross-layer equalization (CLE)", **_labelled())
        self.bias_correction = w.Checkbox(description="bias correction", **_labelled())
        self.fast_ft = w.Checkbox(description="fine-tune (AdaRound / AdaQuant)", **_labelled())
        # values come from the config in _show(), defaults from the options schema
        self.ft_algorithm = w.Dropdown(options=list(FINETUNE_ALGORITHM_DEFAULTS), description="algorithm")
        self.ft_iterations = w.BoundedIntText(min=1, max=1_000_000, description="iterations")
        self.ft_learning_rate = w.BoundedFloatText(min=1e-9, max=10.0, step=1e-5, description="learning rate")
        self.ft_batch_size = w.BoundedIntText(min=1, max=4096, description="batch size")
        self.ft_box = w.VBox([w.HBox([self.ft_algorithm, self.ft_iterations]),
                              w.HBox([self.ft_learning_rate, self.ft_batch_size])])
        accuracy = w.VBox([w.HBox([self.cle, self.bias_correction]), self.fast_ft, self.ft_box])

        # exclusions, from the model's names
        self.exclude_op_types = w.SelectMultiple(options=self.op_types, description="op types", rows=6)
        self.node_filter = w.Text(placeholder="filter node names", description="nodes")
        self.exclude_nodes = w.SelectMultiple(options=self.nodes, rows=8, layout=w.Layout(width="95%"))
        no_model = w.HTML("<i>Pass a model to ConfigBuilder(model) to pick names from it.</i>" if model is None else "")
        exclusions = w.VBox([no_model, self.exclude_op_types, self.node_filter, self.exclude_nodes])

        # tensor-wise mixed precision, from the model's tensors
        self.mp_format = w.Dropdown(options=_type_names(), value="QInt16", description="format")
        self.mp_filter = w.Text(placeholder="filter tensor names", description="tensors")
        self.mp_tensors = w.SelectMultiple(options=self.tensors, rows=8, layout=w.Layout(width="95%"))
        self.mp_add = w.Button(description="Give them this format", icon="plus", layout=w.Layout(width="auto"))
        self.mp_clear = w.Button(description="Clear", icon="trash", layout=w.Layout(width="auto"))
        self.mp_list = w.HTML()
        self.mp_add.on_click(self._add_mixed)
        self.mp_clear.on_click(self._clear_mixed)
        mixed = w.VBox([w.HBox([self.mp_format, self.mp_add, self.mp_clear]), self.mp_filter, self.mp_tensors,
                        self.mp_list])

        sections = w.Accordion(children=[types, accuracy, exclusions, mixed])
        for i, title in enumerate(["Formats and calibration", "Accuracy recovery", "Excluded from quantization",
                                   "Tensor-wise mixed precision"]):
            sections.set_title(i, title)
        sections.selected_index = 0
        self.status = w.HTML()
        self.code_view = w.HTML()
        super().__init__([w.HBox([self.preset, reset, self.preset_help], layout=w.Layout(align_items="center")),
                          sections, self.status, self.errors,
                          w.HTML("<b>Equivalent Python</b>"), self.code_view], **kwargs)
        self.add_class("rnb-config-builder")

        self.preset.observe(self._preset_changed, names="value")
        self.preset.observe(self._describe_preset, names="value")
        self._describe_preset()
        self.node_filter.observe(self._filter_nodes, names="value")
        self.mp_filter.observe(self._filter_tensors, names="value")
        self.ft_algorithm.observe(self._algorithm_changed, names="value")
        for control in (self.activation_type, self.weight_type, self.calibrate_method, self.per_channel,
                        self.activation_symmetric, self.weight_symmetric, self.weights_only, self.cle,
                        self.bias_correction,
                        self.fast_ft, self.ft_algorithm, self.ft_iterations, self.ft_learning_rate,
                        self.ft_batch_size, self.exclude_op_types, self.exclude_nodes):
            control.observe(self._changed, names="value")
        self._show(self._base)

    # -- public ----------------------------------------------------------------------------------------
    @property
    def config(self) -> Any:
        """A new :class:`Config` with what the controls say (raises if it is not valid)."""
        config = Config(self._quantization_config())
        resolve(config)
        return config

    @property
    def code(self) -> str:
        """Python that builds the same config."""
        return Config(self._quantization_config()).to_python()

    @property
    def problems(self) -> list[str]:
        """What is wrong with the current settings (empty when the config is valid)."""
        qc = self._quantization_config()
        found = []
        try:
            resolve(Config(qc))
        except RyzenNBError as exc:
            found.append(str(exc))
        if self.nodes:
            known = set(self.nodes)
            missing = [n for n in qc.nodes_to_exclude if n not in known]
            if missing:
                found.append(f"nodes_to_exclude names {missing} that are not nodes of the model.")
            tensors = set(self.tensors)
            for fmt, names in (qc.extra_options.get("MixedPrecisionTensor") or {}).items():
                unknown = [n for n in names if n not in tensors]
                if unknown:
                    found.append(f"MixedPrecisionTensor {fmt}: {unknown} are not tensors of the model.")
        return found

    def load(self, config: Any) -> None:
        """Show ``config`` (a Config, QuantizationConfig or preset name) in the controls."""
        if isinstance(config, str):
            qc = get_default_config(config)
        elif isinstance(config, Config):
            qc = copy.deepcopy(config.global_quant_config)
        elif isinstance(config, QuantizationConfig):
            qc = copy.deepcopy(config)
        else:
            raise TypeError(f"load() takes a Config, a QuantizationConfig or a preset name; got {type(config).__name__}.")
        self._base = qc
        self._mixed = {k: list(v) for k, v in (qc.extra_options.get("MixedPrecisionTensor") or {}).items()}
        match = matching_preset(qc)
        if match is not None:
            self._syncing = True
            try:
                self.preset.value = match
            finally:
                self._syncing = False
        self._show(qc)

    def reset(self, preset: str | None = None) -> None:
        """Back to ``preset`` (default: the one selected), as ``get_default_config`` gives it."""
        self.load(self._preset_key(preset) if preset else self.preset.value)

    # -- controls <-> config ------------------------------------------------------------------------------
    @staticmethod
    def _preset_key(name: str) -> str:
        """The preset's name as the table spells it (names are case-insensitive, aliases allowed)."""
        return preset_name(name)

    def _show(self, qc: Any) -> None:
        """Set every control from ``qc`` without triggering a rebuild per control."""
        self._syncing = True
        try:
            extra = qc.extra_options
            self.activation_type.value = self._option(self.activation_type, qc.activation_type)
            self.weight_type.value = self._option(self.weight_type, qc.weight_type)
            self.calibrate_method.value = self._option(self.calibrate_method, qc.calibrate_method)
            self.per_channel.value = bool(qc.per_channel)
            self.per_channel.disabled = bool(qc.enable_npu_cnn)  # XINT8: per-tensor only (resolve says why)
            self.activation_symmetric.value = bool(extra.get("ActivationSymmetric", default("ActivationSymmetric")))
            self.weight_symmetric.value = bool(extra.get("WeightSymmetric", default("WeightSymmetric")))
            self.weights_only.value = bool(extra.get("WeightsOnly", default("WeightsOnly")))
            self.cle.value = bool(qc.include_cle)
            self.bias_correction.value = bool(extra.get("BiasCorrection", default("BiasCorrection")))
            self.fast_ft.value = bool(qc.include_fast_ft)
            ft = extra.get("FastFinetune") or {}
            first = default("OptimAlgorithm", "FastFinetune")
            algorithm = str(ft.get("OptimAlgorithm", first)).lower()
            self.ft_algorithm.value = algorithm if algorithm in FINETUNE_ALGORITHM_DEFAULTS else first
            own = FINETUNE_ALGORITHM_DEFAULTS[self.ft_algorithm.value]
            self.ft_iterations.value = int(ft.get("NumIterations", own["NumIterations"]))
            self.ft_learning_rate.value = float(ft.get("LearningRate", own["LearningRate"]))
            self.ft_batch_size.value = int(ft.get("BatchSize", default("BatchSize", "FastFinetune")))
            self.exclude_op_types.options = sorted(set(self.op_types) | set(qc.op_types_to_exclude))
            self.exclude_op_types.value = tuple(qc.op_types_to_exclude)
            self.exclude_nodes.options = list(dict.fromkeys(list(qc.nodes_to_exclude) + self._filtered_nodes()))
            self.exclude_nodes.value = tuple(qc.nodes_to_exclude)
        finally:
            self._syncing = False
        self._refresh()

    @staticmethod
    def _option(control: Any, value: Any) -> Any:
        """``value`` among the control's options (a loaded config may name one the list lacks)."""
        value = str(value)
        if value not in control.options:
            control.options = list(control.options) + [value]
        return value

    def _quantization_config(self) -> Any:
        qc = copy.deepcopy(self._base)
        qc.activation_type = self.activation_type.value
        qc.weight_type = self.weight_type.value
        qc.calibrate_method = self.calibrate_method.value
        qc.per_channel = self.per_channel.value
        qc.include_cle = self.cle.value
        qc.include_fast_ft = self.fast_ft.value
        qc.op_types_to_exclude = list(self.exclude_op_types.value)
        qc.nodes_to_exclude = list(self.exclude_nodes.value)
        extra = qc.extra_options
        _set_or_drop(extra, "ActivationSymmetric", self.activation_symmetric.value, False, self._base.extra_options)
        _set_or_drop(extra, "WeightSymmetric", self.weight_symmetric.value, True, self._base.extra_options)
        _set_or_drop(extra, "WeightsOnly", self.weights_only.value, False, self._base.extra_options)
        _set_or_drop(extra, "BiasCorrection", self.bias_correction.value, False, self._base.extra_options)
        if self.fast_ft.value:
            extra["FastFinetune"] = {**(extra.get("FastFinetune") or {}), "OptimAlgorithm": self.ft_algorithm.value,
                                     "NumIterations": self.ft_iterations.value,
                                     "LearningRate": self.ft_learning_rate.value, "BatchSize": self.ft_batch_size.value}
        if self._mixed:
            extra["MixedPrecisionTensor"] = {k: list(v) for k, v in self._mixed.items()}
        else:
            extra.pop("MixedPrecisionTensor", None)
        return qc

    def _refresh(self) -> None:
        """Validation message and code preview for the current settings."""
        self.ft_box.layout.display = "" if self.fast_ft.value else "none"
        problems = self.problems
        if problems:
            items = "".join(f"<li>{esc(p)}</li>" for p in problems)
            self.status.value = f"<div style='color:#b00020'><b>Not valid yet</b><ul>{items}</ul></div>"
        else:
            self.status.value = "<div style='color:#1b7f3b'>&#10003; valid config</div>"
        self.code_view.value = f"<pre style='font-size:12px'>{esc(self.code)}</pre>"
        rows = "".join(f"<li><code>{esc(fmt)}</code>: {esc(', '.join(names))}</li>" for fmt, names in self._mixed.items())
        self.mp_list.value = f"<ul>{rows}</ul>" if rows else "<i>No tensor-wise override.</i>"

    def _filtered_nodes(self) -> list[str]:
        query = self.node_filter.value.lower()
        return [n for n in self.nodes if query in n.lower()]

    # -- callbacks ---------------------------------------------------------------------------------------
    @surfaces_errors("reset")
    def _reset_clicked(self, _button: Any = None) -> None:
        self.reset()

    def _describe_preset(self, change: dict | None = None) -> None:
        description = PRESETS[self.preset.value].description if self.preset.value in PRESETS else ""
        self.preset_help.value = f"<span style='color:#555;white-space:normal'>{esc(description)}</span>"

    @surfaces_errors("preset")
    def _preset_changed(self, change: dict) -> None:
        if not self._syncing:
            self.reset(change["new"])

    @surfaces_errors("config")
    def _changed(self, change: dict) -> None:
        if not self._syncing:
            self._refresh()

    @surfaces_errors("fine-tuning")
    def _algorithm_changed(self, change: dict) -> None:
        if self._syncing:
            return
        # AdaQuant's rate is 10^4 smaller than AdaRound's
        self.ft_learning_rate.value = FINETUNE_ALGORITHM_DEFAULTS[change["new"]]["LearningRate"]
        self._refresh()

    @surfaces_errors("node filter")
    def _filter_nodes(self, change: dict) -> None:
        chosen = tuple(self.exclude_nodes.value)
        self._syncing = True
        try:
            self.exclude_nodes.options = list(dict.fromkeys(list(chosen) + self._filtered_nodes()))
            self.exclude_nodes.value = chosen
        finally:
            self._syncing = False

    @surfaces_errors("tensor filter")
    def _filter_tensors(self, change: dict) -> None:
        query = change["new"].lower()
        self.mp_tensors.options = [t for t in self.tensors if query in t.lower()]

    @surfaces_errors("mixed precision")
    def _add_mixed(self, _button: Any = None) -> None:
        chosen = list(self.mp_tensors.value)
        if not chosen:
            raise ValueError("Select one or more tensors in the list first.")
        for names in self._mixed.values():  # a tensor has one format: move it
            names[:] = [n for n in names if n not in chosen]
        self._mixed = {k: v for k, v in self._mixed.items() if v}
        self._mixed.setdefault(self.mp_format.value, []).extend(chosen)
        self._refresh()

    @surfaces_errors("mixed precision")
    def _clear_mixed(self, _button: Any = None) -> None:
        self._mixed = {}
        self._refresh()


def _set_or_drop(extra: dict[str, Any], key: str, value: bool, default: bool, base: dict[str, Any]) -> None:
    """Write ``key`` when it differs from the default or the loaded config has it (short code)."""
    if value != default or key in base:
        extra[key] = value
    else:
        extra.pop(key, None)
