"""Regressions found while writing notebook 9 (Your own model)."""

from __future__ import annotations

import numpy as np

from ryzen_nb.ui.wizard import CalibrationWizard


def test_a_labels_count_mismatch_says_how_the_array_was_read() -> None:
    # An (N, 8, 8) array for a [1, 1, 8, 8] model is one axis short: the reader takes it for a single
    # sample without its batch axis. With labels, the wizard stopped at "538 labels but the source
    # gives 1 samples" and sent the user to fix the labels; the message now shows how the array was
    # read, next to what the model takes.
    pixels = np.zeros((20, 8, 8), np.float32)
    wizard = CalibrationWizard("resnet_digits")
    wizard.set_data(pixels, name="pixels", labels=np.arange(20) % 10)
    message = wizard.problems[0]
    assert "holds 20 label(s) but the source gives 1 samples" in message
    assert "read as 'image' [1, 20, 8, 8]" in message and "the model takes [1, 1, 8, 8]" in message
    # the fix the message points to works
    wizard.set_data(pixels[:, None], name="pixels", labels=np.arange(20) % 10)
    assert wizard.problems == []
