"""The CalibrationWizard driven through its controls, without a browser.

Every test sets the widgets' values the way a click would (traitlets fire the same callbacks)
and checks what the wizard gives: the reader, the held-out evaluation split, the problems and
errors it shows, and the generated code, which is exec'd and must rebuild the same arrays.
The data logic itself (ryzen_nb.calibration.recipe) is tested without widgets in
tests/unit/test_calibration_recipe.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import ryzen_nb
from ryzen_nb import zoo
from ryzen_nb.calibration.readers import CalibrationReader
from ryzen_nb.calibration.recipe import ImageOptions, Recipe, mapping_rows, split_indices
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.prepare import input_specs, ort_session
from ryzen_nb.testing import resnet_cnn
from ryzen_nb.ui.wizard import CalibrationWizard

Image = pytest.importorskip("PIL.Image")


# -- helpers -----------------------------------------------------------------------------------------


def run_code(wizard: CalibrationWizard, **variables: Any) -> dict[str, Any]:
    """Exec the wizard's code in a fresh namespace holding only ``variables`` (the notebook's)."""
    namespace: dict[str, Any] = dict(variables)
    exec(compile(wizard.code, "<wizard code>", "exec"), namespace)
    return namespace


def assert_same_feeds(actual: list[dict[str, np.ndarray]], expected: list[dict[str, np.ndarray]]) -> None:
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        assert list(a) == list(b)
        for name in a:
            assert a[name].dtype == b[name].dtype
            np.testing.assert_array_equal(a[name], b[name])


def assert_code_reproduces(wizard: CalibrationWizard, **variables: Any) -> None:
    namespace = run_code(wizard, **variables)
    assert_same_feeds(list(namespace["reader"]), list(wizard.reader()))
    feeds, labels = wizard.evaluation()
    assert_same_feeds(namespace["evaluation_feeds"], feeds)
    if labels is None:
        assert namespace["evaluation_labels"] is None
    else:
        np.testing.assert_array_equal(namespace["evaluation_labels"], labels)


def fingerprints(feeds: list[dict[str, np.ndarray]]) -> set[bytes]:
    return {b"".join(a.tobytes() for a in feed.values()) for feed in feeds}


@pytest.fixture
def cnn_path(tmp_path: Path) -> Path:
    """A small CNN taking float32 [1, 3, 16, 16], saved as a file the way a user's model would be."""
    path = tmp_path / "cnn.onnx"
    onnx.save(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), str(path))
    return path


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    """Twelve PNGs of different sizes and aspect ratios (the reader resizes and centre-crops them)."""
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(12):
        size = (20 + 3 * i, 18 + 2 * (i % 4))
        pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"img_{i:02d}.png")
    return folder


# -- zoo data with a zoo model -------------------------------------------------------------------------


def test_zoo_digits_reader_quantizes_and_evaluation_is_held_out() -> None:
    wizard = CalibrationWizard("resnet_digits")
    wizard.source.value = "zoo"
    wizard.dataset.value = "digits"
    wizard.calibration_size.value = 50
    wizard.evaluation_size.value = 100
    assert wizard.problems == []
    assert wizard.errors.last_error is None

    reader = wizard.reader()
    assert isinstance(reader, CalibrationReader)
    assert len(reader) == 50
    summary = ryzen_nb.quantize(zoo.load_model("resnet_digits").path, None, "XINT8", reader, progress=False)
    assert summary.calibration_samples == 50

    feeds, labels = wizard.evaluation()
    assert len(feeds) == 100 and labels is not None and labels.shape == (100,)
    # held out: no evaluation image is a calibration image (the zoo's own disjoint splits)
    assert not fingerprints(feeds) & fingerprints(list(wizard.reader()))
    expected = zoo.load_dataset("digits", split="evaluation")
    np.testing.assert_array_equal(labels, expected.labels[:100])

    # the quantized model runs the held-out feeds, and mostly agrees with the labels
    session = ort_session(summary.model)
    predictions = [int(np.argmax(session.run(None, feed)[0])) for feed in feeds]
    assert np.mean(np.array(predictions) == labels) > 0.8


def test_zoo_digits_code_rebuilds_the_same_data() -> None:
    wizard = CalibrationWizard("resnet_digits", calibration_size=30, evaluation_size=40)
    assert wizard.source.value == "zoo" and wizard.dataset.value == "digits"  # a zoo model's own defaults
    assert "zoo.load_dataset('digits', split='calibration')" in wizard.code
    assert "<pre" in wizard.code_html.value  # shown live in the widget
    assert_code_reproduces(wizard)


