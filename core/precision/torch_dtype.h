// Mapping between checkpoint element types, compute dtypes and libtorch
// dtypes. The names themselves live next to their enums
// (core/precision/compute_dtype.h, kernels/fp8_format.h).
#ifndef DIFFUSIOND_CORE_PRECISION_TORCH_DTYPE_H_
#define DIFFUSIOND_CORE_PRECISION_TORCH_DTYPE_H_

#include <torch/types.h>

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/dtype.h"
#include "core/precision/compute_dtype.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// The libtorch dtype that holds `dtype`'s elements. FP8 maps to kByte
// (codes): libtorch 1.13 has no float8 dtype, and the stored representation
// is codes on every build.
torch::ScalarType storage_scalar_type(DType dtype);

// The FP8 format of an FP8 dtype; empty for other dtypes.
std::optional<Fp8Format> fp8_format_of(DType dtype);

torch::ScalarType to_scalar_type(ComputeDtype dtype);
// The compute dtype that `dtype` is; empty for dtypes no forward runs at.
std::optional<ComputeDtype> compute_dtype_of(torch::ScalarType dtype);

// parse_compute_dtype_name as a libtorch dtype; INVALID_ARGUMENT naming the
// choices for anything else.
absl::StatusOr<torch::ScalarType> parse_compute_dtype(absl::string_view name);
// A compute dtype's name, "float64", "uint8", or libtorch's name for others.
std::string scalar_type_name(torch::ScalarType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_TORCH_DTYPE_H_
