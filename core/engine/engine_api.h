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
#include "core/engine/adapter_request.h"
#include "core/engine/call_device.h"
#include "core/engine/load_board.h"
#include "core/engine/loaded_model.h"
#include "core/engine/model_handle.h"
#include "core/engine/model_info.h"
#include "core/memory/device.h"
#include "core/models/diffusion_model.h"
#include "core/models/text_conditioner.h"
#include "core/models/text_encoder.h"
#include "core/precision/compute_dtype.h"
#include "core/precision/precision_policy.h"
#include "core/util/cancellation.h"

namespace diffusiond {

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
  // How `model` is loaded when it is not cached; empty: the engine's
  // defaults (as ModelLoadRequest's).
  std::optional<Fp8Options> fp8;
  std::optional<ComputeDtype> compute_dtype;
};

// Takes frame `index` (0-based) of a decoded video as uint8 pixels [H, W, 3].
using VideoFrameSink = std::function<absl::Status(const torch::Tensor& rgb, int64_t index)>;

// What readying one segment's model did, told before its first step.
struct SegmentStart {
  int segment = 0;     // 0: the request's model_id, k: later_segments[k - 1]
  int first_step = 0;  // 0-based, of the steps the run makes (StepEvent's count)
  std::string model_id;
  bool loaded = false;  // loaded for this call (a later segment not cached)
  // When loaded: how long readying it took (the load, and any wait for
  // room), the model switch's cost.
  absl::Duration load_time;
  // The models (and adapters) evicted from RAM to make room for its load,
  // its adapters and its activations.
  std::vector<std::string> evicted;
  // The cache keys of the adapters loaded for it (cached ones are not).
  std::vector<std::string> adapters_loaded;
  // What its adapters hold that is not applied, one line each: text-encoder
  // modules for no encoder the caller ran (adapters_applied_to_encoders).
  std::vector<std::string> adapter_notes;
  CallDevice where;  // where it runs, and what its placement did

  // True for the event of this segment's first step, the one that reports
  // what readying it did.
  bool began_with(const StepEvent& e) const { return e.step == first_step + 1; }
};

// A request's LoRA adapters on one of its text encoders' calls: the
// files (the same cached values the denoise uses, planned for the
// denoiser's architecture and compute dtype) and the encoder's name in the
// pipeline, whose modules apply (AdapterSet::for_text_encoder).
struct TextEncoderAdapters {
  std::vector<AdapterRequest> adapters;
  ModelDescription denoiser;
  std::string component;
};

struct EngineDenoiseRequest {
  // The model that runs from the first step: readied (EngineApi::ready),
  // or a loaded model by id (ModelHandle::by_id).
  ModelHandle model;
  // Initial latents (the model's layout: [C, H, W], video [C, F, H, W]);
  // when undefined, noise of `latent_shape` is drawn from `seed`.
  torch::Tensor initial_latents;
  std::vector<int64_t> latent_shape;
  uint64_t seed = 0;
  // img2img and inpainting (denoise_loop.h): the run starts from the
  // image's latents noised to the schedule's step first_step, and an
  // inpainting mask keeps the unmasked part after every step. Overrides
  // initial_latents, latent_shape and seed.
  std::optional<ImageStart> from_image;
  // The schedule: the model's own (static or resolution-dependent shift,
  // from its scheduler config) for `steps`, unless `shift` (> 0) sets a
  // static shift or `sigmas` are given.
  int steps = 8;
  double shift = 0;
  std::vector<float> sigmas;
  // Upstream __call__'s sigmas (ScheduleOptions::base_sigmas): shifted as
  // the schedule's own; their count is the steps. Ignored with `sigmas`.
  std::vector<float> base_sigmas;
  double guidance_scale = 1.0;  // denoise_loop.h's s; <= 1: unguided
  Conditioning positive;                // the model's conditioning_inputs()
  std::optional<Conditioning> negative;  // for classifier-free guidance
  // The models that take over after model_id's steps, in order. Empty:
  // model_id runs every step.
  std::vector<DenoiseSegment> later_segments;
  // Optional: told as each segment's model is readied, before its first
  // step (a segment with no steps in the schedule is never readied).
  std::function<void(const SegmentStart&)> on_segment;
  // LoRA adapters attached to every segment's model for this call.
  std::vector<AdapterRequest> adapters;
  // The pipeline's text encoders (component names) that the caller applied
  // the adapters' text-encoder modules to (TextEncoderAdapters); modules for
  // any other encoder are named in SegmentStart::adapter_notes.
  std::vector<std::string> adapters_applied_to_encoders;
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

