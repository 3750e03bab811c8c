#include "core/models/common/layers.h"

#include <cmath>

namespace diffusiond {

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  const torch::Tensor x32 = x.to(torch::kFloat32);
  const torch::Tensor variance = x32.pow(2).mean(-1, /*keepdim=*/true);
  return (x32 * torch::rsqrt(variance + eps)).to(x.scalar_type()) * weight;
}

torch::Tensor timestep_features(const torch::Tensor& t, int64_t dim, double max_period) {
  const int64_t half = dim / 2;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(t.device());
  const torch::Tensor exponent =
      torch::arange(0, half, f32) * static_cast<float>(-std::log(max_period)) / static_cast<float>(half);
  const torch::Tensor args = t.to(torch::kFloat32).unsqueeze(1) * torch::exp(exponent).unsqueeze(0);
  torch::Tensor features = torch::cat({torch::cos(args), torch::sin(args)}, -1);
  if (dim % 2) features = torch::cat({features, torch::zeros_like(features.narrow(1, 0, 1))}, -1);
  return features;
}

MultiAxisRope::MultiAxisRope(double theta, std::vector<int64_t> axes_dims,
                             std::vector<int64_t> axes_lens)
    : axes_lens_(std::move(axes_lens)) {
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (size_t i = 0; i < axes_dims.size(); ++i) {
    const int64_t d = axes_dims[i];
    const torch::Tensor freqs = 1.0 / torch::pow(theta, torch::arange(0, d, 2, f64) / static_cast<double>(d));
    const torch::Tensor angles = torch::outer(torch::arange(axes_lens_[i], f64), freqs).to(torch::kFloat32);
    cos_.push_back(torch::cos(angles));
    sin_.push_back(torch::sin(angles));
  }
}

std::pair<torch::Tensor, torch::Tensor> MultiAxisRope::lookup(const torch::Tensor& ids) const {
  std::vector<torch::Tensor> cos, sin;
  for (size_t i = 0; i < cos_.size(); ++i) {
    const torch::Tensor index = ids.select(1, static_cast<int64_t>(i));
    cos.push_back(cos_[i].index_select(0, index));
    sin.push_back(sin_[i].index_select(0, index));
  }
  return {torch::cat(cos, -1), torch::cat(sin, -1)};
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto sizes = x.sizes();
  const torch::Tensor pairs = x.to(torch::kFloat32).reshape({sizes[0], sizes[1], sizes[2], -1, 2});
  const torch::Tensor even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
  const torch::Tensor c = cos.unsqueeze(2), s = sin.unsqueeze(2);  // over heads
  const torch::Tensor out = torch::stack({even * c - odd * s, even * s + odd * c}, -1);
  return out.flatten(3).to(x.scalar_type());
}

}  // namespace diffusiond
