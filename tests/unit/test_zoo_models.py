"""The zoo's models, loaded through the real code path into a fresh cache (the package index is used once).

resnet_digits must work with no network, no scikit-learn and no cache at all; the others are built
from the pinned wheels, as ONNX opset 17 with static shapes, and must be right (top-1 on the
ImageNet samples, sentence similarities, sentiment). The minilm_sentiment held-out accuracy over
2000 snippets is marked slow.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.zoo import ZooError, ZooModel, list_datasets, list_models, load_dataset, load_model
from ryzen_nb.zoo.preprocessing import SampleError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def zoo_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One fresh cache for the zoo's test modules of this session, filled through the real code path."""
    path = tmp_path_factory.getbasetemp() / "zoo-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RYZEN_NB_CACHE", str(path))
        yield path


def _check_zoo_onnx(model: ZooModel) -> onnx.ModelProto:
    proto = onnx.load(str(model.path))
    onnx.checker.check_model(proto)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert proto.ir_version <= 10, "onnxruntime 1.31 refuses newer IR versions"
    initializers = {i.name for i in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in initializers]
    assert [i.name for i in inputs] == model.input_names
    for value in inputs:
        shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        assert all(d > 0 for d in shape) and shape == model.input_shapes[value.name], "static input shapes"
    assert [o.name for o in proto.graph.output] == model.output_names
    return proto


def test_list_models_and_datasets() -> None:
    models = list_models()
    assert list(models.index) == [
        "efficientnet_lite0", "resnet_digits", "minilm_l6", "minilm_sentiment", "resnet50", "distilbert_sst2", "gte",
    ]  # fmt: skip
    assert (models["description"].str.len() > 20).all()
    assert set(models.loc[["resnet50", "distilbert_sst2", "gte"], "needs"]) == {"internet"}
    datasets = list_datasets()
    assert list(datasets.index) == ["imagenet_samples", "cifar10_samples", "digits", "rotten_tomatoes", "sentences"]
    assert (datasets["description"].str.len() > 20).all()


def test_unknown_names_list_the_closest_first() -> None:
    with pytest.raises(UnknownNameError) as error:
        load_model("efficientnet")
    assert error.value.choices[0] == "efficientnet_lite0" and "Did you mean 'efficientnet_lite0'" in str(error.value)
    assert isinstance(error.value, ValueError)
    with pytest.raises(UnknownNameError) as error:
        load_dataset("imagenet")
    assert error.value.choices[0] == "imagenet_samples"
    with pytest.raises(UnknownNameError, match="Did you mean 'calibration'"):
        load_dataset("digits", split="calib")
    with pytest.raises(UnknownNameError, match="'train'"):
        load_dataset("imagenet_samples", split="train")  # 20 photos are not enough to train on: no such split


def test_resnet_digits_needs_no_network_no_sklearn_and_no_cache(tmp_path: Path) -> None:
    """What ``ryzen-nb demo`` and tutorial 1 rely on, in a fresh interpreter on a cut-off machine."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["sklearn"] = None  # importing scikit-learn (or torch) would fail
        sys.modules["torch"] = None
        from ryzen_nb.zoo import load_dataset, load_model
        model = load_model("resnet_digits")
        data = load_dataset("digits", split="evaluation")
        correct = sum(model.predict(image).index == label for image, label in data)
        print(correct / len(data))
        """
    )
    cache = tmp_path / "never-created"
    env = {
        "PATH": "/usr/bin:/bin",
        "RYZEN_NB_CACHE": str(cache),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # nothing listens on the discard port
        "PIP_CONFIG_FILE": "/dev/null",
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) >= 0.98
    assert not cache.exists(), "resnet_digits and digits must not write to the cache"


def test_resnet_digits_accuracy_and_file() -> None:
    model = load_model("resnet_digits")
    proto = _check_zoo_onnx(model)
    assert model.path.stat().st_size < 1 << 20 and model.path.parent.name == "data"
    assert model.input_shapes == {"image": (1, 1, 8, 8)} and model.labels == [str(d) for d in range(10)]
    assert {n.op_type for n in proto.graph.node} <= {"Conv", "Relu", "Add", "GlobalAveragePool", "Flatten", "Gemm"}
    data = load_dataset("digits", split="evaluation")
    correct = sum(model.predict(image).index == label for image, label in data)
    assert correct / len(data) >= 0.98


def test_efficientnet_lite0_top1_and_structure() -> None:
    model = load_model("efficientnet_lite0")
    proto = _check_zoo_onnx(model)
    assert model.input_shapes == {"image": (1, 3, 224, 224)} and model.output_names == ["logits"]
    assert len(model.labels) == 1000 and model.labels[243] == "bull mastiff"
    conv_weights = {n.input[1] for n in proto.graph.node if n.op_type == "Conv"}
    assert conv_weights <= {i.name for i in proto.graph.initializer}, "weights are initializers, as quantizers expect"
    parameters = sum(int(np.prod(i.dims)) for i in proto.graph.initializer)
    assert 4.6e6 < parameters < 4.7e6
    data = load_dataset("imagenet_samples")
    predictions = [model.predict(image) for image in data.samples]
    top1 = np.mean([p.index == label for p, label in zip(predictions, data.labels, strict=True)])
    assert top1 >= 0.8, [(p.label, data.label_names[label]) for p, label in zip(predictions, data.labels, strict=True)]
    assert predictions[0].top(5)[0] == (predictions[0].label, predictions[0].probability)


