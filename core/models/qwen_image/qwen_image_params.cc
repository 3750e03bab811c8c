#include "core/models/qwen_image/qwen_image_params.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {


void add_qwen_linear(std::vector<ParamSpec>* t, const std::string& module, int64_t out, int64_t in) {
  t->push_back({module + ".weight", {out, in}, ParamKind::kLayerWeight});
  t->push_back({module + ".bias", {out}, ParamKind::kBias});
}

void add_qwen_block(std::vector<ParamSpec>* t, const std::string& b, const QwenImageConfig& c) {
  const int64_t d = c.inner_dim(), hd = c.attention_head_dim, mlp = c.mlp_hidden();
  // In upstream's named_parameters order: img_mod, attn, img_mlp, txt_mod, txt_mlp.
  add_qwen_linear(t, b + ".img_mod.1", 6 * d, d);
  for (const char* proj : {"to_q", "to_k", "to_v"}) add_qwen_linear(t, absl::StrCat(b, ".attn.", proj), d, d);
  for (const char* norm : {"norm_q", "norm_k"}) {
    t->push_back({absl::StrCat(b, ".attn.", norm, ".weight"), {hd}, ParamKind::kNormWeight});
  }
  for (const char* proj : {"add_k_proj", "add_v_proj", "add_q_proj"}) {
    add_qwen_linear(t, absl::StrCat(b, ".attn.", proj), d, d);
  }
  for (const char* norm : {"norm_added_q", "norm_added_k"}) {
    t->push_back({absl::StrCat(b, ".attn.", norm, ".weight"), {hd}, ParamKind::kNormWeight});
  }
  add_qwen_linear(t, b + ".attn.to_out.0", d, d);
  add_qwen_linear(t, b + ".attn.to_add_out", d, d);
  add_qwen_linear(t, b + ".img_mlp.net.0.proj", mlp, d);
  add_qwen_linear(t, b + ".img_mlp.net.2", d, mlp);
  add_qwen_linear(t, b + ".txt_mod.1", 6 * d, d);
  add_qwen_linear(t, b + ".txt_mlp.net.0.proj", mlp, d);
  add_qwen_linear(t, b + ".txt_mlp.net.2", d, mlp);
}

}  // namespace

std::vector<ParamSpec> qwen_image_parameter_table(const QwenImageConfig& c) {
  const int64_t d = c.inner_dim();
  std::vector<ParamSpec> t;
  add_qwen_linear(&t, "time_text_embed.timestep_embedder.linear_1", d, kQwenTimeChannels);
  add_qwen_linear(&t, "time_text_embed.timestep_embedder.linear_2", d, d);
  t.push_back({"txt_norm.weight", {c.joint_attention_dim}, ParamKind::kNormWeight});
  add_qwen_linear(&t, "img_in", d, c.in_channels);
  add_qwen_linear(&t, "txt_in", d, c.joint_attention_dim);
  for (int64_t i = 0; i < c.num_layers; ++i) add_qwen_block(&t, absl::StrCat("transformer_blocks.", i), c);
  add_qwen_linear(&t, "norm_out.linear", 2 * d, d);
  add_qwen_linear(&t, "proj_out", c.out_features(), d);
  return t;
}

PrecisionDeclaration qwen_image_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"pos_embed", "norm"};
  return d;
}

std::optional<std::string> qwen_image_canonical_name(absl::string_view name) {
  absl::ConsumePrefix(&name, "model.diffusion_model.");
  return std::string(name);
}

}  // namespace diffusiond
