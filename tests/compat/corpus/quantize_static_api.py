"""In the style of third-party projects that call Quark's function API: quantize_static with
onnxruntime's CalibrationDataReader re-exported by quark.onnx, and calibration from a folder of
.npy files (calibration_data_path) instead of a reader."""

import argparse

import numpy as np
from quark.onnx import CalibrationDataReader, PowerOfTwoMethod, QuantType, quantize_static
from quark.onnx.quantize import quantize_static as quantize_static_0x


class DigitsReader(CalibrationDataReader):
    def __init__(self, images):
        self.images = iter(images)

    def get_next(self):
        image = next(self.images, None)
        return None if image is None else {"image": image[None]}


def main(args):
    if args.from_path:
        quantize_static_0x(args.model, args.output, None, calibration_data_path=args.calib_dir,
                           calibrate_method=PowerOfTwoMethod.NonOverflow, activation_type=QuantType.QUInt8,
                           weight_type=QuantType.QInt8, enable_dpu=True, extra_options={"ActivationSymmetric": True})
    else:
        model = quantize_static(model_input=args.model, model_output=args.output,
                                calibration_data_reader=DigitsReader(np.load(args.images)[:16]),
                                calibrate_method=PowerOfTwoMethod.MinMSE, activation_type=QuantType.QUInt8,
                                weight_type=QuantType.QInt8, enable_npu_cnn=True,
                                extra_options={"ActivationSymmetric": True})
        assert any(node.op_type == "QuantizeLinear" for node in model.graph.node)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--images")
    parser.add_argument("--calib_dir")
    parser.add_argument("--from_path", action="store_true")
    main(parser.parse_args())
