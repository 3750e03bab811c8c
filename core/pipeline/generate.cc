#include "core/pipeline/generate.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/describe_model.h"
#include "core/models/activation_estimate.h"
#include "core/models/text_encoder.h"
#include "core/pipeline/batch_generators.h"
#include "core/pipeline/generate_request_checks.h"
#include "core/pipeline/image_inputs.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/internal/generate_plan.h"
#include "core/pipeline/pipeline_folder.h"
#include "core/pipeline/video_sink.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using generate_internal::check_latent_channels;
using generate_internal::check_stages_fit;
using generate_internal::describe_components;
using generate_internal::PlannedDenoiser;
using generate_internal::PlannedStage;
using generate_internal::Resolved;
using generate_internal::resolve;
using generate_internal::stages_of;

void emit_to(const GenerateOptions& options, GenerateEvent e) {
  if (options.on_event) options.on_event(e);
}

void report_evictions(const GenerateOptions& options, const std::vector<std::string>& evicted,
                      absl::string_view what) {
  for (const std::string& key : evicted) {
    emit_to(options, {GenerateEvent::Stage::kEvict, key, 0, 0, absl::ZeroDuration(),
                      absl::StrCat("evicted to make room for ", what), ""});
  }
}

// Reports the placements `where` says were evicted to RAM for `what`, as
// events of their own, and forgets them.
void report_placement_evictions(const GenerateOptions& options, CallDevice& where, absl::string_view what) {
  for (const std::string& key : where.evicted) {
    emit_to(options, {GenerateEvent::Stage::kEvict, key, 0, 0, absl::ZeroDuration(),
                      absl::StrCat("placement evicted to RAM to make room for ", what), where.device});
  }
  where.evicted.clear();
}


// What a request's image input made of it: the strength used and the
// schedule's step the run starts at (get_timesteps' t_start).
struct ImageRun {
  double strength = 0;
  int first_step = 0;
};

// What a Generate ran with, the family's defaults in place of what the
// request left unset.
struct Effective {
  int steps = 0;
  double guidance = 0;
  std::optional<double> guidance_2;  // with a second expert
  int64_t width = 0, height = 0;
  int64_t frames = 0;  // a video's; 0 for an image
  int fps = 0;
  std::optional<ImageRun> image_run;
};

// The image's parameters: the request's fields, what the run used where
// they were unset, and with padding_mask_crop the box cut from the image
// (upstream's crops_coords).
std::string parameters_json(const GenerateRequest& r, const Resolved& resolved, const Effective& run,
                            const std::vector<ExpertHandover>& handovers, const std::optional<PilBox>& crop_box,
                            int index) {
  nlohmann::json j = {{"pipeline", std::string(resolved.family->name())},
                      {"prompt", r.prompt},
                      {"negative_prompt", r.negative_prompt},
                      {"width", run.width},
                      {"height", run.height},
                      {"steps", run.steps},
                      {"seed", r.seeds.empty() ? r.seed : r.seeds[index]},
                      {"shift", r.shift}};
  // Only a family that takes guidance_scale used it (Qwen-Image's is true_cfg_scale).
  for (const FamilyArgument& a : resolved.family->arguments()) {
    if (a.name == "guidance_scale") j["guidance_scale"] = run.guidance;
  }
  if (run.guidance_2.has_value()) j["guidance_scale_2"] = *run.guidance_2;
  for (const ExpertHandover& h : handovers) j["boundary_ratio"][h.component] = h.boundary_ratio;
  if (run.frames != 0) {
    j["num_frames"] = run.frames;
    j["fps"] = run.fps;
  }
  if (r.legacy_guidance_scale.has_value()) j["legacy_guidance_scale"] = *r.legacy_guidance_scale;
  if (!r.sigmas.empty()) j["sigmas"] = r.sigmas;
  if (r.max_sequence_length != 0) j["max_sequence_length"] = r.max_sequence_length;
  if (r.true_cfg_scale != 0) j["true_cfg_scale"] = r.true_cfg_scale;
  if (r.num_images_per_prompt > 1) {
    j["num_images_per_prompt"] = r.num_images_per_prompt;
    j["index"] = index;
    // One generator drew the batch: the image is not this seed's first draw.
    if (r.seeds.empty()) j["batch_generator"] = true;
  }
  if (run.image_run.has_value()) {
    j["mode"] = r.mask_image.defined() ? "inpaint" : "img2img";
    j["strength"] = run.image_run->strength;
    j["first_step"] = run.image_run->first_step;
  }
  if (r.padding_mask_crop.has_value() && crop_box.has_value()) {
    j["padding_mask_crop"] = r.padding_mask_crop->padding;
    j["crops_coords"] = {crop_box->x0, crop_box->y0, crop_box->x1, crop_box->y1};
  }
  for (const AdapterRequest& a : r.adapters) j["adapters"].push_back({{"path", a.path}, {"weight", a.weight}});
  for (const auto& [name, id] : resolved.ids) j[name] = id;
  for (const auto& [name, o] : resolved.options) {
    nlohmann::json& options = j["component_options"][name];
    if (o.fp8.has_value()) options["fp8"] = o.fp8->format.has_value() ? fp8_format_name(*o.fp8->format) : "off";
    if (o.compute_dtype.has_value()) options["compute_dtype"] = compute_dtype_name(*o.compute_dtype);
  }
  // ASCII only (tEXt is Latin-1): other characters are escaped.
  return j.dump(-1, ' ', /*ensure_ascii=*/true);
}

