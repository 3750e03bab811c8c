#include "core/pipeline/flux/flux_pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/models/clip/clip_model.h"
#include "core/models/flux/flux_model.h"
#include "core/models/t5/t5_model.h"
#include "core/models/vae/vae_model.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

bool takes_guidance(const ModelInfo& denoiser) {
  return std::any_of(denoiser.conditioning.begin(), denoiser.conditioning.end(),
                     [](const ConditioningInput& in) { return in.name == "guidance"; });
}

class FluxPipeline final : public PipelineFamily {
 public:
  absl::string_view name() const override { return "flux"; }
  std::vector<std::string> pipeline_classes() const override { return {"FluxPipeline"}; }
  std::vector<PipelineComponent> components() const override {
    return {{"text_encoder", ModelRole::kTextEncoder, std::string(kClipTextArchitecture)},
            {"text_encoder_2", ModelRole::kTextEncoder, std::string(kT5Architecture)},
            {"transformer", ModelRole::kDenoiser, std::string(kFluxArchitecture)},
            {"vae", ModelRole::kVae, std::string(kVaeArchitecture)}};
  }

  // dev (guidance-distilled): FluxPipeline's 28 steps at guidance 3.5;
  // schnell: 4 steps, no guidance.
  PipelineDefaults defaults(const ModelInfo& denoiser) const override {
    PipelineDefaults d;
    const bool dev = takes_guidance(denoiser);
    d.steps = dev ? 28 : 4;
    d.guidance_scale = dev ? 3.5 : 0.0;
    return d;
  }

  // Both encoders are called without an attention mask, so the padding is
  // attended (and shapes T5's real rows); CLIP's causal mask keeps its
  // end-of-text token, where the pooled output is taken, unaffected.
  TextEncoding text_encoding(absl::string_view component, const std::string& prompt) const override {
    TextEncoding e;
    e.text = prompt;
    e.max_tokens = component == "text_encoder" ? kFluxClipMaxTokens : kFluxT5MaxTokens;
    e.pad_to_max_tokens = true;
    e.attend_to_padding = true;
    e.hidden_layer = -1;
    return e;
  }

  // FluxPipeline's max_sequence_length is T5's (at most 512, as upstream
  // checks); CLIP stays at 77.
  absl::StatusOr<TextEncoding> with_max_sequence_length(absl::string_view component, TextEncoding encoding,
                                                        int64_t n) const override {
    const int64_t clip_tokens = encoding.max_tokens;
    DIFFUSIOND_ASSIGN_OR_RETURN(TextEncoding cut, at_max_sequence_length(name(), std::move(encoding), n,
                                                                         kFluxT5MaxTokens));
    if (component == "text_encoder") cut.max_tokens = clip_tokens;
    return cut;
  }

  absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view component,
                                                    const EncodedText& encoded) const override {
    Conditioning c;
    if (component == "text_encoder") {
      if (!encoded.pooled.defined()) {
        return absl::InvalidArgumentError(
            "FLUX's text_encoder must give a pooled output (a CLIP text model); this one gives none");
      }
      c.tensors["pooled_projections"] = encoded.pooled;
    } else {
      c.tensors["encoder_hidden_states"] = encoded.hidden_states;
    }
    return c;
  }

  // schnell's transformer has no guidance embedding: a scale given for it
  // would be dropped (its default is 0).
  absl::StatusOr<Conditioning> scalar_conditioning(double guidance_scale, const ModelInfo& denoiser) const override {
    Conditioning c;
    if (takes_guidance(denoiser)) {
      c.scalars["guidance"] = guidance_scale;
    } else if (guidance_scale != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "guidance_scale ", guidance_scale, " would be ignored: the transformer \"", denoiser.model_id,
          "\" takes no distilled guidance (FLUX.1-schnell, no guidance_embeds); leave guidance_scale 0"));
    }
    return c;
  }

  // guidance_scale is distilled into the model (the "guidance" scalar);
  // classifier-free guidance is FluxPipeline's true CFG: true_cfg_scale > 1
  // with a negative prompt, both passes at the distilled guidance. Where
  // upstream runs without true CFG when either is missing (with a
  // warning), the request is refused instead of dropping what it gave.
  absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const override {
    if (asked.negative_prompt != (asked.true_cfg_scale > 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FLUX's true classifier-free guidance needs both a negative_prompt and true_cfg_scale > 1; got ",
          asked.negative_prompt ? "a negative_prompt" : "no negative_prompt", " and true_cfg_scale ",
          asked.true_cfg_scale, " (guidance_scale is FLUX.1-dev's distilled guidance, not classifier-free)"));
    }
    return asked.negative_prompt ? asked.true_cfg_scale : 1.0;
  }

  std::vector<FamilyArgument> arguments() const override {
    PipelineDefaults d;
    d.steps = 28;
    std::vector<FamilyArgument> rows = common_arguments(d, size_multiple(), image_inputs());
    rows[3].default_value = "28 (schnell 4)";
    rows.push_back({"guidance_scale", "3.5 (img2img and inpainting 7.0; schnell none)",
                    "FLUX.1-dev's distilled guidance, a model input; schnell has no guidance embedding and "
                    "refuses one"});
    rows.push_back({"true_cfg_scale", "off", "FluxPipeline's true classifier-free guidance, > 1 with negative_prompt"});
    rows.push_back({"negative_prompt", "", "the negative of true CFG (true_cfg_scale > 1)"});
    rows.push_back({"max_sequence_length", "512", "T5's padded tokens, at most 512 (CLIP's stay 77)"});
    rows.push_back({"sigmas", "linspace(1, 1/N, N)", "the schedule's sigmas before its shift; N is the steps"});
    return rows;
  }

  // FluxImg2ImgPipeline's and FluxInpaintPipeline's strength: 0.6 each; the
  // latter takes padding_mask_crop.
  std::optional<ImageInputs> image_inputs() const override { return ImageInputs{0.6, 0.6, true}; }

  // Their __call__'s guidance_scale is 7.0, FluxPipeline's 3.5.
  PipelineDefaults image_defaults(const ModelInfo& denoiser) const override {
    PipelineDefaults d = defaults(denoiser);
    if (takes_guidance(denoiser)) d.guidance_scale = 7.0;
    return d;
  }
};

}  // namespace

const PipelineFamily* flux_pipeline() {
  static const PipelineFamily* const family = new FluxPipeline();
  return family;
}

}  // namespace diffusiond
