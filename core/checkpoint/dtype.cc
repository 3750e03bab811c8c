#include "core/checkpoint/dtype.h"

namespace diffusiond {
namespace {

struct DTypeInfo {
  absl::string_view name;
  int size;
};

constexpr DTypeInfo kInfo[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U8", 1},      {"BOOL", 1},
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kNumDTypes, "one entry per DType");

}  // namespace

absl::string_view dtype_name(DType dtype) { return kInfo[static_cast<int>(dtype)].name; }

std::optional<DType> parse_dtype(absl::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

int dtype_size(DType dtype) { return kInfo[static_cast<int>(dtype)].size; }

bool is_float8(DType dtype) { return dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2; }

bool is_wide_float(DType dtype) {
  return dtype == DType::kF64 || dtype == DType::kF32 || dtype == DType::kF16 ||
         dtype == DType::kBF16;
}

}  // namespace diffusiond