// The request's fields that only some families take: num_frames (video
// families) and sigmas (families whose upstream takes them).
absl::Status check_family_fields(const GenerateRequest& r, const PipelineFamily& family) {
  if (r.num_frames != 0 && !family.video().has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("num_frames: the ", family.name(),
                                                   " pipeline makes images, not videos; nothing was loaded"));
  }
  if (!r.sigmas.empty() && !family.takes_sigmas()) {
    return absl::InvalidArgumentError(absl::StrCat("sigmas: the ", family.name(),
                                                   " pipeline's upstream __call__ takes none; nothing was loaded"));
  }
  return absl::OkStatus();
}

// guidance_scale_2 is the later experts' guidance: refused without one,
// without classifier-free guidance (upstream reads it only then), and below
// 1 (upstream's uncond + g·(cond − uncond) for g < 1 extrapolates towards
// the negative, which the loop does not run).
absl::Status check_guidance_2(const GenerateRequest& r, const PipelineFamily& family, bool cfg,
                              const std::vector<ExpertHandover>& handovers) {
  if (!r.guidance_scale_2.has_value()) return absl::OkStatus();
  if (handovers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("guidance_scale_2: this ", family.name(),
                                                   " pipeline has one denoiser, no second expert to guide"));
  }
  if (!cfg) {
    return absl::InvalidArgumentError(
        "guidance_scale_2 applies with classifier-free guidance, which guidance_scale <= 1 turns off");
  }
  if (*r.guidance_scale_2 < 1.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("guidance_scale_2 must be >= 1 (1: unguided), got ", *r.guidance_scale_2));
  }
  return absl::OkStatus();
}

// The frames a Generate makes: 1 for an image family; for a video family
// the request's num_frames or the family's default, which must be 1 + t·k
// for the decoder's temporal factor t (INVALID_ARGUMENT naming num_frames,
// or the decoder when it has no time axis).
absl::StatusOr<int64_t> frames_of(const GenerateRequest& r, const Resolved& resolved,
                                  const std::optional<VideoDefaults>& video, const std::string& decoder_name,
                                  const ModelInfo& decoder) {
  if (!video.has_value()) return 1;
  const int64_t t = decoder.geometry.temporal_factor;
  if (t <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("component ", decoder_name, " (\"",
                                                   bounded(resolved.ids.at(decoder_name)), "\", ",
                                                   decoder.architecture, ") decodes no frames: it is not a video VAE"));
  }
  const int64_t frames = r.num_frames != 0 ? r.num_frames : video->num_frames;
  if ((frames - 1) % t != 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_frames must be 1 + ", t, "k for the ", resolved.family->name(),
                                                   " pipeline's VAE (", t, " frames per latent frame after the "
                                                   "first), got ", frames, "; nothing was loaded"));
  }
  return frames;
}

