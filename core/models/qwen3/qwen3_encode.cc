// Qwen3Model as a text encoder: TextEncoder::encode and its activation
// estimate.
#include <algorithm>

#include "core/models/activation_estimate.h"
#include "core/models/qwen3/qwen3_model.h"
#include "core/models/text_encoder_activations.h"
#include "core/util/exception_status.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<EncodedText> Qwen3Model::encode(const TextEncoding& request) const {
  return encode_hidden_states(request, [this](const torch::Tensor& ids, const torch::Tensor& mask, int64_t layer) {
    return hidden_states(ids, mask, layer);
  });
}

int64_t Qwen3Model::encode_activation_bytes(int64_t tokens) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  return text_encode_activation_bytes(config_, dtype, tokens, largest_materialized_weight_bytes(weights(), dtype));
}

int64_t text_encode_activation_bytes(const Qwen3Config& c, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes) {
  const int64_t element = torch::elementSize(dtype);
  // Live at a layer's peak: the residual stream and its norm, q/k/v and
  // the attention output, the MLP's gate and up halves, one upcast weight,
  // and the float32 scores and probabilities of every head. The upcast is
  // an MLP weight decoded from FP8, or whatever weight is stored otherwise
  // than `dtype`: with narrow weights (bf16 kept under float32) that is the
  // embedding table, which torch::embedding upcasts whole at each encode
  // (Qwen3-4B's: 389 M values, 1.56 GB at float32).
  const int64_t qkv = (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim;
  const int64_t per_token = element * (3 * c.hidden_size + qkv + c.num_attention_heads * c.head_dim +
                                       2 * c.intermediate_size);
  const int64_t largest_weight = std::max(element * c.hidden_size * c.intermediate_size, materialized_weight_bytes);
  const int64_t scores = 2 * 4 * c.num_attention_heads * tokens * tokens;
  const int64_t tensors = tokens * per_token + largest_weight + scores;
  return tensors + activation_allocator_slack_bytes(static_cast<double>(tensors));
}

}  // namespace diffusiond
