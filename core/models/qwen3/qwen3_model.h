// Qwen3Model: a port of transformers' Qwen3Model forward (the decoder stack
// without the LM head) as a text encoder: the shared Qwen tower
// (core/models/common/qwen_text_tower.h) with per-head q/k RMSNorm, no
// biases and positions 0..L-1; returning one of the hidden states.
//
// Not here: tokenisation (core/text) or which hidden state a pipeline takes
// (its recipe, core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_MODEL_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_MODEL_H_

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/models/common/qwen_text_tower.h"
#include "core/models/qwen3/qwen3_config.h"
#include "core/text/tokenizer.h"

namespace diffusiond {

inline constexpr absl::string_view kQwen3Architecture = "qwen3";
// The hidden state Step returns when the request names none:
// hidden_states[-2], the one Z-Image conditions on.
inline constexpr int64_t kQwen3StepHiddenLayer = -2;

// Immutable after construction; forwards may run concurrently.
class Qwen3Model final : public QwenTextTower {
 public:
  // Checks that `weights` holds exactly the parameter table of `config` with
  // the right shapes. FAILED_PRECONDITION naming the first missing,
  // misshapen or unexpected tensor. `tokenizer` (may be null) serves
  // encode().
  static absl::StatusOr<std::unique_ptr<Qwen3Model>> create(
      const Qwen3Config& config, std::unique_ptr<WeightStore> weights,
      std::shared_ptr<const Tokenizer> tokenizer = nullptr);

  absl::string_view architecture() const override { return kQwen3Architecture; }
  const Qwen3Config& config() const { return config_; }

  // Named inputs: "input_ids" int64 [B, L] (B, L >= 1); "attention_mask"
  // [B, L] bool or integer, nonzero = token (optional: all tokens);
  // "hidden_layer" one integer (optional, default -2: Z-Image's), an index
  // into the num_hidden_layers + 1 hidden states as in Python. Outputs:
  // "hidden_states" [B, L, hidden_size], that hidden state for every
  // position (padding rows included), and "cap_feats_0" … "cap_feats_<B-1>"
  // [L_i, hidden_size], each item's rows where the mask is set — Z-Image's
  // caption features when hidden_layer is -2. INVALID_ARGUMENT naming a
  // missing, unexpected or misshapen input.
  absl::StatusOr<NamedTensors> step(const NamedTensors& inputs) const override;

  // Returns hidden_states[layer] of upstream's output_hidden_states, [B, L,
  // hidden_size] at the compute dtype: [0] the token embeddings, [k] the
  // output of decoder layer k-1 for k < num_hidden_layers, and
  // [num_hidden_layers] the final norm of the last layer's output. `layer`
  // may be negative (from the end); layers after it are not run.
  // `input_ids` int64 [B, L]; `attention_mask` [B, L] (nonzero = token) or
  // undefined. Positions are 0..L-1 for every item. INVALID_ARGUMENT for
  // bad shapes, ids outside the vocabulary or a layer out of range;
  // INTERNAL or RESOURCE_EXHAUSTED if libtorch fails.
  absl::StatusOr<torch::Tensor> hidden_states(const torch::Tensor& input_ids,
                                              const torch::Tensor& attention_mask,
                                              int64_t layer) const;

 private:
  Qwen3Model(const Qwen3Config& config, std::unique_ptr<WeightStore> weights,
             std::shared_ptr<const Tokenizer> tokenizer);

  const Qwen3Config config_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_MODEL_H_
