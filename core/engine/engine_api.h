// EngineApi: the API's operations as the gRPC services call them, as a pure
// interface, so the services are unit-tested against a fake engine (as
// Envoy tests its servers against mocks of pure interfaces). Engine
// (engine.h) is the implementation; its header documents each operation.
#ifndef DIFFUSIOND_CORE_ENGINE_ENGINE_API_H_
#define DIFFUSIOND_CORE_ENGINE_ENGINE_API_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cache/cache_stats.h"
#include "core/cache/model_cache.h"
#include "core/denoise/denoise_loop.h"
#include "core/engine/call_device.h"
#include "core/engine/load_board.h"
#include "core/engine/loaded_model.h"
#include "core/memory/device.h"
#include "core/models/diffusion_model.h"
#include "core/models/text_encoder.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"
#include "core/util/cancellation.h"

namespace diffusiond {

struct ModelLoadRequest {
  std::string path;      // relative to models_dir, or absolute inside it
  std::string model_id;  // empty: the canonical path relative to models_dir
  std::string config_path;  // a config.json, confined like path; empty: none
  std::optional<Fp8Options> fp8;              // empty: the engine's default
  std::optional<ComputeDtype> compute_dtype;  // empty: the engine's default
};

// A loaded model as the API describes it: how it was loaded, and its use now.
struct ModelInfo : ModelDescription {
  std::string model_id;
  // RAM held by the model; VRAM held by its placement (resident weights
  // and streaming slots), 0 when it has none.
  std::array<int64_t, kNumDevices> bytes{};
  // Its residency plan on the device ("all 12 blocks resident", or what
  // streams), empty when it is not placed.
  std::string vram_plan;
  int64_t vram_streamed_bytes_per_step = 0;
  int pins = 0;
  int leases = 0;
  absl::Duration idle;
};

// Someone waiting for a load. Each waiter gets every progress event; the
// shared load is cancelled once every waiter has given up.
using LoadWatcher = LoadBoard::Watcher;

struct EngineDenoiseRequest {
  std::string model_id;
  // loop.schedule: steps and sigmas as given; shift 0 means the model's
  // default schedule (static or resolution-dependent), another value a
  // static shift.
  DenoiseRequest loop;
  Conditioning positive;                // the model's conditioning_inputs()
  std::optional<Conditioning> negative;  // for classifier-free guidance
  // Optional: gets the keys of the models evicted to admit the activations,
  // before the first step runs.
  std::vector<std::string>* evicted = nullptr;
  // Optional: gets where the first expert runs and what its placement did,
  // before the first step runs.
  CallDevice* where = nullptr;
  // Wan 2.2's low-noise expert: a loaded model's id or a path to load, of
  // the same architecture as `model_id`. The steps whose scheduler
  // timestep is below boundary_ratio × 1000 run it, guided by
  // loop.guidance_scale_2. Empty: `model_id` runs every step.
  std::string expert_2;
  double boundary_ratio = 0;  // in (0, 1] with expert_2
};

// The least RAM one call needs, known without loading its model.
struct CallFloor {
  // What the loaded model holds (a load's staging is given back after it).
  int64_t weights = 0;
  // The call's working memory beside it, from the config alone
  // (LoadRecipe::least_call_bytes): a lower bound. 0 for a Denoise step
  // where denoisers run on the device (their activations are VRAM's).
  int64_t call = 0;
};

class EngineApi {
 public:
  virtual ~EngineApi() = default;

  virtual absl::StatusOr<ModelInfo> load(const ModelLoadRequest& request, const LoadWatcher& watcher = {}) = 0;
  virtual absl::StatusOr<ModelInfo> find(const ModelLoadRequest& request) = 0;
  // Describes the model `request` names without loading it: a cached
  // model's info, else its architecture, latent geometry and the RAM its
  // load would reserve, read from headers and config alone. Errors as a
  // load's before admission.
  virtual absl::StatusOr<ModelInfo> inspect(const ModelLoadRequest& request) = 0;
  // The least RAM one call of `query` (activation_estimate.h, read by the
  // model's role) needs on the model `id_or_path` names (a loaded model's
  // id, else a path as load() takes it), loaded or not: what lets a
  // pipeline refuse before any load a stage that could never fit. Errors as
  // inspect()'s.
  virtual absl::StatusOr<CallFloor> least_call_room(const std::string& id_or_path, const ActivationQuery& query) = 0;
  virtual absl::StatusOr<UnloadResult> unload(const std::string& model_id, const UnloadOptions& options) = 0;
  virtual std::vector<ModelInfo> list() const = 0;
  virtual CacheStats stats() const = 0;
  virtual std::optional<CacheStats> vram_stats() const = 0;
  virtual absl::StatusOr<LeaseId> acquire_lease(const std::string& model_id, absl::Duration ttl) = 0;
  virtual absl::Status renew_lease(LeaseId lease, absl::Duration ttl) = 0;
  virtual absl::Status release_lease(LeaseId lease) = 0;
  // `evicted` (optional) gets the keys this call evicted.
  virtual absl::StatusOr<Reservation> make_room(int64_t bytes, Device device,
                                                std::vector<std::string>* evicted = nullptr) = 0;
  virtual absl::StatusOr<NamedTensors> step(const std::string& model_id, const NamedTensors& inputs,
                                            const CancellationToken& cancel = {}) = 0;
  virtual absl::StatusOr<torch::Tensor> denoise(const EngineDenoiseRequest& request,
                                                const DenoiseOptions& options) = 0;
  // `evicted` (optional) gets the keys of the models this call evicted from
  // RAM to admit its activations, as ModelCache::make_room reports them;
  // `where` (optional) where it ran and what its placement did.
  virtual absl::StatusOr<EncodedText> encode_text(const std::string& model_id, const TextEncoding& request,
                                                  const CancellationToken& cancel = {},
                                                  std::vector<std::string>* evicted = nullptr,
                                                  CallDevice* where = nullptr) = 0;
  virtual absl::StatusOr<torch::Tensor> decode_image(const std::string& model_id, const torch::Tensor& latents,
                                                     const CancellationToken& cancel = {},
                                                     std::vector<std::string>* evicted = nullptr,
                                                     CallDevice* where = nullptr) = 0;
  virtual bool draining() const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_API_H_
