"""Quark's command-line tools, with Quark's flags: ``python -m ryzen_nb.quark.tools.<tool>``.

=============================  =================================================================
tool                           does (on ryzen-nb)
=============================  =================================================================
convert_fp32_to_bf16           BF16 conversion (``--format with_cast|bf16|simulate_bf16|customqdq``)
convert_fp16_to_bf16           the same from an FP16 model (FP16 inputs and outputs kept)
convert_fp32_to_bfp16          BFP16 quantization (no calibration data needed)
convert_fp16_to_bfp16          the same from an FP16 model
convert_fp16_to_fp32           FP16 model to FP32
convert_fp32_to_fp16           FP32 model to FP16 (onnxruntime's converter)
convert_onnx_to_onnxtxt        ONNX to protobuf text, and ``convert_onnxtxt_to_onnx`` back
evaluate                       compare result folders (cosine, L2, PSNR, SSIM, SQNR)
print_a16w8_a8w8_nodes         Conv/ConvTranspose/Gemm/MatMul nodes by activation width
random_quantize                quantize on random data (``--config`` a Quark preset)
remove_qdq                     the float model back from a quantized one
replace_inf_weights            replace ±inf in the weights
=============================  =================================================================

Quark tools for Quark-only model forms (``convert_nchw_to_nhwc``, ``convert_a8w8_npu_to_a8w8_cpu``,
``convert_u16u8_to_u8u8``, ``convert_custom_ops``, ``convert_bias_int32_to_int16``, ``fix_shapes``) exist too and
say in one line why ryzen-nb has no counterpart.
"""
