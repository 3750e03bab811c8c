// Admission of a denoiser call's working memory: before a Step or a Denoise
// runs, the model's activation estimate (DiffusionModel::estimate_activations)
// is reserved from the device's budget through ModelCache::make_room, which
// may evict least-recently-used unpinned models. The caller holds the
// Reservation for the whole call; while it runs the bytes show as the
// budget's reserved bytes (GetStats, diffusiond_memory_reserved_bytes), and
// a refusal is a rejected cache event as well as the call's error.
//
// Not here: weights (model_admission.h) or VAE decodes (Engine::decode_image).
#ifndef DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_
#define DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cache/model_cache.h"
#include "core/denoise/denoise_loop.h"
#include "core/memory/device.h"
#include "core/models/activation_estimate.h"
#include "core/models/conditioning.h"
#include "core/models/diffusion_model.h"

namespace diffusiond {

// Reserves `model`'s estimate for `query` on `device` (query.device_is_cpu
// is set from it). RESOURCE_EXHAUSTED naming `model_id`, the estimate and its
// breakdown, then make_room's needed / available / evictable. `evicted`
// (optional) gets the keys evicted to admit them.
absl::StatusOr<Reservation> reserve_step_activations(ModelCache& cache, const DiffusionModel& model,
                                                     ActivationQuery query, Device device,
                                                     absl::string_view model_id,
                                                     std::vector<std::string>* evicted = nullptr);

// The query of one step of a Denoise `loop` (its latent shape or initial
// latents) over `positive` and, when the loop is guided, `negative`: batch 2
// when guided, the longest text among the conditionings' free-length
// tensors, at the model's compute dtype.
ActivationQuery denoise_activation_query(const DiffusionModel& model, const DenoiseRequest& loop,
                                         const Conditioning& positive, const Conditioning* negative);

// Reserves one Step of `model` over `inputs` on the CPU. Models that are
// not denoisers, and inputs the denoiser cannot read a query from (step()
// then refuses them), reserve nothing: the Reservation is empty.
absl::StatusOr<Reservation> reserve_step_activations(ModelCache& cache, const Model& model,
                                                     const NamedTensors& inputs, absl::string_view model_id);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_STEP_ADMISSION_H_