// Decodes one video's latents with `vae` into `sink`, frame by frame as the
// VAE makes them; returns what the call did.
absl::StatusOr<CallReport> decode_video(EngineApi& engine, const ModelHandle& vae, const torch::Tensor& latents,
                                        const VideoHeader& header, VideoSink& sink, const CancellationToken& cancel) {
  DIFFUSIOND_RETURN_IF_ERROR(sink.begin(header));
  DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<int64_t> decoded,
                              engine.decode_video(
                                  vae, latents,
                                  [&](const torch::Tensor& rgb, int64_t) { return sink.add_frame(rgb); }, cancel));
  if (decoded.value != header.frames) {
    return absl::InternalError(absl::StrCat("the VAE decoded ", decoded.value, " frames, not ", header.frames));
  }
  DIFFUSIOND_RETURN_IF_ERROR(sink.finish());
  return std::move(decoded.report);
}

absl::Status check_cancelled(const GenerateOptions& options, absl::string_view before) {
  if (!options.cancel.cancelled()) return absl::OkStatus();
  const absl::Status why = options.cancel.status();
  return absl::Status(why.code(), absl::StrCat("generate cancelled before ", before, ": ", why.message()));
}



}  // namespace

absl::string_view generate_stage_name(GenerateEvent::Stage stage) {
  switch (stage) {
    case GenerateEvent::Stage::kLoad: return "load";
    case GenerateEvent::Stage::kEvict: return "evict";
    case GenerateEvent::Stage::kEncode: return "encode";
    case GenerateEvent::Stage::kDenoise: return "denoise";
    case GenerateEvent::Stage::kDecode: return "decode";
  }
  return "unknown";
}

absl::StatusOr<ModelHandle> ready_component(EngineApi& engine, const ModelLoadRequest& model,
                                            std::optional<ModelRole> role, const GenerateOptions& options) {
  const std::string& id_or_path = model.path;
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const absl::Time start = clock->now();
  LoadWatcher watcher;
  watcher.cancel = options.cancel;
  watcher.on_progress = [&](const LoadProgress& p) { report_evictions(options, p.evicted, id_or_path); };
  DIFFUSIOND_ASSIGN_OR_RETURN(ModelHandle handle, engine.ready(model, role, watcher));
  const ModelInfo& info = handle.info();
  if (!handle.loaded()) {
    emit_to(options, {GenerateEvent::Stage::kLoad, info.model_id, 0, 0, absl::ZeroDuration(), "already loaded", ""});
  } else {
    // The rate is the switch's cost a user sees: bytes made resident per
    // second of this readying (waits for room included).
    const absl::Duration took = clock->now() - start;
    const double seconds = absl::ToDoubleSeconds(took);
    emit_to(options, {GenerateEvent::Stage::kLoad, info.model_id, 0, 0, took,
                      absl::StrCat("loaded ", info.architecture, ", ", format_bytes(info.bytes[kCpuIndex]),
                                   seconds > 0 ? absl::StrCat(" at ", format_bytes(static_cast<int64_t>(
                                                                          info.bytes[kCpuIndex] / seconds)),
                                                              "/s")
                                               : ""),
                      ""});
  }
  return handle;
}

void report_call(const GenerateOptions& options, const std::string& model_id, CallReport& report,
                 absl::string_view what) {
  if (report.reloaded) {
    emit_to(options, {GenerateEvent::Stage::kLoad, model_id, 0, 0, absl::ZeroDuration(),
                      absl::StrCat("loaded again for ", what, ": evicted since it was readied"), ""});
  }
  for (const std::string& adapter : report.adapters_loaded) {
    emit_to(options, {GenerateEvent::Stage::kLoad, adapter, 0, 0, absl::ZeroDuration(),
                      absl::StrCat("adapter for ", what), ""});
  }
  report_evictions(options, report.evicted, what);
  report_placement_evictions(options, report.where, what);
}

