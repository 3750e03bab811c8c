#include "core/models/qwen3/qwen3_attention.h"

#include <cmath>
#include <limits>

namespace diffusiond {

std::pair<torch::Tensor, torch::Tensor> qwen3_rope_tables(double theta, int64_t head_dim,
                                                          int64_t seq) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor exponents =
      torch::arange(0, head_dim, 2, torch::TensorOptions().dtype(torch::kInt64)).to(torch::kFloat32) /
      static_cast<float>(head_dim);
  const torch::Tensor inv_freq = 1.0 / torch::pow(theta, exponents);
  // One product per angle: the same float32 rounding as upstream's matmul
  // over a dimension of one.
  const torch::Tensor angles = torch::outer(torch::arange(seq, f32), inv_freq);
  const torch::Tensor emb = torch::cat({angles, angles}, -1);
  return {emb.cos(), emb.sin()};
}

torch::Tensor apply_half_split_rope(const torch::Tensor& x, const torch::Tensor& cos,
                                    const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.to(x.scalar_type()) + rotated * sin.to(x.scalar_type());
}

torch::Tensor qwen3_attention_mask(const torch::Tensor& key_mask, int64_t batch, int64_t seq, torch::Device device) {
  torch::Tensor allowed = torch::ones({seq, seq}, torch::TensorOptions().dtype(torch::kBool).device(device))
                              .tril()
                              .expand({batch, seq, seq});
  if (key_mask.defined()) allowed = allowed.logical_and(key_mask.to(torch::kBool).view({batch, 1, seq}));
  const torch::Tensor sees_nothing = allowed.logical_not().all(-1, /*keepdim=*/true);
  return allowed.logical_or(sees_nothing);
}

torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, const torch::Tensor& allowed) {
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), hd = q.size(3);
  const int64_t kv_heads = k.size(1), group = heads / kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  torch::Tensor out = torch::empty_like(q);
  for (int64_t b = 0; b < batch; ++b) {
    // [kv_heads, group, seq, hd] against [kv_heads, 1, seq, hd]: the kv
    // heads broadcast over their group instead of being repeated.
    const torch::Tensor qb = q[b].reshape({kv_heads, group, seq, hd});
    const torch::Tensor kb = k[b].unsqueeze(1), vb = v[b].unsqueeze(1);
    torch::Tensor scores = torch::matmul(qb, kb.transpose(-2, -1)).mul_(scale).to(torch::kFloat32);
    scores.masked_fill_(allowed[b].logical_not(), -std::numeric_limits<float>::infinity());
    const torch::Tensor probs = torch::softmax(scores, -1).to(v.scalar_type());
    out[b].copy_(torch::matmul(probs, vb).reshape({heads, seq, hd}));
  }
  return out;
}

}  // namespace diffusiond
