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
#include "core/models/common/text_conditioned_predictor.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/krea2/krea2_rope.h"

namespace diffusiond {
namespace {

constexpr char kKrea2TextStates[] = "encoder_hidden_states";
constexpr char kKrea2TextMask[] = "encoder_attention_mask";
constexpr int64_t kKrea2PackedPatch = kTextConditionedPackedPatch;  // the pipeline's patch_size
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
  return text_conditioned_schedule(schedule_, latent_shape);
}

absl::StatusOr<FlowPredictor> Krea2Model::flow_predictor(const Conditioning& positive,
                                                         const Conditioning* negative) const {
  return text_conditioned_flow_predictor(
      conditioning_inputs(), positive, negative, kKrea2TextStates, kKrea2TextMask,
      [this](const BatchedText& text, const torch::Tensor& packed, const torch::Tensor& timestep, int64_t rows,
             int64_t cols) -> absl::StatusOr<torch::Tensor> {
        Krea2Inputs in;
        in.encoder_hidden_states = text.states;
        in.encoder_attention_mask = text.mask;
        in.hidden_states = packed;
        in.timestep = timestep;
        in.position_ids = krea2_position_ids(in.encoder_hidden_states.size(1), rows, cols);
        return forward(in);
      });
}

}  // namespace diffusiond
