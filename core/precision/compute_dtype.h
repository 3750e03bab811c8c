// ComputeDtype: the dtypes a model's forward may run at, and the one table
// of how they are spelled. Header-only and torch-free, so the daemon's flag
// parsing and diffusionctl share it; core/precision/torch_dtype.h maps it to
// libtorch's dtypes.
#ifndef DIFFUSIOND_CORE_PRECISION_COMPUTE_DTYPE_H_
#define DIFFUSIOND_CORE_PRECISION_COMPUTE_DTYPE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

enum class ComputeDtype : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };
inline constexpr int kNumComputeDtypes = 3;  // keep next to the enum

struct ComputeDtypeSpelling {
  const char* name;        // canonical: logs, the API, `diffusionctl ls`
  const char* aliases[2];  // also accepted when parsing; may be null
};

// In enum order.
inline constexpr ComputeDtypeSpelling kComputeDtypeSpellings[] = {
    {"float32", {"f32", "fp32"}},
    {"bfloat16", {"bf16", nullptr}},
    {"float16", {"f16", "fp16"}},
};
static_assert(sizeof(kComputeDtypeSpellings) / sizeof(kComputeDtypeSpellings[0]) == kNumComputeDtypes,
              "every ComputeDtype needs its spelling in kComputeDtypeSpellings");

inline constexpr const char* compute_dtype_name(ComputeDtype dtype) {
  return kComputeDtypeSpellings[static_cast<int>(dtype)].name;
}

// The dtype `name` spells (a name or an alias, any case); empty if none.
inline std::optional<ComputeDtype> parse_compute_dtype_name(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (int i = 0; i < kNumComputeDtypes; ++i) {
    const ComputeDtypeSpelling& s = kComputeDtypeSpellings[i];
    if (lower == s.name || (s.aliases[0] != nullptr && lower == s.aliases[0]) ||
        (s.aliases[1] != nullptr && lower == s.aliases[1])) {
      return static_cast<ComputeDtype>(i);
    }
  }
  return std::nullopt;
}

// The canonical names in enum order, for flag validation.
inline std::vector<std::string> compute_dtype_names() {
  std::vector<std::string> out;
  for (const ComputeDtypeSpelling& s : kComputeDtypeSpellings) out.push_back(s.name);
  return out;
}

// "float32, bfloat16, float16", for messages and --help.
inline std::string compute_dtype_choices() { return absl::StrJoin(compute_dtype_names(), ", "); }

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_COMPUTE_DTYPE_H_
