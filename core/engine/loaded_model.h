// LoadedModel: what the engine's cache holds for one model — the model and
// the description of how it was loaded. Keeping both in the one cached value
// means a listing or a load's answer can never pair a model with another
// load's description, and nothing needs pruning when the model goes.
#ifndef DIFFUSIOND_CORE_ENGINE_LOADED_MODEL_H_
#define DIFFUSIOND_CORE_ENGINE_LOADED_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/cache/cache_value.h"
#include "core/models/conditioning.h"
#include "core/models/model.h"
#include "core/models/model_family.h"
#include "core/precision/compute_dtype.h"
#include "kernels/fp8_format.h"

namespace diffusiond {

// Fixed at load.
struct ModelDescription {
  std::string path;  // canonical, inside models_dir
  std::string architecture;
  ModelRole role = ModelRole::kDenoiser;
  std::string description;  // the recipe's: layout, config, key map
  // Denoisers: the conditioning they read and whether they take a negative.
  std::vector<ConditioningInput> conditioning;
  bool supports_negative = false;
  // Denoisers: their latent channels; image decoders: channels and factor.
  LatentGeometry geometry;
  ComputeDtype compute_dtype = ComputeDtype::kFloat32;
  std::optional<Fp8Format> fp8;  // storage asked for; empty: off
  int64_t tensors = 0;
  int64_t fp8_tensors = 0;
  // The config.json it was built from (empty: none) and config_digest()
  // of its bytes: a later load naming a config_path must name the same.
  std::string config_path;
  uint64_t config_digest = 0;
};

// A digest of a config file's bytes, to tell two configs apart within one
// process (std::hash; not stable across builds, never stored).
inline uint64_t config_digest(absl::string_view json) {
  return std::hash<std::string_view>{}(std::string_view(json.data(), json.size()));
}

class LoadedModel final : public CacheValue {
 public:
  LoadedModel(ModelDescription description, std::unique_ptr<Model> model,
              std::shared_ptr<const LoadRecipe> recipe = nullptr)
      : description_(std::move(description)), model_(std::move(model)), recipe_(std::move(recipe)) {}

  const ModelDescription& description() const { return description_; }
  const Model& model() const { return *model_; }
  // The recipe it was built by (its config's estimators), or null.
  const LoadRecipe* recipe() const { return recipe_.get(); }

 private:
  const ModelDescription description_;
  const std::unique_ptr<Model> model_;
  const std::shared_ptr<const LoadRecipe> recipe_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_ENGINE_LOADED_MODEL_H_
