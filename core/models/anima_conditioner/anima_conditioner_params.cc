#include "core/models/anima_conditioner/anima_conditioner_params.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/precision/param_kind.h"

namespace diffusiond {
namespace {

void anima_add_norm(std::vector<ParamSpec>* out, const std::string& name, const AnimaConditionerConfig& c) {
  out->push_back({name + ".weight", {c.model_dim}, ParamKind::kNormWeight});
  if (c.use_layer_norm) out->push_back({name + ".bias", {c.model_dim}, ParamKind::kBias});
}

void anima_add_attention(std::vector<ParamSpec>* out, const std::string& prefix, const AnimaConditionerConfig& c,
                         int64_t context_dim) {
  const int64_t d = c.model_dim;
  out->push_back({prefix + ".q_proj.weight", {d, d}, ParamKind::kLayerWeight});
  out->push_back({prefix + ".q_norm.weight", {c.head_dim()}, ParamKind::kNormWeight});
  out->push_back({prefix + ".k_proj.weight", {d, context_dim}, ParamKind::kLayerWeight});
  out->push_back({prefix + ".k_norm.weight", {c.head_dim()}, ParamKind::kNormWeight});
  out->push_back({prefix + ".v_proj.weight", {d, context_dim}, ParamKind::kLayerWeight});
  out->push_back({prefix + ".o_proj.weight", {d, d}, ParamKind::kLayerWeight});
}

}  // namespace

std::vector<ParamSpec> anima_conditioner_parameter_table(const AnimaConditionerConfig& c) {
  const int64_t d = c.model_dim;
  std::vector<ParamSpec> t = {{"embed.weight", {c.target_vocab_size, c.target_dim}, ParamKind::kLayerWeight}};
  if (c.model_dim != c.target_dim) {
    t.push_back({"in_proj.weight", {d, c.target_dim}, ParamKind::kLayerWeight});
    t.push_back({"in_proj.bias", {d}, ParamKind::kBias});
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = absl::StrCat("blocks.", i);
    if (c.use_self_attention) {
      anima_add_norm(&t, b + ".norm_self_attn", c);
      anima_add_attention(&t, b + ".self_attn", c, d);
    }
    anima_add_norm(&t, b + ".norm_cross_attn", c);
    anima_add_attention(&t, b + ".cross_attn", c, c.source_dim);
    anima_add_norm(&t, b + ".norm_mlp", c);
    t.push_back({b + ".mlp.0.weight", {c.mlp_dim(), d}, ParamKind::kLayerWeight});
    t.push_back({b + ".mlp.0.bias", {c.mlp_dim()}, ParamKind::kBias});
    t.push_back({b + ".mlp.2.weight", {d, c.mlp_dim()}, ParamKind::kLayerWeight});
    t.push_back({b + ".mlp.2.bias", {d}, ParamKind::kBias});
  }
  t.push_back({"out_proj.weight", {c.target_dim, d}, ParamKind::kLayerWeight});
  t.push_back({"out_proj.bias", {c.target_dim}, ParamKind::kBias});
  t.push_back({"norm.weight", {c.target_dim}, ParamKind::kNormWeight});
  return t;
}

std::optional<std::string> anima_conditioner_canonical_name(absl::string_view name) {
  for (const absl::string_view prefix : {"net.llm_adapter.", "model.diffusion_model.llm_adapter.", "llm_adapter."}) {
    if (absl::ConsumePrefix(&name, prefix)) return std::string(name);
  }
  if (absl::StartsWith(name, "net.") || absl::StartsWith(name, "model.diffusion_model.")) return std::nullopt;
  return std::string(name);
}

}  // namespace diffusiond
