"""Calibration recipes (ryzen_nb.calibration.recipe) from plain Python, as a script uses them.

Each source is built for a model, its split checked to be disjoint, its data checked against what
the generated code (exec'd) rebuilds, and its errors checked to name the sample and the fix. The
widget that edits a Recipe is tested in tests/ui/test_wizard.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from ryzen_nb import zoo
from ryzen_nb.calibration import ImageOptions, ModelTarget, PreparedData, Recipe, TextOptions
from ryzen_nb.calibration.recipe import check_samples, mapping_rows, split_indices
from ryzen_nb.errors import CalibrationDataError, UnknownNameError
from ryzen_nb.testing import resnet_cnn

Feeds = list[dict[str, np.ndarray]]


# -- helpers -----------------------------------------------------------------------------------------


def fingerprints(feeds: Feeds) -> set[bytes]:
    return {b"".join(a.tobytes() for a in feed.values()) for feed in feeds}


def assert_same_feeds(actual: Feeds, expected: Feeds) -> None:
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        assert list(a) == list(b)
        for name in a:
            assert a[name].dtype == b[name].dtype
            np.testing.assert_array_equal(a[name], b[name])


def assert_code_rebuilds(recipe: Recipe, model: Any, data: PreparedData, **variables: Any) -> None:
    """recipe.to_python(model), exec'd with only ``variables``, gives ``data``'s feeds and labels."""
    namespace: dict[str, Any] = dict(variables)
    exec(compile(recipe.to_python(model), "<recipe code>", "exec"), namespace)
    assert_same_feeds(list(namespace["reader"]), list(data.reader()))
    feeds, labels = data.evaluation()
    assert_same_feeds(namespace["evaluation_feeds"], feeds)
    if labels is None:
        assert namespace["evaluation_labels"] is None
    else:
        np.testing.assert_array_equal(namespace["evaluation_labels"], labels)


@pytest.fixture
def cnn_path(tmp_path: Path) -> Path:
    """A small CNN taking float32 [1, 3, 16, 16] (input name 'input'), saved as a user's model would be."""
    path = tmp_path / "cnn.onnx"
    onnx.save(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), str(path))
    return path


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    """Twelve PNGs of different sizes and aspect ratios."""
    image = pytest.importorskip("PIL.Image")
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(12):
        pixels = rng.integers(0, 256, size=(18 + 2 * (i % 4), 20 + 3 * i, 3), dtype=np.uint8)
        image.fromarray(pixels).save(folder / f"img_{i:02d}.png")
    return folder


# -- no widgets ---------------------------------------------------------------------------------------


