#include "core/models/common/step_inputs.h"

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"

namespace diffusiond {

void StepInputCheck::require(const char* name, torch::Tensor* slot) {
  if (const torch::Tensor* t = find(name)) {
    *slot = *t;
  } else {
    problems_.push_back(absl::StrCat("missing input \"", name, "\""));
  }
}

void StepInputCheck::optional(const char* name, torch::Tensor* slot) {
  if (const torch::Tensor* t = find(name)) *slot = *t;
}

const torch::Tensor* StepInputCheck::find(const char* name) {
  known_.insert(name);
  const auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : &it->second;
}

absl::Status StepInputCheck::finish(absl::string_view prefix, absl::string_view expected) {
  for (const auto& [name, unused] : inputs_) {
    if (known_.count(name) != 0) continue;
    const auto why = explained_.find(name);
    problems_.push_back(why != explained_.end() ? why->second
                                                : absl::StrCat("unexpected input \"", bounded(name, 64), "\""));
  }
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(prefix, bounded_list(problems_, 4, 120), expected));
}

}  // namespace diffusiond
