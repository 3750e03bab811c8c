// QwenImageModel's denoise-loop side: its conventions, conditioning and
// default schedule, and the predictor that packs unpacked latents [C, H, W]
// into 2x2-patch tokens (QwenImagePipeline._pack_latents, the same layout
// as FLUX's), runs one forward per conditioning and unpacks the velocity,
// as the pipeline does around each transformer call.
#include "core/models/common/text_conditioned_predictor.h"
#include "core/models/qwen_image/qwen_image_model.h"

namespace diffusiond {
namespace {

constexpr char kQwenTextStates[] = "encoder_hidden_states";
constexpr char kQwenTextMask[] = "encoder_hidden_states_mask";
constexpr int64_t kQwenPackedPatch = kTextConditionedPackedPatch;  // the pipeline's 2x2 packing
constexpr int64_t kQwenMaxLatentSide = 512;  // a 4096-pixel side at the VAE's factor 8

}  // namespace

FlowConvention QwenImageModel::flow_convention() const {
  FlowConvention c;
  c.velocity_sign = 1.0f;
  c.time = ModelTime::kSigma;
  // The pipeline's true CFG: comb * ||cond|| / ||comb|| per packed token.
  c.guidance_norm_patch = kQwenPackedPatch;
  return c;
}

LatentLayout QwenImageModel::latent_layout() const {
  return {config_.in_channels / (kQwenPackedPatch * kQwenPackedPatch), kQwenPackedPatch, kQwenMaxLatentSide};
}

std::vector<ConditioningInput> QwenImageModel::conditioning_inputs() const {
  std::vector<ConditioningInput> inputs(2);
  inputs[0].name = kQwenTextStates;
  inputs[0].shape = {-1, config_.joint_attention_dim};
  inputs[0].meaning = "Qwen2.5-VL's last hidden states of the prompt, the chat template's prefix dropped";
  inputs[1].name = kQwenTextMask;
  inputs[1].shape = {-1};
  inputs[1].required = false;
  inputs[1].meaning = "1 for valid, 0 for padding text tokens (padding is never attended to)";
  return inputs;
}

ScheduleOptions QwenImageModel::default_schedule(const std::vector<int64_t>& latent_shape) const {
  return text_conditioned_schedule(schedule_, latent_shape);
}

absl::StatusOr<FlowPredictor> QwenImageModel::flow_predictor(const Conditioning& positive,
                                                             const Conditioning* negative) const {
  return text_conditioned_flow_predictor(
      conditioning_inputs(), positive, negative, kQwenTextStates, kQwenTextMask,
      [this](const BatchedText& text, const torch::Tensor& packed, const torch::Tensor& timestep, int64_t rows,
             int64_t cols) -> absl::StatusOr<torch::Tensor> {
        QwenImageInputs in;
        in.encoder_hidden_states = text.states;
        in.encoder_hidden_states_mask = text.mask;
        in.hidden_states = packed;
        in.timestep = timestep;
        in.img_shapes = {{1, rows, cols}};
        return forward(in);
      });
}

}  // namespace diffusiond