def test_the_recipe_imports_no_widget_library() -> None:
    # a fresh interpreter: this test process may have loaded ipywidgets for other tests
    code = ("import sys, ryzen_nb.calibration.recipe; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ipywidgets', 'plotly', 'IPython')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# -- the four sources a script uses most ------------------------------------------------------------------


def test_zoo_data_set() -> None:
    recipe = Recipe(source="zoo", dataset="digits", calibration_size=10, evaluation_size=5)
    data = recipe.build("resnet_digits")
    assert len(data.calibration_feeds) == 10 and len(data.evaluation_feeds) == 5 and data.problems == []
    assert data.calibration_megabytes == pytest.approx(10 * 64 * 4 / 1e6)
    reader = data.reader()
    # onnxruntime's CalibrationDataReader protocol: get_next until None, rewind starts again
    first = [reader.get_next() for _ in range(11)]
    assert first[-1] is None and first[0]["image"].shape == (1, 1, 8, 8)
    reader.rewind()
    np.testing.assert_array_equal(reader.get_next()["image"], first[0]["image"])
    feeds, labels = data.evaluation()
    np.testing.assert_array_equal(labels, zoo.load_dataset("digits", split="evaluation").labels[:5])
    assert not fingerprints(feeds) & fingerprints(list(data.reader()))  # the zoo's splits never overlap
    assert_code_rebuilds(recipe, "resnet_digits", data)


def test_image_folder(cnn_path: Path, image_folder: Path) -> None:
    # for_model reads the crop size and layout from the model's input shape; a Path is welcome
    recipe = Recipe.for_model(cnn_path, folder=image_folder, calibration_size=8, evaluation_size=4)
    assert recipe.source == "images" and recipe.image == ImageOptions(size=(16, 16), layout="NCHW")
    data = recipe.build(cnn_path)
    calibration = list(data.reader())
    feeds, labels = data.evaluation()
    assert len(calibration) == 8 and len(feeds) == 4 and labels is None
    assert calibration[0]["input"].shape == (1, 3, 16, 16) and calibration[0]["input"].dtype == np.float32
    assert not fingerprints(feeds) & fingerprints(calibration)
    assert [Path(p).name for p in data.preview] == [f"img_{i:02d}.png" for i in split_indices(12, 8, 4)[0]]
    assert_code_rebuilds(recipe, cnn_path, data)


def test_npy_files(cnn_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "npy"
    folder.mkdir()
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(6)]
    for i, array in enumerate(arrays):
        np.save(folder / f"sample_{i}.npy", array)
    recipe = Recipe(source="npy", folder=str(folder), calibration_size=4, evaluation_size=2, seed=3)
    data = recipe.build(cnn_path)
    calibration_index, evaluation_index = split_indices(6, 4, 2, seed=3)
    assert not set(calibration_index) & set(evaluation_index)
    assert_same_feeds(list(data.reader()), [{"input": arrays[i]} for i in calibration_index])
    assert_same_feeds(data.evaluation()[0], [{"input": arrays[i]} for i in evaluation_index])
    assert_code_rebuilds(recipe, cnn_path, data)


def test_variable_with_labels(cnn_path: Path) -> None:
    x = np.random.default_rng(3).standard_normal((20, 3, 16, 16)).astype(np.float32)
    y = np.arange(20) % 10
    recipe = Recipe(source="variable", variable="x_calib", labels_variable="y_calib", calibration_size=12,
                    evaluation_size=5)
    data = recipe.build(cnn_path, variables={"x_calib": x, "y_calib": y})
    calibration_index, evaluation_index = split_indices(20, 12, 5, seed=0)
    assert not set(calibration_index) & set(evaluation_index)
    assert len(data.reader()) == 12
    feeds, labels = data.evaluation()
    np.testing.assert_array_equal(labels, y[evaluation_index])
    for feed, i in zip(feeds, evaluation_index):  # each evaluation feed is its labelled sample
        np.testing.assert_array_equal(feed["input"], x[i : i + 1])
    assert "make_reader(x_calib," in recipe.to_python(cnn_path)
    assert_code_rebuilds(recipe, cnn_path, data, x_calib=x, y_calib=y)


def test_sizes_larger_than_the_source_are_capped_and_stay_disjoint(cnn_path: Path) -> None:
    x = np.arange(6 * 3 * 16 * 16, dtype=np.float32).reshape(6, 3, 16, 16)
    data = Recipe(source="variable", variable="x", calibration_size=4, evaluation_size=10).build(cnn_path, {"x": x})
    assert len(data.calibration_feeds) == 4 and len(data.evaluation_feeds) == 2
    assert not fingerprints(data.calibration_feeds) & fingerprints(data.evaluation_feeds)
    assert any("the source holds 6: calibration gets 4, evaluation the 2 left" in n for n in data.notes)


# -- errors name the sample and the fix ----------------------------------------------------------------


def test_a_wrong_shape_names_the_sample_and_the_fix(cnn_path: Path) -> None:
    x = np.zeros((5, 3, 16, 16), np.float32)
    samples = [x[i] for i in range(5)]  # each one misses its batch axis: [3, 16, 16] for [1, 3, 16, 16]
    recipe = Recipe(source="variable", variable="samples", calibration_size=3, evaluation_size=2)
    with pytest.raises(CalibrationDataError) as error:
        recipe.build(cnn_path, {"samples": samples})
    message = str(error.value)
    assert "Calibration sample 0, input 'input': rank 3 (shape [3, 16, 16])" in message
    assert "Add the batch dimension with x[None]" in message and "(The same for 2 more calibration" in message
    assert "Evaluation sample 0, input 'input'" in message

    # check=False lists the problems instead, and the data refuses to be used while they last
    data = recipe.build(cnn_path, {"samples": samples}, check=False)
    assert len(data.problems) == 2 and data.problems[0].startswith("Calibration sample 0")
    with pytest.raises(CalibrationDataError, match="batch dimension"):
        data.reader()
    with pytest.raises(CalibrationDataError, match="not ready"):
        data.evaluation()


def test_images_of_the_wrong_size_say_which_options_fit(cnn_path: Path, image_folder: Path) -> None:
    recipe = Recipe(source="images", folder=str(image_folder), image=ImageOptions(size=32, layout="NHWC"))
    with pytest.raises(CalibrationDataError) as error:
        recipe.build(cnn_path)
    message = str(error.value)
    assert "Calibration sample 0, input 'input': shape [1, 32, 32, 3], but the model expects [1, 3, 16, 16]" in message
    assert "ImageOptions(size=(16, 16), layout='NCHW', grayscale=False)" in message


def test_zoo_samples_for_a_model_of_your_own_point_to_the_fix(cnn_path: Path) -> None:
    data = Recipe(source="zoo", dataset="digits", calibration_size=5, evaluation_size=5).build(cnn_path, check=False)
    assert data.problems[0].startswith("Calibration sample 0, input 'input': dtype uint8")
    assert "without preprocessing" in data.problems[-1] and "zoo.load_model('resnet_digits')" in data.problems[-1]


def test_a_wrong_input_name_says_which_to_rename(cnn_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "npz"
    folder.mkdir()
    for i in range(3):  # the arrays are saved under 'image'; the model's input is 'input'
        np.savez(folder / f"sample_{i}.npz", image=np.zeros((1, 3, 16, 16), np.float32))
    data = Recipe(source="npy", folder=folder, calibration_size=3, evaluation_size=0).build(cnn_path, check=False)
    assert data.problems == [
        "Calibration sample 0 is missing input(s) ['input'] and has input(s) ['image'] the model does not have. "
        "The model's inputs are: input: float32 [1, 3, 16, 16]. Rename 'image' to 'input' in your reader's "
        "get_next(). (The same for 2 more calibration sample(s).)"
    ]
    rows = mapping_rows(ModelTarget.resolve(cnn_path).specs, data.calibration_feeds[0])
    assert [(r.input, r.data, r.given) for r in rows] == [("input", "", "missing"), ("", "image", "float32 [1, 3, 16, 16]")]
    assert all("Rename 'image' to 'input'" in r.problem for r in rows)


def test_nan_is_reported_once_with_its_sample() -> None:
    specs = ModelTarget.resolve(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)).specs
    feeds = [{"input": np.zeros((1, 3, 16, 16), np.float32)} for _ in range(4)]
    feeds[2]["input"][0, 1, 2, 3] = np.nan
    problems = check_samples(feeds, specs)
    assert len(problems) == 1 and problems[0].startswith("Calibration sample 2, input 'input': holds 1 NaN")


def test_sources_that_cannot_be_read(cnn_path: Path, tmp_path: Path) -> None:
    with pytest.raises(CalibrationDataError, match="No folder yet"):
        Recipe(source="images").build(cnn_path)
    with pytest.raises(CalibrationDataError, match="does not exist"):
        Recipe(source="images", folder=str(tmp_path / "no_such_folder")).build(cnn_path)
    with pytest.raises(CalibrationDataError, match="There is no variable 'x_calb'.*Did you mean 'x_calib'"):
        Recipe(source="variable", variable="x_calb").build(cnn_path, {"x_calib": np.zeros((2, 3, 16, 16))})
    with pytest.raises(CalibrationDataError, match=r"make it a list first: gen = list\(gen\)"):
        Recipe(source="variable", variable="gen").build(cnn_path, {"gen": (np.zeros((1, 3, 16, 16)) for _ in range(2))})
    with pytest.raises(CalibrationDataError, match="holds 3 label.*gives 2 samples"):
        Recipe(source="variable", variable="x", labels_variable="y").build(
            cnn_path, {"x": np.zeros((2, 3, 16, 16), np.float32), "y": [0, 1, 2]})


def test_a_recipe_is_checked_when_written() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'images'"):
        Recipe(source="imges")
    with pytest.raises(CalibrationDataError, match="whole number"):
        Recipe(calibration_size=-1)
    with pytest.raises(UnknownNameError, match="normalisation"):
        ImageOptions(normalize="imagenet_mean")
    with pytest.raises(CalibrationDataError, match="sequence_length"):
        TextOptions(sequence_length=0)
    assert ImageOptions(size=224, layout="nhwc") == ImageOptions(size=(224, 224), layout="NHWC")


# -- texts ----------------------------------------------------------------------------------------------


def test_texts_from_a_file_with_a_tokenizer_json(tmp_path: Path) -> None:
    try:
        minilm = zoo.load_model("minilm_l6")
    except zoo.ZooError as exc:
        pytest.skip(f"the zoo text model minilm_l6 is not available offline (needs the package index once): {exc}")
    texts = [f"Sentence number {i} talks about {'trains' if i % 2 else 'the weather'}." for i in range(10)]
    text_file = tmp_path / "texts.txt"
    text_file.write_text("\n".join(texts[:5]) + "\n\n" + "\n".join(texts[5:]) + "\n", encoding="utf-8")
    tokenizer = Path(minilm.path).parent / "tokenizer.json"
    recipe = Recipe(source="texts", text_file=text_file, text=TextOptions(tokenizer=tokenizer),
                    calibration_size=6, evaluation_size=4)
    data = recipe.build(minilm.path)  # the file, not the ZooModel: the tokenizer.json tokenizes
    calibration_index, _ = split_indices(10, 6, 4)
    for feed, i in zip(data.reader(), calibration_index):  # the same tokens as the zoo model's own preprocessing
        assert_same_feeds([feed], [minilm.preprocess(texts[i])])
    assert data.token_counts() is not None and len(data.token_counts()) == 6
    assert "TextEncoder.from_tokenizer_json" in recipe.to_python(minilm.path)
    assert_code_rebuilds(recipe, minilm.path, data)
