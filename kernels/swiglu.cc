#include "kernels/swiglu.h"

#include <ATen/record_function.h>

#include <cassert>

#include "kernels/cuda_launch.h"
#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include "kernels/cuda/swiglu.cuh"
#endif

namespace diffusiond {

bool fused_swiglu_runs_on(const torch::Device& device) { return device.is_cuda() && compat::kHaveCuda; }

void silu_mul(FloatKind kind, void* a, const void* b, int64_t n, const torch::Device& device) {
  // Named in profiles (tests/bench/profile_summary.py), as libtorch ops are.
  RECORD_FUNCTION("diffusiond::silu_mul", c10::ArrayRef<const c10::IValue>{});
  assert(fused_swiglu_runs_on(device));
#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
  launch_cuda(device, "silu_mul", [&](cudaStream_t stream) { return silu_mul_cuda(kind, a, b, n, stream); });
#else
  (void)kind, (void)a, (void)b, (void)n, (void)device;
#endif
}

}  // namespace diffusiond
