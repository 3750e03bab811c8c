// FP8 encode/decode of libtorch tensors: the one dispatch over the CPU and
// CUDA variants. Formats and rounding: fp8_format.h.
//
// Not here: which tensors get FP8 storage (core/precision).
#ifndef DIFFUSIOND_KERNELS_FP8_CODEC_H_
#define DIFFUSIOND_KERNELS_FP8_CODEC_H_

#include <torch/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/float_kind.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Where CUDA work is enqueued: a cudaStream_t, or nullptr for the device's
// current stream. Ignored for CPU tensors, which are processed synchronously.
struct KernelStream {
  void* cuda_stream = nullptr;
};

// Maps float32 / bfloat16 / float16 to FloatKind. INVALID_ARGUMENT otherwise.
absl::StatusOr<FloatKind> float_kind_of(torch::ScalarType dtype);

// Encodes src * inv_scale into `codes`. REQUIRES nothing of the arguments:
// returns INVALID_ARGUMENT when src is not a contiguous float tensor, codes
// not a contiguous uint8 tensor of the same numel and device; and
// FAILED_PRECONDITION for CUDA tensors in a build without CUDA kernels.
absl::Status fp8_encode(const torch::Tensor& src, Fp8Format format, float inv_scale,
                        torch::Tensor& codes, KernelStream stream = {});

// Quantises src per tensor, as a scaled FP8 matmul takes its input
// (fp8_quantize_cpu in fp8_cpu.h states the rule): the codes into `codes`
// and the scale into `scale`, a one-element float32 tensor on src's device.
// On CUDA the scale is made and used on the device, so the host never
// waits for it. The same argument checks as fp8_encode, and
// INVALID_ARGUMENT for another `scale` or a min_scale that is not > 0.
absl::Status fp8_quantize(const torch::Tensor& src, Fp8Format format, float min_scale, torch::Tensor& codes,
                          torch::Tensor& scale, KernelStream stream = {});

// Decodes codes * scale into `dst` (float32 / bfloat16 / float16), with the
// same argument checks as fp8_encode.
absl::Status fp8_decode(const torch::Tensor& codes, Fp8Format format, float scale,
                        torch::Tensor& dst, KernelStream stream = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_FP8_CODEC_H_
