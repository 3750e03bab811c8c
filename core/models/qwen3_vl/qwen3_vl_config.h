// Qwen3VlConfig: the language tower's hyper-parameters of a transformers
// Qwen3-VL checkpoint (Qwen3VLModel or Qwen3VLForConditionalGeneration,
// Krea 2's text encoder), read from its config.json's text_config.
//
// Not here: the vision tower (never read: Krea 2 encodes text only) or the
// forward (qwen3_vl_model.h).
#ifndef DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_CONFIG_H_
#define DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_CONFIG_H_

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/models/common/qwen_text_tower.h"

namespace diffusiond {

// Defaults are transformers' Qwen3VLTextConfig defaults, used for absent
// fields.
struct Qwen3VlConfig {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // null in the file: num_attention_heads
  // Explicit (heads * head_dim need not equal hidden_size); never derived
  // from hidden_size / heads.
  int64_t head_dim = 128;
  int64_t max_position_embeddings = 128000;
  double rope_theta = 5000000.0;
  double rms_norm_eps = 1e-6;
  bool attention_bias = false;  // biases on q/k/v/o_proj
  // rope_scaling.mrope_section, interleaved (upstream interleaves whatever
  // mrope_interleaved says). Required.
  std::array<int64_t, 3> mrope_section = {0, 0, 0};

  // The shared tower's shape: q/k norms, attention_bias on all four
  // projections, interleaved M-RoPE, positions counting real tokens.
  QwenTowerSpec tower_spec() const;

  // validate_qwen_tower of tower_spec(). INVALID_ARGUMENT naming the field.
  absl::Status validate() const;
};

// Parses a transformers config.json of model_type "qwen3_vl" (architectures,
// if given, Qwen3VLModel or Qwen3VLForConditionalGeneration), the tower's
// fields from text_config. Refuses what the port does not implement (RoPE
// scaling other than M-RoPE, sliding-window layers, activations other than
// silu) and a missing mrope_section. INVALID_ARGUMENT naming the field,
// what it holds and what was expected; `what` (the file) prefixes
// messages.
absl::StatusOr<Qwen3VlConfig> qwen3_vl_config_from_json(const nlohmann::json& root, absl::string_view what);
absl::StatusOr<Qwen3VlConfig> parse_qwen3_vl_config(absl::string_view json, absl::string_view what);

// Returns `config` as the config.json the parser reads: model_type and
// architectures (Qwen3VLModel) at the top, the tower's fields in
// text_config.
nlohmann::json to_json(const Qwen3VlConfig& config);

}  // namespace diffusiond

#endif  // DIFFUSIOND_CORE_MODELS_QWEN3_VL_QWEN3_VL_CONFIG_H_
