"""In the style of the Ryzen AI DistilBERT BF16 example (quantize_to_bf16.py) and the hello-world
tutorial: a preset, random calibration data (UseRandomData) and calibration_data_path=None; the
encoder's int64 token ids get random ids in RandomDataReaderInputDataRange."""

import argparse
import os

import onnxruntime
from onnxruntime.quantization.calibrate import CalibrationMethod  # noqa: F401
from onnxruntime.quantization.quant_utils import QuantFormat, QuantType  # noqa: F401
from quark.onnx.quantization.config import Config, get_default_config
from quark.onnx.quantization.config.config import QuantizationConfig  # noqa: F401


def main(args):
    quant_config = get_default_config(args.config)
    if args.config == "BF16":
        quant_config.extra_options["BF16QDQToCast"] = True
    config = Config(global_quant_config=quant_config)
    config.global_quant_config.extra_options["UseRandomData"] = True
    config.global_quant_config.extra_options["RandomDataReaderInputDataRange"] = {"input_ids": [0, 999]}

    from quark.onnx import ModelQuantizer

    quantizer = ModelQuantizer(config)
    output_model_path = os.path.join(args.output_dir, f"encoder_{args.config.lower()}.onnx")
    quantizer.quantize_model(model_input=args.model_path, model_output=output_model_path, calibration_data_path=None)
    session = onnxruntime.InferenceSession(output_model_path, providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].name == "input_ids"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Quantize an encoder")
    parser.add_argument("--model_path", required=True)
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--config", default="BF16")
    main(parser.parse_args())