def test_sizes_are_capped_to_the_split_with_a_note() -> None:
    wizard = CalibrationWizard("resnet_digits", calibration_size=1000, evaluation_size=5)
    assert len(wizard.reader()) == 179  # the digits calibration split
    assert any("holds 179" in note for note in wizard.notes)
    assert "179 samples" in wizard.size_html.value and "MB" in wizard.size_html.value


def test_zoo_data_with_a_model_of_your_own_goes_in_as_is(cnn_path: Path) -> None:
    wizard = CalibrationWizard(cnn_path, calibration_size=20, evaluation_size=10)
    wizard.source.value = "zoo"
    wizard.dataset.value = "digits"
    # uint8 8x8 digits for a float32 [1, 3, 16, 16] input: one message for all 20 samples, with the fix
    assert wizard.problems[0].startswith("Calibration sample 0, input 'input': dtype uint8")
    assert "astype(np.float32)" in wizard.problems[0] and "19 more calibration" in wizard.problems[0]
    assert wizard.thumbnails_html.value.count("<img") == 8  # the raw digits, stretched to be visible
    namespace = run_code(wizard)
    assert_same_feeds(namespace["calibration_feeds"], wizard.data.calibration_feeds)
    assert_same_feeds(namespace["evaluation_feeds"], wizard.data.evaluation_feeds)


# -- the wizard edits a Recipe ----------------------------------------------------------------------------


