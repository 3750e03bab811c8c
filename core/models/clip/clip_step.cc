// ClipTextModel's named-tensor Step (inputs and outputs documented in
// clip_model.h). Names are checked here so a remote caller learns exactly
// which input is wrong; shapes and values by forward().
#include "absl/strings/str_cat.h"
#include "core/models/clip/clip_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kUsage[] = "CLIP text Step takes \"input_ids\" integer [B, L] and optionally \"attention_mask\" [B, L]";

}  // namespace

absl::StatusOr<NamedTensors> ClipTextModel::step(const NamedTensors& inputs) const {
  for (const auto& [name, unused] : inputs) {
    if (name != "input_ids" && name != "attention_mask") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\"; ", kUsage));
    }
  }
  const auto ids = inputs.find("input_ids");
  if (ids == inputs.end()) return absl::InvalidArgumentError(absl::StrCat("missing \"input_ids\"; ", kUsage));
  const auto mask = inputs.find("attention_mask");
  DIFFUSIOND_ASSIGN_OR_RETURN(ClipTextOutputs out,
                              forward(ids->second, mask != inputs.end() ? mask->second : torch::Tensor()));
  NamedTensors named;
  named["last_hidden_state"] = std::move(out.last_hidden_state);
  named["pooler_output"] = std::move(out.pooler_output);
  if (out.text_embeds.defined()) named["text_embeds"] = std::move(out.text_embeds);
  return named;
}

}  // namespace diffusiond
