// ModelFamily: one supported architecture — how to recognise its
// checkpoints, read or infer its config, name and classify its parameters,
// and build the model from loaded weights. LoadRecipe is one checkpoint's
// answer to those questions.
//
// Not here: reading tensors (core/loader) or the forward (each family's own
// model class).
#ifndef DIFFUSIOND_CORE_MODELS_MODEL_FAMILY_H_
#define DIFFUSIOND_CORE_MODELS_MODEL_FAMILY_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/checkpoint/checkpoint.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/models/activation_estimate.h"
#include "core/models/model.h"
#include "core/models/param_table.h"
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
  // Every parameter of the model, by canonical name (what plan-config
  // sizes without weights).
  virtual const std::vector<ParamSpec>& parameter_table() const = 0;
  // Builds the model over loaded weights (splitting fused tensors first).
  // FAILED_PRECONDITION naming a missing or misshapen parameter.
  virtual absl::StatusOr<std::unique_ptr<Model>> build(
      std::unique_ptr<WeightStore> weights) const = 0;
  // The latent geometry the built model will have, known from the config
  // alone (for describing a model without loading it). Default: unknown.
  virtual LatentGeometry latent_geometry() const { return {}; }
  // The working memory the built model would reserve on the CPU for one
  // call of `query` (activation_estimate.h, read by the model's role), from
  // the config alone: less what only the weights tell (per-use weight
  // decodes) and, for a decoder, the smaller of a whole and a tiled decode.
  // A lower bound, so a call it says could never fit is refused before the
  // load without ever refusing one that would. Default 0: unknown.
  virtual int64_t least_call_bytes(const ActivationQuery& query) const { return 0; }
};

// A LoadRecipe over a parameter table: classify() answers from the table,
// and by rule for checkpoint tensors outside it (fused or differently laid
// out originals, which build() splits or reshapes into the table's).
class TableRecipe : public LoadRecipe {
 public:
  explicit TableRecipe(std::vector<ParamSpec> table);
  ParamKind classify(absl::string_view name, const std::vector<int64_t>& shape) const override;
  const std::vector<ParamSpec>& parameter_table() const override { return table_; }

 private:
  const std::vector<ParamSpec> table_;
  std::map<std::string, ParamKind, std::less<>> kinds_;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual absl::string_view name() const = 0;
  // The role its models take (what the built model's role() says), known
  // before any load: for listing what a models directory holds.
  virtual ModelRole role() const = 0;
  // True when `checkpoint` holds this architecture: a diffusers config's
  // _class_name, or for single files the tensor names.
  virtual bool recognizes(const Checkpoint& checkpoint) const = 0;
  // INVALID_ARGUMENT for a config that cannot be read or inferred.
  virtual absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe(const Checkpoint& checkpoint) const = 0;
  // The config.json classes ("_class_name", or transformers'
  // "architectures") this family reads.
  virtual std::vector<std::string> config_classes() const = 0;
  // The recipe for a model of config.json `json` (read from `path`),
  // without weights: for sizing. INVALID_ARGUMENT for a bad config.
  virtual absl::StatusOr<std::unique_ptr<LoadRecipe>> recipe_for_config(absl::string_view json,
                                                                        absl::string_view path) const = 0;
};

// The class the checkpoint's config.json names ("" when it has none), read
// once when it was opened.
inline const std::string& config_class_name(const Checkpoint& checkpoint) { return checkpoint.config_class(); }

// The family whose config_classes() include `config_json`'s class, or null.
const ModelFamily* find_family_for_config(absl::string_view config_json);

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
