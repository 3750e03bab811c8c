#include "core/models/krea2/krea2_params.h"

#include "absl/strings/str_cat.h"

namespace diffusiond {
namespace {

void add_krea2_linear(std::vector<ParamSpec>* t, const std::string& module, int64_t out, int64_t in, bool bias) {
  t->push_back({module + ".weight", {out, in}, ParamKind::kLayerWeight});
  if (bias) t->push_back({module + ".bias", {out}, ParamKind::kBias});
}

void add_krea2_norm(std::vector<ParamSpec>* t, const std::string& module, int64_t dim) {
  t->push_back({module + ".weight", {dim}, ParamKind::kNormWeight});
}

// Krea2Attention (no biases) and Krea2SwiGLU, in registration order:
// to_q, to_k, to_v, to_gate, norm_q, norm_k, to_out.0; gate, up, down.
void add_krea2_attention_and_ff(std::vector<ParamSpec>* t, const std::string& b, int64_t dim, int64_t kv_dim,
                                int64_t head_dim, int64_t ff) {
  add_krea2_linear(t, b + ".attn.to_q", dim, dim, false);
  add_krea2_linear(t, b + ".attn.to_k", kv_dim, dim, false);
  add_krea2_linear(t, b + ".attn.to_v", kv_dim, dim, false);
  add_krea2_linear(t, b + ".attn.to_gate", dim, dim, false);
  add_krea2_norm(t, b + ".attn.norm_q", head_dim);
  add_krea2_norm(t, b + ".attn.norm_k", head_dim);
  add_krea2_linear(t, b + ".attn.to_out.0", dim, dim, false);
  add_krea2_linear(t, b + ".ff.gate", ff, dim, false);
  add_krea2_linear(t, b + ".ff.up", ff, dim, false);
  add_krea2_linear(t, b + ".ff.down", dim, ff, false);
}

void add_krea2_fusion_block(std::vector<ParamSpec>* t, const std::string& b, const Krea2Config& c) {
  add_krea2_norm(t, b + ".norm1", c.text_hidden_dim);
  add_krea2_norm(t, b + ".norm2", c.text_hidden_dim);
  add_krea2_attention_and_ff(t, b, c.text_hidden_dim, c.text_kv_dim(), c.text_head_dim(), c.text_intermediate_size);
}

}  // namespace

std::vector<ParamSpec> krea2_parameter_table(const Krea2Config& c) {
  const int64_t d = c.hidden_size();
  std::vector<ParamSpec> t;
  add_krea2_linear(&t, "img_in", d, c.in_channels, true);
  add_krea2_linear(&t, "time_embed.linear_1", d, c.timestep_embed_dim, true);
  add_krea2_linear(&t, "time_embed.linear_2", d, d, true);
  add_krea2_linear(&t, "time_mod_proj", 6 * d, d, true);
  for (int64_t i = 0; i < c.num_layerwise_text_blocks; ++i) {
    add_krea2_fusion_block(&t, absl::StrCat("text_fusion.layerwise_blocks.", i), c);
  }
  add_krea2_linear(&t, "text_fusion.projector", 1, c.num_text_layers, false);
  for (int64_t i = 0; i < c.num_refiner_text_blocks; ++i) {
    add_krea2_fusion_block(&t, absl::StrCat("text_fusion.refiner_blocks.", i), c);
  }
  add_krea2_norm(&t, "txt_in.norm", c.text_hidden_dim);
  add_krea2_linear(&t, "txt_in.linear_1", d, c.text_hidden_dim, true);
  add_krea2_linear(&t, "txt_in.linear_2", d, d, true);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = absl::StrCat("transformer_blocks.", i);
    t.push_back({b + ".scale_shift_table", {6, d}, ParamKind::kBare});
    add_krea2_norm(&t, b + ".norm1", d);
    add_krea2_norm(&t, b + ".norm2", d);
    add_krea2_attention_and_ff(&t, b, d, c.kv_dim(), c.attention_head_dim, c.intermediate_size);
  }
  t.push_back({"final_layer.scale_shift_table", {2, d}, ParamKind::kBare});
  add_krea2_norm(&t, "final_layer.norm", d);
  add_krea2_linear(&t, "final_layer.linear", c.in_channels, d, true);
  return t;
}

PrecisionDeclaration krea2_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"time_embed", "norm"};
  d.keep_in_fp32_modules = {"norm", "norm1", "norm2", "norm_q", "norm_k"};
  return d;
}

std::optional<std::string> krea2_canonical_name(absl::string_view name) { return std::string(name); }

}  // namespace diffusiond
