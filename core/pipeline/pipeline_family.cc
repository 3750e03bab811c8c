#include "core/pipeline/pipeline_family.h"

#include "absl/strings/str_cat.h"
#include "core/pipeline/anima/anima_pipeline.h"
#include "core/pipeline/flux/flux_pipeline.h"
#include "core/pipeline/krea2/krea2_pipeline.h"
#include "core/pipeline/qwen_image/qwen_image_pipeline.h"
#include "core/pipeline/wan/wan_pipeline.h"
#include "core/pipeline/z_image/z_image_pipeline.h"
#include "core/util/mutex.h"

namespace diffusiond {
namespace {

// The registry: the built-in families first, then any registered at run time.
struct Registry {
  Mutex mu;
  std::vector<const PipelineFamily*> families ABSL_GUARDED_BY(mu) = {
      z_image_pipeline(), flux_pipeline(), qwen_image_pipeline(), wan_pipeline(), krea2_pipeline(), anima_pipeline()};
};

Registry& registry() {
  static Registry* const r = new Registry();  // leaked: statics stay trivially destructible
  return *r;
}

}  // namespace

absl::StatusOr<TextEncoding> PipelineFamily::folder_text_encoding(absl::string_view component,
                                                                  const std::string& prompt,
                                                                  const PipelineIndex*) const {
  return text_encoding(component, prompt);
}

absl::StatusOr<ConditionerRequest> PipelineFamily::conditioner_request(absl::string_view component,
                                                                       const std::string&,
                                                                       const std::map<std::string, EncodedText>&) const {
  return absl::InternalError(absl::StrCat("the ", name(), " pipeline has no text conditioner \"", component, "\""));
}

absl::StatusOr<Conditioning> PipelineFamily::conditioner_conditioning(absl::string_view component,
                                                                      const ConditionedText&) const {
  return absl::InternalError(absl::StrCat("the ", name(), " pipeline has no text conditioner \"", component, "\""));
}

absl::StatusOr<Conditioning> PipelineFamily::scalar_conditioning(double, const ModelInfo&) const {
  return Conditioning{};
}

absl::StatusOr<double> PipelineFamily::cfg_scale(const GuidanceAsked& asked) const {
  if (asked.true_cfg_scale != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the ", name(), " pipeline takes no true_cfg_scale: its "
                                                   "classifier-free guidance is guidance_scale"));
  }
  const double g = asked.guidance_scale.value_or(0.0);
  if (asked.negative_prompt && !(g > 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "negative_prompt is used only with classifier-free guidance, which the ", name(),
        " pipeline applies at guidance_scale > 1, got ",
        asked.guidance_scale.has_value() ? absl::StrCat(g) : std::string("none (its default: off)"),
        ": leave it empty, or raise guidance_scale"));
  }
  return g;
}

absl::StatusOr<TextEncoding> PipelineFamily::with_max_sequence_length(absl::string_view, TextEncoding,
                                                                      int64_t) const {
  return absl::InvalidArgumentError(absl::StrCat("max_sequence_length: the ", name(), " pipeline takes none here"));
}

absl::StatusOr<TextEncoding> at_max_sequence_length(absl::string_view family, TextEncoding encoding, int64_t n,
                                                    int64_t limit) {
  if (n < 1 || n > limit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_sequence_length must be 1 to ", limit, " for ", family, ", got ", n));
  }
  encoding.max_tokens = n;
  return encoding;
}

