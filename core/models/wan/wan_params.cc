#include "core/models/wan/wan_params.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/precision/param_kind.h"

namespace diffusiond {
namespace {

void wan_add_linear(std::vector<ParamSpec>* out, const std::string& prefix, int64_t out_features, int64_t in_features) {
  out->push_back({prefix + ".weight", {out_features, in_features}, ParamKind::kLayerWeight});
  out->push_back({prefix + ".bias", {out_features}, ParamKind::kBias});
}

void wan_add_attention(std::vector<ParamSpec>* out, const std::string& prefix, const WanConfig& c) {
  const int64_t d = c.inner_dim();
  for (const char* proj : {"to_q", "to_k", "to_v", "to_out.0"}) wan_add_linear(out, prefix + "." + proj, d, d);
  if (c.qk_norm) {
    out->push_back({prefix + ".norm_q.weight", {d}, ParamKind::kNormWeight});
    out->push_back({prefix + ".norm_k.weight", {d}, ParamKind::kNormWeight});
  }
}

// Original single-file names by prefix, in the order they are tried.
constexpr std::pair<absl::string_view, absl::string_view> kWanTopLevel[] = {
    {"head.modulation", "scale_shift_table"},
    {"head.head.", "proj_out."},
    {"time_embedding.0.", "condition_embedder.time_embedder.linear_1."},
    {"time_embedding.2.", "condition_embedder.time_embedder.linear_2."},
    {"time_projection.1.", "condition_embedder.time_proj."},
    {"text_embedding.0.", "condition_embedder.text_embedder.linear_1."},
    {"text_embedding.2.", "condition_embedder.text_embedder.linear_2."},
};

// Within "blocks.<i>.": original -> diffusers.
constexpr std::pair<absl::string_view, absl::string_view> kWanBlock[] = {
    {"modulation", "scale_shift_table"},
    {"self_attn.q.", "attn1.to_q."},
    {"self_attn.k.", "attn1.to_k."},
    {"self_attn.v.", "attn1.to_v."},
    {"self_attn.o.", "attn1.to_out.0."},
    {"self_attn.norm_q.", "attn1.norm_q."},
    {"self_attn.norm_k.", "attn1.norm_k."},
    {"cross_attn.q.", "attn2.to_q."},
    {"cross_attn.k.", "attn2.to_k."},
    {"cross_attn.v.", "attn2.to_v."},
    {"cross_attn.o.", "attn2.to_out.0."},
    {"cross_attn.norm_q.", "attn2.norm_q."},
    {"cross_attn.norm_k.", "attn2.norm_k."},
    // The original norm2 (pre-FFN) has no parameters, nor has diffusers'
    // norm3: the affine norm before cross-attention is the only one stored.
    {"norm3.", "norm2."},
    {"ffn.0.", "ffn.net.0.proj."},
    {"ffn.2.", "ffn.net.2."},
};

}  // namespace

std::vector<ParamSpec> wan_parameter_table(const WanConfig& c) {
  const int64_t d = c.inner_dim();
  std::vector<ParamSpec> t = {
      {"patch_embedding.weight",
       {d, c.in_channels, c.patch_size[0], c.patch_size[1], c.patch_size[2]},
       ParamKind::kLayerWeight},
      {"patch_embedding.bias", {d}, ParamKind::kBias},
  };
  wan_add_linear(&t, "condition_embedder.time_embedder.linear_1", d, c.freq_dim);
  wan_add_linear(&t, "condition_embedder.time_embedder.linear_2", d, d);
  wan_add_linear(&t, "condition_embedder.time_proj", 6 * d, d);
  wan_add_linear(&t, "condition_embedder.text_embedder.linear_1", d, c.text_dim);
  wan_add_linear(&t, "condition_embedder.text_embedder.linear_2", d, d);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = absl::StrCat("blocks.", i);
    wan_add_attention(&t, b + ".attn1", c);
    if (c.cross_attn_norm) {
      t.push_back({b + ".norm2.weight", {d}, ParamKind::kNormWeight});
      t.push_back({b + ".norm2.bias", {d}, ParamKind::kBias});
    }
    wan_add_attention(&t, b + ".attn2", c);
    wan_add_linear(&t, b + ".ffn.net.0.proj", c.ffn_dim, d);
    wan_add_linear(&t, b + ".ffn.net.2", d, c.ffn_dim);
    t.push_back({b + ".scale_shift_table", {1, 6, d}, ParamKind::kBare});
  }
  wan_add_linear(&t, "proj_out", c.out_features(), d);
  t.push_back({"scale_shift_table", {1, 2, d}, ParamKind::kBare});
  return t;
}

PrecisionDeclaration wan_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"patch_embedding", "condition_embedder", "norm"};
  d.keep_in_fp32_modules = {"time_embedder", "scale_shift_table", "norm1", "norm2", "norm3"};
  return d;
}

std::optional<std::string> wan_canonical_name(absl::string_view name) {
  absl::ConsumePrefix(&name, "model.diffusion_model.");
  for (const auto& [from, to] : kWanTopLevel) {
    absl::string_view rest = name;
    if (absl::ConsumePrefix(&rest, from)) return absl::StrCat(to, rest);
  }
  absl::string_view rest = name;
  if (absl::ConsumePrefix(&rest, "blocks.")) {
    const size_t dot = rest.find('.');
    if (dot != absl::string_view::npos) {
      const absl::string_view index = rest.substr(0, dot);
      absl::string_view inner = rest.substr(dot + 1);
      for (const auto& [from, to] : kWanBlock) {
        absl::string_view tail = inner;
        if (absl::ConsumePrefix(&tail, from)) return absl::StrCat("blocks.", index, ".", to, tail);
      }
    }
  }
  return std::string(name);
}

}  // namespace diffusiond
