"""The calibration wizard: a step-by-step widget editing a :class:`~ryzen_nb.calibration.recipe.Recipe`
for a model and showing, before anything runs, what it gives (the model's inputs next to the data,
thumbnails, a histogram, sizes, problems with their fix) and the code that builds it without the widget.

Example::

    import ryzen_nb
    from ryzen_nb.ui.wizard import CalibrationWizard

    wizard = CalibrationWizard("resnet_digits")   # a path, an onnx.ModelProto, a zoo name or a ZooModel
    wizard                                        # Source -> Preprocessing -> Mapping -> Preview -> Size
    wizard.calibration_size.value = 50            # every control is an attribute: scripts and tests drive them
    summary = ryzen_nb.quantize(wizard.target.path, "digits_xint8.onnx", "XINT8", wizard.reader())
    feeds, labels = wizard.evaluation()           # held out: never used for calibration
    wizard.recipe                                 # the choices as a Recipe, for scripts (it can be set too)
    print(wizard.code)                            # the same data, as code to paste in a notebook

The data logic (sources, preprocessing, checks, the split, the code) is plain Python in
:mod:`ryzen_nb.calibration.recipe`; this module only turns controls into a Recipe, builds it and
renders the result.
"""

from __future__ import annotations

import base64
import contextlib
import io
import keyword
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np

from ryzen_nb import zoo
from ryzen_nb.calibration.readers import IMAGE_SUFFIXES, CalibrationReader
from ryzen_nb.calibration.recipe import PREVIEW_SAMPLES, ImageOptions, ModelTarget, PreparedData, Recipe, TextOptions
from ryzen_nb.calibration.recipe_sources import SOURCES
from ryzen_nb.calibration.recipe_target import LAYOUTS, NORMALIZATIONS, MappingRow, dims, mapping_rows
from ryzen_nb.errors import CalibrationDataError, UnknownNameError
from ryzen_nb.ui._base import ErrorBox, esc, figure_output, show_figure, surfaces_errors

__all__ = ["CalibrationWizard", "display_image", "histogram_values", "thumbnails_html"]

Feed = dict[str, np.ndarray]

#: the wizard's steps, in order; ``wizard.go()`` takes an index or one of these names (any case)
STEPS = ("Source", "Preprocessing", "Mapping", "Preview", "Size")
#: values drawn in the histogram at most: enough for its shape, quick to send to the browser
HISTOGRAM_VALUES = 200_000


# ------------------------------------------------------------------------------------------------
# preview helpers
# ------------------------------------------------------------------------------------------------


