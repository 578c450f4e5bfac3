"""In the style of Quark 0.13's ONNX examples (examples/onnx/...): QConfig with specs and an
algorithm list — BFP16 with AdaQuant, XINT8 CLE + AdaRound, MX, crypto mode (the model in memory),
and the *_QCONFIG presets — each import from the module Quark's example uses."""

import argparse
import os

import numpy as np
import onnx
from onnxruntime.quantization.calibrate import CalibrationDataReader
from quark.onnx import (
    A8W8_QCONFIG,
    BF16_QCONFIG,
    XINT8_ADAROUND_QCONFIG,
    CalibMethod,
    CLEConfig,
    Int8Spec,
    ModelQuantizer,
    QConfig,
    QLayerConfig,
)
from quark.onnx.quantization.config.algorithm import AdaQuantConfig, AdaRoundConfig
from quark.onnx.quantization.config.config import QConfig as QConfigFromModule
from quark.onnx.quantization.config.spec import BFP16Spec, MXInt8Spec, XInt8Spec
from quark.onnx.quantization.config.spec import QLayerConfig as QLayerConfigFromModule


class ImageDataReader(CalibrationDataReader):
    def __init__(self, folder):
        self.enum_data = None
        self.data = [np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))]

    def get_next(self):
        if self.enum_data is None:
            self.enum_data = iter([{"input": d} for d in self.data])
        return next(self.enum_data, None)

    def rewind(self):
        self.enum_data = None

    def reset(self):
        self.enum_data = None


def config_for(name):
    if name == "BFP16":
        algo_config = [AdaQuantConfig(data_size=8, learning_rate=1e-6, num_iterations=5)]
        return QConfigFromModule(QLayerConfigFromModule(activation=BFP16Spec(), weight=BFP16Spec()),
                                 algo_config=algo_config)
    if name == "XINT8_CLE_ADAROUND":
        spec = Int8Spec()
        spec.set_calibration_method(CalibMethod.MinMax)
        return QConfig(global_config=QLayerConfig(input_tensors=spec, weight=Int8Spec()),
                       algo_config=[CLEConfig(cle_steps=2), AdaRoundConfig(num_iterations=5, batch_size=2)])
    if name == "MXINT8":
        return QConfig(global_config=QLayerConfig(activation=MXInt8Spec(), weight=MXInt8Spec()))
    if name == "CRYPTO":
        return QConfig(global_config=QLayerConfig(activation=XInt8Spec(), weight=XInt8Spec()), CryptoMode=True,
                       EnableNPUCnn=True)
    if name == "A8W8_QCONFIG":
        return A8W8_QCONFIG
    assert XINT8_ADAROUND_QCONFIG.algo_config  # the presets with fine-tuning run 1000 iterations a layer
    return BF16_QCONFIG


def main(args):
    config = config_for(args.config)
    print(f"The configuration for quantization is {config}")
    quantizer = ModelQuantizer(config)
    dr = ImageDataReader(args.calibration_dataset_path)
    if args.config == "CRYPTO":  # crypto mode: ModelProto in, ModelProto out, nothing written by the quantizer
        model_output = quantizer.quantize_model(onnx.load(args.input_model_path), calibration_data_reader=dr)
        onnx.save(model_output, args.output_model_path)
    else:
        quantizer.quantize_model(args.input_model_path, args.output_model_path, dr)
    assert os.path.exists(args.output_model_path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input_model_path", required=True)
    parser.add_argument("--output_model_path", required=True)
    parser.add_argument("--calibration_dataset_path", required=True)
    parser.add_argument("--config", default="BFP16")
    main(parser.parse_args())
