// DiffusionModel: a denoiser — a Model (model.h) that owns its conventions:
// how its output relates to the flow velocity (FlowConvention), its
// schedule, its latent layout and the conditioning it reads. The denoise
// loop (core/denoise) is generic and learns all of these from here.
#ifndef DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/denoise/denoise_loop.h"
#include "core/denoise/flow_convention.h"
#include "core/denoise/flow_match_schedule.h"
#include "core/models/activation_estimate.h"
#include "core/models/conditioning.h"
#include "core/models/model.h"

namespace diffusiond {

// The latents a model denoises, as the API sees them: [channels, H, W]
// float32, unpacked (a model that packs patches does so inside its
// predictor), H and W multiples of `multiple` in [multiple, max_side].
struct LatentLayout {
  int64_t channels = 0;
  int64_t multiple = 1;
  int64_t max_side = 0;
  // Video models: latents may also be [C, F, H, W] with 1 <= F <= this.
  // 0: images only.
  int64_t max_frames = 0;
};

// Immutable after construction; forwards may run concurrently.
class DiffusionModel : public Model {
 public:
  using Model::Model;
  ModelRole role() const final { return ModelRole::kDenoiser; }

  virtual FlowConvention flow_convention() const = 0;
  virtual LatentLayout latent_layout() const = 0;
  // The schedule for latents of `latent_shape` [C, H, W] by default: from
  // the model's own scheduler config when it had one, else the
  // architecture's documented defaults. steps and sigmas are left to the
  // caller.
  virtual ScheduleOptions default_schedule(const std::vector<int64_t>& latent_shape) const = 0;
  // The named tensors and scalars flow_predictor() reads.
  virtual std::vector<ConditioningInput> conditioning_inputs() const = 0;
  // True when the model can take a negative conditioning for
  // classifier-free guidance (one extra pass per step).
  virtual bool supports_negative() const = 0;

  // What the denoise loop calls. Validates `positive` (and `negative`, may
  // be null) once, returning one INVALID_ARGUMENT that lists every problem.
  // The predictor maps latents [C, H, W] float32 at model time t to the
  // model's raw outputs [C, H, W] float32 (the loop applies
  // flow_convention()). It holds a reference to this model: keep the model
  // pinned while the predictor lives.
  virtual absl::StatusOr<FlowPredictor> flow_predictor(const Conditioning& positive,
                                                       const Conditioning* negative) const = 0;

  // Returns an upper bound of the tensor bytes one call of `query` holds at
  // its peak (activations, per-use weight decodes, outputs), with what they
  // are made of. Reads only the config, the query and the stored weights'
  // dtypes; allocates nothing. REQUIRES: query.latent_shape is one of the
  // layouts ActivationQuery names for this model.
  virtual ActivationEstimate estimate_activations(const ActivationQuery& query) const = 0;
  // The query of step(inputs) at the compute dtype on the CPU, or nothing
  // when the inputs lack the latents or text in the expected rank (step()
  // then refuses them, naming what is wrong).
  virtual std::optional<ActivationQuery> step_activation_query(const NamedTensors& inputs) const = 0;
  // Its estimate for step_activation_query(inputs).
  ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const override;
};

// Checks latents of `shape` against `layout`; INVALID_ARGUMENT naming the
// expected layout and `model_id` otherwise.
absl::Status check_latent_shape(const LatentLayout& layout, const std::vector<int64_t>& shape,
                                const std::string& model_id);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_DIFFUSION_MODEL_H_
