#include "kernels/norm_rope.h"

#include <ATen/record_function.h>

#include <cassert>

#include "kernels/norm_rope_cpu.h"
#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "kernels/cuda/norm_rope.cuh"
#endif

namespace diffusiond {
namespace {

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
// Launches on `device` (the calling thread's current device may be another)
// and its current stream.
template <typename Args>
void launch_cuda(cudaError_t (*kernel)(const Args&, cudaStream_t), const Args& args, const torch::Device& device,
                 const char* name) {
  const c10::cuda::CUDAGuard guard(device);
  const cudaError_t err = kernel(args, static_cast<cudaStream_t>(compat::current_cuda_stream(device)));
  TORCH_CHECK(err == cudaSuccess, name, " on ", device.str(), ": ", cudaGetErrorString(err));
}
#endif

}  // namespace

bool fused_norm_rope_runs_on(const torch::Device& device) {
  return device.is_cpu() || (device.is_cuda() && compat::kHaveCuda);
}

void rms_norm_rows(const RmsNormRowsArgs& args, const torch::Device& device) {
  // Named in profiles (tests/bench/profile_summary.py), as libtorch ops are.
  RECORD_FUNCTION("diffusiond::rms_norm_rows", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) return launch_cuda(&rms_norm_rows_cuda, args, device, "rms_norm_rows");
#endif
  rms_norm_rows_cpu(args);
}

void layer_norm_rows(const LayerNormRowsArgs& args, const torch::Device& device) {
  RECORD_FUNCTION("diffusiond::layer_norm_rows", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) return launch_cuda(&layer_norm_rows_cuda, args, device, "layer_norm_rows");
#endif
  layer_norm_rows_cpu(args);
}

void rope_heads(const RopeHeadsArgs& args, const torch::Device& device) {
  RECORD_FUNCTION("diffusiond::rope_heads", c10::ArrayRef<const c10::IValue>{});
  assert(fused_norm_rope_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  if (device.is_cuda()) return launch_cuda(&rope_heads_cuda, args, device, "rope_heads");
#endif
  rope_heads_cpu(args);
}

}  // namespace diffusiond
