// Qwen3's encode estimate from its config alone (the encode itself is the
// shared tower's).
#include "core/models/qwen3/qwen3_params.h"
#include "core/models/text_encoder_activations.h"

namespace diffusiond {

int64_t text_encode_activation_bytes(const Qwen3Config& c, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes) {
  return qwen_tower_activation_bytes(qwen3_tower_spec(c), dtype, tokens, 1, materialized_weight_bytes);
}

}  // namespace diffusiond
