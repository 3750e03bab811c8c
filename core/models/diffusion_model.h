// DiffusionModel: a loaded model — its weights, its compute dtype (set at
// load, the only dtype source), and its architecture's name. Architectures
// add their forward. (The cache holds it inside core/engine's LoadedModel.)
#ifndef DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_

#include <torch/types.h>

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/denoise_loop.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// Tensors by the name an architecture gives them (docs/api.md lists them).
using NamedTensors = std::map<std::string, torch::Tensor>;

// Immutable after construction; forwards may run concurrently.
class DiffusionModel {
 public:
  explicit DiffusionModel(std::unique_ptr<WeightStore> weights) : weights_(std::move(weights)) {}
  virtual ~DiffusionModel() = default;

  virtual absl::string_view architecture() const = 0;
  const WeightStore& weights() const { return *weights_; }

  // One forward over the architecture's named inputs, returning its named
  // outputs at the compute dtype. INVALID_ARGUMENT naming any missing,
  // unexpected or misshapen input and what was expected.
  virtual absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const = 0;

  // What the denoise loop calls: the model over `caption` features (and
  // `negative` ones for guidance; may be undefined), both [L, feature_dim].
  // INVALID_ARGUMENT for features of the wrong shape. The predictor holds a
  // reference to this model: keep it pinned while the predictor lives.
  virtual absl::StatusOr<FlowPredictor> flow_predictor(const torch::Tensor& caption,
                                                       const torch::Tensor& negative) const = 0;

  // Channels of the latents the model denoises ([C, H, W]); H and W must be
  // multiples of latent_multiple().
  virtual int64_t latent_channels() const = 0;
  virtual int64_t latent_multiple() const = 0;
  // The largest latent H and W the model has positions for.
  virtual int64_t max_latent_side() const = 0;
  // The flow-match shift its scheduler uses by default.
  virtual double default_shift() const = 0;

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
