#include "core/models/cosmos/cosmos_rope.h"

#include <cmath>
#include <vector>

namespace diffusiond {

std::pair<torch::Tensor, torch::Tensor> cosmos_rope_tables(const CosmosConfig& config, int64_t t, int64_t h,
                                                           int64_t w, torch::Device device) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const std::array<int64_t, 3> dims = config.rope_axes_dims();
  const int64_t sizes[3] = {t, h, w};
  std::vector<torch::Tensor> angles;
  for (int a = 0; a < 3; ++a) {
    const double d = static_cast<double>(dims[a]);
    // Python float arithmetic: the NTK factor and theta in float64.
    const double theta = 10000.0 * std::pow(config.rope_scale[a], d / (d - 2.0));
    const torch::Tensor exponents = torch::arange(0, dims[a], 2, f32) / static_cast<float>(dims[a]);
    const torch::Tensor freqs = 1.0 / torch::pow(theta, exponents);
    const torch::Tensor axis = torch::outer(torch::arange(sizes[a], f32), freqs);  // [n_a, d_a / 2]
    std::vector<int64_t> view = {1, 1, 1, dims[a] / 2};
    view[a] = sizes[a];
    angles.push_back(axis.view(view).expand({t, h, w, dims[a] / 2}));
  }
  const torch::Tensor half = torch::cat(angles, -1).reshape({t * h * w, -1});
  const torch::Tensor freqs = torch::cat({half, half}, -1);
  return {torch::cos(freqs).to(device), torch::sin(freqs).to(device)};
}

}  // namespace diffusiond
