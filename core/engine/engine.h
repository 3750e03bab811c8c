// Engine: what the daemon does, without the wire. It owns the model cache
// and answers the API's operations — load (confined to the models
// directory, single flight with progress shared by every waiter), unload,
// list, leases, one Step, a whole Denoise — and the lifecycle a graceful
// shutdown needs: stop accepting work, wait for it to drain, cancel what is
// left. server/ maps protos and gRPC calls onto it one to one.
#ifndef DIFFUSIOND_CORE_ENGINE_ENGINE_H_
#define DIFFUSIOND_CORE_ENGINE_ENGINE_H_

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cache/model_cache.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/random_access_file.h"
#include "core/denoise/denoise_loop.h"
#include "core/engine/device_placer.h"
#include "core/engine/engine_api.h"
#include "core/engine/load_resolver.h"
#include "core/engine/load_board.h"
#include "core/engine/loaded_model.h"
#include "core/engine/step_admission.h"
#include "core/loader/load_plan.h"
#include "core/models/diffusion_model.h"
#include "core/models/model_loader.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"
#include "core/util/mutex.h"
#include "core/vram/vram_device.h"

namespace diffusiond {

struct EngineOptions {
  std::string models_dir;         // every load is confined to it
  Budget* ram_budget = nullptr;   // required; not owned
  // With a device, denoiser forwards run there: each model is placed under
  // the VRAM budget (core/vram) before its step. Without one they run on
  // the CPU. Both or neither; not owned.
  VramDevice* device = nullptr;
  Budget* vram_budget = nullptr;
  CacheObserver* observer = nullptr;  // optional (logs, metrics); not owned
  // Events of the VRAM tier (placements evicted to RAM, refusals); not owned.
  CacheObserver* vram_observer = nullptr;
  // Each load's progress as its waiters get it (after each tensor), keyed by
  // model id, for watchers of every load (EngineEventFeed::on_load_progress).
  // Called on the loading thread; must not block. Optional.
  std::function<void(const std::string& model_id, const LoadProgress& progress)> on_load_progress;
  // Placements run FP8 linear layers as scaled FP8 matmuls where they can
  // (core/vram/device_placement.h PlacementOptions).
  bool fp8_matmul = true;
  // ... accumulating in cuBLAS's reduced precision (PlacementOptions).
  bool fp8_fast_accum = false;
  // One-line notes for the daemon's log (e.g. each layer's FP8 matmul
  // choice, once); may be empty.
  std::function<void(const std::string&)> note;
  Clock* clock = nullptr;             // default real_clock()
  // How checkpoint files (weights, shards) are opened; tests inject faults
  // here. Empty: open_random_access_file. config.json, the scheduler
  // config, shard indexes and tokenizer files are read whole
  // (core/util/file_text.h) and do not pass through it.
  FileOpener file_opener;
  // A load still running this long after its loader started is cancelled
  // for every caller with DEADLINE_EXCEEDED naming the model and the
  // timeout, and its reservation freed. Checked on the clock before and
  // after each tensor, so a read that never returns is not cut short (the
  // daemon's drain gives up on it instead). Default: none.
  absl::Duration load_timeout = absl::InfiniteDuration();
  // How long a load or a call waits in line for RAM that work in flight
  // holds (ModelCache::make_room, RoomWait) before RESOURCE_EXHAUSTED; the
  // caller's cancellation ends the wait sooner. A request that could never
  // fit is refused at once. Default 0: refuse at once.
  absl::Duration max_room_wait = absl::ZeroDuration();
  // Defaults for loads that do not say.
  ComputeDtype compute_dtype = ComputeDtype::kFloat32;
  Fp8Options fp8 = {Fp8Format::kE4M3Fn, Fp8Scaling::kNone};
  // Keep weights a checkpoint stores narrower than the compute dtype as
  // stored (PlanOptions::keep_narrow): same results, less RAM.
  bool keep_narrow_weights = false;
};

// Thread-safe. Once stop_accepting() was called, load, unload, leases,
// make_room, step and denoise refuse with UNAVAILABLE; stats, list and
// release_lease still answer.
class Engine final : public EngineApi {
 public:
  // INVALID_ARGUMENT for a missing budget; FAILED_PRECONDITION if models_dir
  // does not exist.
  static absl::StatusOr<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();

