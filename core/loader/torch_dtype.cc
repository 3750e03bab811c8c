#include "core/loader/torch_dtype.h"

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

absl::StatusOr<torch::ScalarType> parse_compute_dtype(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "float32" || n == "f32" || n == "fp32") return torch::kFloat32;
  if (n == "bfloat16" || n == "bf16") return torch::kBFloat16;
  if (n == "float16" || n == "f16" || n == "fp16") return torch::kFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("compute dtype '", name, "' is not one of float32, bfloat16, float16"));
}

std::string scalar_type_name(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat16: return "float16";
    case torch::kFloat64: return "float64";
    case torch::kUInt8: return "uint8";
    default: return c10::toString(dtype);
  }
}

}  // namespace diffusiond
