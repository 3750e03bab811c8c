#include "core/pipeline/z_image/z_image_pipeline.h"

#include "absl/strings/str_cat.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/vae/vae_model.h"
#include "core/models/z_image/z_image_model.h"
#include "core/pipeline/z_image/z_image_text_encoding.h"

namespace diffusiond {
namespace {

class ZImagePipeline final : public PipelineFamily {
 public:
  static constexpr double kDefaultGuidance = 5.0;
  // Upstream sets no bound; this one keeps an encode's activations sane.
  static constexpr int64_t kMaxSequenceLength = 4096;

  absl::string_view name() const override { return "z-image"; }
  std::vector<std::string> pipeline_classes() const override { return {"ZImagePipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kQwen3Architecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kZImageArchitecture)},
            {"vae", ModelRole::kVae, std::string(kVaeArchitecture)}};
  }

  // ZImagePipeline.__call__'s: 50 steps, guidance_scale 5.0, 1024x1024.
  // Upstream's defaults are the same for Z-Image-Turbo, whose model card
  // asks for 9 steps and guidance_scale 0.0: a Turbo user passes them, to
  // the daemon as to diffusers.
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 50;
    d.guidance_scale = kDefaultGuidance;
    return d;
  }

  // Upstream's meaning: pred = pos + g·(pos − neg), classifier-free
  // guidance whenever g > 0 (the loop's s is g + 1), at 5.0 by default.
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    if (asked.true_cfg_scale != 0) {
      return absl::InvalidArgumentError(
          "the z-image pipeline takes no true_cfg_scale: its classifier-free guidance is guidance_scale");
    }
    const double g = asked.guidance_scale.value_or(kDefaultGuidance);
    if (asked.negative_prompt && !(g > 0)) {
      return absl::InvalidArgumentError(
          "negative_prompt is used only with classifier-free guidance, which the z-image pipeline applies at "
          "guidance_scale > 0 (ZImagePipeline's meaning), got 0: leave it empty, or raise guidance_scale");
    }
    return g > 0 ? g + 1.0 : 1.0;
  }

  // The daemon's former Z-Image scale s was the loop's: s = g + 1, off at
  // s <= 1.
  double from_legacy_guidance(double legacy) const override { return legacy > 1.0 ? legacy - 1.0 : 0.0; }

  std::vector<FamilyArgument> arguments() const override {
    std::vector<FamilyArgument> rows = common_arguments(defaults(ModelInfo{}), size_multiple(), image_inputs());
    rows.push_back({"guidance_scale", "5.0",
                    "ZImagePipeline's: classifier-free guidance pred = pos + g·(pos − neg), on at g > 0 "
                    "(Z-Image-Turbo's model card: 0.0, with 9 steps)"});
    rows.push_back({"negative_prompt", "", "the negative of classifier-free guidance (guidance_scale > 0)"});
    rows.push_back({"legacy_guidance_scale", "", "the daemon's former scale s = g + 1, for old clients"});
    rows.push_back({"max_sequence_length", "512", "Qwen3's tokens, the chat template included (at most 4096)"});
    rows.push_back({"sigmas", "linspace(1, 1/N, N)", "the schedule's sigmas before its shift; N is the steps"});
    return rows;
  }

  // ZImageImg2ImgPipeline's strength 0.6, ZImageInpaintPipeline's 1.0 (and no
  // padding_mask_crop there).
  std::optional<ImageInputs> image_inputs() const override { return ImageInputs{0.6, 1.0}; }

  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    return z_image_text_encoding(prompt);
  }

  // ZImagePipeline's max_sequence_length: the tokenizer's max_length (the
  // content cut to it, template included), 512 by default.
  absl::StatusOr<TextEncoding> with_max_sequence_length(absl::string_view, TextEncoding encoding,
                                                        int64_t n) const override {
    return at_max_sequence_length(name(), std::move(encoding), n, kMaxSequenceLength);
  }

  // The caption features are the rows of real tokens only.
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    Conditioning c;
    c.tensors["cap_feats"] = encoded.hidden_states.index({encoded.attention_mask});
    return c;
  }
};

}  // namespace

const PipelineFamily* z_image_pipeline() {
  static const PipelineFamily* const family = new ZImagePipeline();
  return family;
}

}  // namespace diffusiond
