// A linear layer whose weight stays in FP8: the activation is quantised to
// e4m3fn and the matmul runs on FP8 tensor cores through libtorch's
// at::_scaled_mm, instead of upcasting the whole weight first.
//
// Quantisation: per tensor, by fp8_quantize (kernels/fp8_codec.h): scale_x =
// max(max|x| / 448, 1e-12) over x's non-NaN values, codes_x =
// round_to_nearest_even(x / scale_x) saturated at ±448, so
// y = (codes_x @ codes_w^T) * scale_x * weight_scale + bias.
//
// Not here: the upcast path callers fall back to (decode the codes with
// kernels/fp8_codec.h, then torch::linear), and the choice of which layers
// get FP8 storage (core/precision).
#ifndef DIFFUSIOND_KERNELS_SCALED_FP8_LINEAR_H_
#define DIFFUSIOND_KERNELS_SCALED_FP8_LINEAR_H_

#include <torch/types.h>

#include <optional>

namespace diffusiond {

// Returns why scaled_fp8_linear cannot run these arguments (a static
// string, for a log line), or nullptr when it can. It can when libtorch is
// >= 2.5 with CUDA, x and codes are on one CUDA device of compute
// capability >= 8.9, x is bf16/fp16/fp32 with x.size(-1) == codes.size(1),
// codes is a contiguous uint8 [out, in], and out_dtype is bf16/fp16/fp32.
// In and out features that are not multiples of 16 (cuBLAS's FP8 matmul
// needs them) are padded with zero codes per call.
const char* scaled_fp8_linear_unavailable_reason(const torch::Tensor& x,
                                                 const torch::Tensor& codes_e4m3,
                                                 torch::ScalarType out_dtype);

// Returns x @ W^T + bias as `out_dtype`, shaped [..., out], where
// W = decode_e4m3fn(codes_e4m3) * weight_scale; bias is undefined or [out].
// Returns nothing when scaled_fp8_linear_unavailable_reason() gives a
// reason: the caller then upcasts. Throws c10::Error, as any libtorch op,
// when cuBLAS refuses the call. `fast_accum` lets cuBLAS accumulate in
// reduced precision between its promotions to float32 (Hopper's fast
// path): quicker, further from the upcast path; off unless asked.
std::optional<torch::Tensor> scaled_fp8_linear(const torch::Tensor& x, const torch::Tensor& codes_e4m3,
                                               float weight_scale, const torch::Tensor& bias,
                                               torch::ScalarType out_dtype, bool fast_accum = false);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_SCALED_FP8_LINEAR_H_
