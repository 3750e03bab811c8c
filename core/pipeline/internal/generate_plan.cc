#include "core/pipeline/internal/generate_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/engine/describe_model.h"
#include "core/models/text_encoder.h"
#include "core/pipeline/pipeline_folder.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"

namespace diffusiond::generate_internal {
namespace {

// The component diffusers' pipelines keep their denoiser under: how a
// request without a pipeline folder names the model that chooses the family.
constexpr char kDenoiserComponent[] = "transformer";

}  // namespace

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

absl::StatusOr<TextEncoding> Resolved::encoding_of(const std::string& name, const std::string& prompt,
                                                  int64_t max_sequence_length) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(TextEncoding encoding, family->folder_text_encoding(name, prompt, folder_index()));
  if (max_sequence_length == 0) return encoding;
  return family->with_max_sequence_length(name, std::move(encoding), max_sequence_length);
}

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
    } else if (out.family->component(name)->optional) {
      continue;  // upstream's None
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(r.pipeline.empty() ? std::string("the request") : absl::StrCat("pipeline \"", bounded(r.pipeline), "\""),
                       " has no ", name, " component for the ", out.family->name(), " pipeline"));
    }
  }
  for (const auto& [name, o] : r.component_options) {
    if (!out.has(name)) {
      return absl::InvalidArgumentError(absl::StrCat("component_options: this ", out.family->name(),
                                                     " pipeline has no ", name, " (an optional component)"));
    }
  }
  return out;
}

absl::StatusOr<std::map<std::string, ModelInfo>> describe_components(EngineApi& engine, const Resolved& resolved) {
  std::map<std::string, ModelInfo> infos;
  for (const auto& [name, id] : resolved.ids) {
    DIFFUSIOND_ASSIGN_OR_RETURN(infos[name], describe_model(engine, resolved.load_of(name)));
  }
  return infos;
}

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

absl::StatusOr<std::vector<PlannedStage>> stages_of(const GenerateRequest& r, const Resolved& resolved, bool cfg,
                                                    const std::vector<PlannedDenoiser>& denoisers, int64_t frames,
                                                    const ModelInfo& denoiser, const ModelInfo& decoder,
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
  for (const PipelineComponent& c : family.components()) {
    if (c.role != ModelRole::kTextConditioner) continue;
    for (bool negative : {false, true}) {
      if (negative && !cfg) break;
      PlannedStage s{c.name, "a text conditioning", {}};
      s.query.text_tokens = 1;  // the encoders' output is not known yet: a lower bound
      stages.push_back(std::move(s));
    }
  }
  if (denoiser.geometry.channels == 0) return stages;  // latents not known before the load
  const PipelineDefaults defaults = r.image.defined() ? family.image_defaults(denoiser) : family.defaults(denoiser);
  const int64_t width = r.width != 0 ? r.width : defaults.width;
  const int64_t height = r.height != 0 ? r.height : defaults.height;
  const std::vector<int64_t> latents = family.latent_shape(denoiser, decoder, width, height, frames);
  const std::string size = absl::StrCat(width, "x", height, frames > 1 ? absl::StrCat("x", frames, " frames") : "",
                                        " pixels (latents [", absl::StrJoin(latents, ", "), "])");
  for (const PlannedDenoiser& d : denoisers) {
    PlannedStage step{d.component, absl::StrCat(d.guided ? "a guided" : "a", " denoise step at ", size), {}};
    step.query.latent_shape = latents;
    step.query.batch = d.guided ? 2 : 1;
    step.query.text_tokens = 1;  // the encoders' output is not known yet: a lower bound
    step.query.denoise_loop = true;
    stages.push_back(std::move(step));
  }
  PlannedStage decode{decoder_name, absl::StrCat("a decode at ", size), {}};
  decode.query.latent_shape = latents;
  stages.push_back(std::move(decode));
  return stages;
}

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

}  // namespace diffusiond::generate_internal
