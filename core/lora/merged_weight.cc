#include "core/lora/merged_weight.h"

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<torch::Tensor> merged_weight(const AdapterSet& set, absl::string_view name, torch::ScalarType dtype) {
  const torch::ScalarType wide =
      dtype == torch::kFloat32 || dtype == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  const std::vector<AdapterSet::Term>* terms = set.terms(name);
  const WeightStore& store = set.model().weights();
  return status_of(absl::StrCat("merging LoRA terms into ", bounded(name)), [&]() -> absl::StatusOr<torch::Tensor> {
    // FP8 codes decode to float32 at most; float32 holds every decoded
    // value exactly, so widening after is the same weight.
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor w, store.materialize(name, store.is_fp8(name) ? torch::kFloat32 : wide));
    w = w.to(torch::kCPU, wide, /*non_blocking=*/false, /*copy=*/true);
    if (terms != nullptr) {
      for (const AdapterSet::Term& t : *terms) {
        w.add_(torch::mm(t.up.to(torch::kCPU, wide), t.down.to(torch::kCPU, wide)), t.scale);
      }
    }
    return w.to(dtype);
  });
}

}  // namespace diffusiond
