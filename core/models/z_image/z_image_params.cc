#include "core/models/z_image/z_image_params.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {

void add_block(std::vector<ParamSpec>* out, const std::string& prefix, const ZImageConfig& c,
               bool modulation) {
  const int64_t d = c.dim, hd = c.head_dim(), ff = c.ffn_hidden();
  const ParamKind W = ParamKind::kLayerWeight, N = ParamKind::kNormWeight;
  for (const char* proj : {"to_q", "to_k", "to_v"}) {
    out->push_back({absl::StrCat(prefix, ".attention.", proj, ".weight"), {d, d}, W});
  }
  out->push_back({prefix + ".attention.to_out.0.weight", {d, d}, W});
  if (c.qk_norm) {
    out->push_back({prefix + ".attention.norm_q.weight", {hd}, N});
    out->push_back({prefix + ".attention.norm_k.weight", {hd}, N});
  }
  out->push_back({prefix + ".feed_forward.w1.weight", {ff, d}, W});
  out->push_back({prefix + ".feed_forward.w2.weight", {d, ff}, W});
  out->push_back({prefix + ".feed_forward.w3.weight", {ff, d}, W});
  for (const char* norm : {"attention_norm1", "ffn_norm1", "attention_norm2", "ffn_norm2"}) {
    out->push_back({absl::StrCat(prefix, ".", norm, ".weight"), {d}, N});
  }
  if (modulation) {
    out->push_back({prefix + ".adaLN_modulation.0.weight", {4 * d, c.adaln_dim()}, W});
    out->push_back({prefix + ".adaLN_modulation.0.bias", {4 * d}, ParamKind::kBias});
  }
}

}  // namespace

std::vector<ParamSpec> z_image_parameter_table(const ZImageConfig& c) {
  const int64_t d = c.dim;
  const std::string key = c.patch_key();
  const int64_t out_features = c.patch_features();
  std::vector<ParamSpec> t = {
      {"x_pad_token", {1, d}, ParamKind::kBare},
      {"cap_pad_token", {1, d}, ParamKind::kBare},
      {absl::StrCat("all_x_embedder.", key, ".weight"), {d, c.patch_features()}, ParamKind::kLayerWeight},
      {absl::StrCat("all_x_embedder.", key, ".bias"), {d}, ParamKind::kBias},
      {absl::StrCat("all_final_layer.", key, ".linear.weight"), {out_features, d}, ParamKind::kLayerWeight},
      {absl::StrCat("all_final_layer.", key, ".linear.bias"), {out_features}, ParamKind::kBias},
      {absl::StrCat("all_final_layer.", key, ".adaLN_modulation.1.weight"), {d, c.adaln_dim()}, ParamKind::kLayerWeight},
      {absl::StrCat("all_final_layer.", key, ".adaLN_modulation.1.bias"), {d}, ParamKind::kBias},
      {"t_embedder.mlp.0.weight", {1024, 256}, ParamKind::kLayerWeight},
      {"t_embedder.mlp.0.bias", {1024}, ParamKind::kBias},
      {"t_embedder.mlp.2.weight", {c.adaln_dim(), 1024}, ParamKind::kLayerWeight},
      {"t_embedder.mlp.2.bias", {c.adaln_dim()}, ParamKind::kBias},
      {"cap_embedder.0.weight", {c.cap_feat_dim}, ParamKind::kNormWeight},
      {"cap_embedder.1.weight", {d, c.cap_feat_dim}, ParamKind::kLayerWeight},
      {"cap_embedder.1.bias", {d}, ParamKind::kBias},
  };
  for (int64_t i = 0; i < c.n_refiner_layers; ++i) add_block(&t, absl::StrCat("noise_refiner.", i), c, true);
  for (int64_t i = 0; i < c.n_refiner_layers; ++i) add_block(&t, absl::StrCat("context_refiner.", i), c, false);
  for (int64_t i = 0; i < c.n_layers; ++i) add_block(&t, absl::StrCat("layers.", i), c, true);
  return t;
}

PrecisionDeclaration z_image_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"t_embedder", "cap_embedder"};
  return d;
}

std::optional<std::string> z_image_canonical_name(absl::string_view name) {
  absl::ConsumePrefix(&name, "model.diffusion_model.");
  if (name == "norm_final.weight") return std::nullopt;
  absl::string_view rest = name;
  if (absl::ConsumePrefix(&rest, "x_embedder.")) return absl::StrCat("all_x_embedder.2-1.", rest);
  if (absl::ConsumePrefix(&rest, "final_layer.")) return absl::StrCat("all_final_layer.2-1.", rest);
  static constexpr std::pair<absl::string_view, absl::string_view> kAttention[] = {
      {".attention.out.weight", ".attention.to_out.0.weight"},
      {".attention.q_norm.weight", ".attention.norm_q.weight"},
      {".attention.k_norm.weight", ".attention.norm_k.weight"},
  };
  for (const auto& [from, to] : kAttention) {
    if (absl::EndsWith(name, from)) {
      return absl::StrCat(name.substr(0, name.size() - from.size()), to);
    }
  }
  return std::string(name);
}

std::vector<FusedSplit> z_image_fused_splits(const ZImageConfig& c,
                                             const std::vector<std::string>& loaded) {
  std::vector<FusedSplit> splits;
  for (const std::string& name : loaded) {
    absl::string_view block = name;
    if (!absl::ConsumeSuffix(&block, ".attention.qkv.weight")) continue;
    FusedSplit s;
    s.fused = name;
    for (const char* proj : {"to_q", "to_k", "to_v"}) {
      s.parts.emplace_back(absl::StrCat(block, ".attention.", proj, ".weight"), c.dim);
    }
    splits.push_back(std::move(s));
  }
  return splits;
}

}  // namespace diffusiond
