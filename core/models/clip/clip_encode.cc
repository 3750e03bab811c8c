// ClipTextModel as a text encoder: TextEncoder::encode and its activation
// estimate.
#include <algorithm>

#include "core/models/activation_estimate.h"
#include "core/models/clip/clip_model.h"
#include "core/models/text_encoder_activations.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<EncodedText> ClipTextModel::encode(const TextEncoding& request) const {
  DIFFUSIOND_ASSIGN_OR_RETURN(Tokens tokens, tokenize(request));
  const torch::Tensor mask = request.attend_to_padding ? torch::Tensor() : tokens.attention_mask;
  DIFFUSIOND_ASSIGN_OR_RETURN(ClipTextOutputs out, forward(tokens.input_ids, mask, request.hidden_layer));
  EncodedText encoded;
  encoded.hidden_states = out.hidden_state[0];
  encoded.attention_mask = tokens.attention_mask[0].ne(0);
  encoded.pooled = (config_.with_projection ? out.text_embeds : out.pooler_output)[0];
  encoded.tokens = tokens.count;
  return encoded;
}

int64_t ClipTextModel::encode_activation_bytes(int64_t tokens) const {
  const torch::ScalarType dtype = compute_dtype(*this);
  return text_encode_activation_bytes(config_, dtype, tokens, largest_materialized_weight_bytes(weights(), dtype));
}

int64_t text_encode_activation_bytes(const ClipTextConfig& c, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes) {
  // More positions than the table holds are refused before the forward.
  const double l = static_cast<double>(std::clamp<int64_t>(tokens, 1, c.max_position_embeddings));
  const double e = static_cast<double>(torch::elementSize(dtype));
  const double d = static_cast<double>(c.hidden_size), ff = static_cast<double>(c.intermediate_size);
  const double heads = static_cast<double>(c.num_attention_heads);
  // Through the whole forward: the residual stream and the next one, the
  // hidden state kept for the caller, and the key mask with its
  // intermediates (bool [L, L], a few of them).
  const double resident = 3 * l * d * e + 4 * l * l;
  // A layer's attention: the norm's output, q, k and v, contiguous copies
  // of q and k for the product, its output, the reshaped copy and the
  // projection; the scores at the compute dtype, then in float32, the
  // float32 probabilities and their compute-dtype copy, for every head.
  const double attention = 9 * l * d * e + heads * l * l * (2 * e + 8);
  // A layer's MLP: the norm's output, fc1's output and the activation's
  // one temporary, fc2's output.
  const double mlp = 2 * l * d * e + 2 * l * ff * e;
  // One weight decoded at a time when stored as FP8 (or at another dtype).
  const double weight = static_cast<double>(materialized_weight_bytes);
  const double tensors = resident + std::max(attention, mlp) + weight;
  return static_cast<int64_t>(tensors) + activation_allocator_slack_bytes(tensors);
}

}  // namespace diffusiond
