#include "core/pipeline/qwen_image/qwen_image_pipeline.h"

#include "core/models/qwen25_vl/qwen25_vl_model.h"
#include "core/models/qwen_image/qwen_image_model.h"
#include "core/pipeline/qwen_image/qwen_image_prompt.h"
#include "core/pipeline/unported_architectures.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

class QwenImagePipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "qwen-image"; }
  std::vector<std::string> pipeline_classes() const override { return {"QwenImagePipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kQwen25VlArchitecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kQwenImageArchitecture)},
            {"vae", ModelRole::kVae, std::string(kQwenImageVaeArchitecture)}};
  }

  // QwenImagePipeline's: 50 steps at 1024x1024 (its default_sample_size of
  // 128 latents), true_cfg_scale 4.0 (which, as upstream, guides only when
  // asked: here, by a request's guidance_scale > 1).
  PipelineDefaults defaults(const ModelInfo&) const override {
    PipelineDefaults d;
    d.steps = 50;
    d.guidance_scale = 4.0;
    return d;
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
