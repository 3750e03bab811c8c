// Krea 2's rotary positions: the pipeline's position ids for a [text |
// image] sequence and the Flux-style multi-axis cos/sin tables over them
// (Krea2RotaryPosEmbed).
//
// Not here: applying the rotation (core/models/common/layers.h
// norm_rope_heads, interleaved pairs in float32, as upstream's
// apply_rotary_emb with real cos/sin).
#ifndef DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ROPE_H_
#define DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ROPE_H_

#include <torch/types.h>

#include <array>
#include <cstdint>

namespace diffusiond {

// Krea2Pipeline.prepare_position_ids: [text_len + rows * cols, 3] float32,
// text rows (0, 0, 0) first, then image token (r, c) of the 2x2-patch grid,
// row-major, at (0, r, c) -- not centred.
torch::Tensor krea2_position_ids(int64_t text_len, int64_t rows, int64_t cols);

// cos and sin, each [n, head_dim / 2] float32 on the CPU, for position ids
// [n, 3] (any real dtype, on any device): per axis a of d_a channels, pair j
// turns by float32(pos_a) * theta^(-2j/d_a), the frequency and the angle in
// float64 and cos/sin rounded to float32 afterwards, as upstream's
// get_1d_rotary_pos_embed(freqs_dtype=float64). Columns are the axes'
// slices in order. REQUIRES: position_ids is [n, 3]; each axes_dims entry
// is even and positive.
std::pair<torch::Tensor, torch::Tensor> krea2_rope(const torch::Tensor& position_ids,
                                                   const std::array<int64_t, 3>& axes_dims, double theta);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_KREA2_KREA2_ROPE_H_
