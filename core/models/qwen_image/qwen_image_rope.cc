#include "core/models/qwen_image/qwen_image_rope.h"

#include <algorithm>
#include <string>
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

absl::StatusOr<QwenImageRope> qwen_image_rope(const std::array<int64_t, 3>& axes_dims,
                                              const std::vector<QwenImageShape>& img_shapes, int64_t text_len) {
  // Upstream slices its 4096-row tables: beyond them it would silently
  // return fewer rows than tokens.
  const auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("Qwen-Image RoPE: ", why, " (positions run from -",
                                                   kQwenImageRopePositions, " to ", kQwenImageRopePositions - 1, ")"));
  };
  if (img_shapes.empty()) return refuse("no image shape");
  if (text_len < 0) return refuse("a negative text length");
  std::vector<torch::Tensor> f, r, c;
  int64_t text_start = 0;
  for (size_t k = 0; k < img_shapes.size(); ++k) {
    const auto [frames, rows, cols] = img_shapes[k];
    const int64_t entry = static_cast<int64_t>(k);
    if (frames < 1 || rows < 1 || cols < 1 || entry + frames > kQwenImageRopePositions ||
        rows > kQwenImageRopePositions || cols > kQwenImageRopePositions) {
      return refuse(absl::StrCat("image ", k, " of ", frames, " x ", rows, " x ", cols, " patches"));
    }
    const std::vector<int64_t> grid = {frames, rows, cols};
    f.push_back((torch::arange(frames, kQwenRopeF32) + static_cast<float>(entry)).view({frames, 1, 1}).expand(grid));
    r.push_back(
        (torch::arange(rows, kQwenRopeF32) - static_cast<float>(rows - rows / 2)).view({1, rows, 1}).expand(grid));
    c.push_back(
        (torch::arange(cols, kQwenRopeF32) - static_cast<float>(cols - cols / 2)).view({1, 1, cols}).expand(grid));
    text_start = std::max({text_start, rows / 2, cols / 2});
  }
  if (text_start + text_len > kQwenImageRopePositions) {
    return refuse(absl::StrCat(text_len, " text tokens after position ", text_start));
  }
  const auto flat = [](const std::vector<torch::Tensor>& parts) {
    std::vector<torch::Tensor> rows;
    for (const torch::Tensor& p : parts) rows.push_back(p.reshape({-1}));
    return torch::cat(rows);
  };
  QwenImageRope rope;
  std::tie(rope.img_cos, rope.img_sin) = qwen_rope_tables({flat(f), flat(r), flat(c)}, axes_dims);
  const torch::Tensor t = torch::arange(text_len, kQwenRopeF32) + static_cast<float>(text_start);
  std::tie(rope.txt_cos, rope.txt_sin) = qwen_rope_tables({t, t, t}, axes_dims);
  return rope;
}

}  // namespace diffusiond
