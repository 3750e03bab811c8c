// T5Encoder's named-tensor Step (inputs and outputs documented in
// t5_model.h). Names are checked here so a remote caller learns exactly
// which input is wrong; shapes and values by hidden_states().
#include "absl/strings/str_cat.h"
#include "core/models/t5/t5_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<NamedTensors> T5Encoder::step(const NamedTensors& inputs) const {
  const std::string usage =
      absl::StrCat(config_.name(), " Step takes \"input_ids\" integer [B, L] and optionally \"attention_mask\" [B, L]");
  for (const auto& [name, unused] : inputs) {
    if (name != "input_ids" && name != "attention_mask") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\"; ", usage));
    }
  }
  const auto ids = inputs.find("input_ids");
  if (ids == inputs.end()) return absl::InvalidArgumentError(absl::StrCat("missing \"input_ids\"; ", usage));
  const auto mask = inputs.find("attention_mask");
  DIFFUSIOND_ASSIGN_OR_RETURN(
      torch::Tensor hidden, hidden_states(ids->second, mask != inputs.end() ? mask->second : torch::Tensor(), -1));
  NamedTensors out;
  out["last_hidden_state"] = std::move(hidden);
  return out;
}

}  // namespace diffusiond
