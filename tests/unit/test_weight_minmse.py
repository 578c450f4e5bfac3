"""Float-scale MinMSE for weights (``WeightCalibrateMethod="MinMSE"``, Quark's
``ExtendedCalibrationMethod.MinMSE``): the clipping range with the least squared error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from ryzen_nb import formats, get_default_config, quantize
from ryzen_nb.calibration.methods import minmse_float_range
from ryzen_nb.errors import ConfigError
from ryzen_nb.testing import random_images, resnet_cnn


def _weights_with_an_outlier() -> np.ndarray:
    w = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    w[3] = 12.0
    return w


#: amd-quark 0.13's quant_utils.compute_minmse on the same 5000 values (scale, zero point), measured
QUARK = {("Percentile", "int8"): (0.0927675, 0), ("Percentile", "uint8"): (0.0614812, 63),
         ("HistCenter", "int8"): (0.0921958, 0), ("HistCenter", "uint8"): (0.0610416, 61),
         ("All", "int8"): (0.0921347, 0), ("All", "uint8"): (0.0610720, 61)}


@pytest.mark.parametrize("mode, fmt_name", sorted(QUARK))
def test_scales_match_quarks_search(mode, fmt_name) -> None:
    fmt = formats.get(fmt_name)
    symmetric = fmt_name == "int8"
    lo, hi = minmse_float_range(_weights_with_an_outlier(), fmt, symmetric, mode)
    scale, zp = fmt.scale_from_range(lo, hi, symmetric=symmetric)
    assert float(scale) == pytest.approx(QUARK[mode, fmt_name][0], rel=1e-5) and int(zp) == QUARK[mode, fmt_name][1]


def test_clipping_the_outlier_lowers_the_error_minmax_leaves() -> None:
    w, fmt = _weights_with_an_outlier(), formats.get("int8")

    def error(lo, hi):
        s = float(fmt.scale_from_range(lo, hi, symmetric=True)[0])
        return float(np.sum((np.clip(np.rint(w / s), -127, 127) * s - w) ** 2))

    for mode in ("Percentile", "HistCenter", "All"):
        lo, hi = minmse_float_range(w, fmt, True, mode)
        assert hi < 12.0 and error(lo, hi) < error(w.min(), w.max()), mode
    assert minmse_float_range(np.zeros(8, np.float32), fmt, True) == (0.0, 0.0)
    with pytest.raises(ConfigError, match="MinMSEModeFloatScale"):
        minmse_float_range(w, fmt, True, "Histogram")


def _weight_scales(model: onnx.ModelProto) -> dict[str, float]:
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]].max()) for n in model.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0].endswith("_quantized") and "bias" not in n.input[0]}


@pytest.mark.parametrize("per_channel", [False, True])
def test_a8w8_weights_take_it_and_get_finer_scales(per_channel) -> None:
    model, data = resnet_cnn(seed=0), [{"input": x[None]} for x in random_images(4, size=32, seed=1)]
    qc = get_default_config("A8W8")
    qc.per_channel = per_channel
    minmax = _weight_scales(quantize(model, None, qc, data, progress=False).model)
    qc.extra_options.update(WeightCalibrateMethod="MinMSE", MinMSEModeFloatScale="All")
    summary = quantize(model, None, qc, data, progress=False)
    minmse = _weight_scales(summary.model)
    assert minmse.keys() == minmax.keys() and all(minmse[k] <= minmax[k] * (1 + 1e-6) for k in minmax)
    assert sum(minmse[k] < minmax[k] for k in minmax) >= len(minmax) // 2  # most layers clip something


def test_where_it_cannot_apply_it_is_an_error() -> None:
    model, data = resnet_cnn(seed=0), [{"input": x[None]} for x in random_images(2, size=32, seed=1)]
    qc = get_default_config("XINT8")
    qc.extra_options["WeightCalibrateMethod"] = "MinMSE"
    with pytest.raises(ConfigError, match="power-of-two methods choose weight scales"):
        quantize(model, None, qc, data, progress=False)
    qc = get_default_config("A8W8")
    qc.extra_options["WeightCalibrateMethod"] = "Entropy"
    with pytest.raises(ConfigError, match="MinMax or MinMSE"):
        quantize(model, None, qc, data, progress=False)
