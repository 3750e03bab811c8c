// What a parameter is, as far as storage precision cares.
#ifndef DIFFUSIOND_CORE_PRECISION_PARAM_KIND_H_
#define DIFFUSIOND_CORE_PRECISION_PARAM_KIND_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/strings/string_view.h"

namespace diffusiond {

enum class ParamKind : int {
  kLayerWeight,  // weight of a Linear, Conv or Embedding: may get FP8 storage
  kBias,         // never FP8
  kNormWeight,   // RMSNorm / LayerNorm scale: never FP8
  kBare,         // a bare parameter (pad token, scale-shift table): never FP8
};
absl::string_view param_kind_name(ParamKind kind);

// Tells what the parameter `name` of `shape` is. Known architectures supply
// their parameter table through this; classify_by_rule serves the rest.
using ParamClassifier =
    std::function<ParamKind(absl::string_view name, const std::vector<int64_t>& shape)>;

// The documented rule for checkpoints of unknown architecture:
//   "*.bias" -> kBias; "*.weight" of rank >= 2 -> kLayerWeight (Linear is
//   rank 2, Conv rank 3-5, Embedding rank 2); "*.weight" of rank 1 ->
//   kNormWeight; anything else (no ".weight" suffix) -> kBare.
ParamKind classify_by_rule(absl::string_view name, const std::vector<int64_t>& shape);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PRECISION_PARAM_KIND_H_