def test_image_samples_in_every_form_give_the_same_feeds(tmp_path: Path) -> None:
    model = load_model("efficientnet_lite0")
    image = load_dataset("imagenet_samples", split="calibration").samples[0]
    path = tmp_path / "sample.png"
    Image.fromarray(image).save(path)
    from_array = model.preprocess(image)
    assert from_array["image"].shape == (1, 3, 224, 224) and from_array["image"].dtype == np.float32
    assert -1.0 <= from_array["image"].min() and from_array["image"].max() <= 1.0  # (x - 127) / 128
    np.testing.assert_array_equal(model.preprocess(Image.fromarray(image))["image"], from_array["image"])
    np.testing.assert_array_equal(model.preprocess(path)["image"], from_array["image"])
    with pytest.raises(SampleError, match="does not exist"):
        model.preprocess(tmp_path / "missing.jpg")
    with pytest.raises(SampleError, match="H x W"):
        model.preprocess(np.zeros((2, 3, 4, 5), np.uint8))
    with pytest.raises(TypeError, match="PIL image, a file path or a numpy array"):
        model.preprocess(42)


def test_minilm_l6_embeddings_follow_sentence_similarity() -> None:
    import pandas as pd

    model = load_model("minilm_l6")
    _check_zoo_onnx(model)
    assert model.input_shapes == {"input_ids": (1, 128), "attention_mask": (1, 128)}
    data = load_dataset("sentences")
    embeddings = {s: model.predict(s) for pair in data.samples for s in pair}
    assert all(v.shape == (384,) and abs(np.linalg.norm(v) - 1) < 1e-5 for v in embeddings.values())
    cosines = [float(embeddings[a] @ embeddings[b]) for a, b in data.samples]
    # Spearman's rho as the Pearson correlation of ranks (pandas' method="spearman" needs scipy)
    spearman = pd.Series(cosines).rank().corr(pd.Series(data.labels, dtype=float).rank())
    assert spearman > 0.85  # measured 0.92
    with pytest.raises(TypeError, match="must be a str"):
        model.preprocess(["a list"])


def test_minilm_sentiment_reads_obvious_reviews() -> None:
    model = load_model("minilm_sentiment")
    _check_zoo_onnx(model)
    assert model.labels == ["rotten", "fresh"] and model.input_shapes["input_ids"] == (1, 64)
    assert model.predict("A masterpiece: moving, funny and beautifully acted.").label == "fresh"
    assert model.predict("A tedious, boring mess with no redeeming qualities.").label == "rotten"


@pytest.mark.slow
def test_minilm_sentiment_held_out_accuracy() -> None:
    model = load_model("minilm_sentiment")
    data = load_dataset("rotten_tomatoes", split="evaluation")
    correct = sum(model.predict(text).index == label for text, label in data)
    assert correct / len(data) >= 0.75  # measured 0.775 on 2013 snippets of movies never seen in training


def test_later_calls_use_the_cache_and_never_build_or_fetch(monkeypatch) -> None:
    """Once built, a model or data set is read from the cache: no rebuild, no pip, no network.
    (Asserted on behaviour, not on wall time, which a loaded machine makes flaky.)"""
    from ryzen_nb.zoo import _fetch
    from ryzen_nb.zoo import models as zoo_models

    model_names = ("efficientnet_lite0", "minilm_l6", "minilm_sentiment", "resnet_digits")
    data_names = ("imagenet_samples", "cifar10_samples", "digits", "rotten_tomatoes", "sentences")
    for name in model_names:
        load_model(name)  # built by now, or built here
    for name in data_names:
        load_dataset(name)

    def refuse(*args, **kwargs):
        raise AssertionError("a later call reached the network or pip, or rebuilt a model")

    monkeypatch.setattr(_fetch.subprocess, "Popen", refuse)
    monkeypatch.setattr(_fetch.urllib.request, "urlopen", refuse)
    for name in model_names:
        spec = zoo_models.MODELS[name]
        if spec.build is not None:
            monkeypatch.setitem(zoo_models.MODELS, name, dataclasses.replace(spec, build=refuse))
    for name in model_names:
        assert load_model(name).path.is_file(), name
    for name in data_names:
        assert len(load_dataset(name, split="evaluation")) > 0, name


def test_unwritable_cache_says_how_to_fix_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RYZEN_NB_CACHE", str(blocker / "cache"))
    with pytest.raises(ZooError, match="RYZEN_NB_CACHE"):
        load_model("efficientnet_lite0")


def test_zoo_command_lists_and_fetches(capsys) -> None:
    from ryzen_nb.cli import main

    assert main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    assert "resnet_digits" in out and "rotten_tomatoes" in out
    assert main(["zoo", "fetch", "resnet_digits", "digits"]) == 0  # both ship with the package: no network
    out = capsys.readouterr().out
    assert "resnet_digits.onnx" in out and "1797 samples" in out and "cache:" in out
    assert main(["zoo", "fetch", "resnet_digit"]) == 2
    assert "resnet_digits" in capsys.readouterr().err  # the closest name
