// DiffusionModel: a denoiser — a Model (model.h) the denoise loop drives.
#ifndef DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_

#include <torch/types.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/denoise/denoise_loop.h"
#include "core/models/model.h"

namespace diffusiond {

// Immutable after construction; forwards may run concurrently.
class DiffusionModel : public Model {
 public:
  using Model::Model;
  ModelRole role() const final { return ModelRole::kDenoiser; }

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
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
