// The working memory of one Z-Image call (activation_estimate.h), from the
// config alone, so it can be asked before a model is loaded (and is what
// ZImageModel::estimate_activations answers). z_image_activations.cc lists
// what is counted.
#ifndef DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_ACTIVATIONS_H_

#include <cstdint>

#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"
#include "core/models/z_image/z_image_config.h"

namespace diffusiond {

// Returns the peak bytes of one call of `query` with `config` and
// `attention`, where `materialized_weight_bytes` is the largest weight a
// forward decodes or converts (largest_materialized_weight_bytes).
// query.latent_shape is [C, H, W] or a Step's item [C, F, H, W]; the
// caption is padded as the forward pads it (to multiples of 32).
ActivationEstimate z_image_activations(const ZImageConfig& config, const ActivationQuery& query,
                                       const AttentionOptions& attention, int64_t materialized_weight_bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_Z_IMAGE_Z_IMAGE_ACTIVATIONS_H_
