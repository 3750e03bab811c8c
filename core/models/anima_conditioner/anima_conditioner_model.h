// AnimaConditionerModel: a port of diffusers' AnimaTextConditioner forward,
// Anima's LLM adapter, in the text-conditioner role: T5 token ids embedded
// as queries (in_proj when widths differ), blocks of pre-norm
// self-attention over the T5 tokens, cross-attention to the Qwen3 hidden
// states and a GELU MLP, q/k per-head RMSNorm and rotate-half RoPE over
// each sequence's own positions, then RMSNorm(out_proj), the T5 padding
// rows zeroed, and zero rows up to min_sequence_length. A query row whose
// every key is masked (an empty prompt's Qwen states) attends to nothing
// and gives 0, as torch >= 2.5's SDPA does, not NaN.
//
// Not here: the config (anima_conditioner_config.h), the names
// (anima_conditioner_params.h), the role (core/models/text_conditioner.h).
#ifndef DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/anima_conditioner/anima_conditioner_config.h"
#include "core/models/common/attention.h"
#include "core/models/text_conditioner.h"

namespace diffusiond {

inline constexpr absl::string_view kAnimaConditionerArchitecture = "anima-conditioner";

// What AnimaPipeline tokenizes a prompt to at most, in both vocabularies
// (max_length 512, truncation).
inline constexpr int64_t kAnimaMaxSequenceLength = 512;

// Intermediates of the first batch item, for parity checks.
struct AnimaConditionerIntermediates {
  torch::Tensor embed;                              // [Lt, target_dim] embed(ids), before in_proj
  torch::Tensor rope_target_cos, rope_target_sin;   // [Lt, head_dim] float32
  torch::Tensor rope_source_cos, rope_source_sin;   // [Lq, head_dim] float32
  torch::Tensor block0_self_attn, block0_cross_attn;  // [Lt, model_dim] (o_proj outputs)
  std::vector<torch::Tensor> blocks;                // each block's output [Lt, model_dim]
  torch::Tensor out_proj;                           // [Lt, target_dim]
  torch::Tensor norm;                               // [Lt, target_dim] before the mask and the padding
};

// The peak bytes one call over `source_rows` Qwen rows and `target_tokens`
// T5 tokens holds at `dtype`, beside the weights, where the largest weight
// a forward decodes or converts has `materialized_weight_bytes`.
int64_t anima_conditioner_activation_bytes(const AnimaConditionerConfig& config, torch::ScalarType dtype,
                                           int64_t source_rows, int64_t target_tokens,
                                           int64_t materialized_weight_bytes);

// Immutable after construction; calls may run concurrently.
class AnimaConditionerModel final : public TextConditioner {
 public:
  // Checks that `weights` holds exactly the parameter table of `config`.
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor. `tokenizer` (T5's, may be null) reads the prompts.
  static absl::StatusOr<std::unique_ptr<AnimaConditionerModel>> create(const AnimaConditionerConfig& config,
                                                                       std::unique_ptr<WeightStore> weights,
                                                                       std::shared_ptr<const Tokenizer> tokenizer);

  absl::string_view architecture() const override { return kAnimaConditionerArchitecture; }
  const AnimaConditionerConfig& config() const { return config_; }

  // Named inputs, upstream's forward arguments (docs/api.md):
  // "source_hidden_states" [B, Lq, source_dim], "target_input_ids" integer
  // [B, Lt], optionally "source_attention_mask" [B, Lq] and
  // "target_attention_mask" [B, Lt]. Output "out" [B, max(Lt,
  // min_sequence_length), target_dim].
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;
  ActivationEstimate step_activations(const NamedTensors& inputs, bool device_is_cpu) const override;
  std::vector<std::string> block_containers() const override { return {"blocks"}; }

  // The prompt tokenized by T5 (its </s> appended, at most max_tokens, else
  // 512), over the given Qwen rows (none: one masked zero row, as the
  // pipeline feeds an empty prompt).
  absl::StatusOr<ConditionedText> condition(const ConditionerRequest& request) const override;
  int64_t condition_activation_bytes(int64_t source_rows, int64_t target_tokens) const override;

  // One forward, upstream's call convention. Masks (bool or integer, 1 =
  // token) may be undefined: every key attended. Inputs of any float dtype
  // go to the compute dtype; returns [B, max(Lt, min_sequence_length),
  // target_dim] at it. INVALID_ARGUMENT for inconsistent inputs or ids
  // outside the vocabulary. `debug` receives the first item's
  // intermediates.
  absl::StatusOr<torch::Tensor> forward(const torch::Tensor& source_hidden_states,
                                        const torch::Tensor& target_input_ids,
                                        const torch::Tensor& target_attention_mask = {},
                                        const torch::Tensor& source_attention_mask = {},
                                        AnimaConditionerIntermediates* debug = nullptr) const;

 private:
  AnimaConditionerModel(const AnimaConditionerConfig& config, std::unique_ptr<WeightStore> weights,
                        std::shared_ptr<const Tokenizer> tokenizer)
      : TextConditioner(std::move(weights), std::move(tokenizer)), config_(config) {}

  absl::Status check_inputs(const torch::Tensor& source, const torch::Tensor& ids, const torch::Tensor& target_mask,
                            const torch::Tensor& source_mask) const;
  torch::Tensor run(const torch::Tensor& source, const torch::Tensor& ids, const torch::Tensor& target_mask,
                    const torch::Tensor& source_mask, AnimaConditionerIntermediates* debug) const;
  torch::Tensor norm(const std::string& prefix, const torch::Tensor& x) const;
  // Attention of `h` [B, Lt, model_dim] to `context` [B, L, D_c]: the
  // projections, per-head RMSNorm, RoPE, masked attention (a row with no
  // key gives 0), o_proj.
  torch::Tensor attention_block(const std::string& prefix, const torch::Tensor& h, const torch::Tensor& context,
                                const torch::Tensor& key_mask, const torch::Tensor& q_cos, const torch::Tensor& q_sin,
                                const torch::Tensor& k_cos, const torch::Tensor& k_sin) const;

  const AnimaConditionerConfig config_;
  const AttentionOptions attention_options_{};
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_ANIMA_CONDITIONER_ANIMA_CONDITIONER_MODEL_H_
