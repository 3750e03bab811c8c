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
#include "core/pipeline/pipeline_folder.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// The component diffusers' pipelines keep their denoiser under: how a
// request without a pipeline folder names the model that chooses the family.
constexpr char kDenoiserComponent[] = "transformer";

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


// How component `name`, at `id_or_path`, is described, sized and readied:
// with its `options`, if the request gave any.
ModelLoadRequest component_load(const std::string& name, const std::string& id_or_path,
                                const std::map<std::string, ComponentOptions>& options) {
  ModelLoadRequest load;
  load.path = id_or_path;
  if (const auto o = options.find(name); o != options.end()) {
    load.fp8 = o->second.fp8;
    load.compute_dtype = o->second.compute_dtype;
  }
  return load;
}

// A request resolved against its family: every component's id or path,
// and the options it is loaded with.
struct Resolved {
  const PipelineFamily* family = nullptr;
  std::optional<PipelineIndex> folder;  // the pipeline folder's index, when one was given
  std::map<std::string, std::string> ids;
  std::map<std::string, ComponentOptions> options;

  ModelLoadRequest load_of(const std::string& name) const { return component_load(name, ids.at(name), options); }
  // How text encoder `name` is asked for `prompt` in this pipeline, at
  // `max_sequence_length` when not 0 (refused by a family without one).
  absl::StatusOr<TextEncoding> encoding_of(const std::string& name, const std::string& prompt,
                                           int64_t max_sequence_length) const {
    DIFFUSIOND_ASSIGN_OR_RETURN(TextEncoding encoding,
                                family->folder_text_encoding(name, prompt, folder.has_value() ? &*folder : nullptr));
    if (max_sequence_length == 0) return encoding;
    return family->with_max_sequence_length(name, std::move(encoding), max_sequence_length);
  }
};

absl::StatusOr<Resolved> resolve(EngineApi& engine, const std::string& models_dir, const GenerateRequest& r) {
  Resolved out;
  PipelineIndex index;
  if (!r.pipeline.empty()) {
    DIFFUSIOND_ASSIGN_OR_RETURN(PipelineFolder folder, open_pipeline_folder(models_dir, r.pipeline));
    out.family = folder.family;
    index = folder.index;
    out.folder = std::move(folder.index);
  } else {
    const auto denoiser = r.components.find(kDenoiserComponent);
    if (denoiser == r.components.end() || denoiser->second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("give a pipeline folder, or every component including \"", kDenoiserComponent, "\""));
    }
    DIFFUSIOND_ASSIGN_OR_RETURN(
        ModelInfo info,
        describe_model(engine, component_load(kDenoiserComponent, denoiser->second, r.component_options)));
    out.family = find_pipeline_family_for_denoiser(info.architecture);
    if (out.family == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no pipeline family runs a ", info.architecture, " denoiser (\"",
                                                     bounded(denoiser->second), "\")"));
    }
  }
  std::vector<std::string> names;
  for (const PipelineComponent& c : out.family->components()) names.push_back(c.name);
  const auto check_name = [&](const std::string& name, const char* field) -> absl::Status {
    if (out.family->component(name).has_value()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(field, ": the ", out.family->name(), " pipeline has no component \"",
                                                   bounded(name), "\"; its components are ", absl::StrJoin(names, ", ")));
  };
  for (const auto& [name, id] : r.components) DIFFUSIOND_RETURN_IF_ERROR(check_name(name, "components"));
  for (const auto& [name, o] : r.component_options) {
    DIFFUSIOND_RETURN_IF_ERROR(check_name(name, "component_options"));
  }
  out.options = r.component_options;
  for (const std::string& name : names) {
    const auto given = r.components.find(name);
    if (given != r.components.end() && !given->second.empty()) {
      out.ids[name] = given->second;
    } else if (!r.pipeline.empty() && index.components.count(name) != 0) {
      out.ids[name] = absl::StrCat(r.pipeline, "/", name);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(r.pipeline.empty() ? std::string("the request") : absl::StrCat("pipeline \"", bounded(r.pipeline), "\""),
                       " has no ", name, " component for the ", out.family->name(), " pipeline"));
    }
  }
  return out;
}

