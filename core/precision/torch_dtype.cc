#include "core/precision/torch_dtype.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace diffusiond {

torch::ScalarType storage_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kF64: return torch::kFloat64;
    case DType::kF32: return torch::kFloat32;
    case DType::kF16: return torch::kFloat16;
    case DType::kBF16: return torch::kBFloat16;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kU8: return torch::kUInt8;
    case DType::kI64: return torch::kInt64;
    case DType::kI32: return torch::kInt32;
    case DType::kI16: return torch::kInt16;
    case DType::kI8: return torch::kInt8;
    case DType::kBool: return torch::kBool;
  }
  return torch::kUInt8;
}

std::optional<Fp8Format> fp8_format_of(DType dtype) {
  if (dtype == DType::kF8E4M3) return Fp8Format::kE4M3Fn;
  if (dtype == DType::kF8E5M2) return Fp8Format::kE5M2;
  return std::nullopt;
}

torch::ScalarType to_scalar_type(ComputeDtype dtype) {
  // No default: -Werror=switch makes a new ComputeDtype fail to compile here.
  switch (dtype) {
    case ComputeDtype::kFloat32: return torch::kFloat32;
    case ComputeDtype::kBFloat16: return torch::kBFloat16;
    case ComputeDtype::kFloat16: return torch::kFloat16;
  }
  return torch::kFloat32;  // unreachable
}

std::optional<ComputeDtype> compute_dtype_of(torch::ScalarType dtype) {
  for (int i = 0; i < kNumComputeDtypes; ++i) {
    if (to_scalar_type(static_cast<ComputeDtype>(i)) == dtype) return static_cast<ComputeDtype>(i);
  }
  return std::nullopt;
}

absl::StatusOr<torch::ScalarType> parse_compute_dtype(absl::string_view name) {
  if (std::optional<ComputeDtype> d = parse_compute_dtype_name(name)) return to_scalar_type(*d);
  return absl::InvalidArgumentError(
      absl::StrCat("compute dtype '", name, "' is not one of ", compute_dtype_choices()));
}

std::string scalar_type_name(torch::ScalarType dtype) {
  if (std::optional<ComputeDtype> d = compute_dtype_of(dtype)) return compute_dtype_name(*d);
  switch (dtype) {
    case torch::kFloat64: return "float64";
    case torch::kUInt8: return "uint8";
    default: return c10::toString(dtype);
  }
}

}  // namespace diffusiond
