#include "core/models/qwen3/qwen3_params.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {

QwenTowerSpec qwen3_tower_spec(const Qwen3Config& c) {
  QwenTowerSpec s;
  s.name = "Qwen3";
  s.vocab_size = c.vocab_size;
  s.hidden_size = c.hidden_size;
  s.intermediate_size = c.intermediate_size;
  s.num_hidden_layers = c.num_hidden_layers;
  s.num_attention_heads = c.num_attention_heads;
  s.num_key_value_heads = c.num_key_value_heads;
  s.head_dim = c.head_dim;
  s.rope_theta = c.rope_theta;
  s.rms_norm_eps = c.rms_norm_eps;
  s.qk_norm = true;
  return s;
}

std::vector<ParamSpec> qwen3_parameter_table(const Qwen3Config& c) { return qwen_tower_parameter_table(qwen3_tower_spec(c)); }

PrecisionDeclaration qwen3_precision_declaration() { return qwen_tower_precision_declaration(); }

std::optional<std::string> qwen3_canonical_name(absl::string_view name) {
  if (name == "lm_head.weight") return std::nullopt;
  absl::ConsumePrefix(&name, "model.");
  return std::string(name);
}

}  // namespace diffusiond
