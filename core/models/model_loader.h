// Planning a model's load: recognise the architecture, then plan from the
// headers with the model's parameter table and precision declaration. The
// engine admits the plan (core/engine/model_admission.h), streams it and
// builds the model with plan.recipe->build().
#ifndef DIFFUSIOND_CORE_MODELS_MODEL_LOADER_H_
#define DIFFUSIOND_CORE_MODELS_MODEL_LOADER_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/checkpoint/checkpoint.h"
#include "core/loader/load_plan.h"
#include "core/loader/streaming_loader.h"
#include "core/models/model_family.h"

namespace diffusiond {

struct ModelLoadOptions {
  // The model's compute dtype (the only dtype its forwards run at). Default
  // float32, the CPU default; bfloat16 is the CUDA default.
  torch::ScalarType compute_dtype = torch::kFloat32;
  Fp8Options fp8;  // default: FP8 storage off
  bool keep_narrow = false;  // PlanOptions::keep_narrow
  StreamOptions stream;  // progress and cancellation
};

struct ModelPlan {
  const ModelFamily* family = nullptr;
  std::shared_ptr<const LoadRecipe> recipe;  // the loaded model keeps it
  LoadPlan plan;
};

// Plans the load of `checkpoint` as a model: of the first family that
// recognises it, or, when the caller named a config, of the family of that
// config's class if it recognises the checkpoint too (a file of two models,
// as Anima's single file holds the DiT and its text conditioner).
// FAILED_PRECONDITION if no supported architecture recognises it;
// INVALID_ARGUMENT for a bad config.
absl::StatusOr<ModelPlan> plan_model(const Checkpoint& checkpoint, const ModelLoadOptions& options);

// A model sized from its config alone: the recipe's parameter table stands
// in for the headers of a checkpoint as released (bf16 tensors), and no file
// is read. `records` holds those tensors, which `plan` points into (moving
// the struct keeps them where they are).
struct ConfigPlan {
  std::vector<TensorRecord> records;
  LoadPlan plan;
  PlanOptions options;  // what `plan` was made with (the recipe's classifier)
};

// Plans `recipe` as a bf16 checkpoint; `what` names it in errors.
// INVALID_ARGUMENT for a table whose sizes overflow.
absl::StatusOr<ConfigPlan> plan_model_config(std::shared_ptr<const LoadRecipe> recipe, const ModelLoadOptions& options,
                                             absl::string_view what);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_MODEL_LOADER_H_
