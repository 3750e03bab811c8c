#include "core/models/flux/flux_params.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace diffusiond {
namespace {

constexpr absl::string_view kShiftScale = "norm_out.linear_shift_scale.";

void add_linear(std::vector<ParamSpec>* t, const std::string& module, int64_t out, int64_t in) {
  t->push_back({module + ".weight", {out, in}, ParamKind::kLayerWeight});
  t->push_back({module + ".bias", {out}, ParamKind::kBias});
}

void add_double_block(std::vector<ParamSpec>* t, const std::string& b, const FluxConfig& c) {
  const int64_t d = c.inner_dim(), hd = c.attention_head_dim, mlp = c.mlp_hidden();
  add_linear(t, b + ".norm1.linear", 6 * d, d);
  add_linear(t, b + ".norm1_context.linear", 6 * d, d);
  for (const char* proj : {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj",
                           "to_out.0", "to_add_out"}) {
    add_linear(t, absl::StrCat(b, ".attn.", proj), d, d);
  }
  for (const char* norm : {"norm_q", "norm_k", "norm_added_q", "norm_added_k"}) {
    t->push_back({absl::StrCat(b, ".attn.", norm, ".weight"), {hd}, ParamKind::kNormWeight});
  }
  for (const char* ff : {".ff", ".ff_context"}) {
    add_linear(t, absl::StrCat(b, ff, ".net.0.proj"), mlp, d);
    add_linear(t, absl::StrCat(b, ff, ".net.2"), d, mlp);
  }
}

void add_single_block(std::vector<ParamSpec>* t, const std::string& b, const FluxConfig& c) {
  const int64_t d = c.inner_dim(), hd = c.attention_head_dim, mlp = c.mlp_hidden();
  add_linear(t, b + ".norm.linear", 3 * d, d);
  for (const char* proj : {"to_q", "to_k", "to_v"}) add_linear(t, absl::StrCat(b, ".attn.", proj), d, d);
  for (const char* norm : {"norm_q", "norm_k"}) {
    t->push_back({absl::StrCat(b, ".attn.", norm, ".weight"), {hd}, ParamKind::kNormWeight});
  }
  add_linear(t, b + ".proj_mlp", mlp, d);
  add_linear(t, b + ".proj_out", d, d + mlp);
}

// Original -> diffusers, by prefix inside a block (the parameter suffix,
// "weight" or "bias", follows unchanged), then exact names for the norms.
struct Rename {
  absl::string_view from, to;
};
constexpr Rename kTopLevel[] = {
    {"img_in.", "x_embedder."},
    {"txt_in.", "context_embedder."},
    {"time_in.in_layer.", "time_text_embed.timestep_embedder.linear_1."},
    {"time_in.out_layer.", "time_text_embed.timestep_embedder.linear_2."},
    {"vector_in.in_layer.", "time_text_embed.text_embedder.linear_1."},
    {"vector_in.out_layer.", "time_text_embed.text_embedder.linear_2."},
    {"guidance_in.in_layer.", "time_text_embed.guidance_embedder.linear_1."},
    {"guidance_in.out_layer.", "time_text_embed.guidance_embedder.linear_2."},
    {"final_layer.linear.", "proj_out."},
    {"final_layer.adaLN_modulation.1.", kShiftScale},
};
constexpr Rename kDouble[] = {
    {"img_mod.lin.", "norm1.linear."},
    {"txt_mod.lin.", "norm1_context.linear."},
    {"img_attn.qkv.", "attn.qkv."},
    {"txt_attn.qkv.", "attn.add_qkv_proj."},
    {"img_attn.proj.", "attn.to_out.0."},
    {"txt_attn.proj.", "attn.to_add_out."},
    {"img_mlp.0.", "ff.net.0.proj."},
    {"img_mlp.2.", "ff.net.2."},
    {"txt_mlp.0.", "ff_context.net.0.proj."},
    {"txt_mlp.2.", "ff_context.net.2."},
    {"img_attn.norm.query_norm.scale", "attn.norm_q.weight"},
    {"img_attn.norm.key_norm.scale", "attn.norm_k.weight"},
    {"txt_attn.norm.query_norm.scale", "attn.norm_added_q.weight"},
    {"txt_attn.norm.key_norm.scale", "attn.norm_added_k.weight"},
};
constexpr Rename kSingle[] = {
    {"modulation.lin.", "norm.linear."},
    {"linear1.", "linear1."},
    {"linear2.", "proj_out."},
    {"norm.query_norm.scale", "attn.norm_q.weight"},
    {"norm.key_norm.scale", "attn.norm_k.weight"},
};

// Applies the first matching rename to `rest`; nothing if none matches.
template <size_t N>
std::optional<std::string> rename_in(absl::string_view rest, const Rename (&table)[N]) {
  for (const Rename& r : table) {
    absl::string_view tail = rest;
    if (absl::ConsumePrefix(&tail, r.from)) return absl::StrCat(r.to, tail);
  }
  return std::nullopt;
}

// "double_blocks.7.img_mod.lin.weight" -> "transformer_blocks.7." + mapped rest.
std::optional<std::string> rename_block(absl::string_view name, absl::string_view from,
                                        absl::string_view to, bool single) {
  if (!absl::ConsumePrefix(&name, from)) return std::nullopt;
  const size_t dot = name.find('.');
  if (dot == absl::string_view::npos) return std::nullopt;
  const absl::string_view index = name.substr(0, dot), rest = name.substr(dot + 1);
  std::optional<std::string> mapped = single ? rename_in(rest, kSingle) : rename_in(rest, kDouble);
  if (!mapped.has_value()) return std::nullopt;
  return absl::StrCat(to, index, ".", *mapped);
}

}  // namespace

