// Qwen3Model's named-tensor Step (inputs and outputs documented in
// qwen3_model.h). Names are checked here so a remote caller learns exactly
// which input is wrong; shapes and values by hidden_states().
#include "absl/strings/str_cat.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/util/bounded_text.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kUsage[] =
    "Qwen3 Step takes \"input_ids\" int64 [B, L], optionally \"attention_mask\" [B, L] and "
    "\"hidden_layer\" (one integer)";

absl::StatusOr<int64_t> hidden_layer_of(const NamedTensors& inputs) {
  const auto it = inputs.find("hidden_layer");
  if (it == inputs.end()) return kQwen3StepHiddenLayer;
  const torch::Tensor& t = it->second;
  if (!t.defined() || t.numel() != 1 || t.is_floating_point() || t.is_complex() ||
      t.scalar_type() == torch::kBool) {
    return absl::InvalidArgumentError("input \"hidden_layer\" must be one integer");
  }
  return t.reshape({}).to(torch::kInt64).item<int64_t>();
}

}  // namespace

absl::StatusOr<NamedTensors> Qwen3Model::step(const NamedTensors& inputs) const {
  for (const auto& [name, unused] : inputs) {
    if (name != "input_ids" && name != "attention_mask" && name != "hidden_layer") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\"; ", kUsage));
    }
  }
  const auto ids = inputs.find("input_ids");
  if (ids == inputs.end()) return absl::InvalidArgumentError(absl::StrCat("missing \"input_ids\"; ", kUsage));
  const auto mask_it = inputs.find("attention_mask");
  const torch::Tensor mask = mask_it != inputs.end() ? mask_it->second : torch::Tensor();
  DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t layer, hidden_layer_of(inputs));
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor hidden, hidden_states(ids->second, mask, layer));
  return status_of("the Qwen3 Step outputs", [&]() -> absl::StatusOr<NamedTensors> {
    NamedTensors out;
    const std::vector<torch::Tensor> rows = token_rows(hidden, mask);
    for (size_t i = 0; i < rows.size(); ++i) out[absl::StrCat("cap_feats_", i)] = rows[i];
    out["hidden_states"] = std::move(hidden);
    return out;
  });
}

}  // namespace diffusiond
