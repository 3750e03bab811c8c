#include "core/pipeline/qwen_image/qwen_image_pipeline.h"

#include "absl/strings/str_cat.h"
#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/models/wan_vae/wan_vae_model.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class QwenImagePipeline final : public PipelineFamily {
 public:
  static constexpr double kDefaultTrueCfg = 4.0;

  absl::string_view name() const override { return "qwen-image"; }
  std::vector<std::string> pipeline_classes() const override { return {"QwenImagePipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kQwen25VlArchitecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kQwenImageArchitecture)},
            {"vae", ModelRole::kVae, std::string(kQwenImageVaeArchitecture)}};
  }

  // QwenImagePipeline's: 50 steps at 1024x1024 (its default_sample_size of
  // 128 latents). Its guidance_scale feeds only guidance-distilled
  // transformers; classifier-free guidance is true_cfg_scale (cfg_scale).
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 50;
    d.guidance_scale = 0;
    return d;
  }

  // Upstream's true CFG: on when true_cfg_scale (default 4.0) > 1 and a
  // negative prompt is given, comb = neg + s·(pos − neg) rescaled to pos's
  // norm per token (the loop's guidance_norm_patch). Where upstream runs
  // unguided with a warning (a scale without a negative), the request is
  // refused; so is guidance_scale, which only a guidance-distilled
  // transformer would read.
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    if (asked.guidance_scale.has_value()) {
      return absl::InvalidArgumentError(
          "guidance_scale: QwenImagePipeline's feeds only guidance-distilled transformers (guidance_embeds), "
          "which this family does not run; its classifier-free guidance is true_cfg_scale, with a negative_prompt");
    }
    const double s = asked.true_cfg_scale != 0 ? asked.true_cfg_scale : kDefaultTrueCfg;
    if (asked.negative_prompt) {
      if (!(s > 1.0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "negative_prompt is used only with true_cfg_scale > 1 for qwen-image, got ", s));
      }
      return s;
    }
    if (asked.true_cfg_scale > 1.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "true_cfg_scale ", asked.true_cfg_scale, " needs a negative_prompt (upstream would run unguided)"));
    }
    return 1.0;
  }

  // QwenImageImg2ImgPipeline's and QwenImageInpaintPipeline's strength 0.6;
  // the latter takes padding_mask_crop.
  std::optional<ImageInputs> image_inputs() const override { return ImageInputs{0.6, 0.6, true}; }

  std::vector<FamilyArgument> arguments() const override {
    std::vector<FamilyArgument> rows = common_arguments(defaults(ModelInfo{}), size_multiple(), image_inputs());
    rows.push_back({"true_cfg_scale", "4.0", "true classifier-free guidance neg + s·(pos − neg), rescaled to "
                                             "pos's norm per token; on with a negative_prompt"});
    rows.push_back({"negative_prompt", "", "the negative of true CFG"});
    return rows;
  }

  TextEncoding text_encoding(absl::string_view, const std::string& prompt) const override {
    return qwen_image_text_encoding(prompt, kQwenImageMaxSequenceLength);
  }

  // The kept rows are all real tokens, so no mask goes with them (upstream
  // drops an all-ones mask too).
  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view, const EncodedText& encoded) const override {
    Conditioning c;
    DIFFUSIOND_ASSIGN_OR_RETURN(c.tensors["encoder_hidden_states"],
                                qwen_image_prompt_rows(encoded, kQwenImageMaxSequenceLength, "Qwen-Image"));
    return c;
  }
};

}  // namespace

TextEncoding qwen_image_text_encoding(const std::string& prompt, int64_t max_sequence_length) {
  TextEncoding e;
  e.text = render_qwen_image_prompt(prompt);
  e.max_tokens = kQwenImagePromptDropTokens + max_sequence_length;
  e.hidden_layer = -1;
  return e;
}

const PipelineFamily* qwen_image_pipeline() {
  static const PipelineFamily* const family = new QwenImagePipeline();
  return family;
}

}  // namespace diffusiond
