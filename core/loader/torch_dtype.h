// Mapping between checkpoint element types and libtorch dtypes.
#ifndef DIFFUSIOND_CORE_LOADER_TORCH_DTYPE_H_
#define DIFFUSIOND_CORE_LOADER_TORCH_DTYPE_H_

#include <torch/types.h>

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/dtype.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// The libtorch dtype that holds `dtype`'s elements. FP8 maps to kByte
// (codes): libtorch 1.13 has no float8 dtype, and the stored representation
// is codes on every build.
torch::ScalarType storage_scalar_type(DType dtype);

// The FP8 format of an FP8 dtype; empty for other dtypes.
std::optional<Fp8Format> fp8_format_of(DType dtype);

// Parses "float32"/"f32"/"fp32", "bfloat16"/"bf16", "float16"/"f16"/"fp16".
absl::StatusOr<torch::ScalarType> parse_compute_dtype(absl::string_view name);
// "float32", "bfloat16", "float16", or libtorch's name for others.
std::string scalar_type_name(torch::ScalarType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_TORCH_DTYPE_H_
