#include "core/loader/declared_exclusions.h"

#include <string>

#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<DeclaredExclusions> declared_exclusions(const LoadPlan& plan, const PlanOptions& options) {
  if (!plan.fp8.format.has_value()) {
    return absl::FailedPreconditionError("declared exclusions need a plan with FP8 storage on");
  }
  // The same FP8 options with the model's declaration left out.
  DIFFUSIOND_ASSIGN_OR_RETURN(PrecisionPolicy defaults_only, PrecisionPolicy::create(plan.fp8, {}));
  const ParamClassifier& classify = options.classifier ? options.classifier : ParamClassifier(classify_by_rule);
  DeclaredExclusions out;
  for (const PlannedTensor& t : plan.tensors) {
    if (t.action == PlannedTensor::Action::kFp8Encode || t.action == PlannedTensor::Action::kFp8Keep) continue;
    const ParamKind kind = classify(t.name, t.source->shape);
    if (defaults_only.decide(t.name, kind).kind != StorageDecision::Kind::kFp8) continue;
    ++out.tensors;
    out.parameters += t.source->numel;
    out.bytes_over_fp8 += t.final_bytes - t.source->numel;
    out.parameters_by_module[t.name.substr(0, t.name.find('.'))] += t.source->numel;
  }
  return out;
}

}  // namespace diffusiond
