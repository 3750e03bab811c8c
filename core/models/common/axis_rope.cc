#include "core/models/common/axis_rope.h"

#include <vector>

namespace diffusiond {

std::pair<torch::Tensor, torch::Tensor> axis_rope_tables(const torch::Tensor& positions,
                                                         const std::array<int64_t, 3>& axes_dims, double theta) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(positions.device());
  std::vector<torch::Tensor> cos, sin;
  for (int64_t a = 0; a < 3; ++a) {
    const int64_t d = axes_dims[a];
    const torch::Tensor freqs = 1.0 / torch::pow(theta, torch::arange(0, d, 2, f64) / static_cast<double>(d));
    const torch::Tensor angles = torch::outer(positions.select(1, a), freqs);
    cos.push_back(torch::cos(angles).to(torch::kFloat32));
    sin.push_back(torch::sin(angles).to(torch::kFloat32));
  }
  return {torch::cat(cos, -1), torch::cat(sin, -1)};
}

}  // namespace diffusiond
