#include "core/models/model_loader.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<ModelPlan> plan_model(const Checkpoint& checkpoint, const ModelLoadOptions& options) {
  ModelPlan mp;
  mp.family = find_model_family(checkpoint);
  if (mp.family == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        checkpoint.path(), ": no supported architecture recognises this checkpoint"));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(mp.recipe, mp.family->recipe(checkpoint));
  const LoadRecipe* recipe = mp.recipe.get();
  PlanOptions po;
  po.compute_dtype = options.compute_dtype;
  po.fp8 = options.fp8;
  po.declaration = recipe->declaration();
  po.classifier = [recipe](absl::string_view name, const std::vector<int64_t>& shape) {
    return recipe->classify(name, shape);
  };
  po.rename = [recipe](absl::string_view name) { return recipe->canonical_name(name); };
  DIFFUSIOND_ASSIGN_OR_RETURN(mp.plan, plan_load(checkpoint, po));
  return mp;
}

absl::StatusOr<LoadedValue> load_model(const Checkpoint& checkpoint, const ModelLoadOptions& options,
                                       ModelCache& cache) {
  DIFFUSIOND_ASSIGN_OR_RETURN(ModelPlan mp, plan_model(checkpoint, options));
  DIFFUSIOND_ASSIGN_OR_RETURN(Reservation reservation,
                              cache.make_room(mp.plan.reservation_bytes(), Device::kCpu));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<WeightStore> store,
                              stream_weights(checkpoint, mp.plan, reservation, options.stream));
  DIFFUSIOND_ASSIGN_OR_RETURN(std::unique_ptr<DiffusionModel> model, mp.recipe->build(std::move(store)));
  LoadedValue loaded;
  loaded.value = std::move(model);
  loaded.reservations.push_back(std::move(reservation));
  return loaded;
}

}  // namespace diffusiond
