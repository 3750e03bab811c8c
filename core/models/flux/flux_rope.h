// FLUX's rotary position tables (FluxPosEmbed): one row per token from its
// 3-axis position id, the head split into axes_dims_rope slices.
//
// Not here: applying the rotation (core/models/common/layers.h
// norm_rope_heads, interleaved pairs in float32).
#ifndef DIFFUSIOND_CORE_MODELS_FLUX_FLUX_ROPE_H_
#define DIFFUSIOND_CORE_MODELS_FLUX_FLUX_ROPE_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <utility>

namespace diffusiond {

// RoPE theta of FluxPosEmbed (hard-coded upstream).
inline constexpr double kFluxRopeTheta = 10000.0;

// Returns cos and sin, each [n, head_dim / 2] float32, for ids [n, 3] of any
// dtype (positions need not be integers). For axis a with d_a channels,
// pair j of its slice turns by id[a] * theta^(-2j / d_a): frequencies and
// angles in float64, cos and sin taken in float64 and rounded to float32, as
// upstream. REQUIRES: ids is [n, 3]; each d_a is even.
std::pair<torch::Tensor, torch::Tensor> flux_rope_tables(const torch::Tensor& ids,
                                                         const std::array<int64_t, 3>& axes_dims,
                                                         double theta = kFluxRopeTheta);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_FLUX_FLUX_ROPE_H_