// Every component of `resolved`, described without loading it (by name).
absl::StatusOr<std::map<std::string, ModelInfo>> describe_components(EngineApi& engine, const Resolved& resolved) {
  std::map<std::string, ModelInfo> infos;
  for (const auto& [name, id] : resolved.ids) {
    DIFFUSIOND_ASSIGN_OR_RETURN(infos[name], describe_model(engine, resolved.load_of(name)));
  }
  return infos;
}

// One stage of a Generate as it is known before anything loads: its
// component, and its call (activation_estimate.h, read by the role).
struct PlannedStage {
  std::string component;
  std::string call;  // "an encode of 12 tokens", for the refusal
  ActivationQuery query;
};

// Refuses, before anything loads, a stage whose component's weights alone,
// or with the least working memory of its call, are more than the RAM
// budget: no eviction or wait could ever admit it, and the stages before it
// would run for nothing. The engine sizes each call from its model's config
// (EngineApi::least_call_room), a lower bound of what it will reserve.
absl::Status check_stages_fit(EngineApi& engine, const Resolved& resolved,
                              const std::map<std::string, ModelInfo>& infos, const std::vector<PlannedStage>& stages) {
  const CacheStats stats = engine.stats();
  if (stats.budgets.empty()) return absl::OkStatus();
  const int64_t capacity = stats.budgets[0].capacity_bytes;
  const auto refuse = [&](const std::string& name, const std::string& needs) {
    const ModelInfo& info = infos.at(name);
    return absl::ResourceExhaustedError(absl::StrCat(
        "component ", name, " (\"", bounded(resolved.ids.at(name)), "\", ", info.architecture, ") needs ", needs,
        ", more than the RAM budget of ", format_bytes(capacity), ": it could never run; nothing was loaded"));
  };
  for (const auto& [name, info] : infos) {
    if (info.bytes[kCpuIndex] > capacity) {
      return refuse(name, absl::StrCat(format_bytes(info.bytes[kCpuIndex]), " of weights"));
    }
  }
  for (const PlannedStage& stage : stages) {
    DIFFUSIOND_ASSIGN_OR_RETURN(const CallFloor floor,
                                engine.least_call_room(resolved.load_of(stage.component), stage.query));
    if (floor.call > capacity - floor.weights) {
      return refuse(stage.component, absl::StrCat(format_bytes(floor.weights), " of weights and at least ",
                                                  format_bytes(floor.call), " for ", stage.call));
    }
  }
  return absl::OkStatus();
}

// OK when `denoiser` and `decoder` work in the same latent channels (0: not
// known yet).
absl::Status check_latent_channels(const Resolved& resolved, const std::string& denoiser_name,
                                   const std::string& decoder_name, const ModelInfo& denoiser,
                                   const ModelInfo& decoder) {
  if (denoiser.geometry.channels == 0 || denoiser.geometry.channels == decoder.geometry.channels) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the denoiser \"", bounded(resolved.ids.at(denoiser_name)), "\" works in ",
                   denoiser.geometry.channels, " latent channels, but the decoder \"",
                   bounded(resolved.ids.at(decoder_name)), "\" decodes ", decoder.geometry.channels));
}

// Every stage of `r` under `resolved`'s family, sized from what is known
// before any load: each text encoder's encodes (the tokens it will reserve
// for, as the pipeline folder asks them), one step of the denoise and the
// decode, at the request's size or the family's default (which depends
// only on the denoiser's description). The folder's malformed settings are
// refused here.
absl::StatusOr<std::vector<PlannedStage>> stages_of(const GenerateRequest& r, const Resolved& resolved, bool cfg,
                                                    const ModelInfo& denoiser, const ModelInfo& decoder,
                                                    const std::string& denoiser_name,
                                                    const std::string& decoder_name) {
  const PipelineFamily& family = *resolved.family;
  std::vector<PlannedStage> stages;
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextEncoder) continue;
    for (bool negative : {false, true}) {
      if (negative && !cfg) break;
      PlannedStage s{c.name, "", {}};
      DIFFUSIOND_ASSIGN_OR_RETURN(
          const TextEncoding encoding,
          resolved.encoding_of(c.name, negative ? r.negative_prompt : r.prompt, r.max_sequence_length));
      // Without the tokenizer's special tokens: a lower bound.
      s.query.text_tokens = tokens_bound(encoding, 0);
      s.call = absl::StrCat("an encode of ", s.query.text_tokens, " tokens");
      stages.push_back(std::move(s));
    }
  }
  if (denoiser.geometry.channels == 0) return stages;  // latents not known before the load
  const PipelineDefaults defaults = r.image.defined() ? family.image_defaults(denoiser) : family.defaults(denoiser);
  const int64_t width = r.width != 0 ? r.width : defaults.width;
  const int64_t height = r.height != 0 ? r.height : defaults.height;
  const std::vector<int64_t> latents = family.latent_shape(denoiser, decoder, width, height);
  const std::string size = absl::StrCat(width, "x", height, " pixels (latents [", absl::StrJoin(latents, ", "), "])");
  PlannedStage step{denoiser_name, absl::StrCat(cfg ? "a guided" : "a", " denoise step at ", size), {}};
  step.query.latent_shape = latents;
  step.query.batch = cfg ? 2 : 1;
  step.query.text_tokens = 1;  // the encoders' output is not known yet: a lower bound
  step.query.denoise_loop = true;
  stages.push_back(std::move(step));
  PlannedStage decode{decoder_name, absl::StrCat("a decode at ", size), {}};
  decode.query.latent_shape = latents;
  stages.push_back(std::move(decode));
  return stages;
}