def display_image(sample: Any) -> Any:
    """A PIL image of a raw sample for a thumbnail (a file, or an image-like array), or None.

    Arrays are squeezed of a batch axis and turned from CHW to HWC; those on another scale than
    0..255 (digits' 0..16, normalised tensors) are stretched to it, so that they are visible.
    """
    from PIL import Image

    if isinstance(sample, (str, os.PathLike)):
        with Image.open(sample) as image:
            return image.convert("RGB")
    if isinstance(sample, Mapping):
        sample = next(iter(sample.values()), None)
    array = np.asarray(sample)
    if array.dtype.kind not in "biuf":
        return None
    while array.ndim > 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
        array = array.transpose(1, 2, 0)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[-1] == 3)) or min(array.shape[:2]) < 2:
        return None
    if array.dtype != np.uint8 or array.max() < 64:
        finite = np.nan_to_num(array.astype(np.float64))
        low, high = finite.min(), finite.max()
        array = ((finite - low) / (high - low or 1.0) * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def _png_base64(image: Any, height: int = 72) -> str:
    from PIL import Image

    scale = height / image.size[1]
    # small images (8x8 digits) are enlarged without blurring, large ones shrunk smoothly
    resample = Image.Resampling.NEAREST if scale > 1 else Image.Resampling.BILINEAR
    thumb = image.resize((max(1, round(image.size[0] * scale)), height), resample)
    buffer = io.BytesIO()
    thumb.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def thumbnails_html(samples: Sequence[Any], captions: Sequence[str]) -> str:
    """The first images as base64 PNG ``<img>`` tags, each with its caption ("" when none is an image)."""
    cells = []
    for sample, caption in zip(samples[:PREVIEW_SAMPLES], captions):
        image = display_image(sample)
        if image is None:
            continue
        cells.append(f'<figure style="display:inline-block;margin:2px 6px;text-align:center">'
                     f'<img src="data:image/png;base64,{_png_base64(image)}" title="{esc(caption)}"/>'
                     f'<figcaption style="font-size:11px;max-width:96px;overflow:hidden">{esc(caption)}'
                     f"</figcaption></figure>")
    return "".join(cells)


def histogram_values(feeds: Sequence[Feed], name: str) -> np.ndarray:
    """The finite values of input ``name`` over ``feeds``, evenly thinned to :data:`HISTOGRAM_VALUES`."""
    arrays = [np.asarray(f[name], dtype=np.float64).reshape(-1) for f in feeds if name in f]
    if not arrays:
        return np.zeros(0)
    values = np.concatenate(arrays)
    values = values[np.isfinite(values)]
    step = max(1, len(values) // HISTOGRAM_VALUES)
    return values[::step]


# ------------------------------------------------------------------------------------------------
# the widget
# ------------------------------------------------------------------------------------------------

_STYLE = {"description_width": "170px"}
_WIDE = w.Layout(width="560px")
_PROBLEM = "color:#b00020"


def _hidden(widget: w.Widget, hidden: bool) -> None:
    widget.layout.display = "none" if hidden else ""


def _step_index(step: int | str) -> int:
    if isinstance(step, str):
        titles = [s.lower() for s in STEPS]
        if step.lower() not in titles:
            raise UnknownNameError("wizard step", step, STEPS)
        return titles.index(step.lower())
    if not 0 <= int(step) < len(STEPS):
        raise ValueError(f"Step {step} does not exist: the wizard has steps 0 to {len(STEPS) - 1} ({', '.join(STEPS)}).")
    return int(step)


class CalibrationWizard:
    """A step-by-step widget editing a calibration :class:`Recipe` for ``model`` and showing its data.

    Steps: Source, Preprocessing, Mapping (the model's inputs next to what the data gives, with
    the quantizer's own messages), Preview (thumbnails, value or token-count histogram) and Size
    (calibration and held-out evaluation samples, memory). Every control is an attribute, so the
    wizard can be driven without a browser::

        wizard = CalibrationWizard("model.onnx")
        wizard.source.value = "images"
        wizard.folder.value = "calib_images/"
        wizard.calibration_size.value = 200
        wizard.problems                  # [] when the data fits the model
        reader = wizard.reader()         # for ryzen_nb.quantize(model, out, "XINT8", reader)
        feeds, labels = wizard.evaluation()
        print(wizard.code)               # the same data without the widget
        wizard.recipe                    # the choices as a Recipe: recipe.build(model) gives the same data

    ``model`` is a path, an ``onnx.ModelProto``, a zoo model name ("resnet_digits") or a
    :class:`~ryzen_nb.zoo.ZooModel`. Display ``wizard`` (or ``wizard.widget``) in a notebook.
    """

    def __init__(self, model: Any, *, calibration_size: int = 100, evaluation_size: int = 100, seed: int = 0) -> None:
        # a model that cannot be read is raised here: there is no widget yet to show it in
        self.target = ModelTarget.resolve(model)
        self.errors = ErrorBox()
        #: problems found in the current data, each with its fix (empty when all is well)
        self.problems: list[str] = []
        #: remarks that do not stop anything (sizes capped to what the source holds...)
        self.notes: list[str] = []
        #: the prepared data of the current choices (None until a source is complete and readable)
        self.data: PreparedData | None = None
        self.step = 0
        self._given: dict[str, Any] = {}
        self._holding = 0
        # the controls start from the recipe the model suggests (source, data set, image size and layout...)
        self._make_controls(Recipe.for_model(self.target, calibration_size=calibration_size,
                                             evaluation_size=evaluation_size, seed=seed))
        self.widget = self._make_layout()
        for control in self._controls:
            control.observe(self._on_change, names="value")
        self._show_step()
        self.refresh()

    # -- controls ----------------------------------------------------------------------------------
    def _make_controls(self, recipe: Recipe) -> None:
        image, text = recipe.image, recipe.text
        datasets = zoo.list_datasets()
        # step 1: source
        self.source = w.Dropdown(options=[(label, key) for key, label in SOURCES.items()],
                                 value=recipe.source, description="Source", style=_STYLE, layout=_WIDE)
        self.folder = w.Text(value=recipe.folder, description="Folder", placeholder="calibration_images/",
                             continuous_update=False, style=_STYLE, layout=_WIDE)
        self.variable = w.Text(value=recipe.variable, description="Notebook variable", placeholder="x_calib",
                               continuous_update=False, style=_STYLE, layout=_WIDE)
        self.labels_variable = w.Text(value=recipe.labels_variable, description="Labels variable (optional)",
                                      placeholder="y_calib", continuous_update=False, style=_STYLE, layout=_WIDE)
        self.dataset = w.Dropdown(options=[(f"{name} ({row.task}, {row.needs})", name) for name, row in datasets.iterrows()],
                                  value=recipe.dataset or None, description="Zoo data set", style=_STYLE,
                                  layout=_WIDE)
        self.text_file = w.Text(value=recipe.text_file, description="Text file (.txt)",
                                placeholder="texts.txt: one text per line", continuous_update=False, style=_STYLE,
                                layout=_WIDE)
        self.source_help = w.HTML()
        # step 2: preprocessing
        self.image_height = w.BoundedIntText(value=image.size[0], min=1, max=16384, description="Crop height (px)",
                                             style=_STYLE)
        self.image_width = w.BoundedIntText(value=image.size[1], min=1, max=16384, description="Crop width (px)",
                                            style=_STYLE)
        self.resize = w.BoundedIntText(value=image.resize or 0, min=0, max=65536, description="Resize shorter side (px)", style=_STYLE,
                                       tooltip="0: crop size / 0.875 (the ImageNet convention, 256 for 224)")
        self.normalize = w.Dropdown(options=NORMALIZATIONS, value=image.normalize, description="Normalisation",
                                    style=_STYLE)
        self.layout = w.Dropdown(options=LAYOUTS, value=image.layout, description="Layout", style=_STYLE)
        self.grayscale = w.Checkbox(value=image.grayscale, description="Grayscale (1 channel)", indent=False)
        self.tokenizer = w.Text(value=text.tokenizer, description="tokenizer.json", placeholder="path/to/tokenizer.json",
                                continuous_update=False, style=_STYLE, layout=_WIDE)
        self.sequence_length = w.BoundedIntText(value=text.sequence_length, min=1, max=65536,
                                                description="Sequence length (tokens)", style=_STYLE)
        self.preprocessing_help = w.HTML()
        # step 5: size
        self.calibration_size = w.BoundedIntText(value=recipe.calibration_size, min=1, max=10_000_000,
                                                 description="Calibration (samples)", style=_STYLE)
        self.evaluation_size = w.BoundedIntText(value=recipe.evaluation_size, min=0, max=10_000_000,
                                                description="Evaluation (samples)", style=_STYLE)
        self.seed = w.BoundedIntText(value=recipe.seed, min=0, max=2**31 - 1, description="Split seed", style=_STYLE)
        self._controls = [self.source, self.folder, self.variable, self.labels_variable, self.dataset, self.text_file,
                          self.image_height, self.image_width, self.resize, self.normalize, self.layout, self.grayscale,
                          self.tokenizer, self.sequence_length, self.calibration_size, self.evaluation_size, self.seed]
        # outputs
        self.mapping_html = w.HTML()
        self.thumbnails_html = w.HTML()
        self.texts_html = w.HTML()
        #: the preview's histogram (a plotly Figure of bars; None until there is data), drawn in histogram_view
        self.histogram: Any = None
        self.histogram_view = figure_output()
        self.size_html = w.HTML()
        self.problems_html = w.HTML()
        self.code_html = w.HTML()

    @staticmethod
    def _histogram_figure(values: Any, title: str) -> Any:
        """Bars of ``values`` counted here, so the browser gets at most 60 bars, not up to
        HISTOGRAM_VALUES numbers: one per value when there are 60 or fewer (token counts, 8-bit
        pixels of small images), else 60 even bins."""
        from plotly.graph_objects import Bar, Figure

        values = np.asarray(values, dtype=np.float64)
        distinct, counts = np.unique(values, return_counts=True)
        if len(distinct) > 60:
            counts, edges = np.histogram(values, 60)
            centres, width = (edges[:-1] + edges[1:]) / 2, float(edges[1] - edges[0])
        else:
            centres, width = distinct, float(np.diff(distinct).min()) * 0.8 if len(distinct) > 1 else 1.0
        figure = Figure(Bar(x=centres, y=counts, width=width, marker_color="#4c78a8",
                            hovertemplate="%{x:.4g}: %{y}<extra></extra>"))
        figure.update_layout(height=220, width=480, margin={"l": 45, "r": 10, "t": 30, "b": 35},
                             title={"text": title, "font": {"size": 12}}, template="plotly_white")
        return figure

    def _make_layout(self) -> w.VBox:
        self.step_buttons = [w.Button(description=f"{i + 1}. {title}", layout=w.Layout(width="130px"))
                             for i, title in enumerate(STEPS)]
        for button in self.step_buttons:
            button.on_click(self._on_step_click)
        self.back_button = w.Button(description="Back", icon="arrow-left")
        self.next_button = w.Button(description="Next", icon="arrow-right")
        self.back_button.on_click(self._on_back)
        self.next_button.on_click(self._on_next)
        self.step_label = w.HTML()
        self.image_box = w.VBox([self.image_height, self.image_width, self.resize, self.normalize, self.layout,
                                 self.grayscale])
        self.text_box = w.VBox([self.tokenizer, self.sequence_length])
        pages = [
            w.VBox([self.source, self.folder, self.variable, self.labels_variable, self.dataset, self.text_file,
                    self.source_help]),
            w.VBox([self.preprocessing_help, self.image_box, self.text_box]),
            w.VBox([w.HTML("<b>The model's inputs and what the first prepared sample gives</b> "
                           "(checked before anything runs)"), self.mapping_html]),
            w.VBox([self.thumbnails_html, self.histogram_view, self.texts_html]),
            w.VBox([self.calibration_size, self.evaluation_size, self.seed, self.size_html]),
        ]
        self.pages = w.Stack(pages, selected_index=0)
        title = w.HTML(f"<b>Calibration data for {esc(self.target.label)}</b>")
        code_title = w.HTML("<b>Equivalent Python code</b> (the same data without the widget)")
        box = w.VBox([title, w.HBox(self.step_buttons), self.step_label, self.pages,
                      w.HBox([self.back_button, self.next_button]), self.problems_html, self.errors, code_title,
                      self.code_html])
        box.add_class("rnb-calibration-wizard")
        return box

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # -- the recipe --------------------------------------------------------------------------------
    @property
    def recipe(self) -> Recipe:
        """The current choices as a :class:`Recipe`; setting one sets the controls (one rebuild)::

            wizard.recipe = Recipe(source="zoo", dataset="digits", calibration_size=50)
            data = wizard.recipe.build(model, variables={"x_calib": x})   # the wizard's data, in a script
        """
        return Recipe(
            source=self.source.value,
            folder=self.folder.value.strip(),
            variable=self.variable.value.strip(),
            labels_variable=self.labels_variable.value.strip(),
            dataset=self.dataset.value or "",
            text_file=self.text_file.value.strip(),
            image=ImageOptions(size=(self.image_height.value, self.image_width.value), resize=self.resize.value or None,
                               normalize=self.normalize.value, layout=self.layout.value,
                               grayscale=self.grayscale.value),
            text=TextOptions(tokenizer=self.tokenizer.value.strip(), sequence_length=self.sequence_length.value),
            calibration_size=self.calibration_size.value,
            evaluation_size=self.evaluation_size.value,
            seed=self.seed.value,
        )

    @recipe.setter
    def recipe(self, recipe: Recipe) -> None:
        self._set_recipe(recipe)

    @surfaces_errors("calibration data")
    def _set_recipe(self, recipe: Recipe) -> None:
        datasets = [name for _, name in self.dataset.options]
        if recipe.dataset and recipe.dataset not in datasets:  # the dropdown would refuse it less clearly
            raise UnknownNameError("zoo data set", recipe.dataset, datasets)
        values = {self.source: recipe.source, self.folder: recipe.folder, self.variable: recipe.variable,
                  self.labels_variable: recipe.labels_variable, self.dataset: recipe.dataset or None,
                  self.text_file: recipe.text_file, self.image_height: recipe.image.size[0],
                  self.image_width: recipe.image.size[1], self.resize: recipe.image.resize or 0,
                  self.normalize: recipe.image.normalize, self.layout: recipe.image.layout,
                  self.grayscale: recipe.image.grayscale, self.tokenizer: recipe.text.tokenizer,
                  self.sequence_length: recipe.text.sequence_length, self.calibration_size: recipe.calibration_size,
                  self.evaluation_size: recipe.evaluation_size, self.seed: recipe.seed}
        with self._batch():
            for control, value in values.items():
                control.value = value

    @property
    def code(self) -> str:
        """Python code building the same reader and evaluation data without the widget."""
        return self.recipe.to_python(self.target)

    def namespace(self) -> dict[str, Any]:
        """The variables the wizard can read: the notebook's (IPython user namespace) and those of set_data."""
        names: dict[str, Any] = {}
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython comes with ipywidgets
            get_ipython = None
        shell = get_ipython() if get_ipython is not None else None
        if shell is not None:
            names.update(shell.user_ns)
        names.update(self._given)
        return names

    @surfaces_errors("calibration data")
    def set_data(self, data: Any, name: str = "data", labels: Any = None) -> None:
        """Use ``data`` (an array, a list of arrays or feed dicts, or a list of texts) as the source.

        The generated code refers to it as ``name`` (a notebook variable of that name, typically);
        ``labels`` (one per sample) become the evaluation labels. Example::

            wizard.set_data(x_calib, name="x_calib", labels=y_calib)
        """
        if not name.isidentifier() or keyword.iskeyword(name):
            raise CalibrationDataError(f"name={name!r} must be a Python variable name: the code refers to the data by it.")
        texts = isinstance(data, (list, tuple)) and bool(data) and all(isinstance(t, str) for t in data)
        self._given[name] = data
        with self._batch():
            if labels is not None:
                self._given[f"{name}_labels"] = labels
            self.labels_variable.value = f"{name}_labels" if labels is not None else ""
            self.source.value = "texts" if texts else "variable"
            self.text_file.value = ""
            self.variable.value = name

    @surfaces_errors("calibration data")
    def refresh(self) -> None:
        """Rebuild the data from the current choices (done on every change; call it after changing a
        notebook variable the wizard reads)."""
        self._rebuild()

    @contextlib.contextmanager
    def _batch(self) -> Iterator[None]:
        """Change several controls with one rebuild at the end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        self._rebuild()

    def _rebuild(self) -> None:
        if self._holding:
            return
        recipe = self.recipe
        self._show_controls(recipe)
        self.code_html.value = ('<pre style="font-size:12px;background:#f6f8fa;padding:8px;overflow:auto">'
                                f"{esc(recipe.to_python(self.target))}</pre>")
        self.data, self.notes = None, []
        missing = recipe.missing()
        if missing:
            self.problems = [missing]
            self._render()
            return
        try:
            # problems with the samples are listed (shown next to the inputs), not raised
            self.data = recipe.build(self.target, self.namespace(), check=False)
        except Exception as exc:
            self.problems = [str(exc)]
            self._render()
            raise  # shown in the ErrorBox by the decorated caller
        self.problems, self.notes = list(self.data.problems), list(self.data.notes)
        self._render()

    def _ready(self) -> PreparedData:
        if self.data is None:  # the source is incomplete or could not be read: self.problems says why
            raise CalibrationDataError("The calibration data is not ready:\n- " + "\n- ".join(self.problems))
        return self.data

    def reader(self) -> CalibrationReader:
        """A reader over the calibration samples, for ``ryzen_nb.quantize(model, out, "XINT8", reader)``.

        Raises :class:`~ryzen_nb.errors.CalibrationDataError` listing the problems while there are any.
        """
        return self._ready().reader()

    def evaluation(self) -> tuple[list[Feed], np.ndarray | None]:
        """The held-out feeds (never used for calibration) and their labels (None when the source has none)."""
        return self._ready().evaluation()

    # -- showing -------------------------------------------------------------------------------------
    def _show_controls(self, recipe: Recipe) -> None:
        source = recipe.source
        _hidden(self.folder, source not in ("images", "npy"))
        _hidden(self.variable, source not in ("variable", "texts"))
        _hidden(self.labels_variable, source not in ("variable", "texts"))
        _hidden(self.dataset, source != "zoo")
        _hidden(self.text_file, source != "texts")
        self.source_help.value = _SOURCE_HELP[source]
        kind = recipe.preprocessing(self.target)
        _hidden(self.image_box, kind != "images")
        _hidden(self.text_box, kind != "tokenizer")
        self.preprocessing_help.value = self._preprocessing_text(recipe, kind)

    def _preprocessing_text(self, recipe: Recipe, kind: str) -> str:
        o = recipe.image
        if kind == "images":
            short = o.resize or f"{round(min(o.size) / 0.875)} (crop / 0.875)"
            return (f"Each image: shorter side resized to {esc(short)} px, centre crop {o.size[0]} x {o.size[1]}, "
                    f"normalisation <code>{esc(o.normalize)}</code>, layout {esc(o.layout)}, batch axis of 1 "
                    "(as <code>ImageFolderReader</code> does). Size and layout come from the model's input shape "
                    f"{esc(dims(self.target.specs[0].shape))}.")
        if kind == "zoo-model":
            return (f"Samples go through the zoo model's own preprocessing, <code>model.preprocess(sample)</code> "
                    f"({esc(self.target.zoo_name)}: the tokenizer or image pipeline it was trained with).")
        if kind == "tokenizer":
            return ("Texts are tokenized with the model's <code>tokenizer.json</code> (Hugging Face tokenizers), padded "
                    "or truncated to the sequence length; <code>input_ids</code> and <code>attention_mask</code> "
                    "(and zeros for <code>token_type_ids</code> if the model takes it).")
        if recipe.source == "zoo":
            return ("Your model is not a zoo model: the zoo samples go in as they are (no preprocessing). If the "
                    "Mapping step shows a mismatch, preprocess them in the notebook and use the source "
                    "'Notebook array or list'.")
        return ("The arrays go in as they are: an array is split along axis 0 into samples of the model's batch "
                "size (a missing batch axis is added), float64 becomes float32. Preprocess them in the notebook if "
                "the Mapping step shows a mismatch.")

    def _render(self) -> None:
        data = self.data
        self._render_problems()
        first = data.calibration_feeds[0] if data is not None and data.calibration_feeds else None
        self.mapping_html.value = self._mapping_table(first)
        self._render_preview(data)
        self._render_size(data)

    def _render_problems(self) -> None:
        items = [f'<li style="{_PROBLEM}">{esc(p)}</li>' for p in self.problems]
        items += [f'<li style="color:#555">{esc(n)}</li>' for n in self.notes]
        self.problems_html.value = f'<ul style="margin:4px 0">{"".join(items)}</ul>' if items else ""

    def _mapping_table(self, feed: Feed | None) -> str:
        if feed is None:
            rows = [MappingRow(s.name, f"{s.dtype} {dims(s.shape)}", "", "no data yet") for s in self.target.specs]
        else:
            rows = mapping_rows(self.target.specs, feed)
        head = "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>"
                       for h in ("Model input", "expects", "Data", "gives", ""))
        body = []
        for row in rows:
            if feed is None:
                status, style = "", ""
            elif row.problem:
                status, style = f"✗ {esc(row.problem)}", _PROBLEM
            else:
                status, style = "✓ fits", "color:#1a7f37"
            cells = [row.input or "—", row.expected, row.data or "—", row.given]
            body.append(f"<tr style='{style}'>" + "".join(f"<td style='padding:2px 8px'>{esc(c)}</td>" for c in cells)
                        + f"<td style='padding:2px 8px;white-space:normal;max-width:520px'>{status}</td></tr>")
        return f"<table class='rnb-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"

    def _render_preview(self, data: PreparedData | None) -> None:
        self.thumbnails_html.value = self.texts_html.value = ""
        counts = data.token_counts() if data is not None else None
        if data is None or not data.calibration_feeds:
            self.histogram = None
            self.histogram_view.outputs = ()
            return
        if counts is not None:
            values, title = counts, "Tokens per calibration text (padding excluded)"
        else:
            name = self.target.names[0]
            values = histogram_values(data.calibration_feeds, name)
            title = f"Values of input {name} over the calibration samples"
        self.histogram = self._histogram_figure(values, title)
        show_figure(self.histogram_view, self.histogram)
        if data.kind in ("image-file", "image-array", "array"):
            captions = [Path(s).name if data.kind == "image-file" else f"sample {i}" for i, s in enumerate(data.preview)]
            self.thumbnails_html.value = thumbnails_html(data.preview, captions)
        elif counts is not None:
            self.texts_html.value = self._texts_table(data, counts)

    def _texts_table(self, data: PreparedData, counts: list[int]) -> str:
        texts = [t for sample in data.preview for t in (sample if data.kind == "pair" else [sample])]
        length = max((f.get("input_ids", np.zeros((1, 0))).shape[-1] for f in data.calibration_feeds[:1]), default=0)
        rows = "".join(f"<tr><td style='padding:2px 8px'>{n}</td><td style='padding:2px 8px'>{esc(t)}</td></tr>"
                       for t, n in zip(texts[:PREVIEW_SAMPLES], counts))
        full = sum(1 for n in counts if n >= length > 0)
        note = (f"<p style='{_PROBLEM}'>{full} of {len(counts)} texts fill all {length} tokens: they are probably "
                "truncated.</p>" if full else "")
        return (f"<table class='rnb-table'><thead><tr><th>tokens</th><th>text</th></tr></thead><tbody>{rows}"
                f"</tbody></table>{note}")

    def _render_size(self, data: PreparedData | None) -> None:
        if data is None:
            self.size_html.value = "<p>No data yet.</p>"
            return
        megabytes = data.calibration_megabytes
        memory = "< 0.01 MB" if megabytes < 0.01 else f"≈ {megabytes:.2f} MB"
        labels = "with labels" if data.evaluation_labels is not None else "without labels"
        self.size_html.value = (
            f"<ul><li>Calibration: <b>{len(data.calibration_feeds)} samples</b> (model runs), {memory} of prepared "
            f"tensors in memory</li><li>Evaluation: <b>{len(data.evaluation_feeds)} samples</b>, {labels}, held out: "
            f"never used for calibration</li><li>Source: {esc(data.available)}</li></ul>"
        )

    # -- navigation ----------------------------------------------------------------------------------
    def _show_step(self) -> None:
        self.pages.selected_index = self.step
        for index, button in enumerate(self.step_buttons):
            button.button_style = "primary" if index == self.step else ""
        self.step_label.value = f"Step {self.step + 1} of {len(STEPS)}: <b>{STEPS[self.step]}</b>"
        self.back_button.disabled = self.step == 0
        self.next_button.disabled = self.step == len(STEPS) - 1

    @surfaces_errors("navigation")
    def go(self, step: int | str) -> None:
        """Show step ``step``: its index (0 = Source ... 4 = Size) or its title ("mapping")."""
        self.step = _step_index(step)
        self._show_step()

    def next(self) -> None:
        """Show the next step."""
        self.go(min(self.step + 1, len(STEPS) - 1))

    def back(self) -> None:
        """Show the previous step."""
        self.go(max(self.step - 1, 0))

    # -- callbacks -----------------------------------------------------------------------------------
    @surfaces_errors("calibration data")
    def _on_change(self, change: dict[str, Any]) -> None:
        self._rebuild()

    @surfaces_errors("navigation")
    def _on_step_click(self, button: w.Button) -> None:
        self.go(self.step_buttons.index(button))

    @surfaces_errors("navigation")
    def _on_back(self, button: w.Button) -> None:
        self.back()

    @surfaces_errors("navigation")
    def _on_next(self, button: w.Button) -> None:
        self.next()


_SOURCE_HELP = {
    "images": "Images (" + ", ".join(IMAGE_SUFFIXES) + ") read with Pillow, in file-name order, then split at random "
              "(seeded) into calibration and evaluation.",
    "npy": "One .npy file per sample (a single-input model) or .npz files holding one array per input name, or one "
           "sub-folder of .npy files per input (Quark's layout).",
    "variable": "The name of a notebook variable: a numpy array (split along axis 0 into samples), a list of arrays, "
                "or a list of feed dicts {input name: array}. Or call <code>wizard.set_data(x)</code>.",
    "zoo": "A data set of <code>ryzen_nb.zoo</code>: its own calibration and evaluation splits, which never overlap.",
    "texts": "A .txt file (one text per line) or the name of a notebook list of str. The file is used when given.",
}
