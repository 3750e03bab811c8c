#include "core/pipeline/krea2/krea2_pipeline.h"

#include "absl/strings/str_cat.h"
#include "core/models/common/tensor_text.h"
#include "core/models/krea2/krea2_model.h"
#include "core/models/qwen3_vl/qwen3_vl_model.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class Krea2Pipeline final : public PipelineFamily {
 public:
  static constexpr double kDefaultGuidance = 4.5;

  absl::string_view name() const override { return "krea2"; }
  std::vector<std::string> pipeline_classes() const override { return {"Krea2Pipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kQwen3VlArchitecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kKrea2Architecture)},
            {"vae", ModelRole::kVae, std::string(kQwenImageVaeArchitecture)}};
  }

  // Krea2Pipeline's: 28 steps at 1024x1024, guidance_scale 4.5.
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 28;
    d.guidance_scale = kDefaultGuidance;
    return d;
  }

  // Upstream's meaning: cond + g·(cond − uncond), on at g > 0 with the
  // empty negative when none is given (the loop's s is g + 1).
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    if (asked.true_cfg_scale != 0) {
      return absl::InvalidArgumentError(
          "the krea2 pipeline takes no true_cfg_scale: its classifier-free guidance is guidance_scale");
    }
    const double g = asked.guidance_scale.value_or(kDefaultGuidance);
    if (asked.negative_prompt && !(g > 0)) {
      return absl::InvalidArgumentError(
          "negative_prompt is used only with classifier-free guidance, which the krea2 pipeline applies at "
          "guidance_scale > 0, got 0");
    }
    return g > 0 ? g + 1.0 : 1.0;
  }

  std::vector<FamilyArgument> arguments() const override {
    std::vector<FamilyArgument> rows = common_arguments(defaults(ModelInfo{}), size_multiple(), image_inputs());
    rows.push_back({"guidance_scale", "4.5", "Krea2Pipeline's: cond + g·(cond − uncond), on at g > 0"});
    rows.push_back({"negative_prompt", "", "the negative of classifier-free guidance (guidance_scale > 0)"});
    return rows;
  }

  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    return krea2_text_encoding(prompt, kKrea2MaxSequenceLength,
                               std::vector<int64_t>(kKrea2TextEncoderLayers.begin(), kKrea2TextEncoderLayers.end()));
  }

  // The folder's text_encoder_select_layers, when it registered them.
  absl::StatusOr<TextEncoding> folder_text_encoding(absl::string_view component, const std::string& prompt,
                                                    const PipelineIndex* folder) const override {
    const char* const key = "text_encoder_select_layers";
    if (folder == nullptr || !folder->settings.contains(key) || folder->settings.at(key).is_null()) {
      return text_encoding(component, prompt);
    }
    const nlohmann::json& layers = folder->settings.at(key);
    bool ok = layers.is_array() && !layers.empty();
    for (const nlohmann::json& l : ok ? layers : nlohmann::json::array()) ok = ok && l.is_number_integer();
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("model_index.json: ", key, " is ", bounded(layers.dump()),
                                                     ", expected a non-empty list of hidden-state indices"));
    }
    return krea2_text_encoding(prompt, kKrea2MaxSequenceLength, layers.get<std::vector<int64_t>>());
  }

  // The real tokens' stacks past the prefix; no mask, as there is no
  // padding among them.
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    if (encoded.hidden_states.dim() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Krea 2 conditions on the stack of its text encoder's tapped layers [L, taps, D] (",
          kKrea2TextEncoderLayers.size(), " taps by default); this encoder gave ", shape_of(encoded.hidden_states)));
    }
    Conditioning c;
    DIFFUSIOND_ASSIGN_OR_RETURN(c.tensors["encoder_hidden_states"],
                                qwen_image_prompt_rows(encoded, kKrea2MaxSequenceLength, "Krea 2"));
    return c;
  }
};

}  // namespace

TextEncoding krea2_text_encoding(const std::string& prompt, int64_t max_sequence_length,
                                 std::vector<int64_t> layers) {
  TextEncoding e;
  e.text = absl::StrCat(kQwenImagePromptPrefix, prompt);
  e.max_tokens = max_sequence_length + kQwenImagePromptDropTokens - kKrea2PromptSuffixTokens;
  e.suffix = std::string(kQwenImagePromptSuffix);
  e.hidden_layers = std::move(layers);
  return e;
}

const PipelineFamily* krea2_pipeline() {
  static const PipelineFamily* const family = new Krea2Pipeline();
  return family;
}

}  // namespace diffusiond
