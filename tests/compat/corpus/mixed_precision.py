"""In the style of Quark's mixed-precision example and documentation: automatic mixed precision
with a top-1 target (AutoMixprecisionConfig with data-type classes), Quark 0.13's spelling
(target_layer_config + metric_threshold), and the legacy layer-wise and tensor-wise forms
(include_auto_mp with an AutoMixprecision dict, MixedPrecisionTensor) with ExtendedQuantType."""

import argparse

import numpy as np
import onnx
from quark.onnx import ExtendedQuantFormat, ExtendedQuantType, ModelQuantizer, PowerOfTwoMethod, QuantType  # noqa: F401
from quark.onnx.quantization.config.algorithm import AutoMixprecisionConfig
from quark.onnx.quantization.config.config import Config, QConfig, QuantizationConfig
from quark.onnx.quantization.config.data_type import Int8
from quark.onnx.quantization.config.spec import Int8Spec, Int16Spec, QLayerConfig

images = labels = None


def top1_acc(results):
    predictions = np.argmax(np.squeeze(np.asarray(results)), axis=-1)
    return float(np.mean(predictions == labels[: len(predictions)]))


class Reader:
    def __init__(self, data):
        self.data = [{"image": d[None]} for d in data]
        self.index = 0

    def get_next(self):
        self.index += 1
        return self.data[self.index - 1] if self.index <= len(self.data) else None

    def rewind(self):
        self.index = 0


def main(args):
    global images, labels
    images, labels = np.load(args.images)[:12], np.load(args.labels)[:12]
    if args.mode == "auto":
        algo_config = [AutoMixprecisionConfig(l2_target=None, top1_acc_target=0.02, evaluate_function=top1_acc,
                                              act_target_quant_type=Int8, weight_target_quant_type=Int8,
                                              output_index=0, data_size=12)]
        config = QConfig(global_config=QLayerConfig(activation=Int16Spec(), weight=Int16Spec()),
                         algo_config=algo_config, Percentile=99.9999, Int32Bias=False, Int16Bias=False)
    elif args.mode == "metric":
        algo_config = [AutoMixprecisionConfig(target_layer_config=QLayerConfig(activation=Int8Spec(), weight=Int8Spec()),
                                              metric_threshold=0.5, data_size=4)]
        config = QConfig(QLayerConfig(activation=Int16Spec(), weight=Int8Spec()), algo_config=algo_config)
    elif args.mode == "layer":
        quant_config = QuantizationConfig(
            quant_format=ExtendedQuantFormat.QDQ, calibrate_method=PowerOfTwoMethod.MinMSE,
            activation_type=ExtendedQuantType.QInt16, weight_type=QuantType.QInt8, include_auto_mp=True,
            extra_options={"AutoMixprecision": {"TargetOpType": ["Conv"], "ActTargetQuantType": QuantType.QInt8,
                                                "WeightTargetQuantType": QuantType.QInt8, "NumTarget": 2}})
        config = Config(global_quant_config=quant_config)
    else:  # tensor-wise
        first_conv = next(n for n in onnx.load(args.model).graph.node if n.op_type == "Conv")
        quant_config = QuantizationConfig(
            quant_format=ExtendedQuantFormat.QDQ, activation_type=ExtendedQuantType.QInt8,
            weight_type=ExtendedQuantType.QInt8,
            extra_options={"MixedPrecisionTensor": {ExtendedQuantType.QInt16: [first_conv.output[0]]}})
        config = Config(global_quant_config=quant_config)
    quantizer = ModelQuantizer(config)
    model = quantizer.quantize_model(args.model, args.output, Reader(images))
    constants = {t.name: t.data_type for t in model.graph.initializer}
    zero_point_types = {constants.get(n.input[2]) for n in model.graph.node if n.op_type == "QuantizeLinear"}
    if args.mode in ("layer", "tensor"):  # both precisions in one model
        assert {onnx.TensorProto.INT8, onnx.TensorProto.INT16} <= zero_point_types, zero_point_types


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--images", required=True)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--mode", choices=["auto", "metric", "layer", "tensor"], default="auto")
    main(parser.parse_args())
