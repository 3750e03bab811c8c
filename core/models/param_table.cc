#include "core/models/param_table.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace diffusiond {

absl::Status check_weights_match_table(const WeightStore& weights, const std::vector<ParamSpec>& table,
                                       absl::string_view architecture) {
  for (const ParamSpec& p : table) {
    const torch::Tensor* dense = weights.dense(p.name);
    const Fp8Weight* fp8 = weights.fp8(p.name);
    if (dense == nullptr && fp8 == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(architecture, " checkpoint lacks parameter '", p.name, "'"));
    }
    const torch::IntArrayRef shape = dense != nullptr ? dense->sizes() : fp8->codes.sizes();
    if (shape != torch::IntArrayRef(p.shape)) {
      return absl::FailedPreconditionError(absl::StrCat(
          architecture, " parameter '", p.name, "' has shape [", absl::StrJoin(shape, ", "),
          "], but the config expects [", absl::StrJoin(p.shape, ", "), "]"));
    }
  }
  // Every table entry is present, so a larger store holds something extra.
  if (weights.size() != static_cast<int64_t>(table.size())) {
    std::set<std::string> known;
    for (const ParamSpec& p : table) known.insert(p.name);
    for (const std::string& name : weights.names()) {
      if (known.count(name) == 0) {
        return absl::FailedPreconditionError(
            absl::StrCat(architecture, " checkpoint has unexpected tensor '", name, "'"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace diffusiond
