// SwiGLU's gate, silu(a) * b written over a, as one fused pass on a CUDA
// device (cuda/swiglu.cuh). The gate sits between a feed-forward's matmuls
// (Z-Image, Qwen3, Krea 2), over its widest activations: at Z-Image's real
// size and a 1024² latent, 4,224 × 10,240 values per block, where libtorch's
// silu_ then mul_ move 10 bytes per bf16 value and this pass 6.
//
// The CPU keeps libtorch's two in-place ops: they vectorise exp, a loop
// here would not without -ffast-math, and a CPU step is bound by its
// matmuls. Not here: tensors and dtypes (core/models/common/layers.h
// decides when this applies).
#ifndef DIFFUSIOND_KERNELS_SWIGLU_H_
#define DIFFUSIOND_KERNELS_SWIGLU_H_

#include <torch/types.h>

#include <cstdint>

#include "kernels/float_kind.h"

namespace diffusiond {

// Whether silu_mul runs on `device`: CUDA devices, in a build with CUDA
// kernels.
bool fused_swiglu_runs_on(const torch::Device& device);

// a[i] = silu(a[i]) * b[i] for i < n, float32 inside, rounded once to
// `kind`. REQUIRES: fused_swiglu_runs_on(device); a and b are n elements of
// `kind` in memory of `device`. Enqueued on the device's current stream; a
// failed launch throws c10::Error.
void silu_mul(FloatKind kind, void* a, const void* b, int64_t n, const torch::Device& device);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_SWIGLU_H_
