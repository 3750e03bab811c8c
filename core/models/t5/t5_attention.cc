#include "core/models/t5/t5_attention.h"

#include <cmath>
#include <limits>

namespace diffusiond {

torch::Tensor t5_relative_position_bucket(const torch::Tensor& relative_position, int64_t num_buckets,
                                          int64_t max_distance) {
  // Each op as upstream writes it, so the float32 rounding at bucket
  // edges is the same.
  const int64_t half = num_buckets / 2;
  const torch::Tensor upper = relative_position.gt(0).to(torch::kInt64) * half;
  const torch::Tensor n = relative_position.abs();
  const int64_t max_exact = half / 2;
  const torch::Tensor is_small = n.lt(max_exact);
  const double log_range = std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact));
  torch::Tensor large =
      max_exact + (torch::log(n.to(torch::kFloat32) / max_exact) / log_range * (half - max_exact)).to(torch::kInt64);
  large = torch::min(large, torch::full_like(large, half - 1));
  return upper + torch::where(is_small, n, large);
}

torch::Tensor t5_position_buckets(int64_t queries, int64_t keys, int64_t num_buckets, int64_t max_distance,
                                  torch::Device device) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const torch::Tensor relative = torch::arange(keys, i64).unsqueeze(0) - torch::arange(queries, i64).unsqueeze(1);
  return t5_relative_position_bucket(relative, num_buckets, max_distance);
}

torch::Tensor t5_position_bias(const torch::Tensor& table, const torch::Tensor& buckets) {
  // The table transposed to [heads, num_buckets] (a few KiB), then one
  // gather straight into the result: no [q, k, heads] intermediate.
  const int64_t heads = table.size(1);
  return table.t()
      .to(torch::kFloat32)
      .contiguous()
      .index_select(1, buckets.reshape({-1}))
      .view({heads, buckets.size(0), buckets.size(1)});
}

torch::Tensor t5_key_bias(const torch::Tensor& mask) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(mask.device());
  const torch::Tensor padding = mask.eq(0).unsqueeze(1);
  return torch::zeros(padding.sizes(), f32).masked_fill_(padding, std::numeric_limits<float>::lowest());
}

torch::Tensor t5_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& bias, const torch::Tensor& key_bias) {
  torch::Tensor out = torch::empty_like(q);
  for (int64_t b = 0; b < q.size(0); ++b) {
    torch::Tensor scores = torch::matmul(q[b], k[b].transpose(-2, -1)).to(torch::kFloat32);
    scores.add_(bias);
    if (key_bias.defined()) scores.add_(key_bias[b]);
    const torch::Tensor probs = torch::softmax(scores, -1).to(v.scalar_type());
    out[b].copy_(torch::matmul(probs, v[b]));
  }
  return out;
}

}  // namespace diffusiond
