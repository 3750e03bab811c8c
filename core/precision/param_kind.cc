#include "core/precision/param_kind.h"

#include "absl/strings/match.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kNames[] = {"layer-weight", "bias", "norm-weight", "bare"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == 4, "one name per ParamKind");

}  // namespace

absl::string_view param_kind_name(ParamKind kind) { return kNames[static_cast<int>(kind)]; }

ParamKind classify_by_rule(absl::string_view name, const std::vector<int64_t>& shape) {
  if (absl::EndsWith(name, ".bias")) return ParamKind::kBias;
  if (absl::EndsWith(name, ".weight")) {
    return shape.size() >= 2 ? ParamKind::kLayerWeight : ParamKind::kNormWeight;
  }
  return ParamKind::kBare;
}

}  // namespace diffusiond
