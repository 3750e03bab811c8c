// T5Encoder as a text encoder: TextEncoder::encode and its activation
// estimate.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/models/activation_estimate.h"
#include "core/models/t5/t5_model.h"
#include "core/models/text_encoder_activations.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<EncodedText> T5Encoder::encode(const TextEncoding& request) const {
  return encode_hidden_states(request, [this](const torch::Tensor& ids, const torch::Tensor& mask, int64_t layer) {
    return hidden_states(ids, mask, layer);
  });
}

// Mirrors the allocations of run(), block() and t5_attention(); keep them
// in step.
int64_t T5Encoder::encode_activation_bytes(int64_t tokens) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  return text_encode_activation_bytes(config_, dtype, tokens, largest_materialized_weight_bytes(weights(), dtype));
}

int64_t text_encode_activation_bytes(const T5Config& c, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes) {
  const double e = static_cast<double>(torch::elementSize(dtype));
  const bool reduced = dtype != torch::kFloat32;
  const double L = static_cast<double>(std::max<int64_t>(tokens, 1));
  const double D = static_cast<double>(c.d_model), I = static_cast<double>(c.inner_dim());
  const double F = static_cast<double>(c.d_ff);
  const double scores = static_cast<double>(c.num_heads) * L * L;  // elements of one [heads, L, L]
  // Alive through the forward: the int64 buckets, and T5's shared bias.
  const double buckets = L * L * 8, bias = scores * 4;
  const double shared = c.umt5 ? 0 : bias;
  // Attention of one item: the incoming and the normed state, q, k, v, the
  // output and its reshaped copy; the bias; the float32 scores beside their
  // softmax, and at a reduced dtype the product before conversion and the
  // probabilities converted back.
  const double attention = L * e * (2 * D + 5 * I) + bias + scores * (8 + (reduced ? 2 * e : 0));
  // Feed-forward: the incoming and new state, the normed input, wi_0's
  // output beside its GELU and wi_1's output, wo's output.
  const double ffn = shared + L * e * (4 * D + 3 * F);
  // A norm at a reduced dtype works in float32: the upcast, its square and
  // the scaled result.
  const double norm = shared + L * e * 2 * D + (reduced ? L * D * 12 : 0);
  const double weight = static_cast<double>(materialized_weight_bytes);
  const double tensors = buckets + std::max({attention, ffn, norm}) + weight;
  const double total = tensors + static_cast<double>(activation_allocator_slack_bytes(tensors));
  return total >= static_cast<double>(std::numeric_limits<int64_t>::max())
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(total);
}

}  // namespace diffusiond
