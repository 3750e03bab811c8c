#include "core/models/common/qwen_attention.h"

#include <cmath>
#include <limits>
#include <vector>

namespace diffusiond {

torch::Tensor mrope_rows(int64_t head_dim, const MropeLayout& layout) {
  const int64_t half = head_dim / 2;
  const std::array<int64_t, 3>& s = layout.sections;
  std::vector<int64_t> rows(static_cast<size_t>(half), 0);
  if (s[0] + s[1] + s[2] > 0) {
    for (int64_t j = 0; j < half; ++j) {
      int64_t row = 0;
      if (layout.interleaved) {
        if (j % 3 == 1 && j < 3 * s[1]) row = 1;
        if (j % 3 == 2 && j < 3 * s[2]) row = 2;
      } else {
        row = j < s[0] ? 0 : j < s[0] + s[1] ? 1 : 2;
      }
      rows[static_cast<size_t>(j)] = row;
    }
  }
  return torch::tensor(rows, torch::kInt64);
}

std::pair<torch::Tensor, torch::Tensor> qwen_rope_tables(double theta, int64_t head_dim, const torch::Tensor& positions,
                                                         const MropeLayout& layout) {
  const torch::Tensor exponents =
      torch::arange(0, head_dim, 2, torch::TensorOptions().dtype(torch::kInt64)).to(torch::kFloat32) /
      static_cast<float>(head_dim);
  const torch::Tensor inv_freq = 1.0 / torch::pow(theta, exponents);
  const torch::Tensor rows3 = positions.dim() == 2 ? positions.unsqueeze(0).expand({3, -1, -1}) : positions;
  // One product per angle: the same float32 rounding as upstream's matmul
  // over a dimension of one. [3, B, L, head_dim / 2].
  const torch::Tensor freqs = rows3.to(torch::kFloat32).unsqueeze(-1) * inv_freq;
  const torch::Tensor rows = mrope_rows(head_dim, layout);
  torch::Tensor angles = freqs[0];
  for (int64_t r = 1; r < 3; ++r) angles = torch::where(rows.eq(r), freqs[r], angles);
  const torch::Tensor emb = torch::cat({angles, angles}, -1);
  return {emb.cos(), emb.sin()};
}

torch::Tensor apply_half_split_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const torch::Tensor rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.to(x.scalar_type()) + rotated * sin.to(x.scalar_type());
}

torch::Tensor qwen_attention_mask(const torch::Tensor& key_mask, int64_t batch, int64_t seq, torch::Device device) {
  torch::Tensor allowed = torch::ones({seq, seq}, torch::TensorOptions().dtype(torch::kBool).device(device))
                              .tril()
                              .expand({batch, seq, seq});
  if (key_mask.defined()) allowed = allowed.logical_and(key_mask.to(torch::kBool).view({batch, 1, seq}));
  const torch::Tensor sees_nothing = allowed.logical_not().all(-1, /*keepdim=*/true);
  return allowed.logical_or(sees_nothing);
}

torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& allowed) {
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
