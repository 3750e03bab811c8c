// Qwen-Image's rotary position tables (upstream's QwenEmbedRope with
// scale_rope): image positions centred on the latent grid, text positions
// after the image's on all three axes.
//
// Not here: applying the rotation (core/models/common/layers.h
// norm_rope_heads, interleaved pairs in float32, as upstream's complex
// multiply).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_ROPE_H_
#define DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_ROPE_H_

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace diffusiond {

// RoPE theta of QwenEmbedRope (hard-coded upstream).
inline constexpr double kQwenImageRopeTheta = 10000.0;
// Upstream's tables hold positions -4096 .. 4095 per axis.
inline constexpr int64_t kQwenImageRopePositions = 4096;

// One entry of upstream's img_shapes: (frames, rows, cols) of patches.
using QwenImageShape = std::array<int64_t, 3>;

// cos and sin, each [tokens, head_dim / 2] float32 on the CPU, one row per
// token; columns are the frame, height and width axes' slices in that order.
struct QwenImageRope {
  torch::Tensor img_cos, img_sin;  // every entry's frames * rows * cols tokens, row-major, in order
  torch::Tensor txt_cos, txt_sin;  // text_len tokens
};

// The tables for the images of one item (`img_shapes`: the generated image,
// then any reference images of an edit) and a text of `text_len` tokens
// (the padded length: a mask removes keys, not positions). Token (f, r, c)
// of entry k sits at (k + f, r − ceil(rows/2), c − ceil(cols/2)); text
// token i at max over the entries of max(rows/2, cols/2), plus i, on every
// axis (integer halves). For axis a of d_a channels, pair j turns by pos ·
// 10000^(−2j/d_a), with the frequency and the angle rounded to float32 as
// upstream computes them. INVALID_ARGUMENT for an empty or non-positive
// entry or a position outside upstream's tables. REQUIRES: each axes_dims
// entry is even and positive.
absl::StatusOr<QwenImageRope> qwen_image_rope(const std::array<int64_t, 3>& axes_dims,
                                              const std::vector<QwenImageShape>& img_shapes, int64_t text_len);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN_IMAGE_QWEN_IMAGE_ROPE_H_
