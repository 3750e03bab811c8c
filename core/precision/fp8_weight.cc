#include "core/precision/fp8_weight.h"

#include "kernels/fp8_codec.h"

namespace diffusiond {

absl::StatusOr<torch::Tensor> Fp8Weight::decode(torch::ScalarType dtype) const {
  torch::Tensor out = torch::empty(codes.sizes(), codes.options().dtype(dtype));
  if (absl::Status s = fp8_decode(codes, format, scale, out); !s.ok()) return s;
  return out;
}

}  // namespace diffusiond
