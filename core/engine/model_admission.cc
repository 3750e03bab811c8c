#include "core/engine/model_admission.h"

#include "core/memory/activation_arena_scope.h"
#include "core/memory/recycled_pages.h"
#include "core/models/diffusion_model.h"
#include "core/models/image_decoder.h"
#include "core/precision/torch_dtype.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// Reserves the plan's bytes (evicting as needed) and streams into them.
absl::StatusOr<std::pair<std::unique_ptr<WeightStore>, Reservation>> admit_and_stream(
    const Checkpoint& checkpoint, const LoadPlan& plan, ModelCache& cache, const StreamOptions& stream) {
  // The weights of models evicted to make room are written over rather
  // than freed and mapped again (core/memory/recycled_pages.h).
  RecycledPages recycled(plan.reservation_bytes());
  RecyclingScope recycling(&recycled);
  std::vector<std::string> evicted;
  DIFFUSIOND_ASSIGN_OR_RETURN(Reservation reservation, cache.make_room(plan.reservation_bytes(), Device::kCpu, &evicted,
                                                                       RoomWait{true, stream.cancel}));
  if (!evicted.empty() && stream.on_progress) {
    LoadProgress admitted{0, plan.source_bytes, 0, static_cast<int64_t>(plan.tensors.size()), std::move(evicted)};
    stream.on_progress(admitted);
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<WeightStore> store,
                              stream_weights(checkpoint, plan, reservation, stream));
  return std::make_pair(std::move(store), std::move(reservation));
}

}  // namespace

absl::StatusOr<LoadedValue> load_planned_model(const Checkpoint& checkpoint, const ModelPlan& plan, ModelCache& cache,
                                               const StreamOptions& stream, bool cpu_only) {
  // A load inside a call (a second expert) makes tensors that outlive the
  // call: none of them from its activation arena.
  ActivationArenaPause weights_outlive_the_call;
  DIFFUSIOND_ASSIGN_OR_RETURN(auto admitted, admit_and_stream(checkpoint, plan.plan, cache, stream));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                              plan.recipe->build(std::move(admitted.first)));
  if (cpu_only) model->enable_cpu_packing();
  ModelDescription d;
  d.path = checkpoint.path();
  d.architecture = std::string(model->architecture());
  d.role = model->role();
  if (const auto* denoiser = dynamic_cast<const DiffusionModel*>(model.get())) {
    d.conditioning = denoiser->conditioning_inputs();
    d.supports_negative = denoiser->supports_negative();
    d.geometry.channels = denoiser->latent_layout().channels;
  }
  if (const auto* decoder = dynamic_cast<const ImageDecoder*>(model.get())) {
    d.geometry = {decoder->latent_channels(), decoder->spatial_factor(), decoder->temporal_factor()};
  }
  d.description = plan.recipe->describe();
  d.compute_dtype = compute_dtype_of(compute_dtype(*model)).value_or(ComputeDtype::kFloat32);
  d.fp8 = plan.plan.fp8.format;
  d.tensors = model->weights().size();
  d.fp8_tensors = model->weights().fp8_count();
  d.config_path = checkpoint.config_path();
  d.config_digest = config_digest(checkpoint.config_json());
  LoadedValue loaded;
  loaded.value = std::make_unique<LoadedModel>(std::move(d), std::move(model), plan.recipe);
  loaded.reservations.push_back(std::move(admitted.second));
  return loaded;
}

absl::StatusOr<LoadedValue> load_model(const Checkpoint& checkpoint, const ModelLoadOptions& options,
                                       ModelCache& cache) {
  DIFFUSIOND_ASSIGN_OR_RETURN(ModelPlan plan, plan_model(checkpoint, options));
  return load_planned_model(checkpoint, plan, cache, options.stream);
}

absl::StatusOr<LoadedValue> load_weights(const Checkpoint& checkpoint, const LoadPlan& plan,
                                         ModelCache& cache, const StreamOptions& stream) {
  ActivationArenaPause weights_outlive_the_call;
  DIFFUSIOND_ASSIGN_OR_RETURN(auto admitted, admit_and_stream(checkpoint, plan, cache, stream));
  LoadedValue loaded;
  loaded.value = std::make_unique<CachedWeights>(std::move(admitted.first));
  loaded.reservations.push_back(std::move(admitted.second));
  return loaded;
}

}  // namespace diffusiond
