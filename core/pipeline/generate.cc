#include "core/pipeline/generate.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/pipeline/pipeline_index.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/confined_path.h"
#include "core/util/file_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

constexpr int64_t kMaxSide = 4096;

std::set<std::string> cached_keys(const EngineApi& engine) {
  std::set<std::string> keys;
  for (const CacheEntryStats& e : engine.stats().entries) keys.insert(e.key);
  return keys;
}

// The kEvict events of the entries of `before` that are no longer cached,
// evicted to make room for `what`.
std::vector<GenerateEvent> evictions_since(const EngineApi& engine, const std::set<std::string>& before,
                                           absl::string_view what) {
  const std::set<std::string> after = cached_keys(engine);
  std::vector<GenerateEvent> events;
  for (const std::string& key : before) {
    if (after.count(key) == 0) {
      events.push_back({GenerateEvent::Stage::kEvict, key, 0, 0, absl::ZeroDuration(),
                        absl::StrCat("evicted to make room for ", what)});
    }
  }
  return events;
}

// One Generate call's view of the engine: components made ready on
// demand, with their loads and the evictions those caused reported.
class Run {
 public:
  Run(EngineApi& engine, const GenerateOptions& options) : engine_(engine), options_(options) {}

  void emit(GenerateEvent e) const {
    if (options_.on_event) options_.on_event(e);
  }

  absl::Status check_cancelled(absl::string_view before) const {
    if (!options_.cancel.cancelled()) return absl::OkStatus();
    const absl::Status why = options_.cancel.status();
    return absl::Status(why.code(), absl::StrCat("generate cancelled before ", before, ": ", why.message()));
  }

  absl::StatusOr<std::string> ready(const std::string& id_or_path) {
    return ready_component(engine_, id_or_path, options_);
  }

  // Reports what the cache evicted since `before` was taken: a denoise or
  // a decode makes room for its activations as a load does for weights.
  void report_evictions(const std::set<std::string>& before, absl::string_view what) const {
    for (const GenerateEvent& e : evictions_since(engine_, before, what)) emit(e);
  }

 private:
  EngineApi& engine_;
  const GenerateOptions& options_;
};

absl::Status check_request(const GenerateRequest& r) {
  for (int64_t side : {r.width, r.height}) {
    if (side < 16 || side > kMaxSide || side % 16 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("width and height must be multiples of 16 from 16 to ", kMaxSide,
                                                     ", got ", r.width, "x", r.height));
    }
  }
  if (r.steps < 1 || r.steps > 1000) {
    return absl::InvalidArgumentError(absl::StrCat("steps must be 1 to 1000, got ", r.steps));
  }
  if (!std::isfinite(r.guidance_scale) || r.guidance_scale < 0 || !std::isfinite(r.shift) || r.shift < 0) {
    return absl::InvalidArgumentError("guidance_scale and shift must be finite and >= 0");
  }
  return absl::OkStatus();
}

// Fills the components the request does not name from its pipeline folder.
absl::Status resolve_components(const std::string& models_dir, GenerateRequest& r) {
  if (r.pipeline.empty()) {
    if (r.text_encoder.empty() || r.transformer.empty() || r.vae.empty()) {
      return absl::InvalidArgumentError("give a pipeline, or all three of text_encoder, transformer and vae");
    }
    return absl::OkStatus();
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::string folder, resolve_confined_path(models_dir, r.pipeline));
  const std::string index_path = folder + "/model_index.json";
  absl::StatusOr<std::string> text = read_text_file(index_path);
  if (absl::IsNotFound(text.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat("pipeline \"", bounded(r.pipeline), "\" has no model_index.json: it is not a pipeline folder"));
  }
  DIFFUSIOND_RETURN_IF_ERROR(text.status());
  DIFFUSIOND_ASSIGN_OR_RETURN(PipelineIndex index, parse_pipeline_index(*text, index_path));
  for (auto [field, name] : {std::pair<std::string*, const char*>{&r.text_encoder, "text_encoder"},
                             {&r.transformer, "transformer"},
                             {&r.vae, "vae"}}) {
    if (!field->empty()) continue;
    if (index.components.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline \"", bounded(r.pipeline), "\" (", index.pipeline_class, ") has no ", name));
    }
    *field = absl::StrCat(r.pipeline, "/", name);
  }
  return absl::OkStatus();
}

std::string parameters_json(const GenerateRequest& r) {
  nlohmann::json j = {{"prompt", r.prompt},
                      {"negative_prompt", r.negative_prompt},
                      {"width", r.width},
                      {"height", r.height},
                      {"steps", r.steps},
                      {"guidance_scale", r.guidance_scale},
                      {"seed", r.seed},
                      {"shift", r.shift},
                      {"text_encoder", r.text_encoder},
                      {"transformer", r.transformer},
                      {"vae", r.vae}};
  // ASCII only (tEXt is Latin-1): other characters are escaped.
  return j.dump(-1, ' ', /*ensure_ascii=*/true);
}

}  // namespace

