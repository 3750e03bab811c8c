// FP8 encode/decode on CUDA devices. Same formats and rounding rule as
// kernels/fp8_format.h, bit for bit; the host code dispatches here through
// kernels/fp8_codec.h.
//
// Layout convention: every pointer is device memory holding n contiguous
// elements; work is enqueued on `stream` and is asynchronous.
#ifndef DIFFUSIOND_KERNELS_CUDA_FP8_CODEC_CUH_
#define DIFFUSIOND_KERNELS_CUDA_FP8_CODEC_CUH_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/float_kind.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Enqueues codes[i] = encode(src[i] * inv_scale). Returns the launch error.
cudaError_t fp8_encode_cuda(const void* src, FloatKind kind, int64_t n, Fp8Format format,
                            float inv_scale, uint8_t* codes, cudaStream_t stream);

// Enqueues the per-tensor quantisation of fp8_quantize_cpu (fp8_cpu.h):
// *scale = max(abs_max(src) / max finite, min_scale), NaN skipped, then
// codes[i] = encode(src[i] / *scale). The scale is made and read on the
// device, so nothing waits for the host. Returns the first launch error.
cudaError_t fp8_quantize_cuda(const void* src, FloatKind kind, int64_t n, Fp8Format format, float min_scale,
                              float* scale, uint8_t* codes, cudaStream_t stream);

// Enqueues dst[i] = decode(codes[i]) * scale, written as `kind`.
cudaError_t fp8_decode_cuda(const uint8_t* codes, int64_t n, Fp8Format format, float scale,
                            FloatKind kind, void* dst, cudaStream_t stream);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_CUDA_FP8_CODEC_CUH_
