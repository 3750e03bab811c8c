// SwiGLU's gate on a CUDA device: a[i] = silu(a[i]) * b[i], silu(x) =
// x / (1 + exp(-x)), in float32 and rounded once to a's kind. libtorch runs
// it as two kernels (silu_, then mul_), reading and writing `a` twice and
// rounding after each under bf16; here one pass reads a and b and writes a.
// The host dispatches here through kernels/swiglu.h.
//
// Pointers are device memory of n elements of `kind`; work is enqueued on
// `stream` and is asynchronous. Returns the launch error.
#ifndef DIFFUSIOND_KERNELS_CUDA_SWIGLU_CUH_
#define DIFFUSIOND_KERNELS_CUDA_SWIGLU_CUH_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/float_kind.h"

namespace diffusiond {

cudaError_t silu_mul_cuda(FloatKind kind, void* a, const void* b, int64_t n, cudaStream_t stream);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_CUDA_SWIGLU_CUH_
