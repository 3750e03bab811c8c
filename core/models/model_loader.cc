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

}  // namespace diffusiond
