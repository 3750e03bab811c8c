// PipelineFamily: one kind of pipeline (diffusers' ZImagePipeline,
// FluxPipeline, …) — the one home of which components make an image and in
// which roles, the defaults, how each text encoder is asked for a prompt,
// and how the encoders' outputs and the request's scalars become the
// denoiser's Conditioning. Each family's recipe lives in its own folder
// (core/pipeline/<name>/); generate.h runs any of them.
//
// Not here: running the components (the engine), the models themselves
// (core/models), model_index.json parsing (pipeline_index.h) and what a
// request's `pipeline` names (pipeline_folder.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_PIPELINE_FAMILY_H_
#define DIFFUSIOND_CORE_PIPELINE_PIPELINE_FAMILY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/engine/engine_api.h"
#include "core/models/conditioning.h"
#include "core/models/model.h"
#include "core/models/text_conditioner.h"
#include "core/models/text_encoder.h"
#include "core/pipeline/pipeline_index.h"

namespace diffusiond {

// One component of a pipeline: its name in model_index.json (also its
// subfolder, and the key a Generate request overrides it by), its role, and
// the architecture it is expected to be.
struct PipelineComponent {
  std::string name;
  ModelRole role = ModelRole::kDenoiser;
  std::string architecture;
  // A pipeline folder may lack it, as upstream's __init__ takes None for it
  // (Wan 2.2's transformer_2 is in its two-expert folders only).
  bool optional = false;
  // Text encoders: false when the output feeds the family's text
  // conditioner, not the denoiser (Anima's Qwen3): EncodePrompt, which
  // answers the denoiser's conditioning, does not serve it.
  bool conditions_denoiser = true;
};

// What a video family makes beyond an image, when the request leaves it
// unset: the frames (upstream's num_frames) and the rate they are played at.
struct VideoDefaults {
  int64_t num_frames = 81;
  int fps = 16;
};

// A denoiser that takes over from the one before it within one Denoise
// (Wan 2.2's low-noise expert, transformer_2): its component, and where it
// takes over, as the share of the training timesteps below which it runs
// (upstream's boundary_ratio).
struct ExpertHandover {
  std::string component;
  double boundary_ratio = 0;
};

// What a Generate uses when the request leaves a value unset.
struct PipelineDefaults {
  int steps = 8;
  int64_t width = 1024, height = 1024;
  double guidance_scale = 1.0;
};

// What a request asks of guidance: its own fields (true_cfg_scale 0 where
// not given).
struct GuidanceAsked {
  std::optional<double> guidance_scale;  // in the family's upstream meaning
  double true_cfg_scale = 0;
  bool negative_prompt = false;  // a negative prompt was given
};

// The image inputs a family takes, as its upstream *Img2ImgPipeline and
// *InpaintPipeline do, with their __call__'s default strengths.
struct ImageInputs {
  double img2img_strength = 0.6;
  std::optional<double> inpaint_strength;  // empty: no inpainting upstream
  // Its inpainting pipeline takes padding_mask_crop (mask_crop.h).
  bool padding_mask_crop = false;
};

// One Generate argument as a family takes it: the GenerateRequest field
// (named as upstream's __call__ argument of the same meaning), its default,
// and what it means for this family. ListAvailable shows a pipeline's.
struct FamilyArgument {
  std::string name;
  std::string default_value;
  std::string meaning;
};

// Immutable; thread-safe.
class PipelineFamily {
 public:
  virtual ~PipelineFamily() = default;

  virtual absl::string_view name() const = 0;
  // The model_index.json _class_name values it serves.
  virtual std::vector<std::string> pipeline_classes() const = 0;
  // Every component, text encoders first, then any text conditioner (which
  // reads the encoders' outputs), then the denoisers (the first runs from
  // the first step; the optional others take over as expert_handovers()
  // says), then the image decoder: the order Generate readies and runs them.
  virtual std::vector<PipelineComponent> components() const = 0;

