// Admission of a planned load: make_room on the CPU for the plan's
// reservation, the weights streamed under it, the model built from them.
// Engine::load runs it for the key it claimed (so no cache call is on the
// stack: engine -> cache.make_room -> stream_weights(Reservation&) ->
// recipe.build -> LoadSlot::finish); tools and tests that load outside an
// engine run it as a ModelCache::get_or_load loader. On any error the
// reservation is released and nothing stays allocated.
#ifndef DIFFUSIOND_CORE_ENGINE_MODEL_ADMISSION_H_
#define DIFFUSIOND_CORE_ENGINE_MODEL_ADMISSION_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "core/cache/model_cache.h"
#include "core/checkpoint/checkpoint.h"
#include "core/engine/loaded_model.h"
#include "core/loader/streaming_loader.h"
#include "core/models/model_loader.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// A planned model, admitted, streamed and built. The value is a LoadedModel
// described from the plan (path: the checkpoint's). RESOURCE_EXHAUSTED when
// the budget cannot admit it, after waiting in line for room (up to the
// cache's max_room_wait, or until stream.cancel fires) when work in flight
// holds what it needs.
// `cpu_only`: no device will ever place the model, so its bf16 linears may
// pack their weights for the CPU (Model::enable_cpu_packing).
absl::StatusOr<LoadedValue> load_planned_model(const Checkpoint& checkpoint, const ModelPlan& plan, ModelCache& cache,
                                               const StreamOptions& stream = {}, bool cpu_only = false);

// plan_model, then load_planned_model with options.stream.
absl::StatusOr<LoadedValue> load_model(const Checkpoint& checkpoint, const ModelLoadOptions& options,
                                       ModelCache& cache);

// Weights without a model, as a cached value (diffusiond-checkpoint load of
// a checkpoint no architecture recognises, the loader's tests).
class CachedWeights final : public CacheValue {
 public:
  explicit CachedWeights(std::unique_ptr<WeightStore> store) : store_(std::move(store)) {}
  const WeightStore& store() const { return *store_; }

 private:
  const std::unique_ptr<WeightStore> store_;
};

// `plan`'s weights admitted and streamed; the value is a CachedWeights.
absl::StatusOr<LoadedValue> load_weights(const Checkpoint& checkpoint, const LoadPlan& plan,
                                         ModelCache& cache, const StreamOptions& stream = {});

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_MODEL_ADMISSION_H_
