// Engine: what the daemon does, without the wire. It owns the model cache
// and answers the API's operations — load (confined to the models
// directory, single flight with progress shared by every waiter), unload,
// list, leases, a model readied for calls, one Step, a whole Denoise, text
// encodes and image decodes — and the lifecycle a graceful shutdown needs: stop accepting work, wait for it to drain, cancel what is
// left. server/ maps protos and gRPC calls onto it one to one.
#ifndef DIFFUSIOND_CORE_ENGINE_ENGINE_H_
#define DIFFUSIOND_CORE_ENGINE_ENGINE_H_

#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/cache/model_cache.h"
#include "core/denoise/denoise_loop.h"
#include "core/engine/adapter_admission.h"
#include "core/engine/device_placer.h"
#include "core/engine/engine_api.h"
#include "core/engine/engine_options.h"
#include "core/engine/load_resolver.h"
#include "core/engine/load_board.h"
#include "core/engine/loaded_model.h"
#include "core/engine/step_admission.h"
#include "core/engine/work_gate.h"
#include "core/models/diffusion_model.h"
#include "core/models/image_decoder.h"
#include "core/util/cancellation.h"
#include "core/util/clock.h"

namespace diffusiond {

// Thread-safe. Once stop_accepting() was called, load, unload, leases,
// make_room, step and denoise refuse with UNAVAILABLE; stats, list and
// release_lease still answer.
class Engine final : public EngineApi {
 public:
  // INVALID_ARGUMENT for a missing budget; FAILED_PRECONDITION if models_dir
  // does not exist.
  static absl::StatusOr<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();

  // EngineApi (engine_api.h says what each answers).
  absl::StatusOr<ModelInfo> load(const ModelLoadRequest& request, const LoadWatcher& watcher = {}) override;
  absl::StatusOr<ModelInfo> find(const ModelLoadRequest& request) override;
  absl::StatusOr<ModelInfo> inspect(const ModelLoadRequest& request) override;
  absl::StatusOr<CallFloor> least_call_room(const ModelLoadRequest& model, const ActivationQuery& query) override;
  absl::StatusOr<UnloadResult> unload(const std::string& model_id, const UnloadOptions& options) override;
  std::vector<ModelInfo> list() const override;
  CacheStats stats() const override { return cache_->stats(); }
  std::optional<CacheStats> vram_stats() const override;
  absl::StatusOr<LeaseId> acquire_lease(const std::string& model_id, absl::Duration ttl) override;
  absl::Status renew_lease(LeaseId lease, absl::Duration ttl) override;
  absl::Status release_lease(LeaseId lease) override;
  absl::StatusOr<Reservation> make_room(int64_t bytes, Device device,
                                        std::vector<std::string>* evicted = nullptr) override;
  absl::StatusOr<NamedTensors> step(const std::string& model_id, const NamedTensors& inputs,
                                    const CancellationToken& cancel = {},
                                    const std::vector<AdapterRequest>& adapters = {}) override;
  absl::StatusOr<torch::Tensor> denoise(const EngineDenoiseRequest& request,
                                        const DenoiseOptions& options) override;
  absl::StatusOr<ModelHandle> ready(const ModelLoadRequest& model, std::optional<ModelRole> role = {},
                                    const LoadWatcher& watcher = {}) override;
  absl::StatusOr<CallResult<EncodedText>> encode_text(const ModelHandle& encoder, const TextEncoding& request,
                                                      const CancellationToken& cancel = {},
                                                      const TextEncoderAdapters& adapters = {}) override;
  absl::StatusOr<CallResult<ConditionedText>> condition_text(const ModelHandle& conditioner,
                                                             const ConditionerRequest& request,
                                                             const CancellationToken& cancel = {}) override;
  absl::StatusOr<CallResult<torch::Tensor>> decode_image(const ModelHandle& vae, const torch::Tensor& latents,
                                                         const CancellationToken& cancel = {}) override;
  absl::StatusOr<CallResult<int64_t>> decode_video(const ModelHandle& vae, const torch::Tensor& latents,
                                                   const VideoFrameSink& on_frame,
                                                   const CancellationToken& cancel = {}) override;
  absl::StatusOr<CallResult<torch::Tensor>> encode_image(const ModelHandle& vae, const torch::Tensor& image,
                                                         const torch::Tensor& eps,
                                                         const CancellationToken& cancel = {}) override;