  // Empty (the default): the family makes images, and a request's
  // num_frames is refused. Else its video defaults: a Generate makes one
  // video per num_images_per_prompt, its frames streamed as they decode.
  virtual std::optional<VideoDefaults> video() const { return std::nullopt; }

  // The later denoisers of a pipeline whose folder's model_index.json is
  // `folder` (null: none, the request names its components), given which of
  // its optional components the request has (`present`), in the order they
  // take over. INVALID_ARGUMENT naming the setting when the folder's
  // settings and components disagree (a second expert without a boundary,
  // or the reverse); UNIMPLEMENTED for a setting the daemon does not run.
  // Default: none.
  virtual absl::StatusOr<std::vector<ExpertHandover>> expert_handovers(
      const PipelineIndex* folder, const std::vector<std::string>& present) const;
  // Image sides must be multiples of this (the decoder's factor times the
  // denoiser's patch).
  virtual int64_t size_multiple() const { return 16; }

  // The defaults for `denoiser` (FLUX.1 tells dev from schnell by whether
  // it takes distilled guidance).
  virtual PipelineDefaults defaults(const ModelInfo& denoiser) const = 0;
  // The defaults of its img2img and inpainting pipelines (FLUX's guidance
  // 7.0 there). Default: defaults().
  virtual PipelineDefaults image_defaults(const ModelInfo& denoiser) const { return defaults(denoiser); }

  // How text-encoder component `component` is asked for `prompt`, with the
  // family's defaults.
  virtual TextEncoding text_encoding(absl::string_view component, const std::string& prompt) const = 0;
  // The same in the pipeline folder whose model_index.json is `folder` (null:
  // none), whose settings may say otherwise (Krea 2's
  // text_encoder_select_layers). INVALID_ARGUMENT naming a malformed
  // setting. Default: text_encoding(), whatever the folder.
  virtual absl::StatusOr<TextEncoding> folder_text_encoding(absl::string_view component, const std::string& prompt,
                                                            const PipelineIndex* folder) const;

  // `encoding` (text_encoding()'s for `component`) at upstream's
  // max_sequence_length `n` instead of the family's default. Default:
  // INVALID_ARGUMENT naming max_sequence_length (the family takes none).
  virtual absl::StatusOr<TextEncoding> with_max_sequence_length(absl::string_view component, TextEncoding encoding,
                                                                int64_t n) const;

  // The part of the denoiser's conditioning `component` gives from its
  // output: tensors, and the scalars that go with how the text was encoded
  // (Wan's "max_sequence_length"). INVALID_ARGUMENT when the output lacks
  // what the recipe needs.
  virtual absl::StatusOr<Conditioning> encoder_conditioning(absl::string_view component,
                                                            const EncodedText& encoded) const = 0;

  // For a family with a text-conditioner component (Anima): how
  // `component` is asked for `prompt`, from every text encoder's output for
  // that prompt (by component). INVALID_ARGUMENT when an output lacks what
  // it needs. Default: INTERNAL (the family has no conditioner).
  virtual absl::StatusOr<ConditionerRequest> conditioner_request(
      absl::string_view component, const std::string& prompt,
      const std::map<std::string, EncodedText>& encoded) const;
  // The part of the denoiser's conditioning the conditioner `component`
  // gives from its output. Default: INTERNAL.
  virtual absl::StatusOr<Conditioning> conditioner_conditioning(absl::string_view component,
                                                                const ConditionedText& conditioned) const;

  // The latents a Generate of `width` x `height` pixels (and `frames`
  // frames, 1 for an image) denoises. Default: an image's [C, height / f,
  // width / f], with the denoiser's channels and the decoder's factor f; a
  // video pipeline adds its frames axis.
  virtual std::vector<int64_t> latent_shape(const ModelInfo& denoiser, const ModelInfo& decoder, int64_t width,
                                            int64_t height, int64_t frames) const;

