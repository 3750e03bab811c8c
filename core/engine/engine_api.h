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

// A stretch of a Denoise run by another model than the one before it:
// Wan 2.2's low-noise expert takes over from the high-noise one at its
// boundary, as upstream's pipeline switches from transformer to
// transformer_2; a refiner would be another. One solver state runs across
// every segment (denoise_loop.h DenoiseRun).
struct DenoiseSegment {
  // A loaded model's id or a path to load (relative to the models
  // directory), of the same architecture as the first model. Readied when
  // its turn comes, after the model before it is let go.
  std::string model;
  // Where it takes over: at the first step whose scheduler timestep is
  // below boundary_ratio × 1000 (upstream's `t < boundary_ratio *
  // num_train_timesteps`). In (0, 1], below the segment before it.
  double boundary_ratio = 0;
  double guidance_scale = 0;  // its classifier-free guidance; 0: the request's
};

// What readying one segment's model did, told before its first step.
struct SegmentStart {
  int segment = 0;     // 0: the request's model_id, k: later_segments[k - 1]
  int first_step = 0;  // 0-based
  std::string model_id;
  bool loaded = false;  // loaded for this call (a later segment not cached)
  // The models evicted from RAM to make room for its load and activations.
  std::vector<std::string> evicted;
  CallDevice where;  // where it runs, and what its placement did

  // True for the event of this segment's first step, the one that reports
  // what readying it did.
  bool began_with(const StepEvent& e) const { return e.step == first_step + 1; }
};

struct EngineDenoiseRequest {
  // The model that runs from the first step; a loaded model's id.
  std::string model_id;
  // Initial latents (the model's layout: [C, H, W], video [C, F, H, W]);
  // when undefined, noise of `latent_shape` is drawn from `seed`.
  torch::Tensor initial_latents;
  std::vector<int64_t> latent_shape;
  uint64_t seed = 0;
  // The schedule: the model's own (static or resolution-dependent shift,
  // from its scheduler config) for `steps`, unless `shift` (> 0) sets a
  // static shift or `sigmas` are given.
  int steps = 8;
  double shift = 0;
  std::vector<float> sigmas;
  double guidance_scale = 1.0;  // denoise_loop.h's s; <= 1: unguided
  Conditioning positive;                // the model's conditioning_inputs()
  std::optional<Conditioning> negative;  // for classifier-free guidance
  // The models that take over after model_id's steps, in order. Empty:
  // model_id runs every step.
  std::vector<DenoiseSegment> later_segments;
  // Optional: told as each segment's model is readied, before its first
  // step (a segment with no steps in the schedule is never readied).
  std::function<void(const SegmentStart&)> on_segment;
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