absl::StatusOr<std::vector<GeneratedImage>> generate_images(EngineApi& engine, const std::string& models_dir,
                                                            const GenerateRequest& r, const GenerateOptions& options) {
  DIFFUSIOND_RETURN_IF_ERROR(check_generate_request(r));
  DIFFUSIOND_ASSIGN_OR_RETURN(const Resolved resolved, resolve(engine, models_dir, r));
  const PipelineFamily& family = *resolved.family;
  DIFFUSIOND_RETURN_IF_ERROR(check_components_ported(family));
  DIFFUSIOND_RETURN_IF_ERROR(check_family_fields(r, family));
  DIFFUSIOND_RETURN_IF_ERROR(check_image_inputs(r, family));
  const std::optional<VideoDefaults> video = family.video();
  if (video.has_value() && options.video == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("the ", family.name(),
                                                   " pipeline makes videos, and this caller takes only images"));
  }
  // The request's guidance as the family reads it: a negative prompt used
  // by no classifier-free guidance, or a field the family does not take,
  // is refused, not dropped while the image's parameters claimed it.
  const std::optional<double> asked_guidance =
      r.legacy_guidance_scale.has_value() ? std::optional<double>(family.from_legacy_guidance(*r.legacy_guidance_scale))
                                          : r.guidance_scale;
  DIFFUSIOND_ASSIGN_OR_RETURN(const double cfg_scale,
                              family.cfg_scale({asked_guidance, r.true_cfg_scale, !r.negative_prompt.empty()}));
  const bool cfg = cfg_scale > 1.0;
  // The experts that take over (Wan 2.2's transformer_2), from the folder.
  std::vector<std::string> present;
  for (const PipelineComponent& c : family.components()) {
    if (c.optional && resolved.has(c.name)) present.push_back(c.name);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<ExpertHandover> handovers,
                              family.expert_handovers(resolved.folder_index(), present));
  DIFFUSIOND_RETURN_IF_ERROR(check_guidance_2(r, family, cfg, handovers));
  // The request as it runs: its size (the request's, else the init
  // image's, else the family's) and with padding_mask_crop the cropped image
  // and mask it inpaints, at the request's size or upstream's default (the
  // family's, which no denoiser's description changes).
  GenerateRequest sized = r;
  if (r.image.defined()) {
    sized.width = r.image.size(2);
    sized.height = r.image.size(1);
  }
  if (r.padding_mask_crop.has_value()) {
    const PipelineDefaults d = family.image_defaults(ModelInfo{});
    if (sized.width == 0) sized.width = d.width;
    if (sized.height == 0) sized.height = d.height;
  }
  const int64_t multiple = family.size_multiple();
  for (int64_t side : {sized.width, sized.height}) {
    if (side % multiple != 0) {
      return absl::InvalidArgumentError(absl::StrCat(r.image.defined() ? "the image's width and height" : "width and height",
                                                     " must be multiples of ", multiple, " for the ", family.name(),
                                                     " pipeline, got ", sized.width, "x", sized.height));
    }
  }
  std::optional<PilBox> crop_box;
  if (r.padding_mask_crop.has_value()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(MaskCropStart start, start_mask_crop(*r.padding_mask_crop, sized.width, sized.height));
    sized.image = std::move(start.image);
    sized.mask_image = std::move(start.mask);
    crop_box = start.box;
  }
  // The decoder's latent space, known before any load: a component in the
  // wrong role is refused now, not after the denoise.
  std::string decoder_name, denoiser_name;
  for (const PipelineComponent& c : family.components()) {
    if (c.role == ModelRole::kVae) decoder_name = c.name;
    if (c.role == ModelRole::kDenoiser && denoiser_name.empty()) denoiser_name = c.name;
  }
  if (decoder_name.empty() || denoiser_name.empty()) {
    return absl::InternalError(absl::StrCat("the ", family.name(), " pipeline family names no ",
                                            decoder_name.empty() ? "image decoder" : "denoiser", " component"));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const auto infos, describe_components(engine, resolved));
  const ModelInfo& decoder_info = infos.at(decoder_name);
  if (decoder_info.geometry.spatial_factor <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("component ", decoder_name, " (\"",
                                                   bounded(resolved.ids.at(decoder_name)), "\", ",
                                                   decoder_info.architecture, ") is not an image decoder"));
  }
  const ModelInfo& denoiser_info = infos.at(denoiser_name);
  DIFFUSIOND_RETURN_IF_ERROR(check_latent_channels(resolved, denoiser_name, decoder_name, denoiser_info, decoder_info));
  for (const ExpertHandover& h : handovers) {
    DIFFUSIOND_RETURN_IF_ERROR(check_latent_channels(resolved, h.component, decoder_name, infos.at(h.component),
                                                     decoder_info));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(const int64_t frames, frames_of(r, resolved, video, decoder_name, decoder_info));
  // Classifier-free guidance is decided by the request's fields and the
  // family's default, so the negative is encoded or not, and the denoise
  // sized, before the denoiser is loaded. A batch runs its images one by
  // one: one image's stages bound it.
  const double guidance_2 = r.guidance_scale_2.value_or(cfg_scale);
  std::vector<PlannedDenoiser> denoisers = {{denoiser_name, cfg}};
  for (const ExpertHandover& h : handovers) denoisers.push_back({h.component, cfg && guidance_2 > 1.0});
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<PlannedStage> stages,
                              stages_of(sized, resolved, cfg, denoisers, frames, denoiser_info, decoder_info,
                                        decoder_name));
  DIFFUSIOND_RETURN_IF_ERROR(check_stages_fit(engine, resolved, infos, stages));
  if (video.has_value()) {
    // Whether videos can be written at all, before anything loads.
    const PipelineDefaults d = family.defaults(denoiser_info);
    DIFFUSIOND_RETURN_IF_ERROR(options.video->check(sized.width != 0 ? sized.width : d.width,
                                                    sized.height != 0 ? sized.height : d.height, video->fps));
  }
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const int images = std::max(r.num_images_per_prompt, 1);

  // Text encoders, one after another, each readied once and pinned only
  // while it encodes. A family with a text conditioner keeps the encoders'
  // outputs for it.
  bool has_conditioner = false;
  for (const PipelineComponent& c : family.components()) has_conditioner |= c.role == ModelRole::kTextConditioner;
  std::map<std::string, Conditioning> positive_parts, negative_parts;
  std::map<std::string, EncodedText> positive_texts, negative_texts;
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextEncoder) continue;
    DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "encoding"));
    const absl::Time start = clock->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle encoder,
                                ready_component(engine, resolved.load_of(c.name), c.role, options));
    std::string detail;
    CallDevice where;
    for (bool negative : {false, true}) {
      if (negative && !cfg) break;
      DIFFUSIOND_ASSIGN_OR_RETURN(const TextEncoding encoding,
                                  resolved.encoding_of(c.name, negative ? r.negative_prompt : r.prompt,
                                                       r.max_sequence_length));
      // The adapters' modules for this encoder apply to its calls (the
      // files' other modules to the denoiser, below).
      TextEncoderAdapters encoder_adapters;
      if (!r.adapters.empty()) encoder_adapters = {r.adapters, denoiser_info, c.name};
      DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<EncodedText> encoded,
                                  engine.encode_text(encoder, encoding, options.cancel, encoder_adapters));
      report_call(options, encoder.id(), encoded.report, absl::StrCat("the encoding of ", encoder.id()));
      where.add(std::move(encoded.report.where));
      DIFFUSIOND_ASSIGN_OR_RETURN(Conditioning part, family.encoder_conditioning(c.name, encoded.value));
      (negative ? negative_parts : positive_parts)[c.name] = std::move(part);
      absl::StrAppend(&detail, detail.empty() ? "" : ", ", encoded.value.tokens,
                      negative ? " negative" : " prompt", " tokens");
      if (has_conditioner) (negative ? negative_texts : positive_texts)[c.name] = std::move(encoded.value);
    }
    emit_to(options, {GenerateEvent::Stage::kEncode, encoder.id(), 0, 0, clock->now() - start,
                      absl::StrCat(detail, "; ", where.summary()), where.device});
  }

  // Text conditioners, after every encoder: each reads the encoders'
  // outputs for its prompt, and its output joins the conditioning.
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextConditioner) continue;
    DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "conditioning"));
    const absl::Time start = clock->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle conditioner,
                                ready_component(engine, resolved.load_of(c.name), c.role, options));
    std::string detail;
    CallDevice where;
    for (bool negative : {false, true}) {
      if (negative && !cfg) break;
      DIFFUSIOND_ASSIGN_OR_RETURN(
          const ConditionerRequest request,
          family.conditioner_request(c.name, negative ? r.negative_prompt : r.prompt,
                                     negative ? negative_texts : positive_texts));
      DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<ConditionedText> conditioned,
                                  engine.condition_text(conditioner, request, options.cancel));
      report_call(options, conditioner.id(), conditioned.report, absl::StrCat("the conditioning of ", conditioner.id()));
      where.add(std::move(conditioned.report.where));
      DIFFUSIOND_ASSIGN_OR_RETURN(Conditioning part, family.conditioner_conditioning(c.name, conditioned.value));
      (negative ? negative_parts : positive_parts)[c.name] = std::move(part);
      absl::StrAppend(&detail, detail.empty() ? "" : ", ", conditioned.value.tokens,
                      negative ? " negative" : " prompt", " tokens");
    }
    emit_to(options, {GenerateEvent::Stage::kEncode, conditioner.id(), 0, 0, clock->now() - start,
                      absl::StrCat(detail, "; ", where.summary()), where.device});
  }
  positive_texts.clear();
  negative_texts.clear();

  // The generators draw in upstream's order: the VAE's sample of the init
  // image first, then the batch's noise.
  BatchGenerators generators(r.seed, r.seeds);
  const int64_t f = decoder_info.geometry.spatial_factor;
  torch::Tensor eps;
  if (sized.image.defined()) {
    eps = generators.image_sample_noise({1, decoder_info.geometry.channels, sized.height / f, sized.width / f});
  }

  // img2img: the init image's latents, encoded before the denoiser is
  // readied (which may evict the VAE; the decode readies it again).
  torch::Tensor clean;
  if (sized.image.defined()) {
    DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "encoding the image"));
    const absl::Time start = clock->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle vae,
                                ready_component(engine, resolved.load_of(decoder_name), ModelRole::kVae, options));
    DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<torch::Tensor> encoded,
                                engine.encode_image(vae, vae_input(sized.image), eps, options.cancel));
    report_call(options, vae.id(), encoded.report, absl::StrCat("the encode of ", vae.id()));
    clean = encoded.value[0];
    emit_to(options, {GenerateEvent::Stage::kEncode, vae.id(), 0, 0, clock->now() - start,
                      absl::StrCat("the init image, ", sized.width, "x", sized.height, " pixels; ",
                                   encoded.report.where.summary()),
                      encoded.report.where.device});
  }

  DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "denoising"));
  DIFFUSIOND_ASSIGN_OR_RETURN(
      const ModelHandle transformer,
      ready_component(engine, resolved.load_of(denoiser_name), ModelRole::kDenoiser, options));
  // What the load made known (a folder's latent channels, its defaults).
  const ModelInfo& denoiser = transformer.info();
  DIFFUSIOND_RETURN_IF_ERROR(check_latent_channels(resolved, denoiser_name, decoder_name, denoiser, decoder_info));
  const PipelineDefaults defaults = sized.image.defined() ? family.image_defaults(denoiser) : family.defaults(denoiser);
  Effective run;
  run.width = sized.width != 0 ? sized.width : defaults.width;
  run.height = sized.height != 0 ? sized.height : defaults.height;
  run.steps = !r.sigmas.empty() ? static_cast<int>(r.sigmas.size()) : r.steps != 0 ? r.steps : defaults.steps;
  run.guidance = asked_guidance.value_or(defaults.guidance_scale);
  if (!handovers.empty()) run.guidance_2 = r.guidance_scale_2.value_or(run.guidance);
  if (video.has_value()) {
    run.frames = frames;
    run.fps = video->fps;
  }
  if (sized.image.defined()) {
    const ImageInputs inputs = *family.image_inputs();
    ImageRun image_run;
    image_run.strength = r.strength != 0 ? r.strength
                                         : (sized.mask_image.defined() ? *inputs.inpaint_strength : inputs.img2img_strength);
    image_run.first_step = strength_first_step(run.steps, image_run.strength);
    if (image_run.first_step >= run.steps) {  // strength > 0 always leaves a step; kept as upstream's check
      return absl::InvalidArgumentError(
          absl::StrCat("strength ", image_run.strength, " of ", run.steps, " steps runs no step"));
    }
    run.image_run = image_run;
  }

  EngineDenoiseRequest denoise;
  denoise.model = transformer;
  denoise.latent_shape = family.latent_shape(denoiser, decoder_info, run.width, run.height, frames);
  denoise.guidance_scale = cfg ? cfg_scale : 1.0;
  denoise.steps = run.steps;
  denoise.base_sigmas = r.sigmas;
  denoise.shift = r.shift;
  denoise.adapters = r.adapters;
  for (const PipelineComponent& c : family.components()) {
    if (c.role == ModelRole::kTextEncoder) denoise.adapters_applied_to_encoders.push_back(c.name);
  }
  for (const ExpertHandover& h : handovers) {
    const ModelLoadRequest load = resolved.load_of(h.component);
    // Without guidance the later experts run unguided too, as upstream's.
    denoise.later_segments.push_back(
        {load.path, h.boundary_ratio, cfg ? guidance_2 : 1.0, load.fp8, load.compute_dtype});
  }
  // The encoders' parts (tensors, and scalars such as Wan's
  // max_sequence_length), then the request's scalars over them.
  DIFFUSIOND_ASSIGN_OR_RETURN(const Conditioning scalars, family.scalar_conditioning(run.guidance, denoiser));
  const auto assemble = [&](std::map<std::string, Conditioning>& parts, Conditioning* into) {
    for (auto& [name, part] : parts) {
      for (auto& [k, t] : part.tensors) into->tensors[k] = std::move(t);
      for (const auto& [k, v] : part.scalars) into->scalars[k] = v;
    }
    for (const auto& [k, v] : scalars.scalars) into->scalars[k] = v;
  };
  assemble(positive_parts, &denoise.positive);
  if (cfg) assemble(negative_parts, &denoise.negative.emplace());
  if (clean.defined() && clean.sizes().vec() != denoise.latent_shape) {
    return absl::InvalidArgumentError(absl::StrCat("the VAE encoded the image to [", absl::StrJoin(clean.sizes(), ", "),
                                                   "], the denoiser works on [",
                                                   absl::StrJoin(denoise.latent_shape, ", "), "]"));
  }
  std::vector<torch::Tensor> noise = generators.batch_noise(images, denoise.latent_shape);
  const torch::Tensor mask = sized.mask_image.defined() ? latent_mask(sized.mask_image, f) : torch::Tensor();

  // Every image's denoise, then every decode: the denoiser and the VAE
  // alternate once, whatever the batch.
  std::vector<torch::Tensor> latents(images);
  for (int k = 0; k < images; ++k) {
    DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "denoising"));
    EngineDenoiseRequest one = denoise;
    if (run.image_run.has_value()) {
      one.from_image = ImageStart{clean, noise[k], run.image_run->first_step, mask};
    } else {
      one.initial_latents = noise[k];
    }
    // What readying the segment now running did; its first step reports it.
    SegmentStart segment;
    one.on_segment = [&](const SegmentStart& s) { segment = s; };
    DenoiseOptions loop_options;
    loop_options.cancel = options.cancel;
    loop_options.clock = clock;
    loop_options.on_step = [&](const StepEvent& e) {
      // The first step says where the loop runs and what its placement did.
      std::string detail;
      if (segment.began_with(e)) {
        report_evictions(options, segment.evicted, absl::StrCat("the activations of ", segment.model_id));
        if (segment.loaded) {
          emit_to(options, {GenerateEvent::Stage::kLoad, segment.model_id, 0, 0, absl::ZeroDuration(),
                            absl::StrCat("loaded for its steps, from step ", e.step), ""});
        }
        for (const std::string& adapter : segment.adapters_loaded) {
          emit_to(options, {GenerateEvent::Stage::kLoad, adapter, 0, 0, absl::ZeroDuration(),
                            absl::StrCat("adapter for ", segment.model_id), ""});
        }
        for (const std::string& note : segment.adapter_notes) {
          emit_to(options, {GenerateEvent::Stage::kLoad, segment.model_id, 0, 0, absl::ZeroDuration(), note, ""});
        }
        report_placement_evictions(options, segment.where, absl::StrCat("the denoise of ", segment.model_id));
        detail = segment.where.summary();
      }
      emit_to(options, {GenerateEvent::Stage::kDenoise, segment.model_id, e.step, e.steps, e.step_time, detail,
                        segment.where.device, k});
    };
    DIFFUSIOND_ASSIGN_OR_RETURN(latents[k], engine.denoise(one, loop_options));
  }
  noise.clear();

  std::vector<GeneratedImage> out;
  for (int k = 0; k < images; ++k) {
    DIFFUSIOND_RETURN_IF_ERROR(check_cancelled(options, "decoding"));
    const absl::Time start = clock->now();
    DIFFUSIOND_ASSIGN_OR_RETURN(const ModelHandle vae,
                                ready_component(engine, resolved.load_of(decoder_name), ModelRole::kVae, options));
    const uint64_t seed = r.seeds.empty() ? r.seed : r.seeds[k];
    std::vector<std::pair<std::string, std::string>> parameters = {
        {"parameters", parameters_json(sized, resolved, run, handovers, crop_box, k)}};
    if (video.has_value()) {
      VideoHeader header;
      header.index = k;
      header.seed = seed;
      header.width = run.width;
      header.height = run.height;
      header.frames = frames;
      header.fps = video->fps;
      header.parameters = std::move(parameters);
      DIFFUSIOND_ASSIGN_OR_RETURN(CallReport report,
                                  decode_video(engine, vae, latents[k], header, *options.video, options.cancel));
      latents[k] = torch::Tensor();
      report_call(options, vae.id(), report, absl::StrCat("the decode of ", vae.id()));
      const CallDevice& where = report.where;
      emit_to(options, {GenerateEvent::Stage::kDecode, vae.id(), 0, 0, clock->now() - start,
                        absl::StrCat(run.width, "x", run.height, "x", frames, " frames; ", where.summary()),
                        where.device, k});
      continue;
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<torch::Tensor> decoded,
                                engine.decode_image(vae, latents[k], options.cancel));
    latents[k] = torch::Tensor();
    report_call(options, vae.id(), decoded.report, absl::StrCat("the decode of ", vae.id()));
    const CallDevice& where = decoded.report.where;
    GeneratedImage image;
    image.pixels = std::move(decoded.value);
    image.index = k;
    emit_to(options, {GenerateEvent::Stage::kDecode, vae.id(), 0, 0, clock->now() - start,
                      absl::StrCat(image.pixels.size(1), "x", image.pixels.size(0), " pixels; ", where.summary()),
                      where.device, k});
    if (crop_box.has_value()) image.pixels = finish_mask_crop(*r.padding_mask_crop, *crop_box, image.pixels);
    image.seed = seed;
    image.parameters = std::move(parameters);
    if (options.on_image) {
      options.on_image(std::move(image));
    } else {
      out.push_back(std::move(image));
    }
  }
  return out;
}

absl::StatusOr<GeneratedImage> generate(EngineApi& engine, const std::string& models_dir, const GenerateRequest& r,
                                        const GenerateOptions& options) {
  if (r.num_images_per_prompt > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a request for ", r.num_images_per_prompt, " images: use generate_images()"));
  }
  GenerateOptions collected = options;
  collected.on_image = nullptr;
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<GeneratedImage> images, generate_images(engine, models_dir, r, collected));
  if (images.empty()) {
    return absl::InvalidArgumentError("the pipeline made a video, not an image: use generate_images() with a VideoSink");
  }
  return std::move(images.at(0));
}

}  // namespace diffusiond
