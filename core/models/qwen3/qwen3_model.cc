#include "core/models/qwen3/qwen3_model.h"

#include "core/models/qwen3/qwen3_params.h"
#include "core/util/status_macros.h"

namespace diffusiond {

absl::StatusOr<std::unique_ptr<Qwen3Model>> Qwen3Model::create(const Qwen3Config& config,
                                                               std::unique_ptr<WeightStore> weights,
                                                               std::shared_ptr<const Tokenizer> tokenizer) {
  if (absl::Status s = config.validate(); !s.ok()) return s;
  DIFFUSIOND_RETURN_IF_ERROR(check_weights(qwen3_tower_spec(config), *weights));
  return std::unique_ptr<Qwen3Model>(new Qwen3Model(config, std::move(weights), std::move(tokenizer)));
}

Qwen3Model::Qwen3Model(const Qwen3Config& config, std::unique_ptr<WeightStore> weights,
                       std::shared_ptr<const Tokenizer> tokenizer)
    : QwenTextTower(qwen3_tower_spec(config), std::move(weights), std::move(tokenizer)), config_(config) {}

absl::StatusOr<torch::Tensor> Qwen3Model::hidden_states(const torch::Tensor& input_ids,
                                                        const torch::Tensor& attention_mask,
                                                        int64_t layer) const {
  const int64_t states[] = {layer};
  DIFFUSIOND_ASSIGN_OR_RETURN(std::vector<torch::Tensor> hidden,
                              hidden_state_list(input_ids, attention_mask, torch::Tensor(), states));
  return std::move(hidden[0]);
}

}  // namespace diffusiond
