// The multi-axis rotary tables of the FLUX-style transformers (FLUX,
// Krea 2): each token's 3-axis position turns the head's axes_dims_rope
// slices, as upstream's get_1d_rotary_pos_embed(freqs_dtype=float64) per
// axis, concatenated.
//
// Not here: where the positions come from (each model's *_rope.h) and
// applying the rotation (core/models/common/layers.h norm_rope_heads).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_AXIS_ROPE_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_AXIS_ROPE_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <utility>

namespace diffusiond {

// Returns cos and sin, each [n, sum(axes_dims) / 2] float32 on the device of
// `positions`, a float64 [n, 3]: for axis a with d_a channels, pair j of its
// slice turns by positions[a] * theta^(-2j / d_a), frequencies, angles and
// cos/sin in float64, rounded to float32 afterwards. REQUIRES: positions is
// float64 [n, 3]; each d_a is even and positive.
std::pair<torch::Tensor, torch::Tensor> axis_rope_tables(const torch::Tensor& positions,
                                                         const std::array<int64_t, 3>& axes_dims, double theta);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_AXIS_ROPE_H_