  // Loads (or finds) a model. A model already cached under the id answers at
  // once; if it was loaded from another path or with other options the
  // answer is FAILED_PRECONDITION saying what differs. PERMISSION_DENIED for
  // paths outside models_dir, NOT_FOUND for missing ones, RESOURCE_EXHAUSTED
  // when the budget cannot admit it (nothing evicted), CANCELLED when every
  // waiter gave up, DEADLINE_EXCEEDED past options.load_timeout, the
  // checkpoint's own errors otherwise.
  virtual absl::StatusOr<ModelInfo> load(const ModelLoadRequest& request, const LoadWatcher& watcher = {}) = 0;
  // The model `request` names if it is cached, answered as load() would
  // answer it (FAILED_PRECONDITION if it was loaded otherwise); NOT_FOUND
  // if it is not cached. Never loads, so a server answers hits on its own
  // thread and queues only real loads.
  virtual absl::StatusOr<ModelInfo> find(const ModelLoadRequest& request) = 0;
  // Describes the model `request` names without loading it: a cached
  // model's info, else its architecture, latent geometry and the RAM its
  // load would reserve, read from headers and config alone. Errors as a
  // load's before admission.
  virtual absl::StatusOr<ModelInfo> inspect(const ModelLoadRequest& request) = 0;
  // The least RAM one call of `query` (activation_estimate.h, read by the
  // model's role) needs on the model `model.path` names (a loaded model's
  // id, else a path loaded with `model`'s options), loaded or not: what
  // lets a pipeline refuse before any load a stage that could never fit.
  // Errors as inspect()'s.
  virtual absl::StatusOr<CallFloor> least_call_room(const ModelLoadRequest& model, const ActivationQuery& query) = 0;
  // The model `model.path` names, readied for calls: a cached model by its
  // id (or the path's canonical id), else loaded as load() loads `model`.
  // FAILED_PRECONDITION when `role` is given and the model is in another,
  // naming what it is, or when `model` sets an FP8 format or a compute
  // dtype that the cached model was not loaded with (check_load_options).
  // A call on the handle loads it again if it was evicted since
  // (model_handle.h).
  virtual absl::StatusOr<ModelHandle> ready(const ModelLoadRequest& model, std::optional<ModelRole> role = {},
                                            const LoadWatcher& watcher = {}) = 0;
  // Returns after the model's memory is released. See UnloadOptions; a
  // waiting unload wakes and stops at once when options.cancel fires
  // (its reason, e.g. CANCELLED) or cancel_all() runs (UNAVAILABLE); the
  // model then stays loaded.
  virtual absl::StatusOr<UnloadResult> unload(const std::string& model_id, const UnloadOptions& options) = 0;
  // Ready models, most recently used first.
  virtual std::vector<ModelInfo> list() const = 0;
  virtual CacheStats stats() const = 0;
  // The VRAM tier's budget and placements; empty without a device.
  virtual std::optional<CacheStats> vram_stats() const = 0;
  virtual absl::StatusOr<LeaseId> acquire_lease(const std::string& model_id, absl::Duration ttl) = 0;
  virtual absl::Status renew_lease(LeaseId lease, absl::Duration ttl) = 0;
  virtual absl::Status release_lease(LeaseId lease) = 0;
  // `evicted` (optional) gets the keys this call evicted.
  virtual absl::StatusOr<Reservation> make_room(int64_t bytes, Device device,
                                                std::vector<std::string>* evicted = nullptr) = 0;
  // One forward of `model_id`. NOT_FOUND if it is not loaded. A denoiser's
  // activation estimate is reserved on the CPU for the call first
  // (step_admission.h), evicting unpinned models if needed;
  // RESOURCE_EXHAUSTED naming the estimate when it cannot fit. The forward
  // stops between its blocks once `cancel` fires (its reason) or
  // cancel_all() runs (UNAVAILABLE). `adapters` are admitted
  // (adapter_admission.h) and attached for this forward only; a bad one is
  // refused (INVALID_ARGUMENT naming it) before the forward runs.
  virtual absl::StatusOr<NamedTensors> step(const std::string& model_id, const NamedTensors& inputs,
                                            const CancellationToken& cancel = {},
                                            const std::vector<AdapterRequest>& adapters = {}) = 0;
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
  virtual absl::StatusOr<torch::Tensor> denoise(const EngineDenoiseRequest& request,
                                                const DenoiseOptions& options) = 0;
  // Encodes `request` with text encoder `encoder`, after admitting its
  // activations (encode_activation_bytes of the most tokens it can give)
  // by a reservation, evicting unpinned models if needed. With a device the
  // encoder runs there: placed, and its activations reserved, under the
  // VRAM budget (device_placer.h); the outputs come back to RAM.
  // FAILED_PRECONDITION if the model is not a text encoder (or has no
  // tokenizer), NOT_FOUND if it is not loaded (a readied handle's model is
  // loaded again), RESOURCE_EXHAUSTED if the activations cannot be
  // admitted. `cancel` stops it between layers. `adapters` (optional)
  // are admitted as the denoise admits them (and refused as it refuses
  // them), their modules for this encoder attached for the call; their
  // loads are in the report's adapters_loaded.
  virtual absl::StatusOr<CallResult<EncodedText>> encode_text(const ModelHandle& encoder,
                                                              const TextEncoding& request,
                                                              const CancellationToken& cancel = {},
                                                              const TextEncoderAdapters& adapters = {}) = 0;
  // Conditions one prompt with text conditioner `conditioner`
  // (text_conditioner.h: an encoder's hidden states read through the
  // prompt's own tokens, Anima's LLM adapter), after admitting its
  // activations (request_activation_bytes) as encode_text admits an
  // encode, on the device where there is one (the output comes back to
  // RAM). FAILED_PRECONDITION if the model is not a text conditioner (or
  // has no tokenizer), INVALID_ARGUMENT for source states it cannot take,
  // NOT_FOUND and RESOURCE_EXHAUSTED as encode_text; `cancel` stops it
  // between blocks.
  virtual absl::StatusOr<CallResult<ConditionedText>> condition_text(const ModelHandle& conditioner,
                                                                     const ConditionerRequest& request,
                                                                     const CancellationToken& cancel = {}) = 0;
  // Decodes pipeline-space `latents` [C, h, w] (or [1, C, h, w]) with
  // `vae` into uint8 pixels [8h, 8w, 3]. The decode's activations are
  // admitted by a reservation first (evicting unpinned models if needed):
  // untiled when that fits, else tiled as diffusers' enable_tiling();
  // RESOURCE_EXHAUSTED when neither fits. With a device the VAE runs there
  // and the same choice is made against the VRAM budget (device_placer.h).
  // FAILED_PRECONDITION if the model is not a VAE, INVALID_ARGUMENT for
  // misshapen latents, NOT_FOUND as encode_text says. `cancel` stops
  // encode and decode as it stops step().
  virtual absl::StatusOr<CallResult<torch::Tensor>> decode_image(const ModelHandle& vae,
                                                                 const torch::Tensor& latents,
                                                                 const CancellationToken& cancel = {}) = 0;
  // Decodes a video's pipeline-space latents [C, F, h, w] with `vae` as
  // decode_image() decodes an image, admitted the same way by the
  // activations of a streamed decode, handing frame after frame to
  // `on_frame` as uint8 pixels [H, W, 3] as the VAE makes them: at most one
  // latent frame's decoded frames are held in float. Returns the frame
  // count. Errors as decode_image's, and on_frame's, which stops it.
  virtual absl::StatusOr<CallResult<int64_t>> decode_video(const ModelHandle& vae, const torch::Tensor& latents,
                                                           const VideoFrameSink& on_frame,
                                                           const CancellationToken& cancel = {}) = 0;
  // Encodes an image [1, 3, H, W] in [-1, 1] (float; H and W multiples of
  // the VAE's spatial factor) with `vae` to pipeline-space latents [1, C,
  // H/f, W/f] float32: the distribution's sample mean + std·eps when `eps`
  // ([1, C, H/f, W/f], the N(0, 1) draw of upstream's
  // latent_dist.sample(generator)) is given, else its mode. Admitted as a
  // decode of those latents is, whole or tiled; errors as decode_image's.
  virtual absl::StatusOr<CallResult<torch::Tensor>> encode_image(const ModelHandle& vae, const torch::Tensor& image,
                                                                 const torch::Tensor& eps,
                                                                 const CancellationToken& cancel = {}) = 0;
  virtual bool draining() const = 0;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_ENGINE_API_H_
