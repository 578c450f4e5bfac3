"""In the style of the Ryzen AI CNN tutorial (quark_quantization/quark_quantize.py): a preset from
get_default_config, an onnxruntime CalibrationDataReader over a folder, top-1 on CPU before and
after, the custom-op library registered for BF16 as the tutorial's utils do."""

import argparse
import os

import numpy as np
import onnxruntime
from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod  # noqa: F401
from onnxruntime.quantization.quant_utils import QuantType  # noqa: F401
from quark.onnx import ModelQuantizer
from quark.onnx.quantization.config import Config, get_default_config


class ImageDataReader(CalibrationDataReader):
    def __init__(self, calibration_folder, model_path, data_size=100):
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        self.input_name = session.get_inputs()[0].name
        files = sorted(os.listdir(calibration_folder))[:data_size]
        self.data = [np.load(os.path.join(calibration_folder, f)) for f in files]
        self.enum_data = None

    def get_next(self):
        if self.enum_data is None:
            self.enum_data = iter([{self.input_name: d} for d in self.data])
        return next(self.enum_data, None)

    def rewind(self):
        self.enum_data = None


def evaluate_onnx_model(model_path, images, labels, device="cpu"):
    if "BF16" in model_path:
        from quark.onnx import get_library_path

        sess_options = onnxruntime.SessionOptions()
        sess_options.register_custom_ops_library(get_library_path(device=device))
        session = onnxruntime.InferenceSession(model_path, sess_options, providers=["CPUExecutionProvider"])
    else:
        session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    predictions = [np.argmax(session.run(None, {name: image[None]})[0]) for image in images]
    return float(np.mean(np.asarray(predictions) == labels))


def main(args):
    quant_config = get_default_config(args.config)
    if args.config == "BF16":
        quant_config.extra_options["BF16QDQToCast"] = True
    config = Config(global_quant_config=quant_config)
    print(f"The configuration of the quantization is {config}")
    calibration_dataset = ImageDataReader(args.calib_data, args.model_input, data_size=100)
    quantizer = ModelQuantizer(config)
    quantizer.quantize_model(model_input=args.model_input, model_output=args.model_output,
                             calibration_data_reader=calibration_dataset)
    images, labels = np.load(args.eval_images), np.load(args.eval_labels)
    float_acc = evaluate_onnx_model(args.model_input, images, labels)
    quant_acc = evaluate_onnx_model(args.model_output, images, labels)
    print(f"Float32 top1 {float_acc:.3f}, {args.config} top1 {quant_acc:.3f}")
    assert float_acc - quant_acc <= 0.05, (float_acc, quant_acc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_input", default="models/resnet50.onnx")
    parser.add_argument("--model_output", default="models/resnet50_quant.onnx")
    parser.add_argument("--calib_data", default="calib_data")
    parser.add_argument("--eval_images")
    parser.add_argument("--eval_labels")
    parser.add_argument("--config", choices=["XINT8", "A8W8", "A16W8", "BF16"], default="XINT8")
    main(parser.parse_args())
