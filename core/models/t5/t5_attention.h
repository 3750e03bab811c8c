// The pieces of T5's self-attention that the shared layers
// (core/models/common) do not have: the bidirectional relative-position
// buckets, the per-head bias read from them, and attention with that
// additive bias and no 1/sqrt(d_kv) scaling (T5 folds it into its init).
//
// Not here: the projections, norms and which block owns a bias table
// (t5_model.cc).
#ifndef DIFFUSIOND_CORE_MODELS_T5_T5_ATTENTION_H_
#define DIFFUSIOND_CORE_MODELS_T5_T5_ATTENTION_H_

#include <torch/types.h>

#include <cstdint>

namespace diffusiond {

// Returns transformers' _relative_position_bucket(relative_position,
// bidirectional=True, num_buckets, max_distance) for an int64 tensor of
// relative positions (memory - query), same shape: half the buckets per
// sign (keys after the query in the upper half); |rel| below
// num_buckets / 4 is its own bucket; beyond, the bucket grows with
// log(|rel|) to max_distance and then stays at the last one. Computed with
// upstream's float32 ops, truncation toward zero.
torch::Tensor t5_relative_position_bucket(const torch::Tensor& relative_position, int64_t num_buckets,
                                          int64_t max_distance);

// Returns the [queries, keys] int64 buckets of positions 0..queries-1
// against 0..keys-1, on `device`.
torch::Tensor t5_position_buckets(int64_t queries, int64_t keys, int64_t num_buckets, int64_t max_distance,
                                  torch::Device device);

// Returns bias[h, q, k] = table[buckets[q, k], h] as [heads, queries, keys]
// float32, for `table` [num_buckets, heads] (relative_attention_bias).
torch::Tensor t5_position_bias(const torch::Tensor& table, const torch::Tensor& buckets);

// Returns the additive key mask [batch, 1, keys] float32 for `mask`
// [batch, keys] (nonzero = token): 0 for tokens, float32's lowest value for
// padding, as upstream's (1 - mask) * finfo.min (finite: a query whose keys
// are all padding averages them instead of producing NaN).
torch::Tensor t5_key_bias(const torch::Tensor& mask);

// softmax(q kᵀ + bias + key_bias) v for q, k, v [batch, heads, seq,
// d_kv], `bias` [heads, seq, seq] float32 and `key_bias` [batch, 1, seq]
// float32 or undefined. No scaling. Scores, bias and softmax in float32;
// the probabilities return to v's dtype for the second product. Returns
// [batch, heads, seq, d_kv] in q's dtype. One batch item's scores exist at
// a time.
torch::Tensor t5_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& bias, const torch::Tensor& key_bias);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_T5_T5_ATTENTION_H_