std::vector<ParamSpec> flux_parameter_table(const FluxConfig& c) {
  const int64_t d = c.inner_dim();
  std::vector<ParamSpec> t;
  add_linear(&t, "time_text_embed.timestep_embedder.linear_1", d, 256);
  add_linear(&t, "time_text_embed.timestep_embedder.linear_2", d, d);
  if (c.guidance_embeds) {
    add_linear(&t, "time_text_embed.guidance_embedder.linear_1", d, 256);
    add_linear(&t, "time_text_embed.guidance_embedder.linear_2", d, d);
  }
  add_linear(&t, "time_text_embed.text_embedder.linear_1", d, c.pooled_projection_dim);
  add_linear(&t, "time_text_embed.text_embedder.linear_2", d, d);
  add_linear(&t, "context_embedder", d, c.joint_attention_dim);
  add_linear(&t, "x_embedder", d, c.in_channels);
  for (int64_t i = 0; i < c.num_layers; ++i) add_double_block(&t, absl::StrCat("transformer_blocks.", i), c);
  for (int64_t i = 0; i < c.num_single_layers; ++i) {
    add_single_block(&t, absl::StrCat("single_transformer_blocks.", i), c);
  }
  add_linear(&t, "norm_out.linear", 2 * d, d);
  add_linear(&t, "proj_out", c.out_features(), d);
  return t;
}

PrecisionDeclaration flux_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"pos_embed", "norm"};
  return d;
}

std::optional<std::string> flux_canonical_name(absl::string_view name) {
  absl::ConsumePrefix(&name, "model.diffusion_model.");
  if (std::optional<std::string> top = rename_in(name, kTopLevel)) return top;
  if (auto d = rename_block(name, "double_blocks.", "transformer_blocks.", false)) return d;
  if (auto s = rename_block(name, "single_blocks.", "single_transformer_blocks.", true)) return s;
  return std::string(name);
}

std::vector<FusedSplit> flux_fused_splits(const FluxConfig& c, const std::vector<std::string>& loaded) {
  const int64_t d = c.inner_dim();
  std::vector<FusedSplit> splits;
  for (const std::string& name : loaded) {
    absl::string_view block = name, param;
    for (absl::string_view suffix : {"weight", "bias"}) {
      if (absl::EndsWith(block, absl::StrCat(".", suffix))) {
        param = suffix;
        block.remove_suffix(suffix.size() + 1);
        break;
      }
    }
    if (param.empty()) continue;
    const auto part = [&](absl::string_view module, int64_t rows) {
      return std::make_pair(absl::StrCat(module, ".", param), rows);
    };
    FusedSplit s;
    s.fused = name;
    absl::string_view prefix = block;
    if (absl::ConsumeSuffix(&prefix, ".attn.qkv")) {
      const std::string a = absl::StrCat(prefix, ".attn.");
      s.parts = {part(a + "to_q", d), part(a + "to_k", d), part(a + "to_v", d)};
    } else if (absl::ConsumeSuffix(&prefix, ".attn.add_qkv_proj")) {
      const std::string a = absl::StrCat(prefix, ".attn.");
      s.parts = {part(a + "add_q_proj", d), part(a + "add_k_proj", d), part(a + "add_v_proj", d)};
    } else if (absl::StartsWith(block, "single_transformer_blocks.") &&
               absl::ConsumeSuffix(&prefix, ".linear1")) {
      const std::string a = absl::StrCat(prefix, ".attn.");
      s.parts = {part(a + "to_q", d), part(a + "to_k", d), part(a + "to_v", d),
                 part(absl::StrCat(prefix, ".proj_mlp"), c.mlp_hidden())};
    } else {
      continue;
    }
    splits.push_back(std::move(s));
  }
  return splits;
}

std::vector<std::pair<std::string, std::string>> flux_swapped_halves(
    const std::vector<std::string>& loaded) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : loaded) {
    absl::string_view param = name;
    if (absl::ConsumePrefix(&param, kShiftScale)) out.emplace_back(name, absl::StrCat("norm_out.linear.", param));
  }
  return out;
}

}  // namespace diffusiond
