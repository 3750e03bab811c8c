// Qwen3Config: the hyper-parameters of a transformers Qwen3 checkpoint
// (Qwen3ForCausalLM or Qwen3Model), read from its config.json.
//
// Not here: the parameter table (qwen3_params.h) or the forward
// (qwen3_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_CONFIG_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace diffusiond {

// Defaults are transformers' Qwen3Config defaults, used for absent fields.
struct Qwen3Config {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // null in the file: num_attention_heads
  // Explicit in Qwen3 (heads * head_dim need not equal hidden_size); never
  // derived from hidden_size / heads.
  int64_t head_dim = 128;
  int64_t max_position_embeddings = 32768;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;

  // q heads served by one kv head.
  int64_t kv_group() const { return num_attention_heads / num_key_value_heads; }

  // Checks what the model relies on: positive sizes, an even head_dim, heads
  // a multiple of kv heads, positive theta and eps. INVALID_ARGUMENT naming
  // the field.
  absl::Status validate() const;
};

// Parses a transformers config.json of model_type "qwen3" (architectures, if
// given, Qwen3ForCausalLM or Qwen3Model). Refuses what the port does not
// implement: RoPE scaling (rope_scaling, or rope_parameters of another
// rope_type), attention biases, sliding-window layers and activations other
// than silu. INVALID_ARGUMENT naming the field, what it holds and what was
// expected; `what` (the file) prefixes messages.
absl::StatusOr<Qwen3Config> parse_qwen3_config(absl::string_view json, absl::string_view what);
// The same over a config already parsed (Checkpoint::config(), read once
// per load).
absl::StatusOr<Qwen3Config> qwen3_config_from_json(const nlohmann::json& root, absl::string_view what);
// Returns `config` as the config.json the parser reads: model_type,
// architectures (Qwen3ForCausalLM), every field (rope_theta at the top
// level, as transformers 4.x writes it) and the unsupported features off.
nlohmann::json to_json(const Qwen3Config& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_QWEN3_CONFIG_H_
