"""Quark's ``dump_model`` (``quark.onnx.utils.deploy_utils``; ``quark.onnx.quant_utils`` in Quark
0.x): the values of a quantized model's tensors for one input, written to files to compare with
what a deployment computes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb.calibration.readers import RandomReader, make_reader
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.io import ModelLike, load_model
from ryzen_nb.graph.prepare import input_specs, run_with_outputs

__all__ = ["dump_model"]


def dump_model(model_input: ModelLike, dump_data_reader: Any = None,
               random_data_reader_input_shape: Mapping[str, Sequence[int]] | None = None, dump_float: bool = False,
               output_dir: str | Path = "./dump_results") -> Path:
    """Run the first sample of ``dump_data_reader`` (random data shaped by
    ``random_data_reader_input_shape`` when None) and write, for every ``DequantizeLinear`` output,
    ``<name>.bin`` (float32, raw) and ``<name>.txt`` (one value a line); with ``dump_float`` every
    node output too, as ``<name>_float.bin`` / ``_float.txt``. Names have ``/`` replaced by ``_``, as
    in Quark. Returns the output folder.

    Unlike Quark, which dumps only models with FixNeuron nodes unless ``dump_float`` is set, the QDQ
    models ryzen-nb writes dump their quantized tensors directly."""
    model = load_model(model_input)
    specs = input_specs(model)
    if dump_data_reader is None:
        reader: Any = RandomReader(specs, shapes=random_data_reader_input_shape)
    else:
        reader = make_reader(dump_data_reader, input_names=[s.name for s in specs],
                             input_shapes={s.name: s.shape for s in specs})
    feed = next(iter(reader), None)
    if feed is None:
        raise CalibrationDataError("The dump data reader gave no sample; dump_model runs the model on its first one.")
    check_feed(feed, specs)
    quantized = [n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"]
    every = [o for n in model.graph.node for o in n.output if o] if dump_float else []
    values = run_with_outputs(model, quantized + every, feed)
    out = Path(output_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    for names, suffix in ((quantized, ""), (every, "_float")):
        for name in names:
            value = np.asarray(values[name], dtype=np.float32)
            stem = out / (name.replace("/", "_") + suffix)
            value.tofile(stem.with_name(stem.name + ".bin"))
            np.savetxt(stem.with_name(stem.name + ".txt"), value.reshape(-1), fmt="%.9g")
    return out
