// Admission of a call's working memory: before a Step, Denoise, text encode
// or VAE decode runs on the CPU, what it needs beside its model (a
// denoiser's activation estimate, DiffusionModel::estimate_activations; an
// encoder's or a decoder's own) is reserved from the RAM budget through
// ModelCache::make_room_beside, which may evict least-recently-used
// unpinned models and, when work in flight holds the room, waits in line
// holding nothing. The caller holds the Reservation for the whole call;
// while it runs the bytes show as the budget's reserved bytes (GetStats,
// diffusiond_memory_reserved_bytes), and a refusal is a rejected cache
// event as well as the call's error.
//
// Not here: weights (model_admission.h); a forward on the device reserves
// VRAM beside its placement (DevicePlacer::prepare).
#ifndef DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_
#define DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cache/model_cache.h"
#include "core/denoise/denoise_loop.h"
#include "core/models/activation_estimate.h"
#include "core/models/conditioning.h"
#include "core/models/diffusion_model.h"

namespace diffusiond {

// What a call reserves beside its model, and how a refusal names it.
struct CallRoom {
  int64_t bytes = 0;
  std::string what;  // e.g. `the activations of model "a": estimate 5 MiB (…)`
};

// The room of `model`'s activations for `query` on the CPU.
CallRoom activation_room(const DiffusionModel& model, ActivationQuery query, absl::string_view model_id);

// The room of one Step of `model` over `inputs` on the CPU, as its role
// estimates it (Model::step_activations); none for inputs the model
// cannot read a size from (step() then refuses them).
CallRoom step_room(const Model& model, const NamedTensors& inputs, absl::string_view model_id);

// The query of one step of a Denoise over latents of `latent_shape` and
// `positive` and, when guided (guidance_scale > 1), `negative`: batch 2
// when guided, the longest text among the conditionings' free-length
// tensors, at the model's compute dtype.
ActivationQuery denoise_activation_query(const DiffusionModel& model, const std::vector<int64_t>& latent_shape,
                                         double guidance_scale, const Conditioning& positive,
                                         const Conditioning* negative);

// Pins cached model `model_id` and reserves `room_of(its model)` on the CPU
// beside it in one step (ModelCache::make_room_beside), so that a call that
// waits for room holds neither pin nor bytes meanwhile. The model is read
// under a first pin, which is dropped before the wait; if another model
// took the id meanwhile, its room is read again. NOT_FOUND when the model
// is not loaded (or left while this waited); RESOURCE_EXHAUSTED
// "no room for <what>; <make_room's figures>"; room_of's own errors.
absl::StatusOr<PinnedRoom> pin_with_room(ModelCache& cache, absl::string_view model_id,
                                         const std::function<absl::StatusOr<CallRoom>(const Model&)>& room_of,
                                         std::vector<std::string>* evicted, const RoomWait& wait);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_