  // The request's scalars as conditioning for `denoiser` (FLUX.1-dev's
  // "guidance"), at `guidance_scale` (the request's, else the family's
  // default for it). INVALID_ARGUMENT when the denoiser would ignore a
  // scale the request gave (FLUX.1-schnell). Default: none.
  virtual absl::StatusOr<Conditioning> scalar_conditioning(double guidance_scale, const ModelInfo& denoiser) const;

  // The classifier-free guidance scale the loop applies for what `asked`
  // gives (<= 1: off, and no negative prompt is encoded), read as the
  // family's upstream __call__ reads the same fields, its default where
  // guidance_scale is not given (Z-Image's 5.0 turns guidance on, as
  // upstream's does). INVALID_ARGUMENT naming a field the family
  // does not take, or a negative prompt it would not use: nothing a
  // request asks for is dropped. Default: guidance_scale is the CFG scale
  // (off when not given), and true_cfg_scale is refused.
  virtual absl::StatusOr<double> cfg_scale(const GuidanceAsked& asked) const;

  // Whether its upstream __call__ takes sigmas (the schedule's before its
  // shift); a request's sigmas are refused where not. Default: true.
  virtual bool takes_sigmas() const { return true; }

  // The image inputs it takes; empty (the default): none, and a request
  // with an init image is refused naming the field.
  virtual std::optional<ImageInputs> image_inputs() const { return std::nullopt; }

  // The guidance_scale that `legacy` meant in the daemon's former
  // convention (the wire's legacy_guidance_scale), so an old client is
  // read as it meant. Default: the same number (FLUX's distilled guidance,
  // the families whose guidance_scale was always upstream's).
  virtual double from_legacy_guidance(double legacy) const { return legacy; }

  // Every GenerateRequest field it takes, with its default and meaning;
  // a field it does not list is refused when given. Default: the fields
  // every family shares, with defaults() of an unknown denoiser and
  // guidance_scale as classifier-free guidance.
  virtual std::vector<FamilyArgument> arguments() const;

  // The component with `name`, or nothing.
  std::optional<PipelineComponent> component(absl::string_view name) const;
};

// `encoding` cut at max_sequence_length `n` (its max_tokens), for the
// families whose upstream takes one: INVALID_ARGUMENT naming the field
// and `family` unless 1 <= n <= `limit`.
absl::StatusOr<TextEncoding> at_max_sequence_length(absl::string_view family, TextEncoding encoding, int64_t n,
                                                    int64_t limit);

// The rows every family shares: prompt, size, steps (with these defaults),
// seeds and the batch, then the image inputs if `inputs` says it has them.
std::vector<FamilyArgument> common_arguments(const PipelineDefaults& defaults, int64_t size_multiple,
                                             const std::optional<ImageInputs>& inputs);

// Every registered family, in registration order. Lives for the process.
std::vector<const PipelineFamily*> pipeline_families();

// Adds `family` (which must live for the process) to the registry, for
// families outside this library (tests). INVALID_ARGUMENT if its name or
// one of its pipeline classes is already served.
absl::Status register_pipeline_family(const PipelineFamily* family);

// The family serving model_index.json class `pipeline_class`, or null.
const PipelineFamily* find_pipeline_family(absl::string_view pipeline_class);

// The family whose name() is `name` ("z-image", "flux"), or null.
const PipelineFamily* find_pipeline_family_named(absl::string_view name);

// The family whose denoiser is `architecture`, the first registered when
// several are; null when none. For a Generate that names its components
// without a pipeline folder.
const PipelineFamily* find_pipeline_family_for_denoiser(absl::string_view architecture);

// One text-encoder component of one family.
struct EncoderComponent {
  const PipelineFamily* family = nullptr;
  std::string component;  // its name, e.g. "text_encoder_2"
};

// Every text-encoder component of `architecture` whose output conditions
// the denoiser, over every family in registration order (a family with two
// such components gives both).
// EncodePrompt names an encoder, and maybe its family, and chooses among
// these.
std::vector<EncoderComponent> find_encoder_components(absl::string_view architecture);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_PIPELINE_FAMILY_H_
