// QwenTextTower: the decoder stack Qwen's text encoders share — Qwen3
// (Z-Image), the language tower of Qwen2.5-VL (Qwen-Image) and of Qwen3-VL
// (Krea 2): token embeddings, per layer RMSNorm, grouped-query attention
// (q/k/v biases or not, per-head q/k RMSNorm or not) with half-split RoPE
// over per-token positions under a causal-plus-padding mask, and a SwiGLU
// MLP; the final norm. Its parameter table and the working memory of one
// encode are here too, so the three architectures differ only in their
// configs, key maps and what they expose.
//
// Not here: configs and checkpoint names (each architecture's folder) or
// which hidden state a pipeline takes (its recipe, core/pipeline/<name>/).
#ifndef DIFFUSIOND_CORE_MODELS_COMMON_QWEN_TEXT_TOWER_H_
#define DIFFUSIOND_CORE_MODELS_COMMON_QWEN_TEXT_TOWER_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/models/common/qwen_attention.h"
#include "core/models/param_table.h"
#include "core/models/text_encoder.h"
#include "core/precision/precision_policy.h"

namespace diffusiond {

// The shape of one tower, as each architecture's config gives it.
struct QwenTowerSpec {
  std::string name;  // for messages: "Qwen3", "Qwen2.5-VL", "Qwen3-VL"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // heads * head_dim need not be hidden_size
  double rope_theta = 0;
  double rms_norm_eps = 0;
  MropeLayout mrope;      // all-zero sections: plain RoPE
  bool qk_norm = false;   // per-head RMSNorm of q and k before RoPE (Qwen3, Qwen3-VL)
  bool qkv_bias = false;  // q/k/v_proj biases (Qwen2.5-VL; Qwen3's attention_bias)
  bool o_bias = false;    // o_proj bias (Qwen3's attention_bias only)
  // How encode() places padded tokens: the VL towers' positions count
  // real tokens only (cumsum(mask) - 1, at least 0, as Krea2Pipeline passes
  // them; padding repeats the last position), Qwen3's are 0..L-1.
  bool positions_count_tokens = false;
};

// Every parameter of the tower, canonical names without a prefix
// ("embed_tokens.weight", "layers.<i>.self_attn.q_proj.weight", …,
// "norm.weight"), in upstream's registration order.
std::vector<ParamSpec> qwen_tower_parameter_table(const QwenTowerSpec& spec);

// Embeddings and every norm stay at compute precision; only the attention
// and MLP projections may take FP8 storage (biases never do).
PrecisionDeclaration qwen_tower_precision_declaration();

// The peak bytes beyond the weights of encoding `tokens` tokens at `dtype`,
// keeping `kept_states` hidden states [tokens, hidden] until the end (1
// for one hidden state; a stack keeps each layer it taps), with a largest
// materialised weight (FP8 decoded, or converted per use) of
// `materialized_weight_bytes`.
int64_t qwen_tower_activation_bytes(const QwenTowerSpec& spec, torch::ScalarType dtype, int64_t tokens,
                                    int64_t kept_states, int64_t materialized_weight_bytes);

// Immutable after construction; forwards may run concurrently.
class QwenTextTower : public TextEncoder {
 public:
  const QwenTowerSpec& tower() const { return spec_; }

  // A placement keeps or streams the decoder layers.
  std::vector<std::string> block_containers() const override { return {"layers"}; }

  // Tokenizes `request` and returns its hidden state, or the stack of
  // request.hidden_layers [L, n, D] (padding masked unless
  // attend_to_padding; positions as spec.positions_count_tokens says); no
  // pooled output.
  absl::StatusOr<EncodedText> encode(const TextEncoding& request) const override;
  // One kept hidden state per token.
  int64_t encode_activation_bytes(int64_t tokens) const override;
  // With a stack's kept states.
  int64_t request_activation_bytes(const TextEncoding& request) const override;

  // Returns hidden_states[i] of upstream's output_hidden_states for each i
  // of `states`, in that order, each [B, L, hidden_size] at the compute
  // dtype: [0] the token embeddings, [k] the output of decoder layer k-1
  // for k < num_hidden_layers, and [num_hidden_layers] the final norm of
  // the last layer's output. Indices may be negative (from the end); no
  // layer after the deepest is run, and the final norm only when it is
  // asked for. `input_ids` integer [B, L]; `attention_mask` [B, L] (nonzero
  // = token) or undefined; `positions` int64 [3, B, L] or [B, L] (the
  // M-RoPE rows), or undefined: 0..L-1 for every item. INVALID_ARGUMENT for
  // bad shapes, ids outside the vocabulary, no index or one out of range;
  // INTERNAL or RESOURCE_EXHAUSTED if libtorch fails; the token's reason
  // when a CancellationScope cancels it between layers.
  absl::StatusOr<std::vector<torch::Tensor>> hidden_state_list(const torch::Tensor& input_ids,
                                                               const torch::Tensor& attention_mask,
                                                               const torch::Tensor& positions,
                                                               absl::Span<const int64_t> states) const;

 protected:
  // The named-tensor Step of the VL towers. Inputs: "input_ids" int64
  // [B, L]; "attention_mask" [B, L] bool or integer, nonzero = token
  // (optional: all tokens); "position_ids" integer [3, B, L] or [B, L]
  // (optional: upstream's get_rope_index for text, cumsum(mask) - 1 with
  // padding at 1, or 0..L-1 without a mask); "hidden_layer" one integer
  // (optional, default -1: after the final norm) or "hidden_layers" a 1-D
  // integer list (a stack). Output "hidden_states": [B, L, hidden_size], or
  // [B, L, n, hidden_size] for a stack of n. INVALID_ARGUMENT naming a
  // missing, unexpected or misshapen input.
  absl::StatusOr<NamedTensors> hidden_states_step(const NamedTensors& inputs) const;

  // Checks that `weights` holds exactly qwen_tower_parameter_table(spec).
  // FAILED_PRECONDITION naming the first missing, misshapen or unexpected
  // tensor.
  static absl::Status check_weights(const QwenTowerSpec& spec, const WeightStore& weights);

  QwenTextTower(QwenTowerSpec spec, std::unique_ptr<WeightStore> weights, std::shared_ptr<const Tokenizer> tokenizer);

 private:
  torch::Tensor decoder_layer(int64_t index, const torch::Tensor& h, const torch::Tensor& allowed,
                              const torch::Tensor& cos, const torch::Tensor& sin) const;
  torch::Tensor projection(const torch::Tensor& x, const std::string& name, bool bias) const;

  const QwenTowerSpec spec_;
};

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_COMMON_QWEN_TEXT_TOWER_H_
