"""In the style of the Ryzen AI YOLOv8s-worldv2 example (quark_quant.py): custom_config imported as
a module, its DefaultConfigMapping as the argparse choices, a preset's FastFinetune dict updated in
place, extra op types, the log level set on the Config."""

import argparse
import copy

import numpy as np
from onnxruntime.quantization import CalibrationDataReader
from quark.onnx import ModelQuantizer
from quark.onnx.quantization.config import custom_config as qcc
from quark.onnx.quantization.config.config import Config


class Reader(CalibrationDataReader):
    def __init__(self, images):
        self.images = list(images)
        self.enum = None

    def get_next(self):
        if self.enum is None:
            self.enum = iter({"image": image[None]} for image in self.images)
        return next(self.enum, None)

    def rewind(self):
        self.enum = None


def quant(model_path, output_path, quant_cfg_name, images):
    quant_config: qcc.QuantizationConfig = copy.deepcopy(qcc.get_default_config(quant_cfg_name))
    quant_config.execution_providers = ["CPUExecutionProvider"]
    quant_config.extra_op_types_to_quantize = ["Einsum", "ReduceMax"]
    if "ADAROUND" in quant_cfg_name or "ADAQUANT" in quant_cfg_name:
        ft_dict: dict = quant_config.extra_options["FastFinetune"]
        ft_dict.update({"NumIterations": 3, "OptimDevice": "cuda:0", "InferDevice": "cuda:0", "BatchSize": 4,
                        "DataSize": 4})
    quantization_config = Config(global_quant_config=quant_config)
    quantization_config.global_quant_config.log_severity_level = 0
    quantizer = ModelQuantizer(quantization_config)
    quantizer.quantize_model(model_path, output_path, Reader(images))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnx", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--quant", choices=list(qcc.DefaultConfigMapping.keys()), required=True)
    parser.add_argument("--images", required=True)
    args = parser.parse_args()
    assert {"XINT8", "A8W8_ADAROUND", "A16W8_ADAQUANT", "BF16_MIXED_BFP16", "MX9_INT8"} <= set(qcc.DefaultConfigMapping)
    quant(args.onnx, args.output, args.quant, np.load(args.images)[:12])


if __name__ == "__main__":
    main()
