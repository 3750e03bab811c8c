#include "core/models/common/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/torch_compat.h"

namespace diffusiond {

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& key_mask, const AttentionOptions& options) {
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), keys = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  // [batch, 1, 1, keys], broadcast over heads and queries.
  const torch::Tensor mask = key_mask.defined() ? key_mask.view({batch, 1, 1, keys}) : torch::Tensor();
  if (options.prefer_native) {
    if (std::optional<torch::Tensor> out = compat::native_sdpa(q, k, v, mask)) return *out;
  }
  const bool reduced = q.scalar_type() != torch::kFloat32 && q.scalar_type() != torch::kFloat64;
  const int64_t score_bytes = batch * heads * keys * (reduced ? 4 : q.element_size());
  const int64_t chunk = std::max<int64_t>(1, std::min(seq, options.max_scores_bytes / std::max<int64_t>(score_bytes, 1)));
  torch::Tensor bias;
  if (mask.defined()) {
    bias = torch::zeros(mask.sizes(), q.options().dtype(reduced ? torch::kFloat32 : q.scalar_type()))
               .masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  }
  const torch::Tensor kt = k.transpose(-2, -1);
  std::vector<torch::Tensor> outputs;
  for (int64_t first = 0; first < seq; first += chunk) {
    const int64_t n = std::min(chunk, seq - first);
    torch::Tensor scores = torch::matmul(q.narrow(2, first, n), kt);
    if (reduced) scores = scores.to(torch::kFloat32);
    scores.mul_(scale);
    if (bias.defined()) scores.add_(bias);
    // Softmax in place: one score-sized buffer per chunk, not two.
    scores.sub_(std::get<0>(scores.max(-1, /*keepdim=*/true))).exp_();
    scores.div_(scores.sum(-1, /*keepdim=*/true));
    outputs.push_back(torch::matmul(scores.to(v.scalar_type()), v));
  }
  return outputs.size() == 1 ? outputs[0] : torch::cat(outputs, 2);
}

}  // namespace diffusiond
