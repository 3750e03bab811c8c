#include "kernels/norm_rope.h"

#include <ATen/record_function.h>

#include <cassert>

#include "kernels/cuda_launch.h"
#include "kernels/norm_rope_cpu.h"
#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include "kernels/cuda/norm_rope.cuh"
#endif

namespace diffusiond {

bool fused_norm_rope_runs_on(const torch::Device& device) {
  return device.is_cpu() || (device.is_cuda() && compat::kHaveCuda);
}

void rms_norm_rows(const RmsNormRowsArgs& args, const torch::Device& device) {
  // Named in profiles (tests/bench/profile_summary.py), as libtorch ops are.
  RECORD_FUNCTION("diffusiond::rms_norm_rows", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) {
    return launch_cuda(device, "rms_norm_rows", [&](cudaStream_t stream) { return rms_norm_rows_cuda(args, stream); });
  }
#endif
  rms_norm_rows_cpu(args);
}

void layer_norm_rows(const LayerNormRowsArgs& args, const torch::Device& device) {
  RECORD_FUNCTION("diffusiond::layer_norm_rows", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) {
    return launch_cuda(device, "layer_norm_rows",
                       [&](cudaStream_t stream) { return layer_norm_rows_cuda(args, stream); });
  }
#endif
  layer_norm_rows_cpu(args);
}

void rope_heads(const RopeHeadsArgs& args, const torch::Device& device) {
  RECORD_FUNCTION("diffusiond::rope_heads", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) {
    return launch_cuda(device, "rope_heads", [&](cudaStream_t stream) { return rope_heads_cuda(args, stream); });
  }
#endif
  rope_heads_cpu(args);
}

}  // namespace diffusiond
