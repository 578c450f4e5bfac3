"""In the style of the Ryzen AI YOLOv8 example (object_detection/yolov8m/quantize_quark.py): Config
and get_default_config from their own modules, a deep-copied preset edited field by field, nodes
and subgraphs excluded from ';'-separated arguments, fine-tuning parameters as a dict."""

import copy
import re
from argparse import ArgumentParser

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader
from quark.onnx import ModelQuantizer
from quark.onnx.quantization.config.config import Config
from quark.onnx.quantization.config.custom_config import get_default_config

DEFAULT_ADAROUND_PARAMS = {"DataSize": 8, "FixedSeed": 1705472343, "BatchSize": 2, "NumIterations": 5,
                           "LearningRate": 0.1, "OptimAlgorithm": "adaround", "OptimDevice": "cpu",
                           "InferDevice": "cpu", "EarlyStop": True}


def parse_subgraphs_list(exclude_subgraphs):
    subgraphs_list = []
    for tup in exclude_subgraphs.split(";"):
        matches = re.findall(r"\[.*?\]", tup.strip())
        start_nodes = [node.strip() for node in matches[0].strip("[").strip("]").split(",")]
        end_nodes = [node.strip() for node in matches[1].strip("[").strip("]").split(",")]
        subgraphs_list.append((start_nodes, end_nodes))
    return subgraphs_list


class ImageDataReader(CalibrationDataReader):
    def __init__(self, images, input_name):
        self.enum_data = None
        self.input_name = input_name
        self.data_list = list(images)

    def get_next(self):
        if self.enum_data is None:
            self.enum_data = iter([{self.input_name: data[None]} for data in self.data_list])
        return next(self.enum_data, None)

    def rewind(self):
        self.enum_data = None


def main(args):
    quant_config = get_default_config(args.config)
    quant_config.extra_options["BF16QDQToCast"] = True
    config_copy = copy.deepcopy(quant_config)
    config_copy.use_external_data_format = args.save_as_external_data
    if args.exclude_nodes:
        config_copy.nodes_to_exclude = [name.strip() for name in args.exclude_nodes.split(";")]
    if args.exclude_subgraphs:
        config_copy.subgraphs_to_exclude = parse_subgraphs_list(args.exclude_subgraphs)
    if args.cle:
        config_copy.include_cle = True
    if args.adaround:
        config_copy.include_fast_ft = True
        config_copy.extra_options["FastFinetune"] = DEFAULT_ADAROUND_PARAMS
    model_input_name = onnx.load(args.input_model_path).graph.input[0].name
    calib_datareader = ImageDataReader(np.load(args.calib_data_path)[:12], model_input_name)
    quantizer = ModelQuantizer(Config(global_quant_config=config_copy))
    quantizer.quantize_model(args.input_model_path, args.output_model_path, calib_datareader)
    names = {node.name for node in onnx.load(args.output_model_path).graph.node}
    for excluded in config_copy.nodes_to_exclude:  # an excluded node keeps float inputs
        assert excluded in names


if __name__ == "__main__":
    parser = ArgumentParser()
    parser.add_argument("--input_model_path", required=True)
    parser.add_argument("--calib_data_path", required=True)
    parser.add_argument("--output_model_path", default="quantized.onnx")
    parser.add_argument("--config", default="XINT8")
    parser.add_argument("--cle", action="store_true")
    parser.add_argument("--adaround", action="store_true")
    parser.add_argument("--exclude_nodes", default="")
    parser.add_argument("--exclude_subgraphs", default="")
    parser.add_argument("--save_as_external_data", action="store_true")
    args, _ = parser.parse_known_args()
    main(args)
