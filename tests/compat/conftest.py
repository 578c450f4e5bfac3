"""The compatibility corpus's workspace: small models and calibration data in one folder, laid out
as the Ryzen AI and Quark examples expect theirs (``models/``, ``calib_data/``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from ryzen_nb import zoo
from ryzen_nb.testing import bert_encoder, random_images, resnet_cnn


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``models/digits.onnx`` (the zoo's resnet_digits, input ``image`` [1, 1, 8, 8]) with 24 digits
    as .npy files in ``calib_data/`` (and without their batch axis in ``calib_no_batch/``); ``models/cnn.onnx`` (a seeded ResNet, ``input`` [1, 3, 16, 16])
    with 16 images in ``cnn_calib/``; ``models/encoder.onnx`` (a seeded BERT encoder, ``input_ids``
    [1, 8]); ``digits_eval.npy`` / ``digits_labels.npy``, 48 held-out digits."""
    root = tmp_path_factory.mktemp("compat")
    models = root / "models"
    models.mkdir()
    shutil.copy(zoo.load_model("resnet_digits").path, models / "digits.onnx")
    onnx.save(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), models / "cnn.onnx")
    onnx.save(bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8), models / "encoder.onnx")
    digits = zoo.load_dataset("digits")
    images = np.stack([np.asarray(s, np.float32).reshape(1, 8, 8) / 16.0 for s in digits.samples[:72]])
    (root / "calib_data").mkdir()
    (root / "calib_no_batch").mkdir()  # as many scripts save them: without the batch axis
    for i, image in enumerate(images[:24]):
        np.save(root / "calib_data" / f"digit_{i:03d}.npy", image[None])
        np.save(root / "calib_no_batch" / f"digit_{i:03d}.npy", image)
    np.save(root / "digits_eval.npy", images[24:])
    np.save(root / "digits_labels.npy", np.asarray(digits.labels[24:72]))
    (root / "cnn_calib").mkdir()
    for i, image in enumerate(random_images(16, size=16, seed=3)):
        np.save(root / "cnn_calib" / f"img_{i:02d}.npy", image[None])
    return root
