// WanModel's architecture-generic entry points: the named-tensor Step, the
// conditioning it declares, and the denoise loop's predictor (the text
// zero-padded to max_sequence_length as WanPipeline pads it, latents
// [C, F, H, W], positive and negative in one batched call). Names and
// shapes are checked here so a remote caller learns which input is wrong.
#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"
#include "core/models/wan/wan_model.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kWanLatents[] = "hidden_states";
constexpr char kWanTimestep[] = "timestep";
constexpr char kWanText[] = "encoder_hidden_states";
constexpr char kWanTextLength[] = "max_sequence_length";
// The longest padding a conditioning may ask for (UMT5's inputs are far
// shorter; this only bounds the allocation).
constexpr double kWanMaxTextLength = 1 << 16;

// `text` [L, D] with zero rows appended up to `length` rows.
torch::Tensor wan_zero_padded(const torch::Tensor& text, int64_t length) {
  if (text.size(0) >= length) return text;
  return torch::cat({text, torch::zeros({length - text.size(0), text.size(1)}, text.options())}, 0);
}

}  // namespace

absl::StatusOr<NamedTensors> WanModel::step(const NamedTensors& inputs) const {
  const auto x = inputs.find(kWanLatents), t = inputs.find(kWanTimestep), text = inputs.find(kWanText);
  if (x == inputs.end() || t == inputs.end() || text == inputs.end()) {
    return absl::InvalidArgumentError(
        "Wan Step needs inputs \"hidden_states\" [B, C, F, H, W], \"timestep\" [B] (0..1000) and "
        "\"encoder_hidden_states\" [B, L, text_dim]");
  }
  for (const auto& [name, tensor] : inputs) {
    if (name != kWanLatents && name != kWanTimestep && name != kWanText) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected input \"", bounded(name, 64), "\" for Wan"));
    }
  }
  if (x->second.dim() != 5 || x->second.size(0) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("input \"hidden_states\" must be [B, C, F, H, W] with B >= 1, got ", shape_of(x->second)));
  }
  const int64_t batch = x->second.size(0);
  if (t->second.dim() != 1 || t->second.size(0) != batch || !t->second.is_floating_point()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input \"timestep\" must be a float [", batch, "], got ", shape_of(t->second)));
  }
  if (text->second.dim() != 3 || text->second.size(0) != batch) {
    return absl::InvalidArgumentError(absl::StrCat("input \"encoder_hidden_states\" must be [", batch, ", L, ",
                                                   config_.text_dim, "], got ", shape_of(text->second)));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(x->second, t->second, text->second));
  return NamedTensors{{"out", out}};
}

std::vector<ConditioningInput> WanModel::conditioning_inputs() const {
  ConditioningInput text;
  text.name = kWanText;
  text.shape = {-1, config_.text_dim};
  text.meaning = "the UMT5 encoder's last hidden states of the prompt's valid tokens";
  ConditioningInput length;
  length.name = kWanTextLength;
  length.kind = ConditioningInput::Kind::kScalar;
  length.required = false;
  length.default_value = static_cast<double>(kWanDefaultTextLength);
  length.meaning = "rows the text is zero-padded to (WanPipeline's max_sequence_length; the zero rows are attended)";
  return {text, length};
}

absl::StatusOr<FlowPredictor> WanModel::flow_predictor(const Conditioning& positive,
                                                       const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  // Both texts padded to one length, so a guided step is one batched call
  // (WanPipeline pads both to max_sequence_length; a text already longer
  // keeps its rows and the other is padded to it).
  const auto length_of = [&](const Conditioning& c) -> absl::StatusOr<int64_t> {
    const double v = conditioning_scalar(c, inputs, kWanTextLength);
    if (!(v >= 1 && v <= kWanMaxTextLength) || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_sequence_length must be a whole number in [1, ", kWanMaxTextLength, "], got ", v));
    }
    return static_cast<int64_t>(v);
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(int64_t length, length_of(positive));
  const torch::Tensor pos_text = positive.tensors.at(kWanText);
  length = std::max(length, pos_text.size(0));
  torch::Tensor texts;  // [1 or 2, length, text_dim]
  if (negative != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t neg_length, length_of(*negative));
    const torch::Tensor neg_text = negative->tensors.at(kWanText);
    length = std::max({length, neg_length, neg_text.size(0)});
    texts =
        torch::stack({wan_zero_padded(pos_text, length), wan_zero_padded(neg_text.to(pos_text.scalar_type()), length)});
  } else {
    texts = wan_zero_padded(pos_text, length).unsqueeze(0);
  }
  return FlowPredictor(
      [this, texts](const torch::Tensor& latents, float t, bool with_negative) -> absl::StatusOr<FlowPrediction> {
        if (with_negative && texts.size(0) < 2) {
          return absl::InternalError("guidance asked of a Wan predictor without a negative");
        }
        // [C, H, W] is one frame.
        const torch::Tensor video = latents.dim() == 3 ? latents.unsqueeze(1) : latents;
        const int64_t calls = with_negative ? 2 : 1;
        const torch::Tensor x = video.unsqueeze(0).expand({calls, -1, -1, -1, -1});
        const torch::Tensor timestep = torch::full({calls}, t, torch::kFloat32);
        DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(x, timestep, texts.narrow(0, 0, calls)));
        out = out.to(torch::kFloat32);
        const auto shaped = [&](const torch::Tensor& item) { return latents.dim() == 3 ? item.squeeze(1) : item; };
        FlowPrediction p;
        p.positive = shaped(out[0]);
        if (with_negative) p.negative = shaped(out[1]);
        return p;
      });
}

}  // namespace diffusiond
