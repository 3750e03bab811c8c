// What a model's own precision declaration keeps from FP8 beyond the default
// skip patterns. Upstream's layerwise casting skips the default patterns ∪
// the model's `_skip_layerwise_casting_patterns` ∪ its
// `_keep_in_fp32_modules`; the model's part is what it costs in memory over
// a policy that knew only the defaults, and the figure operators compare
// with upstream's published sizes (docs/models.md).
#ifndef DIFFUSIOND_CORE_LOADER_DECLARED_EXCLUSIONS_H_
#define DIFFUSIOND_CORE_LOADER_DECLARED_EXCLUSIONS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/loader/load_plan.h"

namespace diffusiond {

struct DeclaredExclusions {
  int64_t tensors = 0;
  int64_t parameters = 0;
  // What they hold beyond their FP8 codes (one byte each), as planned.
  int64_t bytes_over_fp8 = 0;
  // Parameters by top-level module, e.g. {"condition_embedder": 231997440}.
  std::map<std::string, int64_t> parameters_by_module;
};

// The layer weights of `plan` (made with `options`, FP8 storage on) that are
// not FP8 although the default skip patterns alone would make them FP8.
// FAILED_PRECONDITION for a plan with FP8 storage off, where nothing is FP8
// and the question has no answer.
absl::StatusOr<DeclaredExclusions> declared_exclusions(const LoadPlan& plan, const PlanOptions& options);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_LOADER_DECLARED_EXCLUSIONS_H_