std::vector<FamilyArgument> common_arguments(const PipelineDefaults& d, int64_t size_multiple,
                                             const std::optional<ImageInputs>& inputs) {
  std::vector<FamilyArgument> rows = {
      {"prompt", "", "what to draw"},
      {"width", absl::StrCat(d.width), absl::StrCat("pixels, a multiple of ", size_multiple, " (with image: its width)")},
      {"height", absl::StrCat(d.height), absl::StrCat("pixels, a multiple of ", size_multiple, " (with image: its height)")},
      {"steps", absl::StrCat(d.steps), "num_inference_steps: the schedule's steps, before strength shortens the run"},
      {"seed", "random", "one torch.Generator(\"cpu\") for the whole batch"},
      {"seeds", "", "one seed per image, as a list of generators (replaces seed)"},
      {"num_images_per_prompt", "1", "images from the prompt, denoised one after another"},
      {"shift", "the scheduler's", "a static flow shift in place of the scheduler config's"},
      {"component_options", "the daemon's", "per component: fp8 and compute_dtype for this Generate's loads"}};
  if (inputs.has_value()) {
    rows.push_back({"image", "", "img2img: the init image, encoded by the VAE's sample"});
    rows.push_back({"strength", absl::StrCat(inputs->img2img_strength,
                                             inputs->inpaint_strength.has_value()
                                                 ? absl::StrCat(" (inpainting ", *inputs->inpaint_strength, ")")
                                                 : std::string()),
                    "the share of the schedule run from the image (get_timesteps), (0, 1]"});
    if (inputs->inpaint_strength.has_value()) {
      rows.push_back({"mask_image", "", "inpainting: white repainted, black kept (binarised at 0.5)"});
    }
    if (inputs->padding_mask_crop) {
      rows.push_back({"padding_mask_crop", "none",
                      "inpainting of the mask's box padded by N pixels and grown to width:height, at width x height "
                      "(default 1024x1024), pasted back into the image (PNG image and mask_image of any size)"});
    }
  }
  return rows;
}

std::vector<FamilyArgument> PipelineFamily::arguments() const {
  std::vector<FamilyArgument> rows = common_arguments(defaults(ModelInfo{}), size_multiple(), image_inputs());
  rows.push_back({"guidance_scale", absl::StrCat(defaults(ModelInfo{}).guidance_scale),
                  "classifier-free guidance v_neg + g·(v_pos − v_neg), on at g > 1"});
  rows.push_back({"negative_prompt", "", "the negative of classifier-free guidance (guidance_scale > 1)"});
  return rows;
}

absl::StatusOr<std::vector<ExpertHandover>> PipelineFamily::expert_handovers(
    const PipelineIndex*, const std::vector<std::string>&) const {
  return std::vector<ExpertHandover>{};
}

std::vector<int64_t> PipelineFamily::latent_shape(const ModelInfo& denoiser, const ModelInfo& decoder, int64_t width,
                                                  int64_t height, int64_t) const {
  const int64_t f = decoder.geometry.spatial_factor;
  return {denoiser.geometry.channels, height / f, width / f};
}

std::optional<PipelineComponent> PipelineFamily::component(absl::string_view name) const {
  for (PipelineComponent& c : components()) {
    if (c.name == name) return std::move(c);
  }
  return std::nullopt;
}

std::vector<const PipelineFamily*> pipeline_families() {
  Registry& r = registry();
  MutexLock lock(&r.mu);
  return r.families;
}

absl::Status register_pipeline_family(const PipelineFamily* family) {
  if (find_pipeline_family_named(family->name()) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a pipeline family named ", family->name(), " is already registered"));
  }
  for (const std::string& cls : family->pipeline_classes()) {
    if (const PipelineFamily* served = find_pipeline_family(cls)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline class ", cls, " is already served by the ", served->name(), " family"));
    }
  }
  Registry& r = registry();
  MutexLock lock(&r.mu);
  r.families.push_back(family);
  return absl::OkStatus();
}

const PipelineFamily* find_pipeline_family(absl::string_view pipeline_class) {
  for (const PipelineFamily* family : pipeline_families()) {
    for (const std::string& cls : family->pipeline_classes()) {
      if (cls == pipeline_class) return family;
    }
  }
  return nullptr;
}

const PipelineFamily* find_pipeline_family_named(absl::string_view name) {
  for (const PipelineFamily* family : pipeline_families()) {
    if (family->name() == name) return family;
  }
  return nullptr;
}

const PipelineFamily* find_pipeline_family_for_denoiser(absl::string_view architecture) {
  for (const PipelineFamily* family : pipeline_families()) {
    for (const PipelineComponent& c : family->components()) {
      if (c.role == ModelRole::kDenoiser && c.architecture == architecture) return family;
    }
  }
  return nullptr;
}

std::vector<EncoderComponent> find_encoder_components(absl::string_view architecture) {
  std::vector<EncoderComponent> found;
  for (const PipelineFamily* family : pipeline_families()) {
    for (PipelineComponent& c : family->components()) {
      if (c.role == ModelRole::kTextEncoder && c.architecture == architecture && c.conditions_denoiser) {
        found.push_back({family, std::move(c.name)});
      }
    }
  }
  return found;
}

}  // namespace diffusiond
