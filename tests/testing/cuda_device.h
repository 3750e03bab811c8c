// Whether a test can run CUDA work, and why not: tests of CUDA code skip
// with the reason on machines without a GPU or in CPU-only builds.
#ifndef DIFFUSIOND_TESTS_TESTING_CUDA_DEVICE_H_
#define DIFFUSIOND_TESTS_TESTING_CUDA_DEVICE_H_

#include <torch/cuda.h>
#include <torch/types.h>

#include <string>

#include "kernels/torch_compat.h"

namespace diffusiond::testing {

// Returns why CUDA tests cannot run here ("no CUDA device: ..."), or an
// empty string when this build has CUDA kernels and libtorch sees a device.
// Use as: if (auto why = no_cuda_reason(); !why.empty()) GTEST_SKIP() << why;
inline std::string no_cuda_reason() {
  if (!compat::kHaveCuda) {
    return "no CUDA device: this build has no CUDA kernels (its libtorch has no CUDA)";
  }
  if (!torch::cuda::is_available()) {
    return "no CUDA device: torch::cuda::is_available() is false";
  }
  return "";
}

// Options for a tensor of `dtype` on the current CUDA device.
inline torch::TensorOptions cuda_options(torch::ScalarType dtype) {
  return torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
}

}  // namespace diffusiond::testing

#endif  // DIFFUSIOND_TESTS_TESTING_CUDA_DEVICE_H_
