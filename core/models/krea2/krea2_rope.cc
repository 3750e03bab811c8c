#include "core/models/krea2/krea2_rope.h"

#include <vector>

namespace diffusiond {

torch::Tensor krea2_position_ids(int64_t text_len, int64_t rows, int64_t cols) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  torch::Tensor image = torch::zeros({rows, cols, 3}, f32);
  image.select(2, 1).copy_(torch::arange(rows, f32).view({rows, 1}).expand({rows, cols}));
  image.select(2, 2).copy_(torch::arange(cols, f32).view({1, cols}).expand({rows, cols}));
  return torch::cat({torch::zeros({text_len, 3}, f32), image.view({rows * cols, 3})}, 0);
}

std::pair<torch::Tensor, torch::Tensor> krea2_rope(const torch::Tensor& position_ids,
                                                   const std::array<int64_t, 3>& axes_dims, double theta) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  // Upstream takes ids.float() first: positions are float32 values.
  const torch::Tensor pos = position_ids.to(torch::kCPU).to(torch::kFloat32).to(torch::kFloat64);
  std::vector<torch::Tensor> cos, sin;
  for (int a = 0; a < 3; ++a) {
    const int64_t d = axes_dims[a];
    const torch::Tensor freqs = 1.0 / torch::pow(theta, torch::arange(0, d, 2, f64) / static_cast<double>(d));
    const torch::Tensor angles = torch::outer(pos.select(1, a), freqs);
    cos.push_back(torch::cos(angles).to(torch::kFloat32));
    sin.push_back(torch::sin(angles).to(torch::kFloat32));
  }
  return {torch::cat(cos, -1), torch::cat(sin, -1)};
}

}  // namespace diffusiond
