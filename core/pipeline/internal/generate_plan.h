// What a Generate knows before anything loads: the request resolved
// against its family (every component's id or path and load options), each
// component described from its headers, and the stages it will run, sized
// so that one that could never fit the budget is refused first.
//
// Not here: running the stages (generate.cc), the request's own field
// checks (generate_request_checks.h).
#ifndef DIFFUSIOND_CORE_PIPELINE_INTERNAL_GENERATE_PLAN_H_
#define DIFFUSIOND_CORE_PIPELINE_INTERNAL_GENERATE_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/engine/engine_api.h"
#include "core/models/activation_estimate.h"
#include "core/pipeline/generate.h"
#include "core/pipeline/pipeline_family.h"
#include "core/pipeline/pipeline_index.h"

namespace diffusiond::generate_internal {

// How component `name`, at `id_or_path`, is described, sized and readied:
// with its `options`, if the request gave any.
ModelLoadRequest component_load(const std::string& name, const std::string& id_or_path,
                                const std::map<std::string, ComponentOptions>& options);

// A request resolved against its family: every component's id or path (an
// optional component the pipeline lacks has none), and the options each is
// loaded with.
struct Resolved {
  const PipelineFamily* family = nullptr;
  std::optional<PipelineIndex> folder;  // the pipeline folder's index, when one was given
  std::map<std::string, std::string> ids;
  std::map<std::string, ComponentOptions> options;

  const PipelineIndex* folder_index() const { return folder.has_value() ? &*folder : nullptr; }
  bool has(const std::string& name) const { return ids.count(name) != 0; }
  ModelLoadRequest load_of(const std::string& name) const { return component_load(name, ids.at(name), options); }
  // How text encoder `name` is asked for `prompt` in this pipeline, at
  // `max_sequence_length` when not 0 (refused by a family without one).
  absl::StatusOr<TextEncoding> encoding_of(const std::string& name, const std::string& prompt,
                                           int64_t max_sequence_length) const;
};

// Resolves `r`: its pipeline folder (or, without one, the family its
// transformer's architecture chooses) and every component. INVALID_ARGUMENT
// for a component or component option the family has no such name for, a
// required component missing, options for an optional one the pipeline
// lacks; the folder's and describe errors otherwise.
absl::StatusOr<Resolved> resolve(EngineApi& engine, const std::string& models_dir, const GenerateRequest& r);

// Every component of `resolved`, described without loading it (by name).
absl::StatusOr<std::map<std::string, ModelInfo>> describe_components(EngineApi& engine, const Resolved& resolved);

// OK when `denoiser` and `decoder` work in the same latent channels (0: not
// known yet); INVALID_ARGUMENT naming both otherwise.
absl::Status check_latent_channels(const Resolved& resolved, const std::string& denoiser_name,
                                   const std::string& decoder_name, const ModelInfo& denoiser,
                                   const ModelInfo& decoder);

// One stage of a Generate as it is known before anything loads: its
// component, and its call (activation_estimate.h, read by the role).
struct PlannedStage {
  std::string component;
  std::string call;  // "an encode of 12 tokens", for the refusal
  ActivationQuery query;
};

// The denoise a request asks for, as the stages are sized: each denoiser
// (the first, then the experts that take over) and whether it guides.
struct PlannedDenoiser {
  std::string component;
  bool guided = false;
};

// Every stage of `r` under `resolved`'s family, sized from what is known
// before any load: each text encoder's encodes (the tokens it will reserve
// for, as the pipeline folder asks them), one step of each denoiser and the
// decode, at the request's size and `frames` or the family's default (which
// depends only on the first denoiser's description, `denoiser`). The
// folder's malformed settings are refused here.
absl::StatusOr<std::vector<PlannedStage>> stages_of(const GenerateRequest& r, const Resolved& resolved, bool cfg,
                                                    const std::vector<PlannedDenoiser>& denoisers, int64_t frames,
                                                    const ModelInfo& denoiser, const ModelInfo& decoder,
                                                    const std::string& decoder_name);

// Refuses, before anything loads, a stage whose component's weights alone,
// or with the least working memory of its call, are more than the RAM
// budget: no eviction or wait could ever admit it, and the stages before it
// would run for nothing (RESOURCE_EXHAUSTED naming the component and the
// call). The engine sizes each call from its model's config
// (EngineApi::least_call_room), a lower bound of what it will reserve.
absl::Status check_stages_fit(EngineApi& engine, const Resolved& resolved,
                              const std::map<std::string, ModelInfo>& infos, const std::vector<PlannedStage>& stages);

}  // namespace diffusiond::generate_internal

#endif  // DIFFUSIOND_CORE_PIPELINE_INTERNAL_GENERATE_PLAN_H_
