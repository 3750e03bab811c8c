#include "core/models/qwen_image/qwen_image_rope.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"

namespace diffusiond {
namespace {

const auto kQwenRopeF32 = torch::TensorOptions().dtype(torch::kFloat32);

// cos and sin of pos[a] ⊗ freq_a per axis, joined along the columns.
// Upstream: torch.outer(int64 index, float32 1 / theta^(arange(0, d, 2) /
// d)), then torch.polar -- every step in float32.
std::pair<torch::Tensor, torch::Tensor> qwen_rope_tables(const std::array<torch::Tensor, 3>& pos,
                                                         const std::array<int64_t, 3>& axes_dims) {
  std::vector<torch::Tensor> cos, sin;
  for (int a = 0; a < 3; ++a) {
    const int64_t d = axes_dims[a];
    const torch::Tensor freqs = 1.0f / torch::pow(kQwenImageRopeTheta, torch::arange(0, d, 2, kQwenRopeF32).div(d));
    const torch::Tensor angles = torch::outer(pos[a], freqs);
    cos.push_back(torch::cos(angles));
    sin.push_back(torch::sin(angles));
  }
  return {torch::cat(cos, -1), torch::cat(sin, -1)};
}

}  // namespace

absl::StatusOr<QwenImageRope> qwen_image_rope(const std::array<int64_t, 3>& axes_dims, int64_t frames, int64_t rows,
                                              int64_t cols, int64_t text_len) {
  const int64_t text_start = std::max(rows / 2, cols / 2);
  // Upstream slices its 4096-row tables: beyond them it would silently
  // return fewer rows than tokens.
  if (frames < 1 || rows < 1 || cols < 1 || text_len < 0 || frames > kQwenImageRopePositions ||
      rows > kQwenImageRopePositions || cols > kQwenImageRopePositions ||
      text_start + text_len > kQwenImageRopePositions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Qwen-Image RoPE: an image of ", frames, " x ", rows, " x ", cols, " patches with ", text_len,
        " text tokens is outside the position tables (text ends at max(rows/2, cols/2) + text length, at most ",
        kQwenImageRopePositions, ")"));
  }
  const int64_t n = frames * rows * cols;
  const torch::Tensor f = torch::arange(frames, kQwenRopeF32).view({frames, 1, 1}).expand({frames, rows, cols});
  const torch::Tensor r = (torch::arange(rows, kQwenRopeF32) - static_cast<float>(rows - rows / 2))
                              .view({1, rows, 1})
                              .expand({frames, rows, cols});
  const torch::Tensor c = (torch::arange(cols, kQwenRopeF32) - static_cast<float>(cols - cols / 2))
                              .view({1, 1, cols})
                              .expand({frames, rows, cols});
  QwenImageRope rope;
  std::tie(rope.img_cos, rope.img_sin) = qwen_rope_tables({f.reshape({n}), r.reshape({n}), c.reshape({n})}, axes_dims);
  const torch::Tensor t = torch::arange(text_len, kQwenRopeF32) + static_cast<float>(text_start);
  std::tie(rope.txt_cos, rope.txt_sin) = qwen_rope_tables({t, t, t}, axes_dims);
  return rope;
}

}  // namespace diffusiond
