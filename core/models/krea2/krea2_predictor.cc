// Krea2Model's denoise-loop side: its conventions, conditioning and default
// schedule, and the predictor that packs unpacked latents [C, H, W] into
// 2x2-patch tokens (Krea2Pipeline._pack_latents, the same layout as
// FLUX's), builds the pipeline's position ids, runs one forward per
// conditioning and unpacks the velocity, as the pipeline does around each
// transformer call.
//
// Guidance: the pipeline writes cond + g (cond - uncond), enabled for
// g > 0; that is the loop's pos + (s - 1)(pos - neg) with s = 1 + g, so a
// request's guidance_scale is Krea's g + 1 and no rescale applies.
#include "absl/strings/str_cat.h"
#include "core/models/flux/flux_latents.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/krea2/krea2_rope.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kKrea2TextStates[] = "encoder_hidden_states";
constexpr char kKrea2TextMask[] = "encoder_attention_mask";
constexpr int64_t kKrea2PackedPatch = 2;      // the pipeline's patch_size
constexpr int64_t kKrea2MaxLatentSide = 512;  // a 4096-pixel side at the VAE's factor 8

}  // namespace

FlowConvention Krea2Model::flow_convention() const {
  FlowConvention c;
  c.velocity_sign = 1.0f;
  c.time = ModelTime::kSigma;  // the pipeline passes timesteps[i] / 1000
  return c;
}

LatentLayout Krea2Model::latent_layout() const {
  return {config_.in_channels / (kKrea2PackedPatch * kKrea2PackedPatch), kKrea2PackedPatch, kKrea2MaxLatentSide};
}

std::vector<ConditioningInput> Krea2Model::conditioning_inputs() const {
  std::vector<ConditioningInput> inputs(2);
  inputs[0].name = kKrea2TextStates;
  inputs[0].shape = {-1, config_.num_text_layers, config_.text_hidden_dim};
  inputs[0].meaning =
      "per prompt token, the stack of Qwen3-VL hidden states of the tapped layers (the pipeline's "
      "text_encoder_select_layers), the chat template's system prefix dropped";
  inputs[1].name = kKrea2TextMask;
  inputs[1].shape = {-1};
  inputs[1].required = false;
  inputs[1].meaning = "1 for valid, 0 for padding text tokens (padding is never attended to, wherever it sits)";
  return inputs;
}

ScheduleOptions Krea2Model::default_schedule(const std::vector<int64_t>& latent_shape) const {
  ScheduleOptions o = schedule_;
  if (latent_shape.size() == 3) {
    o.image_seq_len = (latent_shape[1] / kKrea2PackedPatch) * (latent_shape[2] / kKrea2PackedPatch);
  }
  return o;
}

absl::StatusOr<FlowPredictor> Krea2Model::flow_predictor(const Conditioning& positive,
                                                         const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  // Each conditioning's inputs minus the latents, time and positions, which
  // each call sets.
  const auto prepare = [&](const Conditioning& c, const char* what) -> absl::StatusOr<Krea2Inputs> {
    DIFFUSIOND_ASSIGN_OR_RETURN(BatchedText text, batched_text(c, kKrea2TextStates, kKrea2TextMask, what));
    Krea2Inputs in;
    in.encoder_hidden_states = std::move(text.states);
    in.encoder_attention_mask = std::move(text.mask);
    return in;
  };
  std::vector<Krea2Inputs> calls;
  DIFFUSIOND_ASSIGN_OR_RETURN(Krea2Inputs first, prepare(positive, "conditioning"));
  calls.push_back(std::move(first));
  if (negative != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(Krea2Inputs second, prepare(*negative, "negative conditioning"));
    calls.push_back(std::move(second));
  }
  return FlowPredictor([this, calls = std::move(calls)](const torch::Tensor& latents, float t,
                                                        bool with_negative) -> absl::StatusOr<FlowPrediction> {
    if (with_negative && calls.size() < 2) {
      return absl::InternalError("guidance asked of a predictor without a negative");
    }
    const int64_t h = latents.size(1), w = latents.size(2);
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor packed, pack_latents(latents.unsqueeze(0)));
    const torch::Tensor timestep = torch::full({1}, t, torch::kFloat32);
    FlowPrediction p;
    // Separate calls, cond then uncond, as the pipeline makes them: the
    // two prompts' lengths may differ.
    for (size_t i = 0; i < (with_negative ? calls.size() : 1); ++i) {
      Krea2Inputs in = calls[i];
      in.hidden_states = packed;
      in.timestep = timestep;
      in.position_ids =
          krea2_position_ids(in.encoder_hidden_states.size(1), h / kKrea2PackedPatch, w / kKrea2PackedPatch);
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor unpacked, unpack_latents(out.to(torch::kFloat32), h, w));
      (i == 0 ? p.positive : p.negative) = unpacked[0];
    }
    return p;
  });
}

}  // namespace diffusiond