  // Loads (or finds) a model. A model already cached under the id answers at
  // once; if it was loaded from another path or with other options the
  // answer is FAILED_PRECONDITION saying what differs. PERMISSION_DENIED for
  // paths outside models_dir, NOT_FOUND for missing ones, RESOURCE_EXHAUSTED
  // when the budget cannot admit it (nothing evicted), CANCELLED when every
  // waiter gave up, DEADLINE_EXCEEDED past options.load_timeout, the
  // checkpoint's own errors otherwise.
  absl::StatusOr<ModelInfo> load(const ModelLoadRequest& request, const LoadWatcher& watcher = {}) override;

  // The model `request` names if it is cached, answered as load() would
  // answer it (FAILED_PRECONDITION if it was loaded otherwise); NOT_FOUND
  // if it is not cached. Never loads, so a server answers hits on its own
  // thread and queues only real loads.
  absl::StatusOr<ModelInfo> find(const ModelLoadRequest& request) override;
  absl::StatusOr<ModelInfo> inspect(const ModelLoadRequest& request) override;
  absl::StatusOr<CallFloor> least_call_room(const std::string& id_or_path, const ActivationQuery& query) override;

  // Returns after the model's memory is released. See UnloadOptions; a
  // waiting unload wakes and stops at once when options.cancel fires
  // (its reason, e.g. CANCELLED) or cancel_all() runs (UNAVAILABLE); the
  // model then stays loaded.
  absl::StatusOr<UnloadResult> unload(const std::string& model_id, const UnloadOptions& options) override;

  // Ready models, most recently used first.
  std::vector<ModelInfo> list() const override;
  CacheStats stats() const override { return cache_->stats(); }
  // The VRAM tier's budget and placements; empty without a device.
  std::optional<CacheStats> vram_stats() const override;

  absl::StatusOr<LeaseId> acquire_lease(const std::string& model_id, absl::Duration ttl) override;
  absl::Status renew_lease(LeaseId lease, absl::Duration ttl) override;
  absl::Status release_lease(LeaseId lease) override;
  absl::StatusOr<Reservation> make_room(int64_t bytes, Device device,
                                        std::vector<std::string>* evicted = nullptr) override;

  // One forward of `model_id`. NOT_FOUND if it is not loaded. A denoiser's
  // activation estimate is reserved on the CPU for the call first
  // (step_admission.h), evicting unpinned models if needed;
  // RESOURCE_EXHAUSTED naming the estimate when it cannot fit. The forward
  // stops between its blocks once `cancel` fires (its reason) or
  // cancel_all() runs (UNAVAILABLE).
  absl::StatusOr<NamedTensors> step(const std::string& model_id, const NamedTensors& inputs,
                                    const CancellationToken& cancel = {}) override;

  // The whole loop. The activations of one step (guided: both passes) are
  // reserved on the CPU for each segment, as step() reserves them. With
  // later segments (Wan 2.2's second expert) each model is pinned only for
  // its steps: at a boundary it is let go, then the next is loaded if it
  // is not (which may evict the one before) and pinned with its own
  // activations; one solver state runs across them. A later segment of
  // another architecture, or boundaries out of order, are refused before
  // any step.
  // `options.cancel` and cancel_all() stop it between steps and inside a
  // step between the forward's blocks, with the token's reason (CANCELLED)
  // or UNAVAILABLE for cancel_all(). Returns the final latents [C, H, W]
  // float32.
  absl::StatusOr<torch::Tensor> denoise(const EngineDenoiseRequest& request,
                                        const DenoiseOptions& options) override;

  // Encodes `request` with text encoder `model_id`, after admitting its
  // activations (encode_activation_bytes of the most tokens it can give)
  // by a reservation, evicting unpinned models if needed. With a device the
  // encoder runs there: placed, and its activations reserved, under the
  // VRAM budget (device_placer.h); the outputs come back to RAM.
  // FAILED_PRECONDITION if the model is not a text encoder (or has no
  // tokenizer), NOT_FOUND if it is not loaded, RESOURCE_EXHAUSTED if the
  // activations cannot be admitted. `cancel` stops it between layers.
  absl::StatusOr<EncodedText> encode_text(const std::string& model_id, const TextEncoding& request,
                                          const CancellationToken& cancel = {},
                                          std::vector<std::string>* evicted = nullptr,
                                          CallDevice* where = nullptr) override;

