// ConfiguredDenoiser<Config>: what every denoiser built from one
// architecture's config holds the same way (the config, its default
// schedule, its attention options) and the one answer that follows from
// them alone, estimate_activations (denoiser_activations.h).
//
// Not here: the forward, the conventions and the conditioning, which each
// architecture's model declares (<arch>/<arch>_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_CONFIGURED_DENOISER_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_CONFIGURED_DENOISER_H_

#include <memory>
#include <utility>

#include "core/denoise/flow_match_schedule.h"
#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"
#include "core/models/denoiser_activations.h"
#include "core/models/diffusion_model.h"
#include "core/precision/weight_store.h"

namespace diffusiond {

// Config must have a denoiser_activations overload. Immutable after
// construction; forwards may run concurrently.
template <typename Config>
class ConfiguredDenoiser : public DiffusionModel {
 public:
  const Config& config() const { return config_; }

  // Sizes `query` from the config with the attention options the forwards
  // use and the largest weight they materialise at query.compute_dtype.
  ActivationEstimate estimate_activations(const ActivationQuery& query) const override {
    return denoiser_activations(config_, query, attention_options_,
                                largest_materialized_weight_bytes(weights(), query.compute_dtype));
  }

 protected:
  // `schedule` is the default schedule (from the pipeline's
  // scheduler_config.json when there is one).
  ConfiguredDenoiser(const Config& config, std::unique_ptr<WeightStore> weights, const ScheduleOptions& schedule)
      : DiffusionModel(std::move(weights)), config_(config), schedule_(schedule) {}

  // Read by the subclass's forward; protected so its code reads as before.
  const Config config_;
  const ScheduleOptions schedule_;
  const AttentionOptions attention_options_{};
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_CONFIGURED_DENOISER_H_