  // Lifecycle. After stop_accepting() new work fails with UNAVAILABLE;
  // wait_idle() returns true once no work runs (false at the deadline, on
  // the engine's clock); cancel_all() stops loads before their next tensor,
  // waiting unloads at once, and forwards before their next block.
  void stop_accepting() { gate_.stop_accepting(); }
  // True once stop_accepting() was called: UNAVAILABLE then means the drain.
  bool draining() const override { return gate_.draining(); }
  bool wait_idle(absl::Time deadline) { return gate_.wait_idle(deadline); }
  // Calls admitted and not yet returned, for a drain that gives up on them.
  int running_jobs() const { return gate_.running(); }
  void cancel_all();
  // Unloads every model (waiting up to `timeout` for pins); returns the
  // bytes freed on the CPU.
  int64_t unload_all(absl::Duration timeout);
  // Ends expired leases now (the daemon calls it from a timer); returns how
  // many.
  int expire_leases() { return cache_->expire_leases(); }

 private:
  using Job = WorkGate::Job;
  explicit Engine(const EngineOptions& options);
  absl::StatusOr<Pin> pin(const std::string& model_id);
  // One call on one cached model, admitted, and what it reserves
  // (internal/call_scope.h).
  class CallScope;
  struct CallNeeds;
  // Pins the handle's model with the room `needs` says reserved beside it
  // (in RAM, or on the device beside its placement), loading a readied
  // model again if it was evicted since. NOT_FOUND when it is not loaded;
  // RESOURCE_EXHAUSTED when the room cannot be had; the needs' own errors
  // before any wait. `report` (optional) gets what was evicted, loaded
  // and placed.
  absl::StatusOr<CallScope> admit_call(const ModelHandle& model, const CallNeeds& needs, const Job& job,
                                       CallReport* report);
  absl::StatusOr<CallScope> admit_cached(const std::string& model_id, const CallNeeds& needs, const Job& job,
                                         CallReport* report);
  // A decode or an encode on VAE `vae` (engine_components.cc): the
  // activations of a decode of `latents` (`streamed`: frame by frame)
  // admitted, whole or tiled, then `work` with the decoder and whether it
  // must tile.
  absl::StatusOr<CallResult<torch::Tensor>> vae_call(
      const ModelHandle& vae, const torch::Tensor& latents, const CancellationToken& cancel, absl::string_view what,
      bool streamed, const std::function<absl::StatusOr<torch::Tensor>(const ImageDecoder&, bool tiled)>& work);
  // The adapters of a call on `model` admitted under the RAM budget
  // (adapter_admission.h), waiting in line for room as calls do: planned
  // for the model's architecture and compute dtype, read from the cache
  // (else from a readied handle). NOT_FOUND when neither knows the model.
  // Empty `adapters`: nothing, at no cost (engine_adapters.cc).
  // `encoders_applied`: AdapterAdmissionOptions' (the notes' filter).
  absl::StatusOr<AdmittedAdapters> admit_adapters_for(const ModelHandle& model,
                                                      const std::vector<AdapterRequest>& adapters, const Job& job,
                                                      AdapterReport* report,
                                                      const std::vector<std::string>& encoders_applied = {});
  // The same for adapters made for the model `described` (a text encoder's
  // call admits them for the pipeline's denoiser), beside `model_bytes` of
  // the model the call pins.
  absl::StatusOr<AdmittedAdapters> admit_adapters_described(const ModelDescription& described, int64_t model_bytes,
                                                            const std::vector<AdapterRequest>& adapters,
                                                            const Job& job, AdapterReport* report,
                                                            const std::vector<std::string>& encoders_applied = {});
  // One segment of a Denoise (engine_denoise.cc): `model` admitted with
  // one step's activations at `guidance_scale`, and its predictor; what
  // readying it did goes to `start`.
  struct SegmentModel;
  absl::StatusOr<SegmentModel> ready_segment(const ModelHandle& model, const EngineDenoiseRequest& request,
                                             double guidance_scale, const Job& job, SegmentStart& start);
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
  // Every operation is a Job of this gate (work_gate.h).
  WorkGate gate_;
  const LoadResolver loads_;
  // Teardown order: the cache (which reports to the dropper) before the
  // dropper, the dropper before the placer it drops from.
  std::unique_ptr<DevicePlacer> device_;  // with a device only (device_placer.h)
  std::unique_ptr<CacheObserver> dropper_;
  std::unique_ptr<ModelCache> cache_;
  LoadBoard load_board_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_H_
