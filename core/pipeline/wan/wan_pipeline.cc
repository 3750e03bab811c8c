#include "core/pipeline/wan/wan_pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/models/t5/t5_model.h"
#include "core/models/wan/wan_model.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/pipeline/wan/wan_prompt_clean.h"
#include "core/util/bounded_text.h"

namespace diffusiond {
namespace {

constexpr char kSecondExpert[] = "transformer_2";

class WanPipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "wan"; }
  std::vector<std::string> pipeline_classes() const override { return {"WanPipeline"}; }
  static constexpr double kDefaultGuidance = 5.0;

  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kUmt5Architecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kWanArchitecture)},
            {kSecondExpert, ModelRole::kDenoiser, std::string(kWanArchitecture), /*optional=*/true},
            {"vae", ModelRole::kVae, std::string(kWanVaeArchitecture)}};
  }

  // WanPipeline.__call__'s num_frames 81; 16 frames a second, Wan 2.1's
  // and Wan 2.2 A14B's rate.
  std::optional<VideoDefaults> video() const override { return VideoDefaults{81, 16}; }

  // WanPipeline.__call__ takes no sigmas.
  bool takes_sigmas() const override { return false; }

  // Upstream switches to transformer_2 at the first timestep below
  // boundary_ratio × num_train_timesteps; without a boundary it never
  // does (and a boundary without transformer_2 would call None), so each
  // without the other is refused. expand_timesteps (Wan 2.2 TI2V-5B's
  // per-token timesteps) is not run here.
  absl::StatusOr<std::vector<ExpertHandover>> expert_handovers(
      const PipelineIndex* folder, const std::vector<std::string>& present) const override {
    const bool second = std::find(present.begin(), present.end(), kSecondExpert) != present.end();
    const nlohmann::json none;
    const auto setting = [&](const char* key) -> const nlohmann::json& {
      return folder != nullptr && folder->settings.contains(key) ? folder->settings.at(key) : none;
    };
    if (const nlohmann::json& expand = setting("expand_timesteps"); !expand.is_null() && expand != false) {
      return absl::UnimplementedError(absl::StrCat("model_index.json: expand_timesteps is ", bounded(expand.dump()),
                                                   ": Wan 2.2 TI2V's per-token timesteps are not run here"));
    }
    const nlohmann::json& boundary = setting("boundary_ratio");
    if (!second) {
      if (boundary.is_null()) return std::vector<ExpertHandover>{};
      return absl::InvalidArgumentError(absl::StrCat("model_index.json sets boundary_ratio ", bounded(boundary.dump()),
                                                     " but the pipeline has no ", kSecondExpert,
                                                     " to take over there"));
    }
    if (boundary.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kSecondExpert, " takes over at model_index.json's boundary_ratio, which ",
          folder == nullptr ? "a request without a pipeline folder has not" : "this pipeline folder does not set"));
    }
    if (!boundary.is_number() || !(boundary.get<double>() > 0 && boundary.get<double>() <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("model_index.json: boundary_ratio is ", bounded(boundary.dump()), ", expected a number in (0, 1]"));
    }
    return std::vector<ExpertHandover>{{kSecondExpert, boundary.get<double>()}};
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

  std::vector<FamilyArgument> arguments() const override {
    const PipelineDefaults d = defaults(ModelInfo{});
    std::vector<FamilyArgument> rows = common_arguments(d, size_multiple(), image_inputs());
    rows[6].meaning = "num_videos_per_prompt: videos from the prompt, denoised one after another";
    rows.push_back({"num_frames", "81", "frames of the video, 1 + 4k (the VAE's 4 frames per latent frame)"});
    rows.push_back({"guidance_scale", "5.0", "classifier-free guidance uncond + g·(cond − uncond), on at g > 1"});
    rows.push_back({"guidance_scale_2", "guidance_scale",
                    "Wan 2.2's low-noise expert's guidance (transformer_2, below boundary_ratio); >= 1"});
    rows.push_back({"negative_prompt", "\"\"", "the negative of classifier-free guidance (guidance_scale > 1)"});
    return rows;
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

  // prepare_latents': [C, (frames − 1) / t + 1, H / f, W / f] with the
  // VAE's temporal factor t (4) and spatial factor f (8).
  std::vector<int64_t> latent_shape(const ModelInfo& denoiser, const ModelInfo& decoder, int64_t width, int64_t height,
                                    int64_t frames) const override {
    const int64_t f = decoder.geometry.spatial_factor;
    const int64_t t = std::max<int64_t>(decoder.geometry.temporal_factor, 1);
    return {denoiser.geometry.channels, (frames - 1) / t + 1, height / f, width / f};
  }
};

}  // namespace

const PipelineFamily* wan_pipeline() {
  static const PipelineFamily* const family = new WanPipeline();
  return family;
}

}  // namespace diffusiond
