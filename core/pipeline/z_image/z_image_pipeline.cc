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
  absl::string_view name() const override { return "z-image"; }
  std::vector<std::string> pipeline_classes() const override { return {"ZImagePipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kQwen3Architecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kZImageArchitecture)},
            {"vae", ModelRole::kVae, std::string(kVaeArchitecture)}};
  }

  // Z-Image-Turbo's: 8 steps, no classifier-free guidance.
  PipelineDefaults defaults(const ModelInfo&) const override { return PipelineDefaults{}; }

  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    return z_image_text_encoding(prompt);
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
