// The pieces of Qwen3's self-attention that differ from the shared layers
// (core/models/common): half-split RoPE (transformers' rotate_half, not
// interleaved pairs), the causal-plus-padding mask, and grouped-query
// attention over that full mask.
//
// Not here: the projections and q/k norms (qwen3_model.cc).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_ATTENTION_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_ATTENTION_H_

#include <torch/types.h>

#include <cstdint>
#include <utility>

namespace diffusiond {

// Returns cos and sin, each [seq, head_dim] float32, for positions 0..seq-1:
// inv_freq_j = 1 / theta^(2j / head_dim) and angle = inv_freq * position,
// all in float32 as upstream computes them, the half repeated.
std::pair<torch::Tensor, torch::Tensor> qwen3_rope_tables(double theta, int64_t head_dim,
                                                          int64_t seq);

// Returns x * cos + rotate_half(x) * sin for x [batch, heads, seq, head_dim],
// rotate_half(x) = [-x2, x1] over the halves of head_dim. cos/sin [seq,
// head_dim] are cast to x's dtype first, as upstream does.
torch::Tensor apply_half_split_rope(const torch::Tensor& x, const torch::Tensor& cos,
                                    const torch::Tensor& sin);

// Returns which keys each query may see, [batch, seq, seq] bool: causal
// and, when `key_mask` ([batch, seq] bool, true = token) is defined, only
// token keys. A query that would see no key at all sees every key: what
// transformers' SDPA mask does on torch < 2.5 (it is where the reference
// ran), and a row the pipeline drops anyway. Made on `device`, where
// `key_mask` is too.
torch::Tensor qwen3_attention_mask(const torch::Tensor& key_mask, int64_t batch, int64_t seq,
                                   torch::Device device = torch::kCPU);

// softmax(q kᵀ / sqrt(head_dim), masked by `allowed`) v with q [batch,
// heads, seq, head_dim] and k, v [batch, kv_heads, seq, head_dim]; q head h
// reads kv head h / (heads / kv_heads). Scores and softmax in float32; the
// result [batch, heads, seq, head_dim] in q's dtype. One batch item's
// scores exist at a time.
torch::Tensor grouped_query_attention(const torch::Tensor& q, const torch::Tensor& k,
                                      const torch::Tensor& v, const torch::Tensor& allowed);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_ATTENTION_H_
