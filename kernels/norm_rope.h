// The fused norm and RoPE loops (norm_rope_args.h) on the device that holds
// the activations: the one dispatch over the CPU loops (norm_rope_cpu.h)
// and, in a build with CUDA kernels, their CUDA form (cuda/norm_rope.cuh),
// enqueued on the device's current stream.
//
// Not here: tensors and dtypes (core/models/common/layers.h decides when
// these apply and falls back to libtorch ops otherwise).
#ifndef DIFFUSIOND_KERNELS_NORM_ROPE_H_
#define DIFFUSIOND_KERNELS_NORM_ROPE_H_

#include <torch/types.h>

#include "kernels/norm_rope_args.h"

namespace diffusiond {

// Whether the loops run on `device`: the CPU, and CUDA devices in a build
// with CUDA kernels.
bool fused_norm_rope_runs_on(const torch::Device& device);

// REQUIRES: fused_norm_rope_runs_on(device), and every pointer in `args` is
// memory of `device`. A failed CUDA launch throws c10::Error, as a failing
// libtorch op does.
void rms_norm_rows(const RmsNormRowsArgs& args, const torch::Device& device);
void layer_norm_rows(const LayerNormRowsArgs& args, const torch::Device& device);
void rope_heads(const RopeHeadsArgs& args, const torch::Device& device);

}  // namespace diffusiond

#endif  // DIFFUSIOND_KERNELS_NORM_ROPE_H_
