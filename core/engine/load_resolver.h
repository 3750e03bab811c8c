// LoadResolver: a load request as the engine acts on it — its path
// confined to the models directory, its id and options defaulted, its
// checkpoint opened and planned from headers alone, and a cached model
// compared with what the request asks for. Reads files; holds no state
// beyond its options, so it is thread-safe.
//
// Not here: admission and streaming (model_admission.h), the cache.
#ifndef DIFFUSIOND_CORE_ENGINE_LOAD_RESOLVER_H_
#define DIFFUSIOND_CORE_ENGINE_LOAD_RESOLVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/random_access_file.h"
#include "core/engine/engine_api.h"
#include "core/engine/loaded_model.h"
#include "core/models/model_loader.h"

namespace diffusiond {

// A load request with its path resolved and its defaults applied.
struct ResolvedLoad {
  std::string path;
  std::string model_id;
  std::string config_path;  // canonical; empty: none named
  Fp8Options fp8;
  ComputeDtype compute_dtype;
};

// The checkpoint of a load opened (headers and config only) and planned.
struct OpenedLoad {
  std::unique_ptr<Checkpoint> checkpoint;
  ModelPlan plan;
};

struct LoadResolverOptions {
  std::string models_dir;  // every path is confined to it
  // Defaults for requests that do not say.
  Fp8Options fp8;
  ComputeDtype compute_dtype = ComputeDtype::kFloat32;
  bool keep_narrow_weights = false;  // PlanOptions::keep_narrow
  FileOpener file_opener;            // empty: open_random_access_file
};

// The least working memory in RAM of one call of `query` on a model of
// `recipe` computing in `dtype`, from the config alone
// (LoadRecipe::least_call_bytes); 0 without a recipe, or `on_device`, where
// every role's activations are VRAM's (device_placer.h).
int64_t least_call_bytes(const LoadRecipe* recipe, ComputeDtype dtype, ActivationQuery query, bool on_device);

// OK unless `asked` sets an FP8 format or a compute dtype (unset: any) that
// the cached model `loaded` was not loaded with; then FAILED_PRECONDITION
// naming each difference, as a load of a cached model loaded otherwise is
// refused (LoadResolver::check_matches).
absl::Status check_load_options(const ModelInfo& loaded, const ModelLoadRequest& asked);

class LoadResolver {
 public:
  explicit LoadResolver(LoadResolverOptions options) : options_(std::move(options)) {}

  // INVALID_ARGUMENT without a path; PERMISSION_DENIED for a path (or
  // config_path) outside the models directory, NOT_FOUND for a missing one.
  // Without an id the model is known by its canonical path inside the
  // models directory.
  absl::StatusOr<ResolvedLoad> resolve(const ModelLoadRequest& request) const;
  // The checkpoint's own errors, or the planner's.
  absl::StatusOr<OpenedLoad> open_and_plan(const ResolvedLoad& load) const;
  // OK when `loaded` (a cached model under load.model_id) is what `load`
  // asks for: its path, FP8 format, compute dtype and config content; else
  // FAILED_PRECONDITION naming what differs. A named config that cannot be
  // read or parsed is refused as at load.
  absl::Status check_matches(const ResolvedLoad& load, const ModelDescription& loaded) const;
  // The model `load` names described from its headers and config alone, as
  // EngineApi::inspect describes a model not cached: its architecture,
  // latent geometry and the RAM its load would reserve.
  absl::StatusOr<ModelInfo> describe(const ResolvedLoad& load) const;
  // The request that loads the model `info` describes again as it was
  // loaded: its id, path, config and precision (ModelHandle::reload).
  ModelLoadRequest reload_of(const ModelInfo& info) const;
  // The least RAM one call of `query` needs on the model `load` names, not
  // loaded (EngineApi::least_call_room): its weights as planned, and the
  // call's least_call_bytes below.
  absl::StatusOr<CallFloor> least_call_room(const ResolvedLoad& load, const ActivationQuery& query,
                                            bool on_device) const;

 private:
  std::string relative_to_models_dir(const std::string& path) const;

  const LoadResolverOptions options_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_LOAD_RESOLVER_H_
