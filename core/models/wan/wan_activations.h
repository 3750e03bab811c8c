// The working memory of one Wan transformer call (activation_estimate.h),
// from the config alone, so it can be asked before a model is loaded (and
// is what WanModel::estimate_activations answers). wan_activations.cc
// lists what is counted.
#ifndef DIFFUSIOND_CORE_MODELS_WAN_WAN_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_WAN_WAN_ACTIVATIONS_H_

#include <cstdint>

#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"
#include "core/models/wan/wan_config.h"

namespace diffusiond {

// Returns the peak bytes of one call of `query` with `config` and
// `attention`, where `materialized_weight_bytes` is the largest weight a
// forward decodes or converts. query.latent_shape is [C, H, W] (one frame)
// or [C, F, H, W] (a Denoise's video latents or a Step's item). In a
// Denoise the text is padded to at least kWanDefaultTextLength rows, as the
// predictor pads it.
ActivationEstimate wan_activations(const WanConfig& config, const ActivationQuery& query,
                                   const AttentionOptions& attention, int64_t materialized_weight_bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_WAN_WAN_ACTIVATIONS_H_
