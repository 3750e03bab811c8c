#include "core/pipeline/anima/anima_pipeline.h"

#include "absl/strings/str_cat.h"
#include "core/models/anima_conditioner/anima_conditioner_model.h"
#include "core/models/cosmos/cosmos_model.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/wan_vae/wan_vae_model.h"

namespace diffusiond {
namespace {

constexpr char kAnimaTextEncoder[] = "text_encoder";
constexpr char kAnimaConditioner[] = "text_conditioner";

class AnimaPipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "anima"; }
  std::vector<std::string> pipeline_classes() const override { return {"AnimaModularPipeline"}; }
  // The guider's ComponentSpec default.
  static constexpr double kDefaultGuidance = 4.0;

  std::vector<PipelineComponent> components() const override {
    // Qwen's states condition the text conditioner, not the denoiser.
    return {{kAnimaTextEncoder, ModelRole::kTextEncoder, std::string(kQwen3Architecture), /*optional=*/false,
             /*conditions_denoiser=*/false},
            {kAnimaConditioner, ModelRole::kTextConditioner, std::string(kAnimaConditionerArchitecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kCosmosArchitecture)},
            {"vae", ModelRole::kVae, std::string(kQwenImageVaeArchitecture)}};
  }

  // AnimaModularPipeline's: 50 steps at 1024x1024 (default_sample_size 128
  // x vae_scale_factor 8), guidance 4.0.
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 50;
    d.width = d.height = 1024;
    d.guidance_scale = kDefaultGuidance;
    return d;
  }

  // ClassifierFreeGuidance: uncond + g·(cond − uncond), on at g > 1, 4.0
  // by default (the empty negative when none is given).
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    GuidanceAsked with_default = asked;
    if (!with_default.guidance_scale.has_value()) with_default.guidance_scale = kDefaultGuidance;
    return PipelineFamily::cfg_scale(with_default);
  }

  // The plain prompt, at most 512 tokens (padding="longest" of one prompt
  // pads nothing), last_hidden_state.
  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    TextEncoding e;
    e.text = prompt;
    e.max_tokens = kAnimaMaxSequenceLength;
    e.hidden_layer = -1;
    return e;
  }

  // Qwen's states go to the conditioner, not to the denoiser.
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText&) const override {
    return Conditioning{};
  }

  // The Qwen states times their mask (AnimaTextEncoderStep), read through
  // the same prompt's T5 ids, at most 512.
  absl::StatusOr<ConditionerRequest> conditioner_request(
      absl::string_view, const std::string& prompt,
      const std::map<std::string, EncodedText>& encoded) const override {
    const auto qwen = encoded.find(kAnimaTextEncoder);
    if (qwen == encoded.end() || !qwen->second.hidden_states.defined() || qwen->second.hidden_states.dim() != 2) {
      return absl::InvalidArgumentError("the anima pipeline's text conditioner needs the text encoder's [L, D] states");
    }
    const EncodedText& e = qwen->second;
    ConditionerRequest request;
    request.text = prompt;
    request.max_tokens = kAnimaMaxSequenceLength;
    request.source_mask = e.attention_mask.defined()
                              ? e.attention_mask.to(torch::kBool)
                              : torch::ones({e.hidden_states.size(0)}, torch::kBool);
    request.source_hidden_states = e.hidden_states * request.source_mask.to(e.hidden_states.scalar_type()).unsqueeze(1);
    return request;
  }

  absl::StatusOr<Conditioning> conditioner_conditioning(absl::string_view,
                                                        const ConditionedText& conditioned) const override {
    Conditioning c;
    c.tensors["encoder_hidden_states"] = conditioned.hidden_states;
    return c;
  }
};

}  // namespace

const PipelineFamily* anima_pipeline() {
  static const PipelineFamily* const family = new AnimaPipeline();
  return family;
}

}  // namespace diffusiond
