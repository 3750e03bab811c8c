// Fp8Weight: a weight stored as FP8 codes plus one fp32 scale, decoded on
// demand. value = decode(code) * scale (fp8_format.h has the formats).
#ifndef DIFFUSIOND_CORE_PRECISION_FP8_WEIGHT_H_
#define DIFFUSIOND_CORE_PRECISION_FP8_WEIGHT_H_

#include <torch/types.h>

#include "absl/status/statusor.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Immutable once built; decode() may run on many threads at once.
struct Fp8Weight {
  torch::Tensor codes;  // uint8, the weight's shape
  float scale = 1.0f;
  Fp8Format format = Fp8Format::kE4M3Fn;

  int64_t nbytes() const { return codes.numel(); }
  // Returns a new tensor of `dtype` (float32, bfloat16 or float16) on the
  // codes' device holding code * scale. The caller owns it; the forward that
  // asked frees it when done. INVALID_ARGUMENT for another dtype.
  absl::StatusOr<torch::Tensor> decode(torch::ScalarType dtype) const;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_FP8_WEIGHT_H_
