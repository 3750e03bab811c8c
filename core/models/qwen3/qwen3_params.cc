#include "core/models/qwen3/qwen3_params.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {

std::vector<ParamSpec> qwen3_parameter_table(const Qwen3Config& c) {
  const int64_t d = c.hidden_size, hd = c.head_dim, ff = c.intermediate_size;
  const int64_t q_rows = c.num_attention_heads * hd, kv_rows = c.num_key_value_heads * hd;
  const ParamKind W = ParamKind::kLayerWeight, N = ParamKind::kNormWeight;
  std::vector<ParamSpec> t = {{"embed_tokens.weight", {c.vocab_size, d}, W}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("layers.", i, ".");
    t.push_back({p + "self_attn.q_proj.weight", {q_rows, d}, W});
    t.push_back({p + "self_attn.k_proj.weight", {kv_rows, d}, W});
    t.push_back({p + "self_attn.v_proj.weight", {kv_rows, d}, W});
    t.push_back({p + "self_attn.o_proj.weight", {d, q_rows}, W});
    t.push_back({p + "self_attn.q_norm.weight", {hd}, N});
    t.push_back({p + "self_attn.k_norm.weight", {hd}, N});
    t.push_back({p + "mlp.gate_proj.weight", {ff, d}, W});
    t.push_back({p + "mlp.up_proj.weight", {ff, d}, W});
    t.push_back({p + "mlp.down_proj.weight", {d, ff}, W});
    t.push_back({p + "input_layernorm.weight", {d}, N});
    t.push_back({p + "post_attention_layernorm.weight", {d}, N});
  }
  t.push_back({"norm.weight", {d}, N});
  return t;
}

PrecisionDeclaration qwen3_precision_declaration() {
  PrecisionDeclaration d;
  // Norms are covered by the default "norm" pattern (and are norm weights).
  // The token table is an Embedding (rank 2), so it needs naming here.
  d.skip_patterns = {"^embed_tokens$"};
  return d;
}

std::optional<std::string> qwen3_canonical_name(absl::string_view name) {
  if (name == "lm_head.weight") return std::nullopt;
  absl::ConsumePrefix(&name, "model.");
  return std::string(name);
}

}  // namespace diffusiond