def test_the_wizard_gives_what_its_recipe_builds(cnn_path: Path, image_folder: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    recipe = Recipe(source="images", folder=str(image_folder), image=ImageOptions(size=(16, 16), normalize="unit"),
                    calibration_size=5, evaluation_size=3, seed=7)
    wizard.recipe = recipe  # sets every control, then rebuilds once
    assert wizard.recipe == recipe
    assert (wizard.source.value, wizard.normalize.value, wizard.seed.value) == ("images", "unit", 7)
    assert wizard.problems == [] and wizard.code == recipe.to_python(cnn_path)
    data = recipe.build(cnn_path)  # the same recipe in a script, without the widget
    assert_same_feeds(list(wizard.reader()), list(data.reader()))
    assert_same_feeds(wizard.evaluation()[0], data.evaluation()[0])

    # a control changed by hand shows in the recipe
    wizard.calibration_size.value = 4
    assert wizard.recipe.calibration_size == 4 and len(wizard.reader()) == 4

    wizard.recipe = Recipe(source="zoo", dataset="no_such_data")
    assert "Unknown zoo data set 'no_such_data'" in str(wizard.errors.last_error)
    assert wizard.recipe.calibration_size == 4  # refused as a whole: no control changed


# -- an image folder ---------------------------------------------------------------------------------------


def test_image_folder_with_a_model_file(cnn_path: Path, image_folder: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    assert wizard.source.value == "images"
    assert (wizard.image_height.value, wizard.image_width.value, wizard.layout.value) == (16, 16, "NCHW")
    wizard.folder.value = str(image_folder)
    wizard.calibration_size.value = 8
    wizard.evaluation_size.value = 4
    assert wizard.problems == [], wizard.problems

    calibration = list(wizard.reader())
    feeds, labels = wizard.evaluation()
    assert len(calibration) == 8 and len(feeds) == 4 and labels is None
    assert calibration[0]["input"].shape == (1, 3, 16, 16) and calibration[0]["input"].dtype == np.float32
    assert not fingerprints(feeds) & fingerprints(calibration)

    summary = ryzen_nb.quantize(cnn_path, None, "XINT8", wizard.reader(), progress=False)
    assert summary.calibration_samples == 8
    assert wizard.thumbnails_html.value.count("<img") == 8  # the first calibration images, as PNG
    assert "data:image/png;base64," in wizard.thumbnails_html.value
    assert wizard.histogram.data[0].y.sum() > 0  # the bars of the calibration images' values
    # and in the widget's state, before any browser has drawn it (a FigureWidget lost what was set this early)
    shown = wizard.histogram_view.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert shown["layout"]["title"]["text"].startswith("Values of input") and shown["data"][0]["type"] == "bar"
    assert_code_reproduces(wizard)

    # a preprocessing change goes into both the data and the code
    wizard.normalize.value = "unit"
    wizard.resize.value = 24
    values = np.concatenate([f["input"].ravel() for f in wizard.reader()])
    assert 0.0 <= values.min() and values.max() <= 1.0
    assert "normalize='unit'" in wizard.code and "resize=24" in wizard.code
    assert_code_reproduces(wizard)


def test_image_folder_nhwc_for_an_nchw_model_shows_the_fix(cnn_path: Path, image_folder: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    wizard.folder.value = str(image_folder)
    wizard.layout.value = "NHWC"
    assert any("transpose NHWC <-> NCHW" in p for p in wizard.problems)
    assert "transpose NHWC &lt;-&gt; NCHW" in wizard.mapping_html.value


def test_missing_and_empty_folders_show_errors(cnn_path: Path, tmp_path: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    assert wizard.problems and "No folder yet" in wizard.problems[0]  # nothing chosen: a prompt, not an error
    assert wizard.errors.last_error is None

    wizard.folder.value = str(tmp_path / "no_such_folder")
    assert isinstance(wizard.errors.last_error, CalibrationDataError)
    assert "does not exist" in wizard.errors.value
    assert wizard.problems and "does not exist" in wizard.problems[0]
    with pytest.raises(CalibrationDataError, match="not ready"):
        wizard.reader()

    empty = tmp_path / "empty"
    empty.mkdir()
    wizard.folder.value = str(empty)
    assert "No images" in wizard.errors.value


# -- a .npy folder -------------------------------------------------------------------------------------------


def test_npy_folder_with_a_wrong_shape_is_reported_with_the_fix(cnn_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "npy"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(6):  # each file misses the batch axis: [3, 16, 16] for a [1, 3, 16, 16] input
        np.save(folder / f"sample_{i}.npy", rng.standard_normal((3, 16, 16)).astype(np.float32))
    wizard = CalibrationWizard(cnn_path)
    wizard.source.value = "npy"
    wizard.folder.value = str(folder)

    assert wizard.problems, "the shape mismatch must be reported"
    assert "Add the batch dimension with x[None]" in wizard.problems[0]
    assert wizard.problems[0].startswith("Calibration sample 0, input 'input': rank 3")
    rows = mapping_rows(input_specs(onnx.load(str(cnn_path))), wizard.data.calibration_feeds[0])
    assert rows[0].given == "float32 [3, 16, 16]" and "x[None]" in rows[0].problem
    # the table shows it in red, with the fix, before anything runs
    assert "#b00020" in wizard.mapping_html.value and "x[None]" in wizard.mapping_html.value
    with pytest.raises(CalibrationDataError, match="batch dimension"):
        wizard.reader()


def test_npy_folder_that_fits(cnn_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "npy"
    folder.mkdir()
    rng = np.random.default_rng(2)
    for i in range(6):
        np.save(folder / f"sample_{i}.npy", rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
    wizard = CalibrationWizard(cnn_path)
    wizard.source.value = "npy"
    wizard.folder.value = str(folder)
    wizard.calibration_size.value = 4
    wizard.evaluation_size.value = 2
    assert wizard.problems == []
    assert "✓ fits" in wizard.mapping_html.value
    assert_code_reproduces(wizard)


# -- notebook variables ---------------------------------------------------------------------------------------


def test_numpy_array_via_set_data_with_labels(cnn_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20, 3, 16, 16)).astype(np.float32)
    y = np.arange(20) % 10
    wizard = CalibrationWizard(cnn_path, calibration_size=12, evaluation_size=5)
    wizard.set_data(x, name="x_calib", labels=y)
    assert wizard.source.value == "variable" and wizard.variable.value == "x_calib"
    assert wizard.problems == []

    calibration = list(wizard.reader())
    feeds, labels = wizard.evaluation()
    assert len(calibration) == 12 and len(feeds) == 5
    calibration_index, evaluation_index = split_indices(20, 12, 5, seed=0)
    assert not set(calibration_index) & set(evaluation_index)
    np.testing.assert_array_equal(labels, y[evaluation_index])
    for feed, i in zip(feeds, evaluation_index):  # each evaluation feed is its labelled sample
        np.testing.assert_array_equal(feed["input"], x[i : i + 1])
    assert "make_reader(x_calib," in wizard.code
    assert_code_reproduces(wizard, x_calib=x, x_calib_labels=y)


def test_nan_in_the_data_is_reported(cnn_path: Path) -> None:
    x = np.random.default_rng(4).standard_normal((10, 3, 16, 16)).astype(np.float32)
    x[6, 1, 2, 3] = np.nan
    wizard = CalibrationWizard(cnn_path, calibration_size=10, evaluation_size=0)
    wizard.set_data(x)
    assert len(wizard.problems) == 1
    assert "Calibration sample 6, input 'input': holds 1 NaN value(s)" in wizard.problems[0]
    assert "np.nan_to_num" in wizard.problems[0]
    assert "NaN" in wizard.problems_html.value
    with pytest.raises(CalibrationDataError, match="NaN"):
        wizard.reader()


def test_a_variable_that_does_not_exist(cnn_path: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    wizard.set_data(np.zeros((4, 3, 16, 16), np.float32), name="x_calib")
    wizard.variable.value = "x_calb"
    assert isinstance(wizard.errors.last_error, CalibrationDataError)
    message = str(wizard.errors.last_error)
    assert "no variable 'x_calb'" in message and "Did you mean 'x_calib'?" in message
    assert "x_calb" in wizard.errors.value  # shown in the widget, HTML-escaped


def test_a_generator_is_refused_with_the_fix(cnn_path: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    wizard.set_data(np.zeros((1, 3, 16, 16), np.float32) for _ in range(4))
    assert "make it a list first" in str(wizard.errors.last_error)


def test_navigation_back_next_and_step_titles(cnn_path: Path) -> None:
    wizard = CalibrationWizard(cnn_path)
    assert wizard.step == 0 and wizard.back_button.disabled
    wizard.next()
    wizard.next()
    assert wizard.step == 2 and wizard.pages.selected_index == 2 and "Step 3 of 5" in wizard.step_label.value
    wizard.back()
    assert wizard.step == 1
    wizard.go("size")
    assert wizard.step == 4 and wizard.next_button.disabled
    wizard.step_buttons[3].click()  # clicking a step title jumps there
    assert wizard.step == 3
    wizard.next_button.click()
    assert wizard.step == 4
    wizard.go(7)
    assert "Step 7 does not exist" in wizard.errors.value and wizard.step == 4


def test_a_model_proto_is_accepted() -> None:
    proto = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)
    wizard = CalibrationWizard(proto, calibration_size=3, evaluation_size=2)
    wizard.set_data([np.zeros((1, 3, 16, 16), np.float32) + i for i in range(5)], name="samples_list")
    assert wizard.problems == []
    assert 'ryzen_nb.quantize(model, "model_xint8.onnx"' in wizard.code
    assert_code_reproduces(wizard, samples_list=[np.zeros((1, 3, 16, 16), np.float32) + i for i in range(5)])


# -- texts ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Any:
    try:
        return zoo.load_model("minilm_l6")
    except zoo.ZooError as exc:
        pytest.skip(f"the zoo text model minilm_l6 is not available offline (needs the package index once): {exc}")


def test_sentences_with_the_zoo_text_model(minilm: Any) -> None:
    wizard = CalibrationWizard(minilm, calibration_size=5, evaluation_size=4)
    assert wizard.source.value == "zoo" and wizard.dataset.value == "sentences"
    assert wizard.problems == []
    calibration = list(wizard.reader())
    assert len(calibration) == 10  # 5 sentence pairs, two model runs each
    assert calibration[0]["input_ids"].shape == (1, 128) and calibration[0]["input_ids"].dtype == np.int64
    feeds, labels = wizard.evaluation()
    assert len(feeds) == 8 and labels.shape == (4,)
    counts = wizard.data.token_counts()
    assert len(counts) == 10 and all(0 < n < 128 for n in counts)
    assert wizard.histogram.data[0].y.sum() == 10  # the token counts are what the histogram shows
    assert "<td" in wizard.texts_html.value
    assert_code_reproduces(wizard)


def test_a_list_of_texts_and_a_tokenizer_json(minilm: Any, tmp_path: Path) -> None:
    texts = [f"Sentence number {i} talks about {'trains' if i % 2 else 'the weather'}." for i in range(12)]
    # the model as a file: the wizard tokenizes with the tokenizer.json found beside it
    wizard = CalibrationWizard(minilm.path, calibration_size=8, evaluation_size=4)
    assert wizard.source.value == "texts"
    assert wizard.tokenizer.value.endswith("tokenizer.json") and wizard.sequence_length.value == 128
    scores = np.arange(12, dtype=np.float32)
    wizard.set_data(texts, name="my_texts", labels=scores)
    assert wizard.source.value == "texts" and wizard.problems == []
    calibration = list(wizard.reader())
    calibration_index, evaluation_index = split_indices(12, 8, 4)
    for feed, i in zip(calibration, calibration_index):  # the same tokens as the zoo model's own preprocessing
        assert_same_feeds([feed], [minilm.preprocess(texts[i])])
    np.testing.assert_array_equal(wizard.evaluation()[1], scores[evaluation_index])
    assert "TextEncoder.from_tokenizer_json" in wizard.code
    assert_code_reproduces(wizard, my_texts=texts, my_texts_labels=scores)

    # the same texts from a .txt file (one per line; blank lines skipped)
    text_file = tmp_path / "texts.txt"
    text_file.write_text("\n".join(texts[:6]) + "\n\n" + "\n".join(texts[6:]) + "\n", encoding="utf-8")
    wizard.labels_variable.value = ""
    wizard.text_file.value = str(text_file)
    assert wizard.problems == []
    assert_same_feeds(list(wizard.reader()), calibration)
    assert_code_reproduces(wizard)

    wizard.tokenizer.value = str(tmp_path / "missing.json")
    assert "tokenizer file" in wizard.errors.value
