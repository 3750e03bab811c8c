// Generate: prompt to image through any registered pipeline family
// (pipeline_family.h): its text encoders, denoiser and image decoder are
// cached models loaded on demand, each admitted by its own reservation
// under the one budget. Stages run one after another and each component is
// pinned only while it works, so when RAM cannot hold them all the least
// recently used is evicted to make room for the next; every load and
// eviction is reported as an event, from what make_room actually evicted.
//
// Not here: a pipeline's recipe (core/pipeline/<name>/), the models
// (core/models), loading and eviction (the engine), PNG encoding
// (core/image).
#ifndef DIFFUSIOND_CORE_PIPELINE_GENERATE_H_
#define DIFFUSIOND_CORE_PIPELINE_GENERATE_H_

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/engine/engine_api.h"
#include "core/pipeline/mask_crop.h"
#include "core/pipeline/video_sink.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"

namespace diffusiond {

// The limits of a Generate request, whatever the pipeline.
inline constexpr int64_t kGenerateMaxSide = 4096;
inline constexpr int kGenerateMaxSteps = 1000;
inline constexpr size_t kGenerateMaxPromptBytes = 64 * 1024;
// Images are made one after another, so a batch needs one image's working
// memory; the bound keeps one request from holding the queue for hours.
inline constexpr int kGenerateMaxImages = 64;
// A video's frames, at most: 64 s at Wan's 16 frames a second.
inline constexpr int64_t kGenerateMaxFrames = 1025;

// How one component is loaded; unset: the daemon's default.
struct ComponentOptions {
  std::optional<Fp8Options> fp8;
  std::optional<ComputeDtype> compute_dtype;
};

struct GenerateRequest {
  // A pipeline folder (model_index.json) relative to the models directory;
  // its components load as "<pipeline>/<component>". May be empty when
  // `components` names them all, the denoiser's architecture then choosing
  // the family.
  std::string pipeline;
  // Component name ("text_encoder", "text_encoder_2", "transformer",
  // "vae", …) -> a loaded model's id or a path to load; overrides the
  // pipeline's component.
  std::map<std::string, std::string> components;
  std::string prompt;
  std::string negative_prompt;  // used when the family applies CFG
  // 0: the family's default for each.
  int64_t width = 0, height = 0;  // pixels, multiples of the family's size_multiple()
  int steps = 0;  // num_inference_steps, before strength shortens the run
  // Upstream's sigmas: the schedule's before its shift, in place of
  // linspace(1, 1/N, N); their count is the steps (steps 0 or equal).
  std::vector<float> sigmas;
  // Upstream's max_sequence_length (the family's text encoder tokens);
  // 0: the family's default. Refused by a family that takes none.
  int max_sequence_length = 0;
  // Upstream's guidance_scale for the family (Z-Image's CFG g with pred =
  // pos + g·(pos − neg); FLUX.1-dev's distilled guidance); unset: the
  // family's default.
  std::optional<double> guidance_scale;
  // The daemon's former convention (Z-Image: s = g + 1), kept for old
  // clients under its own name (PipelineFamily::from_legacy_guidance).
  // Refused together with guidance_scale.
  std::optional<double> legacy_guidance_scale;
  // Wan 2.2's guidance_scale_2: the classifier-free guidance of the expert
  // that takes over (transformer_2); unset: guidance_scale. Refused where
  // the pipeline has no second expert.
  std::optional<double> guidance_scale_2;
  // A video family's num_frames (Wan: 1 + 4k); 0: the family's default.
  // Refused by image families.
  int64_t num_frames = 0;
  // FLUX's true classifier-free guidance (FluxPipeline's true_cfg_scale,
  // with negative_prompt); 0: not asked. Refused by families whose CFG is
  // guidance_scale (PipelineFamily::cfg_scale).
  double true_cfg_scale = 0;
  // Component name -> how it is loaded when this Generate loads it (the
  // daemon's defaults where unset): FP8 storage off for a text encoder, or
  // another compute dtype. A cached model loaded with other options than
  // these is refused before any load (load() refuses it the same way).
  std::map<std::string, ComponentOptions> component_options;
  uint64_t seed = 0;
  double shift = 0;  // 0: the denoiser's own schedule
  // img2img: float [3, H, W] in [0, 1] (image_inputs.h), of the request's
  // size (its size where width and height are 0). Undefined: txt2img.
  torch::Tensor image;
  // Inpainting, with `image`: float [H, W] in [0, 1], the image's size;
  // >= 0.5 is repainted.
  torch::Tensor mask_image;
  // With `image`: the share of the schedule run from it, (0, 1]; 0: the
  // family's default (PipelineFamily::image_inputs).
  double strength = 0;
  // Upstream's padding_mask_crop (FluxInpaintPipeline,
  // QwenImageInpaintPipeline) with the init image and mask it crops, as
  // Pillow opens their PNGs, in place of `image` and `mask_image`
  // (mask_crop.h): the mask's box, padded and grown to width:height, is
  // inpainted at width x height (0: the family's default size, as
  // upstream's __call__) and pasted back into the image, whose size the
  // images then have. Unset: none. Refused by a family whose upstream has
  // none.
  std::optional<MaskCrop> padding_mask_crop;
  int num_images_per_prompt = 0;  // 0: 1; a video family's num_videos_per_prompt
  // One seed per image (upstream's list of generators); empty: `seed`
  // draws the whole batch from one generator.
  std::vector<uint64_t> seeds;
  // LoRA adapters on the denoiser (every expert of a video family) for this
  // request only (EngineDenoiseRequest::adapters); the images' parameters
  // record them.
  std::vector<AdapterRequest> adapters;
};

struct GenerateEvent {
  enum class Stage { kLoad, kEvict, kEncode, kDenoise, kDecode };
  Stage stage = Stage::kLoad;
  std::string model_id;
  int step = 0, steps = 0;  // kDenoise
  absl::Duration time;
  std::string detail;
  // Where an encode, a denoise step or a decode ran: "cpu", or the device
  // ("sim", "cuda:0"); for an eviction of a placement to RAM, the device it
  // left. Empty for loads and evictions from RAM.
  std::string device;
  int image = 0;  // kDenoise and kDecode: which image of the batch (0-based)
};

// "load", "evict", "encode", "denoise" or "decode".
absl::string_view generate_stage_name(GenerateEvent::Stage stage);

struct GeneratedImage {
  torch::Tensor pixels;  // uint8 [height, width, 3]
  uint64_t seed = 0;
  int index = 0;  // its place in the batch
  // What made it, for the PNG's text chunks ("parameters": JSON).
  std::vector<std::pair<std::string, std::string>> parameters;
};

struct GenerateOptions {
  std::function<void(const GenerateEvent&)> on_event;  // optional
  // Checked between stages and steps, and passed to every engine call, so
  // a forward stops between its blocks. Default: never cancelled.
  CancellationToken cancel;
  Clock* clock = nullptr;  // times the stages; default real_clock()
  // Optional: each image as soon as it is decoded, in order, instead of in
  // generate_images()' result (which then comes back empty), so a batch's
  // pixels are never all held.
  std::function<void(GeneratedImage)> on_image;
  // Where a video family's videos go, frame by frame as they decode
  // (video_sink.h); required for one (INVALID_ARGUMENT without), unused by
  // image families. Not owned.
  VideoSink* video = nullptr;
};

// Readies the model `model.path` names (EngineApi::ready): a loaded
// model, else the model the engine loads from that path now with
// `model`'s options, reporting the load and the evictions it caused through
// `options.on_event`; a load stops when `options.cancel` fires.
// FAILED_PRECONDITION when `role` is given and the model is in another, or
// a cached model was loaded with other options than `model` sets; the
// engine's load errors otherwise.
absl::StatusOr<ModelHandle> ready_component(EngineApi& engine, const ModelLoadRequest& model,
                                            std::optional<ModelRole> role, const GenerateOptions& options);

// Reports what one call on a component did (`what`, e.g. "the decode of
// \"vae\""): a load again of a model evicted since it was readied, the
// models evicted from RAM, and the placements evicted to VRAM's RAM.
void report_call(const GenerateOptions& options, const std::string& model_id, CallReport& report,
                 absl::string_view what);

// Runs the pipeline: num_images_per_prompt images (a video family's
// videos, handed to options.video frame by frame; none are returned), each
// denoised and decoded in turn. With an init image, the family's img2img (and with a
// mask its inpainting) as upstream runs them: the image encoded by the
// VAE's sample with the generator's first draw, the schedule shortened
// by strength (get_timesteps), noise added by scale_noise; with
// padding_mask_crop, on the crop of image and mask (mask_crop.h), each
// image then pasted back into the init image.
// INVALID_ARGUMENT for a bad request, naming the field (size, steps,
// prompt length, strength, image or mask shape, seeds, num_frames not
// 1 + 4k, guidance_scale_2 without a second expert, unknown or missing
// components, a pipeline folder without model_index.json or of a class no
// family serves, components whose latent spaces disagree, an image input
// the family does not take, an all-black mask to crop around), checked
// before any load; UNIMPLEMENTED,
// before any load, for a family with a component no model family
// implements yet (unported_architectures.h), naming it; the token's reason
// (CANCELLED) once `cancel` fires; and the engine's errors (e.g.
// RESOURCE_EXHAUSTED when a component cannot be admitted).
absl::StatusOr<std::vector<GeneratedImage>> generate_images(EngineApi& engine, const std::string& models_dir,
                                                            const GenerateRequest& request,
                                                            const GenerateOptions& options = {});

// generate_images() for a request of one image, which it returns.
// INVALID_ARGUMENT for a request of more.
absl::StatusOr<GeneratedImage> generate(EngineApi& engine, const std::string& models_dir,
                                        const GenerateRequest& request, const GenerateOptions& options = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_PIPELINE_GENERATE_H_
