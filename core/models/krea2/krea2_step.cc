// Krea2Model's named-tensor Step: upstream's argument names, each checked
// here once so a remote caller learns exactly which input is wrong; shapes
// are checked by forward().
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/krea2/krea2_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kKrea2StepExpected[] =
    " (expected \"hidden_states\", \"encoder_hidden_states\", \"timestep\", \"position_ids\" and optionally "
    "\"encoder_attention_mask\")";

}  // namespace

absl::StatusOr<NamedTensors> Krea2Model::step(const NamedTensors& inputs) const {
  Krea2Inputs in;
  const std::vector<std::pair<const char*, torch::Tensor*>> slots = {
      {"hidden_states", &in.hidden_states},
      {"encoder_hidden_states", &in.encoder_hidden_states},
      {"timestep", &in.timestep},
      {"position_ids", &in.position_ids}};
  std::vector<std::string> problems;
  std::set<std::string> known = {"encoder_attention_mask"};
  for (const auto& [name, slot] : slots) {
    known.insert(name);
    const auto it = inputs.find(name);
    if (it == inputs.end()) {
      problems.push_back(absl::StrCat("missing input \"", name, "\""));
    } else {
      *slot = it->second;
    }
  }
  if (const auto it = inputs.find("encoder_attention_mask"); it != inputs.end()) {
    in.encoder_attention_mask = it->second;
  }
  for (const auto& [name, unused] : inputs) {
    if (known.count(name) == 0) problems.push_back(absl::StrCat("unexpected input \"", bounded(name, 64), "\""));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Krea 2 Step: ", bounded_list(problems, 4, 120), kKrea2StepExpected));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
  return NamedTensors{{"out", std::move(out)}};
}

}  // namespace diffusiond
