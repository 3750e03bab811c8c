#include "core/pipeline/wan/wan_pipeline.h"

#include "core/models/t5/t5_model.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/pipeline/wan/wan_prompt_clean.h"

namespace diffusiond {
namespace {

class WanPipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "wan"; }
  std::vector<std::string> pipeline_classes() const override { return {"WanPipeline"}; }
  static constexpr double kDefaultGuidance = 5.0;

  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kUmt5Architecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kWanArchitecture)},
            {"vae", ModelRole::kVae, std::string(kWanVaeArchitecture)}};
  }

  // WanPipeline's: 50 steps at 832x480, guidance_scale 5.0.
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 50;
    d.width = 832;
    d.height = 480;
    d.guidance_scale = kDefaultGuidance;
    return d;
  }

  // Upstream's: uncond + g·(cond − uncond), on at g > 1, at 5.0 by default
  // (the empty negative when none is given).
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    GuidanceAsked with_default = asked;
    if (!with_default.guidance_scale.has_value()) with_default.guidance_scale = kDefaultGuidance;
    return PipelineFamily::cfg_scale(with_default);
  }

  // Upstream pads to max_sequence_length and masks the padding, then keeps
  // the valid rows: masked keys change no row of a bidirectional encoder
  // whose position bias is relative, so the unpadded prompt gives the same
  // rows.
  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    TextEncoding e;
    e.text = clean_wan_prompt(prompt);
    e.max_tokens = kWanMaxSequenceLength;
    e.hidden_layer = -1;
    return e;
  }

  // The valid rows, and the length the transformer pads them to, which
  // belongs with them: a Denoise given this conditioning pads as Generate.
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    Conditioning c;
    c.tensors["encoder_hidden_states"] = encoded.attention_mask.defined()
                                             ? encoded.hidden_states.index({encoded.attention_mask})
                                             : encoded.hidden_states;
    c.scalars["max_sequence_length"] = static_cast<double>(kWanMaxSequenceLength);
    return c;
  }

  // One frame: [C, 1, H / f, W / f].
  std::vector<int64_t> latent_shape(const ModelInfo& denoiser, const ModelInfo& decoder, int64_t width,
                                    int64_t height) const override {
    const int64_t f = decoder.geometry.spatial_factor;
    return {denoiser.geometry.channels, 1, height / f, width / f};
  }
};

}  // namespace

const PipelineFamily* wan_pipeline() {
  static const PipelineFamily* const family = new WanPipeline();
  return family;
}

}  // namespace diffusiond
