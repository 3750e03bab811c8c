// Cosmos' 3-D rotary embedding (CosmosRotaryPosEmbed for images): head_dim
// split t | h | w (h = w = head_dim / 6 * 2), each axis with its own NTK
// base 10000 * rope_scale[a] ^ (d_a / (d_a - 2)), the table laid out
// [t | h | w | t | h | w] for rotate-half (applied by
// common/qwen_attention.h's apply_half_split_rope, at float32 as upstream's
// apply_rotary_emb computes it).
//
// Positions: upstream slices arange(max(max_size / patch)) = arange(128),
// so a grid side above 128 tokens (an image above 2048 px) fails there.
// These tables take arange(n) for the grid's own n instead: the same
// float32 products for n <= 128, continued past it (the model extrapolates
// there as its NTK scaling intends), bounded only by kCosmosMaxPositions.
//
// Not here: the attention around it (cosmos_model.cc).
#ifndef DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_ROPE_H_
#define DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_ROPE_H_

#include <torch/types.h>

#include <cstdint>
#include <utility>

#include "core/models/cosmos/cosmos_config.h"

namespace diffusiond {

// The most tokens along one axis a forward takes (16384 px per side at the
// VAE's 8 and patch 2): bounds what one call may ask the tables for.
inline constexpr int64_t kCosmosMaxPositions = 1024;

// Returns cos and sin, each [t * h * w, head_dim] float32 on `device`, for
// the token grid t x h x w (row-major), as upstream computes them:
// freq_j = 1 / theta_a ^ (2j / d_a) in float32 (theta_a a float64 scalar
// raised to float32 exponents), angle = position * freq in float32.
// REQUIRES: config.validate() passed; each side in [1, kCosmosMaxPositions].
std::pair<torch::Tensor, torch::Tensor> cosmos_rope_tables(const CosmosConfig& config, int64_t t, int64_t h,
                                                           int64_t w, torch::Device device = torch::kCPU);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COSMOS_COSMOS_ROPE_H_
