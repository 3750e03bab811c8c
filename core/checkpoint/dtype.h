// Element types of safetensors files, with their names and sizes.
//
// Not here: mapping to libtorch dtypes (core/precision/torch_dtype.h), since
// this layer is torch-free.
#ifndef DIFFUSIOND_CORE_CHECKPOINT_DTYPE_H_
#define DIFFUSIOND_CORE_CHECKPOINT_DTYPE_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace diffusiond {

enum class DType : int { kF64, kF32, kF16, kBF16, kF8E4M3, kF8E5M2, kI64, kI32, kI16, kI8, kU8, kBool };
inline constexpr int kNumDTypes = 12;

// Returns the safetensors spelling: "F32", "F8_E4M3", ...
absl::string_view dtype_name(DType dtype);
// Parses the safetensors spelling; empty for anything else.
std::optional<DType> parse_dtype(absl::string_view name);
// Bytes per element.
int dtype_size(DType dtype);
bool is_float8(DType dtype);
// F64, F32, F16, BF16 (the dtypes a value can be cast from).
bool is_wide_float(DType dtype);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_CHECKPOINT_DTYPE_H_
