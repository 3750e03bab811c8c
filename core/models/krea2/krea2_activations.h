// The working memory of one Krea 2 call (activation_estimate.h), from the
// config alone, so it can be asked before a model is loaded (and is what
// Krea2Model::estimate_activations answers). krea2_activations.cc lists
// what is counted.
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ACTIVATIONS_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ACTIVATIONS_H_

#include <cstdint>

#include "core/models/activation_estimate.h"
#include "core/models/common/attention.h"
#include "core/models/krea2/krea2_config.h"

namespace diffusiond {

// Returns the peak bytes of one call of `query` with `config` and
// `attention`, where `materialized_weight_bytes` is the largest weight a
// forward decodes or converts (largest_materialized_weight_bytes).
// query.latent_shape is unpacked [C, H, W] or a Step's item [S,
// in_channels]. A guided Denoise (batch 2) runs two forwards of one item.
ActivationEstimate krea2_activations(const Krea2Config& config, const ActivationQuery& query,
                                     const AttentionOptions& attention, int64_t materialized_weight_bytes);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ACTIVATIONS_H_
