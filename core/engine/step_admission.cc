#include "core/engine/step_admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"

namespace diffusiond {
namespace {

// The longest free-length (text) tensor of `c` among `inputs`.
int64_t text_tokens_of(const Conditioning& c, const std::vector<ConditioningInput>& inputs) {
  int64_t longest = 0;
  for (const ConditioningInput& in : inputs) {
    if (in.kind != ConditioningInput::Kind::kTensor || in.shape.empty() || in.shape[0] >= 0) continue;
    const auto it = c.tensors.find(in.name);
    if (it != c.tensors.end() && it->second.dim() >= 1) longest = std::max(longest, it->second.size(0));
  }
  return longest;
}

}  // namespace

absl::StatusOr<Reservation> reserve_step_activations(ModelCache& cache, const DiffusionModel& model,
                                                     ActivationQuery query, Device device,
                                                     absl::string_view model_id,
                                                     std::vector<std::string>* evicted) {
  query.device_is_cpu = device == Device::kCpu;
  const ActivationEstimate estimate = model.estimate_activations(query);
  absl::StatusOr<Reservation> room = cache.make_room(estimate.bytes, device, evicted);
  if (absl::IsResourceExhausted(room.status())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no room for the activations of model \"", bounded(model_id), "\": estimate ",
        format_bytes(estimate.bytes), " (", estimate.breakdown, "); ", room.status().message()));
  }
  return room;
}

ActivationQuery denoise_activation_query(const DiffusionModel& model, const DenoiseRequest& loop,
                                         const Conditioning& positive, const Conditioning* negative) {
  const bool guided = loop.guidance_scale > 1.0 && negative != nullptr;
  const std::vector<ConditioningInput> inputs = model.conditioning_inputs();
  ActivationQuery q;
  q.latent_shape = loop.initial_latents.defined() ? loop.initial_latents.sizes().vec() : loop.latent_shape;
  q.batch = guided ? 2 : 1;
  q.text_tokens = text_tokens_of(positive, inputs);
  if (guided) q.text_tokens = std::max(q.text_tokens, text_tokens_of(*negative, inputs));
  q.compute_dtype = compute_dtype(model);
  q.denoise_loop = true;
  return q;
}

absl::StatusOr<Reservation> reserve_step_activations(ModelCache& cache, const Model& model,
                                                     const NamedTensors& inputs, absl::string_view model_id) {
  const auto* denoiser = dynamic_cast<const DiffusionModel*>(&model);
  if (denoiser == nullptr) return Reservation();
  const std::optional<ActivationQuery> query = denoiser->step_activation_query(inputs);
  if (!query.has_value()) return Reservation();
  return reserve_step_activations(cache, *denoiser, *query, Device::kCpu, model_id);
}

}  // namespace diffusiond