// What a request's image input made of it: the strength used and the
// schedule's step the run starts at (get_timesteps' t_start).
struct ImageRun {
  double strength = 0;
  int first_step = 0;
};

// The image's parameters: the request's fields, what the run used where
// they were unset, and with padding_mask_crop the box cut from the image
// (upstream's crops_coords).
std::string parameters_json(const GenerateRequest& r, const Resolved& resolved, int steps, double guidance,
                            int64_t width, int64_t height, const std::optional<ImageRun>& image_run,
                            const std::optional<PilBox>& crop_box, int index) {
  nlohmann::json j = {{"pipeline", std::string(resolved.family->name())},
                      {"prompt", r.prompt},
                      {"negative_prompt", r.negative_prompt},
                      {"width", width},
                      {"height", height},
                      {"steps", steps},
                      {"seed", r.seeds.empty() ? r.seed : r.seeds[index]},
                      {"shift", r.shift}};
  // Only a family that takes guidance_scale used it (Qwen-Image's is true_cfg_scale).
  for (const FamilyArgument& a : resolved.family->arguments()) {
    if (a.name == "guidance_scale") j["guidance_scale"] = guidance;
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
  if (image_run.has_value()) {
    j["mode"] = r.mask_image.defined() ? "inpaint" : "img2img";
    j["strength"] = image_run->strength;
    j["first_step"] = image_run->first_step;
  }
  if (r.padding_mask_crop.has_value() && crop_box.has_value()) {
    j["padding_mask_crop"] = r.padding_mask_crop->padding;
    j["crops_coords"] = {crop_box->x0, crop_box->y0, crop_box->x1, crop_box->y1};
  }
  for (const auto& [name, id] : resolved.ids) j[name] = id;
  for (const auto& [name, o] : resolved.options) {
    nlohmann::json& options = j["component_options"][name];
    if (o.fp8.has_value()) options["fp8"] = o.fp8->format.has_value() ? fp8_format_name(*o.fp8->format) : "off";
    if (o.compute_dtype.has_value()) options["compute_dtype"] = compute_dtype_name(*o.compute_dtype);
  }
  // ASCII only (tEXt is Latin-1): other characters are escaped.
  return j.dump(-1, ' ', /*ensure_ascii=*/true);
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
    emit_to(options, {GenerateEvent::Stage::kLoad, info.model_id, 0, 0, clock->now() - start,
                      absl::StrCat("loaded ", info.architecture, ", ", format_bytes(info.bytes[kCpuIndex])), ""});
  }
  return handle;
}

