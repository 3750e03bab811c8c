// DiffusionModel: what the cache holds for a loaded model — its weights,
// its compute dtype (set at load, the only dtype source), and its
// architecture's name. Architectures add their forward.
#ifndef DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_

#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "core/cache/cache_value.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// Immutable after construction; forwards may run concurrently.
class DiffusionModel : public CacheValue {
 public:
  explicit DiffusionModel(std::unique_ptr<WeightStore> weights) : weights_(std::move(weights)) {}

  virtual absl::string_view architecture() const = 0;
  const WeightStore& weights() const { return *weights_; }

 protected:
  // The weight named `name` at the compute dtype (FP8 decoded into a fresh
  // tensor that dies with the caller's use of it). REQUIRES: the model was
  // validated to hold it.
  torch::Tensor param(absl::string_view name) const;

 private:
  std::unique_ptr<WeightStore> weights_;
};

// The dtype every forward of `model` runs at. Set at load; no code infers a
// dtype from a parameter.
inline torch::ScalarType compute_dtype(const DiffusionModel& model) {
  return model.weights().compute_dtype();
}

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
