#include "core/models/model_loader.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/bounded_text.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

// A config the caller chose must be the one the load uses: it names a
// class, and the class is the architecture's the tensors show. Otherwise
// the family would infer its config from shapes, or from a config of
// another model, and answer OK with something other than was asked.
absl::Status check_given_config(const Checkpoint& checkpoint, const ModelFamily& family) {
  const std::string& cls = checkpoint.config_class();
  const std::vector<std::string> classes = family.config_classes();
  const std::string expected = absl::StrCat(family.name(), ", whose config names ", absl::StrJoin(classes, " or "));
  if (cls.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(checkpoint.config_path(),
                                                   ": names no model class (\"_class_name\" or \"architectures\"); "
                                                   "the checkpoint is ",
                                                   expected));
  }
  if (std::find(classes.begin(), classes.end(), cls) != classes.end()) return absl::OkStatus();
  const ModelFamily* named = find_family_for_config(checkpoint.config_json());
  return absl::InvalidArgumentError(absl::StrCat(
      checkpoint.config_path(), ": names class \"", bounded(cls, 64), "\" (",
      named != nullptr ? named->name() : "no supported architecture", "), but the checkpoint is ", expected));
}

// The recipe's names, kinds and declaration, planned at `options`. The
// callbacks hold the recipe, so the options may outlive the caller's copy.
PlanOptions recipe_plan_options(std::shared_ptr<const LoadRecipe> recipe, const ModelLoadOptions& options) {
  PlanOptions po;
  po.compute_dtype = options.compute_dtype;
  po.fp8 = options.fp8;
  po.keep_narrow = options.keep_narrow;
  po.declaration = recipe->declaration();
  po.classifier = [recipe](absl::string_view name, const std::vector<int64_t>& shape) {
    return recipe->classify(name, shape);
  };
  po.rename = [recipe](absl::string_view name) { return recipe->canonical_name(name); };
  return po;
}

}  // namespace

absl::StatusOr<ModelPlan> plan_model(const Checkpoint& checkpoint, const ModelLoadOptions& options) {
  ModelPlan mp;
  mp.family = find_model_family(checkpoint);
  if (mp.family == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        checkpoint.path(), ": no supported architecture recognises this checkpoint"));
  }
  const absl::Status refused = checkpoint.config_given() ? check_given_config(checkpoint, *mp.family) : absl::OkStatus();
  if (!refused.ok()) {
    // A file may hold two models (Anima's single file: the DiT and its text
    // conditioner): a config the caller named chooses the other one when
    // its family builds a recipe from the file. Otherwise the config is of
    // another model, refused naming both (a family recognises a checkpoint
    // whose config names its class, so recognizes() alone cannot tell).
    const ModelFamily* named = find_family_for_config(checkpoint.config_json());
    if (named == nullptr || !named->recognizes(checkpoint)) return refused;
    absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe = named->recipe(checkpoint);
    if (!recipe.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(refused.message(), " (read as ", named->name(), ": ", recipe.status().message(), ")"));
    }
    mp.family = named;
    mp.recipe = *std::move(recipe);
  }
  if (mp.recipe == nullptr) {
    DIFFUSIOND_ASSIGN_OR_RETURN(mp.recipe, mp.family->recipe(checkpoint));
  }
  DIFFUSIOND_ASSIGN_OR_RETURN(mp.plan, plan_load(checkpoint, recipe_plan_options(mp.recipe, options)));
  return mp;
}

absl::StatusOr<ConfigPlan> plan_model_config(std::shared_ptr<const LoadRecipe> recipe, const ModelLoadOptions& options,
                                             absl::string_view what) {
  ConfigPlan out;
  for (const ParamSpec& p : recipe->parameter_table()) {
    TensorRecord r;
    r.name = p.name;
    r.dtype = DType::kBF16;
    r.shape = p.shape;
    r.numel = 1;
    for (int64_t d : p.shape) {
      if (d < 0 || __builtin_mul_overflow(r.numel, d, &r.numel)) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": parameter ", p.name, " has no valid size"));
      }
    }
    if (__builtin_mul_overflow(r.numel, int64_t{2}, &r.nbytes)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": parameter ", p.name, " has no valid size"));
    }
    out.records.push_back(std::move(r));
  }
  out.options = recipe_plan_options(std::move(recipe), options);
  DIFFUSIOND_ASSIGN_OR_RETURN(out.plan, plan_tensors(
                                            out.records, [](absl::string_view) { return nullptr; }, what, out.options));
  return out;
}

}  // namespace diffusiond
