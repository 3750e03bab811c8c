#include "core/models/cosmos/cosmos_params.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/precision/param_kind.h"

namespace diffusiond {
namespace {

void cosmos_add_weight(std::vector<ParamSpec>* out, const std::string& name, int64_t rows, int64_t cols) {
  out->push_back({name + ".weight", {rows, cols}, ParamKind::kLayerWeight});
}

// An AdaLN-LoRA modulation: hidden -> lora -> chunks x hidden, no bias.
void cosmos_add_modulation(std::vector<ParamSpec>* out, const std::string& prefix, const CosmosConfig& c,
                           int64_t chunks) {
  cosmos_add_weight(out, prefix + ".linear_1", c.adaln_lora_dim, c.hidden_size());
  cosmos_add_weight(out, prefix + ".linear_2", chunks * c.hidden_size(), c.adaln_lora_dim);
}

void cosmos_add_attention(std::vector<ParamSpec>* out, const std::string& prefix, const CosmosConfig& c,
                          int64_t context_dim) {
  const int64_t d = c.hidden_size();
  out->push_back({prefix + ".norm_q.weight", {c.attention_head_dim}, ParamKind::kNormWeight});
  out->push_back({prefix + ".norm_k.weight", {c.attention_head_dim}, ParamKind::kNormWeight});
  cosmos_add_weight(out, prefix + ".to_q", d, d);
  cosmos_add_weight(out, prefix + ".to_k", d, context_dim);
  cosmos_add_weight(out, prefix + ".to_v", d, context_dim);
  cosmos_add_weight(out, prefix + ".to_out.0", d, d);
}

// Original top-level names by prefix, in the order they are tried.
constexpr std::pair<absl::string_view, absl::string_view> kCosmosTopLevel[] = {
    {"x_embedder.proj.1.", "patch_embed.proj."},
    {"t_embedder.1.", "time_embed.t_embedder."},
    {"t_embedding_norm.", "time_embed.norm."},
    {"final_layer.adaln_modulation.1.", "norm_out.linear_1."},
    {"final_layer.adaln_modulation.2.", "norm_out.linear_2."},
    {"final_layer.linear.", "proj_out."},
};

// Within "blocks.<i>.": original -> diffusers (Cosmos 2.0's renames).
constexpr std::pair<absl::string_view, absl::string_view> kCosmosBlock[] = {
    {"adaln_modulation_self_attn.1.", "norm1.linear_1."},
    {"adaln_modulation_self_attn.2.", "norm1.linear_2."},
    {"adaln_modulation_cross_attn.1.", "norm2.linear_1."},
    {"adaln_modulation_cross_attn.2.", "norm2.linear_2."},
    {"adaln_modulation_mlp.1.", "norm3.linear_1."},
    {"adaln_modulation_mlp.2.", "norm3.linear_2."},
    {"mlp.layer1.", "ff.net.0.proj."},
    {"mlp.layer2.", "ff.net.2."},
};

// Within an original attention ("self_attn." / "cross_attn."): the
// projection or norm -> diffusers'.
constexpr std::pair<absl::string_view, absl::string_view> kCosmosAttention[] = {
    {"q_proj.", "to_q."},   {"k_proj.", "to_k."},   {"v_proj.", "to_v."},
    {"output_proj.", "to_out.0."}, {"q_norm.", "norm_q."}, {"k_norm.", "norm_k."},
};

std::optional<std::string> cosmos_block_name(absl::string_view index, absl::string_view inner) {
  for (const auto& [from, to] : kCosmosBlock) {
    absl::string_view tail = inner;
    if (absl::ConsumePrefix(&tail, from)) return absl::StrCat("transformer_blocks.", index, ".", to, tail);
  }
  for (const auto& [attn, renamed] : {std::pair<absl::string_view, absl::string_view>{"self_attn.", "attn1."},
                                      std::pair<absl::string_view, absl::string_view>{"cross_attn.", "attn2."}}) {
    absl::string_view rest = inner;
    if (!absl::ConsumePrefix(&rest, attn)) continue;
    for (const auto& [from, to] : kCosmosAttention) {
      absl::string_view tail = rest;
      if (absl::ConsumePrefix(&tail, from)) return absl::StrCat("transformer_blocks.", index, ".", renamed, to, tail);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<ParamSpec> cosmos_parameter_table(const CosmosConfig& c) {
  const int64_t d = c.hidden_size();
  std::vector<ParamSpec> t;
  cosmos_add_weight(&t, "patch_embed.proj", d, c.patch_features());
  cosmos_add_weight(&t, "time_embed.t_embedder.linear_1", d, d);
  cosmos_add_weight(&t, "time_embed.t_embedder.linear_2", 3 * d, d);
  t.push_back({"time_embed.norm.weight", {d}, ParamKind::kNormWeight});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = absl::StrCat("transformer_blocks.", i);
    cosmos_add_modulation(&t, b + ".norm1", c, 3);
    cosmos_add_attention(&t, b + ".attn1", c, d);
    cosmos_add_modulation(&t, b + ".norm2", c, 3);
    cosmos_add_attention(&t, b + ".attn2", c, c.text_embed_dim);
    cosmos_add_modulation(&t, b + ".norm3", c, 3);
    cosmos_add_weight(&t, b + ".ff.net.0.proj", c.ffn_dim(), d);
    cosmos_add_weight(&t, b + ".ff.net.2", d, c.ffn_dim());
  }
  cosmos_add_modulation(&t, "norm_out", c, 2);
  cosmos_add_weight(&t, "proj_out", c.out_features(), d);
  return t;
}

PrecisionDeclaration cosmos_precision_declaration() {
  PrecisionDeclaration d;
  d.skip_patterns = {"patch_embed", "final_layer", "norm", "t_embedder"};
  d.keep_in_fp32_modules = {"learnable_pos_embed"};
  return d;
}

std::optional<std::string> cosmos_canonical_name(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "net.")) absl::ConsumePrefix(&name, "model.diffusion_model.");
  // Anima's LLM adapter is the text conditioner's; the rest is what
  // upstream's conversion removes (training counters, RoPE buffers).
  if (absl::StartsWith(name, "llm_adapter.") || absl::StartsWith(name, "accum_") ||
      absl::StartsWith(name, "pos_embedder.") || absl::EndsWith(name, "._extra_state")) {
    return std::nullopt;
  }
  for (const auto& [from, to] : kCosmosTopLevel) {
    absl::string_view rest = name;
    if (absl::ConsumePrefix(&rest, from)) return absl::StrCat(to, rest);
  }
  absl::string_view rest = name;
  if (absl::ConsumePrefix(&rest, "blocks.")) {
    const size_t dot = rest.find('.');
    if (dot != absl::string_view::npos) {
      if (std::optional<std::string> renamed = cosmos_block_name(rest.substr(0, dot), rest.substr(dot + 1))) {
        return renamed;
      }
    }
  }
  return std::string(name);
}

}  // namespace diffusiond
