#include "core/models/qwen3_vl/qwen3_vl_model.h"

#include "core/models/text_encoder_activations.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<Qwen3VlModel>> Qwen3VlModel::create(const Qwen3VlConfig& config,
                                                                   std::unique_ptr<WeightStore> weights,
                                                                   std::shared_ptr<const Tokenizer> tokenizer) {
  DIFFUSIOND_RETURN_IF_ERROR(config.validate());
  DIFFUSIOND_RETURN_IF_ERROR(check_weights(config.tower_spec(), *weights));
  return std::unique_ptr<Qwen3VlModel>(new Qwen3VlModel(config, std::move(weights), std::move(tokenizer)));
}

int64_t text_encode_activation_bytes(const Qwen3VlConfig& config, torch::ScalarType dtype, int64_t tokens,
                                     int64_t materialized_weight_bytes) {
  return qwen_tower_activation_bytes(config.tower_spec(), dtype, tokens, 1, materialized_weight_bytes);
}

}  // namespace diffusiond