  // Decodes pipeline-space `latents` [C, h, w] (or [1, C, h, w]) with VAE
  // `model_id` into uint8 pixels [8h, 8w, 3]. The decode's activations are
  // admitted by a reservation first (evicting unpinned models if needed):
  // untiled when that fits, else tiled as diffusers' enable_tiling();
  // RESOURCE_EXHAUSTED when neither fits. With a device the VAE runs there
  // and the same choice is made against the VRAM budget (device_placer.h).
  // FAILED_PRECONDITION if the model is not a VAE, INVALID_ARGUMENT for misshapen latents. `cancel` stops
  // encode and decode as it stops step().
  absl::StatusOr<torch::Tensor> decode_image(const std::string& model_id, const torch::Tensor& latents,
                                             const CancellationToken& cancel = {},
                                             std::vector<std::string>* evicted = nullptr,
                                             CallDevice* where = nullptr) override;

  // Lifecycle. After stop_accepting() new work fails with UNAVAILABLE;
  // wait_idle() returns true once no work runs (false at the deadline, on
  // the engine's clock); cancel_all() stops loads before their next tensor,
  // waiting unloads at once, and forwards before their next block.
  void stop_accepting();
  // True once stop_accepting() was called: UNAVAILABLE then means the drain.
  bool draining() const override;
  bool wait_idle(absl::Time deadline);
  // Calls admitted and not yet returned, for a drain that gives up on them.
  int running_jobs() const;
  void cancel_all();
  // Unloads every model (waiting up to `timeout` for pins); returns the
  // bytes freed on the CPU.
  int64_t unload_all(absl::Duration timeout);
  // Ends expired leases now (the daemon calls it from a timer); returns how
  // many.
  int expire_leases() { return cache_->expire_leases(); }

 private:
  class Job;
  explicit Engine(const EngineOptions& options);
  absl::Status admit(Job& job);
  absl::StatusOr<Pin> pin(const std::string& model_id);
  // One call on one cached model, admitted, and what it reserves
  // (internal/call_scope.h).
  class CallScope;
  struct CallNeeds;
  // Pins `model_id` with the room `needs` says reserved beside it (in RAM,
  // or on the device beside its placement). NOT_FOUND when it is not
  // loaded; RESOURCE_EXHAUSTED when the room cannot be had; the needs'
  // own errors before any wait. `evicted` and `where` (optional) get what
  // was evicted and placed.
  absl::StatusOr<CallScope> admit_call(const std::string& model_id, const CallNeeds& needs, const Job& job,
                                       std::vector<std::string>* evicted, CallDevice* where);
  // One segment of a Denoise (engine_denoise.cc): `model_id` admitted with
  // one step's activations at `guidance_scale`, and its predictor; what
  // readying it did goes to `start`.
  struct SegmentModel;
  absl::StatusOr<SegmentModel> ready_segment(const std::string& model_id, const EngineDenoiseRequest& request,
                                             double guidance_scale, const Job& job, SegmentStart& start);
  // OK when every later segment names a model of `first`'s architecture
  // (described, not loaded) with boundaries decreasing in (0, 1].
  absl::Status check_later_segments(const EngineDenoiseRequest& request, const DiffusionModel& first);
  // step_admission.h's pin_with_room on the RAM cache, waiting (if `wait`)
  // until `job` is cancelled; NOT_FOUND as pin() says it.
  absl::StatusOr<PinnedRoom> pin_with_room(const std::string& model_id,
                                           const std::function<absl::StatusOr<CallRoom>(const Model&)>& room_of,
                                           const Job& job, std::vector<std::string>* evicted, bool wait = true);
  // Claims the model's key: a hit answers, else this caller runs the load
  // and finishes the slot (Engine -> cache -> loader -> model, one way).
  absl::StatusOr<Pin> load_once(const ResolvedLoad& load, LoadBoard::Load& shared);
  absl::StatusOr<LoadedValue> run_load(const ResolvedLoad& load, LoadBoard::Load& shared);
  // The answer to a load of `load` that found or made `pinned`.
  absl::StatusOr<ModelInfo> answer(const ResolvedLoad& load, Pin pinned) const;

  const EngineOptions options_;
  Clock* const clock_;
  const LoadResolver loads_;
  // Teardown order: the cache (which reports to the dropper) before the
  // dropper, the dropper before the placer it drops from.
  std::unique_ptr<DevicePlacer> device_;  // with a device only (device_placer.h)
  std::unique_ptr<CacheObserver> dropper_;
  std::unique_ptr<ModelCache> cache_;
  LoadBoard load_board_;
  // Fired by cancel_all(); every Job's token is linked to it.
  CancellationSource drain_;

  mutable Mutex mu_;
  CondVar idle_;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  std::set<Job*> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_H_
