// QwenImageModel's denoise-loop side: its conventions, conditioning and
// default schedule, and the predictor that packs unpacked latents [C, H, W]
// into 2x2-patch tokens (QwenImagePipeline._pack_latents, the same layout
// as FLUX's), runs one forward per conditioning and unpacks the velocity,
// as the pipeline does around each transformer call.
#include "absl/strings/str_cat.h"
#include "core/models/flux/flux_latents.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kQwenTextStates[] = "encoder_hidden_states";
constexpr char kQwenTextMask[] = "encoder_hidden_states_mask";
constexpr int64_t kQwenPackedPatch = 2;      // the pipeline's 2x2 packing
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
  ScheduleOptions o = schedule_;
  if (latent_shape.size() == 3) {
    o.image_seq_len = (latent_shape[1] / kQwenPackedPatch) * (latent_shape[2] / kQwenPackedPatch);
  }
  return o;
}

absl::StatusOr<FlowPredictor> QwenImageModel::flow_predictor(const Conditioning& positive,
                                                             const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  // Each conditioning's inputs minus the latents and time, which each call sets.
  const auto prepare = [&](const Conditioning& c, const char* what) -> absl::StatusOr<QwenImageInputs> {
    DIFFUSIOND_ASSIGN_OR_RETURN(BatchedText text, batched_text(c, kQwenTextStates, kQwenTextMask, what));
    QwenImageInputs in;
    in.encoder_hidden_states = std::move(text.states);
    in.encoder_hidden_states_mask = std::move(text.mask);
    return in;
  };
  std::vector<QwenImageInputs> calls;
  DIFFUSIOND_ASSIGN_OR_RETURN(QwenImageInputs first, prepare(positive, "conditioning"));
  calls.push_back(std::move(first));
  if (negative != nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(QwenImageInputs second, prepare(*negative, "negative conditioning"));
    calls.push_back(std::move(second));
  }
  return FlowPredictor([this, calls = std::move(calls)](const torch::Tensor& latents, float t,
                                                        bool with_negative) -> absl::StatusOr<FlowPrediction> {
    if (with_negative && calls.size() < 2)
      return absl::InternalError("guidance asked of a predictor without a negative");
    const int64_t h = latents.size(1), w = latents.size(2);
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor packed, pack_latents(latents.unsqueeze(0)));
    const torch::Tensor timestep = torch::full({1}, t, torch::kFloat32);
    FlowPrediction p;
    // Separate calls, cond then uncond, as the pipeline makes them: the
    // two prompts' lengths differ.
    for (size_t i = 0; i < (with_negative ? calls.size() : 1); ++i) {
      QwenImageInputs in = calls[i];
      in.hidden_states = packed;
      in.timestep = timestep;
      in.img_shapes = {{1, h / kQwenPackedPatch, w / kQwenPackedPatch}};
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor unpacked, unpack_latents(out.to(torch::kFloat32), h, w));
      (i == 0 ? p.positive : p.negative) = unpacked[0];
    }
    return p;
  });
}

}  // namespace diffusiond