absl::StatusOr<std::string> ready_component(EngineApi& engine, const std::string& id_or_path,
                                          const GenerateOptions& options) {
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const auto emit = [&](GenerateEvent e) {
    if (options.on_event) options.on_event(e);
  };
  for (const ModelInfo& m : engine.list()) {
    if (m.model_id == id_or_path) {
      emit({GenerateEvent::Stage::kLoad, m.model_id, 0, 0, absl::ZeroDuration(), "already loaded"});
      return m.model_id;
    }
  }
  const std::set<std::string> before = cached_keys(engine);
  const absl::Time start = clock->now();
  ModelLoadRequest load;
  load.path = id_or_path;
  LoadWatcher watcher;
  watcher.cancel = options.cancel;
  DIFFUSIOND_ASSIGN_OR_RETURN(ModelInfo info, engine.load(load, watcher));
  const absl::Duration took = clock->now() - start;
  for (const GenerateEvent& e : evictions_since(engine, before, info.model_id)) emit(e);
  emit({GenerateEvent::Stage::kLoad, info.model_id, 0, 0, took,
        absl::StrCat("loaded ", info.architecture, ", ", format_bytes(info.bytes[static_cast<int>(Device::kCpu)]))});
  return info.model_id;
}

absl::StatusOr<GeneratedImage> generate(EngineApi& engine, const std::string& models_dir,
                                        const GenerateRequest& given, const GenerateOptions& options) {
  DIFFUSIOND_RETURN_IF_ERROR(check_request(given));
  GenerateRequest r = given;
  DIFFUSIOND_RETURN_IF_ERROR(resolve_components(models_dir, r));
  Run run(engine, options);
  Clock* clock = options.clock != nullptr ? options.clock : real_clock();
  const bool guided = r.guidance_scale > 1.0;

  DIFFUSIOND_RETURN_IF_ERROR(run.check_cancelled("encoding"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string encoder, run.ready(r.text_encoder));
  absl::Time start = clock->now();
  DIFFUSIOND_ASSIGN_OR_RETURN(EncodedPrompt positive, engine.encode_prompt(encoder, r.prompt, options.cancel));
  std::optional<EncodedPrompt> negative;
  if (guided) {
    DIFFUSIOND_ASSIGN_OR_RETURN(negative, engine.encode_prompt(encoder, r.negative_prompt, options.cancel));
  }
  run.emit({GenerateEvent::Stage::kEncode, encoder, 0, 0, clock->now() - start,
            absl::StrCat(positive.tokens, " prompt tokens", guided ? absl::StrCat(", ", negative->tokens, " negative") : "")});

  DIFFUSIOND_RETURN_IF_ERROR(run.check_cancelled("denoising"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string transformer, run.ready(r.transformer));
  EngineDenoiseRequest denoise;
  denoise.model_id = transformer;
  denoise.loop.latent_shape = {kLatentChannels, r.height / kVaeScaleFactor, r.width / kVaeScaleFactor};
  denoise.loop.seed = r.seed;
  denoise.loop.guidance_scale = r.guidance_scale;
  denoise.loop.schedule.steps = r.steps;
  denoise.loop.schedule.shift = r.shift;
  denoise.positive = std::move(positive.conditioning);
  if (guided) denoise.negative = std::move(negative->conditioning);
  DenoiseOptions loop_options;
  loop_options.cancel = options.cancel;
  loop_options.clock = clock;
  const std::set<std::string> before_denoise = cached_keys(engine);
  loop_options.on_step = [&](const StepEvent& e) {
    if (e.step == 1) run.report_evictions(before_denoise, absl::StrCat("the activations of ", transformer));
    run.emit({GenerateEvent::Stage::kDenoise, transformer, e.step, e.steps, e.step_time, ""});
  };
  DIFFUSIOND_ASSIGN_OR_RETURN(torch::Tensor latents, engine.denoise(denoise, loop_options));

  DIFFUSIOND_RETURN_IF_ERROR(run.check_cancelled("decoding"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::string vae, run.ready(r.vae));
  start = clock->now();
  GeneratedImage image;
  const std::set<std::string> before_decode = cached_keys(engine);
  DIFFUSIOND_ASSIGN_OR_RETURN(image.pixels, engine.decode_image(vae, latents, options.cancel));
  run.report_evictions(before_decode, absl::StrCat("the decode of ", vae));
  run.emit({GenerateEvent::Stage::kDecode, vae, 0, 0, clock->now() - start,
            absl::StrCat(image.pixels.size(1), "x", image.pixels.size(0), " pixels")});
  image.seed = r.seed;
  image.parameters = {{"parameters", parameters_json(r)}};
  return image;
}

}  // namespace diffusiond
