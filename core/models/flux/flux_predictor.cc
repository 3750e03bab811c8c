// FluxModel's denoise-loop side: its conditioning, its default schedule and
// the predictor that packs unpacked latents [C, H, W] into 2×2-patch tokens
// with their position ids, runs the forward and unpacks the velocity, as
// FluxPipeline does around each transformer call.
#include "absl/strings/str_cat.h"
#include "core/models/flux/flux_latents.h"
#include "core/models/flux/flux_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr char kTextStates[] = "encoder_hidden_states";
constexpr char kPooled[] = "pooled_projections";
constexpr char kGuidance[] = "guidance";
constexpr double kDefaultGuidance = 3.5;  // FluxPipeline's guidance_scale default

}  // namespace

std::vector<ConditioningInput> FluxModel::conditioning_inputs() const {
  std::vector<ConditioningInput> inputs(2);
  inputs[0].name = kTextStates;
  inputs[0].shape = {-1, config_.joint_attention_dim};
  inputs[0].meaning = "the T5 encoder's last hidden states of the prompt";
  inputs[1].name = kPooled;
  inputs[1].shape = {config_.pooled_projection_dim};
  inputs[1].meaning = "the CLIP text encoder's pooled output";
  if (config_.guidance_embeds) {
    ConditioningInput g;
    g.name = kGuidance;
    g.kind = ConditioningInput::Kind::kScalar;
    g.required = false;
    g.default_value = kDefaultGuidance;
    g.meaning = "distilled guidance scale, a model input (no negative pass)";
    inputs.push_back(g);
  }
  return inputs;
}

ScheduleOptions FluxModel::default_schedule(const std::vector<int64_t>& latent_shape) const {
  ScheduleOptions o = schedule_;
  if (latent_shape.size() == 3) o.image_seq_len = (latent_shape[1] / 2) * (latent_shape[2] / 2);
  return o;
}

absl::StatusOr<FlowPredictor> FluxModel::flow_predictor(const Conditioning& positive,
                                                        const Conditioning* negative) const {
  const std::vector<ConditioningInput> inputs = conditioning_inputs();
  DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(positive, inputs, "conditioning"));
  if (negative != nullptr) DIFFUSIOND_RETURN_IF_ERROR(check_conditioning(*negative, inputs, "negative conditioning"));
  // Each conditioning's inputs minus the latents and time, which each call sets.
  const auto prepare = [&](const Conditioning& c) {
    FluxInputs in;
    const torch::Tensor& text = c.tensors.at(kTextStates);
    in.encoder_hidden_states = text.unsqueeze(0);
    in.pooled_projections = c.tensors.at(kPooled).unsqueeze(0);
    in.txt_ids = torch::zeros({text.size(0), 3}, torch::kFloat32);
    if (config_.guidance_embeds) {
      in.guidance = torch::full({1}, static_cast<float>(conditioning_scalar(c, inputs, kGuidance)), torch::kFloat32);
    }
    return in;
  };
  std::vector<FluxInputs> calls = {prepare(positive)};
  if (negative != nullptr) calls.push_back(prepare(*negative));
  return FlowPredictor([this, calls = std::move(calls)](const torch::Tensor& latents, float t,
                                                         bool with_negative) -> absl::StatusOr<FlowPrediction> {
    if (with_negative && calls.size() < 2) return absl::InternalError("guidance asked of a predictor without a negative");
    const int64_t h = latents.size(1), w = latents.size(2);
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor packed, pack_latents(latents.unsqueeze(0)));
    DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor img_ids, latent_image_ids(h, w));
    const torch::Tensor timestep = torch::full({1}, t, torch::kFloat32);
    FlowPrediction p;
    // Separate calls, as upstream's true CFG makes them: the two prompts'
    // lengths may differ and FLUX's ids are shared by a batch.
    for (size_t i = 0; i < (with_negative ? calls.size() : 1); ++i) {
      FluxInputs in = calls[i];
      in.hidden_states = packed;
      in.img_ids = img_ids;
      in.timestep = timestep;
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor out, forward(in));
      DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor unpacked, unpack_latents(out.to(torch::kFloat32), h, w));
      (i == 0 ? p.positive : p.negative) = unpacked[0];
    }
    return p;
  });
}

}  // namespace diffusiond
