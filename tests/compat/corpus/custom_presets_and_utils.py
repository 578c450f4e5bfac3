"""Custom presets and utilities as Quark's documentation shows them: a preset of one's own added to
DefaultConfigMapping and read back by name, QConfig.get_default_config, the data readers of
quark.onnx.quant_utils (Quark 0.x) and quark.onnx.calibration (0.13), and dump_model."""

import argparse
import copy
import os

from quark.onnx import ModelQuantizer, QConfig, dump_model
from quark.onnx.calibration import CachedDataReader, PathDataReader
from quark.onnx.quant_utils import RandomDataReader
from quark.onnx.quantization.config import Config, get_default_config
from quark.onnx.quantization.config.custom_config import DefaultConfigMapping, get_default_config_mapping


def main(args):
    my_preset = copy.deepcopy(DefaultConfigMapping["A8W8"])
    my_preset.per_channel = True
    my_preset.extra_options["Percentile"] = 99.99
    get_default_config_mapping()["MY_A8W8_PER_CHANNEL"] = my_preset
    config = Config(global_quant_config=get_default_config("MY_A8W8_PER_CHANNEL"))
    assert config.global_quant_config.per_channel and QConfig.get_default_config("XINT8").global_quant_config

    reader = CachedDataReader(PathDataReader(args.model, args.calib_dir), data_size=16)
    ModelQuantizer(config).quantize_model(args.model, args.output, reader)
    reader.reset_iter()
    assert reader.get_next() is not None

    dump_dir = dump_model(args.output, dump_data_reader=None, random_data_reader_input_shape={"image": [1, 1, 8, 8]},
                          output_dir=args.dump_dir)
    assert any(name.endswith(".bin") for name in os.listdir(args.dump_dir)), dump_dir
    random_reader = RandomDataReader(args.model, input_shape={"image": [1, 1, 8, 8]})
    assert random_reader.get_next()["image"].shape == (1, 1, 8, 8)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--calib_dir", required=True)
    parser.add_argument("--dump_dir", required=True)
    main(parser.parse_args())
