// ModelFamily: one supported architecture — how to recognise its
// checkpoints, read or infer its config, name and classify its parameters,
// and build the model from loaded weights. LoadRecipe is one checkpoint's
// answer to those questions.
//
// Not here: reading tensors (core/loader) or the forward (each family's own
// model class).
#ifndef DIFFUSIOND_CORE_MODELS_MODEL_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_MODEL_FAMILY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/checkpoint.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/models/model.h"
#include "core/precision/param_kind.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// Immutable; thread-safe.
class LoadRecipe {
 public:
  virtual ~LoadRecipe() = default;
  // A one-line description of the config, for logs and `plan`.
  virtual std::string describe() const = 0;
  // The model's name for a checkpoint tensor; nothing for tensors it drops.
  virtual std::optional<std::string> canonical_name(absl::string_view name) const = 0;
  // What the parameter (canonical name) is, from the model's table.
  virtual ParamKind classify(absl::string_view name, const std::vector<int64_t>& shape) const = 0;
  virtual PrecisionDeclaration declaration() const = 0;
  // Builds the model over loaded weights (splitting fused tensors first).
  // FAILED_PRECONDITION naming a missing or misshapen parameter.
  virtual absl::StatusOr<std::unique_ptr<Model>> build(
      std::unique_ptr<WeightStore> weights) const = 0;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual absl::string_view name() const = 0;
  // True when `checkpoint` holds this architecture: a diffusers config's
  // _class_name, or for single files the tensor names.
  virtual bool recognizes(const Checkpoint& checkpoint) const = 0;
  // INVALID_ARGUMENT for a config that cannot be read or inferred.
  virtual absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const = 0;
};

// The class a checkpoint's config.json names — diffusers' "_class_name" or
// transformers' first "architectures" entry — or "" when it has no
// readable config.
std::string config_class_name(const Checkpoint& checkpoint);

// The default schedule `defaults` overlaid with the checkpoint's
// scheduler_config.json when it has one. INVALID_ARGUMENT for a bad one.
absl::StatusOr<ScheduleOptions> checkpoint_schedule(const Checkpoint& checkpoint,
                                                    const ScheduleOptions& defaults);

// Every family this build supports. The list and its entries live for the
// whole process.
const std::vector<const ModelFamily*>& model_families();

// Returns the family that recognises `checkpoint`, or nothing.
const ModelFamily* find_model_family(const Checkpoint& checkpoint);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_MODEL_FAMILY_H_
