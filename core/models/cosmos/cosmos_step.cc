// CosmosModel's architecture-generic entry points: the named-tensor Step,
// the conditioning it declares, and the denoise loop's predictor (latents
// [C, H, W] as one frame, the padding mask zero as AnimaPipeline passes it,
// positive and negative batched when their texts have one length). Names
// and shapes are checked here so a remote caller learns which input is
// wrong.
#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kCosmosLatents[] = "hidden_states";
constexpr char kCosmosTimestep[] = "timestep";
constexpr char kCosmosText[] = "encoder_hidden_states";
constexpr char kCosmosPaddingMask[] = "padding_mask";

}  // namespace

absl::StatusOr<NamedTensors> CosmosModel::step(const NamedTensors& inputs) const {
  const auto x = inputs.find(kCosmosLatents), t = inputs.find(kCosmosTimestep), text = inputs.find(kCosmosText);
  if (x == inputs.end() || t == inputs.end() || text == inputs.end()) {
    return absl::InvalidArgumentError(
        "Cosmos Step needs inputs \"hidden_states\" [B, C, T, H, W], \"timestep\" [B] (sigma) and "
        "\"encoder_hidden_states\" [B, L, text_embed_dim]; \"padding_mask\" [1, 1, H, W] is optional");
  }
  for (const auto& [name, tensor] : inputs) {
    if (name != kCosmosLatents && name != kCosmosTimestep && name != kCosmosText && name != kCosmosPaddingMask) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\" for Cosmos"));
    }
  }
  const auto mask = inputs.find(kCosmosPaddingMask);
  DIFFUSIOND_ASSIGN_OR_RETURN(
      torch::Tensor out,
      forward(x->second, t->second, text->second, mask == inputs.end() ? torch::Tensor() : mask->second));
  return NamedTensors{{"out", out}};
}

std::vector<ConditioningInput> CosmosModel::conditioning_inputs() const {
  ConditioningInput text;
  text.name = kCosmosText;
  text.shape = {-1, config_.text_embed_dim};
  text.meaning =
      "the text conditioner's output, every row (AnimaTextConditioner pads it to 512 with zero rows, which are "
      "attended)";
  return {text};
}

absl::StatusOr<FlowPredictor> CosmosModel::flow_predictor(const Conditioning& positive,
                                                          const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  const torch::Tensor pos = positive.tensors.at(kCosmosText).unsqueeze(0);
  const torch::Tensor neg = negative != nullptr ? negative->tensors.at(kCosmosText).unsqueeze(0) : torch::Tensor();
  // One call for both when the lengths agree (the usual 512 rows each).
  const bool batched = neg.defined() && neg.size(1) == pos.size(1);
  const torch::Tensor both = batched ? torch::cat({pos, neg.to(pos.scalar_type())}, 0) : torch::Tensor();
  return FlowPredictor(
      [this, pos, neg, both](const torch::Tensor& latents, float t, bool with_negative) -> absl::StatusOr<FlowPrediction> {
        if (with_negative && !neg.defined()) {
          return absl::InternalError("guidance asked of a Cosmos predictor without a negative");
        }
        // [C, H, W] is one frame.
        const torch::Tensor x = latents.unsqueeze(1).unsqueeze(0);
        const auto call = [&](const torch::Tensor& text) -> absl::StatusOr<torch::Tensor> {
          const int64_t n = text.size(0);
          DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out,
                                      forward(x.expand({n, -1, -1, -1, -1}), torch::full({n}, t, torch::kFloat32),
                                              text));
          return out.to(torch::kFloat32).squeeze(2);
        };
        FlowPrediction p;
        if (with_negative && both.defined()) {
          DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor out, call(both));
          p.positive = out[0];
          p.negative = out[1];
          return p;
        }
        DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor cond, call(pos));
        p.positive = cond[0];
        if (with_negative) {
          DIFFUSIOND_ASSIGN_OR_RETURN(const torch::Tensor uncond, call(neg));
          p.negative = uncond[0];
        }
        return p;
      });
}

}  // namespace diffusiond
