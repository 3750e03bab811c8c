#include "core/models/common/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/onednn_cpu.h"
#include "kernels/torch_compat.h"

namespace diffusiond {

namespace {

// The queries the CPU kernels take at a time: float32 score rows that stay
// in cache, within the scores' cap.
int64_t scores_chunk_rows(int64_t keys, int64_t queries, const AttentionOptions& options) {
  const int64_t row_bytes = keys * static_cast<int64_t>(sizeof(float));
  const int64_t budget = std::min(options.max_scores_bytes, options.cache_scores_bytes);
  return std::max<int64_t>(1, std::min(queries, budget / std::max<int64_t>(row_bytes, 1)));
}

// One head at a time, its queries in chunks whose scores stay in cache:
// scale folded into the first product (BLAS alpha), the mask as the
// product's initial value, softmax in place, the second product written
// straight into the output. Every operand is a contiguous 2-D slice.
torch::Tensor attention_float32_cpu(const torch::Tensor& q_in, const torch::Tensor& k_in,
                                    const torch::Tensor& v_in, const torch::Tensor& key_mask,
                                    double scale, const AttentionOptions& options) {
  const torch::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), keys = k.size(2);
  const int64_t chunk = scores_chunk_rows(keys, seq, options);
  torch::Tensor out = torch::empty({batch, heads, seq, v.size(3)}, q.options());
  torch::Tensor scores = torch::empty({chunk, keys}, q.options());
  for (int64_t b = 0; b < batch; ++b) {
    torch::Tensor bias;
    if (key_mask.defined()) {
      bias = torch::zeros({1, keys}, q.options())
                 .masked_fill(key_mask[b].logical_not().view({1, keys}), -std::numeric_limits<double>::infinity());
    }
    for (int64_t h = 0; h < heads; ++h) {
      const torch::Tensor qh = q[b][h], kt = k[b][h].t(), vh = v[b][h], oh = out[b][h];
      for (int64_t first = 0; first < seq; first += chunk) {
        const int64_t n = std::min(chunk, seq - first);
        torch::Tensor s = scores.narrow(0, 0, n);
        if (bias.defined()) {
          torch::addmm_out(s, bias.expand({n, keys}), qh.narrow(0, first, n), kt, /*beta=*/1, /*alpha=*/scale);
        } else {
          torch::addmm_out(s, s, qh.narrow(0, first, n), kt, /*beta=*/0, /*alpha=*/scale);
        }
        at::_softmax_out(s, s, -1, /*half_to_float=*/false);
        torch::Tensor o = oh.narrow(0, first, n);
        torch::mm_out(o, s, vh);
      }
    }
  }
  return out;
}

// Whether attention() takes a CPU kernel of its own: CPU inputs, all float32
// or all bfloat16.
bool cpu_kernel_path(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const torch::ScalarType t = q.scalar_type();
  return q.device().is_cpu() && (t == torch::kFloat32 || t == torch::kBFloat16) && k.scalar_type() == t &&
         v.scalar_type() == t;
}

}  // namespace

bool admits_every_key(const torch::Tensor& key_mask) {
  return key_mask.defined() && key_mask.to(torch::kBool).all().item<bool>();
}

torch::Tensor without_host_mask_admitting_every_key(const torch::Tensor& key_mask) {
  return key_mask.defined() && key_mask.device().is_cpu() && admits_every_key(key_mask) ? torch::Tensor() : key_mask;
}

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& key_mask_in, const AttentionOptions& options) {
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), keys = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  // [batch, 1, 1, keys], broadcast over heads and queries.
  if (options.prefer_native) {
    const torch::Tensor native_mask =
        key_mask_in.defined() ? key_mask_in.view({batch, 1, 1, keys}) : torch::Tensor();
    if (std::optional<torch::Tensor> out = compat::native_sdpa(q, k, v, native_mask)) return *out;
  }
  // A mask that admits every key is no mask (a batch of one, equal lengths).
  // Asked only here: reading it back would stall a device's queue.
  const torch::Tensor key_mask = admits_every_key(key_mask_in) ? torch::Tensor() : key_mask_in;
  if (cpu_kernel_path(q, k, v)) {
    if (q.scalar_type() == torch::kFloat32) return attention_float32_cpu(q, k, v, key_mask, scale, options);
    // bf16 on a CPU with native bf16 products: both products at bf16
    // through oneDNN, the scores and softmax float32.
    if (have_onednn_bf16()) {
      return onednn_bf16_attention(q, k, v, key_mask, scale, scores_chunk_rows(keys, seq, options));
    }
    // Elsewhere: the inputs widened (seq × head_dim each), the float32
    // kernel, the output rounded once. The generic path below would convert
    // every score (seq² per head) to float32 and back, and libtorch 1.13's
    // bf16 bmm does not reach oneDNN: 3-4× the time.
    return attention_float32_cpu(q.to(torch::kFloat32), k.to(torch::kFloat32), v.to(torch::kFloat32), key_mask, scale,
                                 options)
        .to(q.scalar_type());
  }
  const torch::Tensor mask = key_mask.defined() ? key_mask.view({batch, 1, 1, keys}) : torch::Tensor();
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

// Mirrors the path choice and the allocations of attention() above; keep
// the two in step.
int64_t attention_scratch_bytes(const AttentionShape& a, torch::ScalarType dtype, bool device_is_cpu,
                                const AttentionOptions& options) {
  const int64_t element = static_cast<int64_t>(torch::elementSize(dtype));
  if (options.prefer_native && compat::kHaveSdpa) return a.batch * a.heads * a.queries * 4;
  const int64_t mask_bytes = a.batch * a.keys * (1 + 4);  // the negated mask and its float bias
  if (device_is_cpu && (dtype == torch::kFloat32 || dtype == torch::kBFloat16)) {
    const int64_t chunk = scores_chunk_rows(a.keys, a.queries, options);
    const int64_t scores = chunk * a.keys * 4;
    if (dtype == torch::kFloat32) return scores + mask_bytes;
    // bf16 through oneDNN: the chunk's probabilities rounded to bf16 beside
    // its float32 scores.
    if (have_onednn_bf16()) return scores + chunk * a.keys * 2 + mask_bytes;
    // bf16 widened: q, k and v in float32, and the float32 output before it
    // is rounded.
    return scores + mask_bytes + a.batch * a.heads * (2 * a.queries + 2 * a.keys) * a.head_dim * 4;
  }
  const bool reduced = dtype != torch::kFloat32 && dtype != torch::kFloat64;
  const int64_t score_bytes = a.batch * a.heads * a.keys * (reduced ? 4 : element);
  const int64_t chunk =
      std::max<int64_t>(1, std::min(a.queries, options.max_scores_bytes / std::max<int64_t>(score_bytes, 1)));
  const int64_t scores = a.batch * a.heads * chunk * a.keys * (reduced ? 4 + element : element);
  const int64_t query_chunk = a.batch * a.heads * chunk * a.head_dim * element;
  // More than one chunk: the chunks' outputs, then their concatenation.
  const int64_t outputs = chunk < a.queries ? a.batch * a.heads * a.queries * a.head_dim * element : 0;
  return scores + query_chunk + outputs + mask_bytes;
}

}  // namespace diffusiond
