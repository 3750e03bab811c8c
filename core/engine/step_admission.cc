#include "core/engine/step_admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/engine/loaded_model.h"
#include "core/util/bounded_text.h"
#include "core/util/bytes.h"
#include "core/util/status_macros.h"

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

const Model& model_of(const Pin& pin) { return pin.as<LoadedModel>()->model(); }

// The room `estimate` asks for, named for a refusal.
CallRoom estimate_room(const ActivationEstimate& estimate, absl::string_view model_id) {
  return {estimate.bytes, absl::StrCat("the activations of model \"", bounded(model_id), "\": estimate ",
                                       format_bytes(estimate.bytes), " (", estimate.breakdown, ")")};
}

}  // namespace

CallRoom activation_room(const DiffusionModel& model, ActivationQuery query, absl::string_view model_id) {
  query.device_is_cpu = true;
  return estimate_room(model.estimate_activations(query), model_id);
}

CallRoom step_room(const Model& model, const NamedTensors& inputs, absl::string_view model_id) {
  return estimate_room(model.step_activations(inputs, /*device_is_cpu=*/true), model_id);
}

ActivationQuery denoise_activation_query(const DiffusionModel& model, const std::vector<int64_t>& latent_shape,
                                         double guidance_scale, const Conditioning& positive,
                                         const Conditioning* negative) {
  const bool guided = guidance_scale > 1.0 && negative != nullptr;
  const std::vector<ConditioningInput> inputs = model.conditioning_inputs();
  ActivationQuery q;
  q.latent_shape = latent_shape;
  q.batch = guided ? 2 : 1;
  q.text_tokens = text_tokens_of(positive, inputs);
  if (guided) q.text_tokens = std::max(q.text_tokens, text_tokens_of(*negative, inputs));
  q.compute_dtype = compute_dtype(model);
  q.denoise_loop = true;
  return q;
}

absl::StatusOr<PinnedRoom> pin_with_room(ModelCache& cache, absl::string_view model_id,
                                         const std::function<absl::StatusOr<CallRoom>(const Model&)>& room_of,
                                         std::vector<std::string>* evicted, const RoomWait& wait) {
  // Twice at most: a second model under the id while the first waited is
  // read again; a third is the caller's race to lose.
  for (int attempt = 0;; ++attempt) {
    DIFFUSIOND_ASSIGN_OR_RETURN(Pin probe, cache.get(model_id));
    const Model* model = &model_of(probe);
    DIFFUSIOND_ASSIGN_OR_RETURN(const CallRoom room, room_of(*model));
    probe = Pin();
    absl::StatusOr<PinnedRoom> admitted = cache.make_room_beside(model_id, room.bytes, Device::kCpu, evicted, wait);
    if (absl::IsResourceExhausted(admitted.status())) {
      return absl::ResourceExhaustedError(absl::StrCat("no room for ", room.what, "; ", admitted.status().message()));
    }
    if (!admitted.ok() || &model_of(admitted->pin) == model || attempt == 1) return admitted;
  }
}

}  // namespace diffusiond