void report_call(const GenerateOptions& options, const std::string& model_id, CallReport& report,
                 absl::string_view what) {
  if (report.reloaded) {
    emit_to(options, {GenerateEvent::Stage::kLoad, model_id, 0, 0, absl::ZeroDuration(),
                      absl::StrCat("loaded again for ", what, ": evicted since it was readied"), ""});
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
  DIFFUSIOND_RETURN_IF_ERROR(check_image_inputs(r, family));
  // The guidance in the family's upstream meaning; an old client's scale
  // read as it meant it.
  const std::optional<double> asked_guidance =
      r.legacy_guidance_scale.has_value() ? std::optional<double>(family.from_legacy_guidance(*r.legacy_guidance_scale))
                                          : r.guidance_scale;
  // The request's guidance as the family reads it: a negative prompt used
  // by no classifier-free guidance, or a field the family does not take,
  // is refused, not dropped while the image's parameters claimed it.
  DIFFUSIOND_ASSIGN_OR_RETURN(const double cfg_scale,
                              family.cfg_scale({asked_guidance, r.true_cfg_scale, !r.negative_prompt.empty()}));
  const bool cfg = cfg_scale > 1.0;
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
    if (c.role == ModelRole::kDenoiser) denoiser_name = c.name;
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
  // Classifier-free guidance is decided by the request's fields and the
  // family's default, so the negative is encoded or not, and the denoise
  // sized, before the denoiser is loaded. A batch runs its images one by
  // one: one image's stages bound it.
  DIFFUSIOND_ASSIGN_OR_RETURN(
      const std::vector<PlannedStage> stages,
      stages_of(sized, resolved, cfg, denoiser_info, decoder_info, denoiser_name, decoder_name));
  DIFFUSIOND_RETURN_IF_ERROR(check_stages_fit(engine, resolved, infos, stages));
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const int images = std::max(r.num_images_per_prompt, 1);

  // Text encoders, one after another, each readied once and pinned only
  // while it encodes.
  std::map<std::string, Conditioning> positive_parts, negative_parts;
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
      DIFFUSIOND_ASSIGN_OR_RETURN(CallResult<EncodedText> encoded,
                                  engine.encode_text(encoder, encoding, options.cancel));
      report_call(options, encoder.id(), encoded.report, absl::StrCat("the encoding of ", encoder.id()));
      where.add(std::move(encoded.report.where));
      DIFFUSIOND_ASSIGN_OR_RETURN(Conditioning part, family.encoder_conditioning(c.name, encoded.value));
      (negative ? negative_parts : positive_parts)[c.name] = std::move(part);
      absl::StrAppend(&detail, detail.empty() ? "" : ", ", encoded.value.tokens,
                      negative ? " negative" : " prompt", " tokens");
    }
    emit_to(options, {GenerateEvent::Stage::kEncode, encoder.id(), 0, 0, clock->now() - start,
                      absl::StrCat(detail, "; ", where.summary()), where.device});
  }

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
  const int64_t width = sized.width != 0 ? sized.width : defaults.width;
  const int64_t height = sized.height != 0 ? sized.height : defaults.height;
  const int steps = !r.sigmas.empty() ? static_cast<int>(r.sigmas.size()) : r.steps != 0 ? r.steps : defaults.steps;
  const double guidance = asked_guidance.value_or(defaults.guidance_scale);
  std::optional<ImageRun> image_run;
  if (sized.image.defined()) {
    const ImageInputs inputs = *family.image_inputs();
    ImageRun run;
    run.strength = r.strength != 0 ? r.strength
                                   : (sized.mask_image.defined() ? *inputs.inpaint_strength : inputs.img2img_strength);
    run.first_step = strength_first_step(steps, run.strength);
    if (run.first_step >= steps) {  // strength > 0 always leaves a step; kept as upstream's check
      return absl::InvalidArgumentError(absl::StrCat("strength ", run.strength, " of ", steps, " steps runs no step"));
    }
    image_run = run;
  }

  EngineDenoiseRequest denoise;
  denoise.model = transformer;
  denoise.latent_shape = family.latent_shape(denoiser, decoder_info, width, height);
  denoise.guidance_scale = cfg ? cfg_scale : 1.0;
  denoise.steps = steps;
  denoise.base_sigmas = r.sigmas;
  denoise.shift = r.shift;
  // The encoders' parts (tensors, and scalars such as Wan's
  // max_sequence_length), then the request's scalars over them.
  DIFFUSIOND_ASSIGN_OR_RETURN(const Conditioning scalars, family.scalar_conditioning(guidance, denoiser));
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
    if (image_run.has_value()) {
      one.from_image = ImageStart{clean, noise[k], image_run->first_step, mask};
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
    image.seed = r.seeds.empty() ? r.seed : r.seeds[k];
    image.parameters = {
        {"parameters", parameters_json(sized, resolved, steps, guidance, width, height, image_run, crop_box, k)}};
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
  return std::move(images.at(0));
}

}  // namespace diffusiond
