"""In the style of the Ryzen AI advanced tutorial (advanced_quark_quantize.py): Quark 0.x imports
(quant_utils' VitisQuantType), the _ADAROUND / _ADAQUANT presets, and legacy QuantizationConfig
keyword forms with include_fast_ft and include_cle."""

import argparse

import numpy as np
from onnxruntime.quantization.calibrate import CalibrationMethod  # noqa: F401
from onnxruntime.quantization.quant_utils import QuantFormat  # noqa: F401
from quark.onnx import ModelQuantizer, PowerOfTwoMethod, QuantType
from quark.onnx.quant_utils import PowerOfTwoMethod as PowerOfTwoMethodOld
from quark.onnx.quant_utils import VitisQuantFormat, VitisQuantType
from quark.onnx.quantization.config import Config, get_default_config
from quark.onnx.quantization.config.config import QuantizationConfig


class NpyDataReader:
    def __init__(self, folder, input_name):
        import os

        self.data = [{input_name: np.load(os.path.join(folder, f))} for f in sorted(os.listdir(folder))]
        self.iterator = iter(self.data)

    def get_next(self):
        return next(self.iterator, None)

    def rewind(self):
        self.iterator = iter(self.data)


def main(args):
    if args.adaround:
        quant_config = get_default_config("XINT8_ADAROUND")
        quant_config.extra_options["FastFinetune"]["NumIterations"] = 5
    elif args.adaquant:
        quant_config = get_default_config("XINT8_ADAQUANT")
        quant_config.extra_options["FastFinetune"].update({"NumIterations": 5, "DataSize": 8})
    elif args.fast_finetune:
        quant_config = QuantizationConfig(calibrate_method=PowerOfTwoMethod.MinMSE, activation_type=QuantType.QUInt8,
                                          weight_type=QuantType.QInt8, enable_npu_cnn=True, include_fast_ft=True,
                                          extra_options={"ActivationSymmetric": True,
                                                         "FastFinetune": {"NumIterations": 5, "BatchSize": 2}})
    elif args.cross_layer_equalization:
        quant_config = QuantizationConfig(calibrate_method=PowerOfTwoMethodOld.NonOverflow,
                                          quant_format=VitisQuantFormat.QDQ, activation_type=VitisQuantType.QUInt8,
                                          weight_type=VitisQuantType.QInt8, enable_npu_cnn=True, include_cle=True,
                                          extra_options={"ActivationSymmetric": True})
    else:
        quant_config = get_default_config("XINT8")
    config = Config(global_quant_config=quant_config)
    quantizer = ModelQuantizer(config)
    model = quantizer.quantize_model(model_input=args.model_input, model_output=args.model_output,
                                     calibration_data_reader=NpyDataReader(args.calib_data, "input"))
    ops = {node.op_type for node in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= ops, ops


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_input", default="models/mobilenetv2.onnx")
    parser.add_argument("--model_output", default="models/mobilenetv2_quant.onnx")
    parser.add_argument("--calib_data", default="calib_data")
    parser.add_argument("--fast_finetune", action="store_true")
    parser.add_argument("--cross_layer_equalization", action="store_true")
    parser.add_argument("--adaround", action="store_true")
    parser.add_argument("--adaquant", action="store_true")
    main(parser.parse_args())
