// Launching a project kernel from host code: on the device that holds the
// tensors (the calling thread's current device may be another) and that
// device's current stream, the one libtorch's own ops on it are queued on,
// so the kernel is ordered after the ops that produced its inputs. A
// failed launch throws c10::Error, as a failing libtorch op does. Only in a
// build with CUDA kernels.
#ifndef DIFFUSIOND_KERNELS_CUDA_LAUNCH_H_
#define DIFFUSIOND_KERNELS_CUDA_LAUNCH_H_

#include "kernels/torch_compat.h"

#if defined(DIFFUSIOND_HAVE_CUDA) && DIFFUSIOND_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

namespace diffusiond {

// `launch(stream)` enqueues the kernel and returns its launch error; `name`
// says which in the error.
template <typename Launch>
void launch_cuda(const torch::Device& device, const char* name, Launch launch) {
  const c10::cuda::CUDAGuard guard(device);
  const cudaError_t err = launch(static_cast<cudaStream_t>(compat::current_cuda_stream(device)));
  TORCH_CHECK(err == cudaSuccess, name, " on ", device.str(), ": ", cudaGetErrorString(err));
}

}  // namespace diffusiond
#endif

#endif  // DIFFUSIOND_KERNELS_CUDA_LAUNCH_H_
