#include "core/models/cosmos/cosmos_config.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/models/common/config_fields.h"
#include "core/models/config_limits.h"
#include "core/util/bounded_text.h"
#include "core/util/json.h"
#include "core/util/json_fields.h"
#include "core/util/status_macros.h"

namespace diffusiond {
namespace {

using json = nlohmann::json;

constexpr char kCosmosClassName[] = "CosmosTransformer3DModel";

// Parse order is table order, so the first bad field is the one reported.
constexpr ConfigField<CosmosConfig> kCosmosFields[] = {
    {"in_channels", &CosmosConfig::in_channels},
    {"out_channels", &CosmosConfig::out_channels},
    {"num_attention_heads", &CosmosConfig::num_attention_heads},
    {"attention_head_dim", &CosmosConfig::attention_head_dim},
    {"num_layers", &CosmosConfig::num_layers},
    {"mlp_ratio", &CosmosConfig::mlp_ratio},
    {"text_embed_dim", &CosmosConfig::text_embed_dim},
    {"adaln_lora_dim", &CosmosConfig::adaln_lora_dim},
    {"concat_padding_mask", &CosmosConfig::concat_padding_mask},
};

// Reads a list of 3 numbers of type T into `*out` when present.
template <typename T>
absl::Status cosmos_read_triple(const json& root, const char* field, absl::string_view what, std::array<T, 3>* out) {
  if (!root.contains(field) || root.at(field).is_null()) return absl::OkStatus();
  const json& v = root.at(field);
  const char* expected = std::is_integral_v<T> ? "a list of 3 integers" : "a list of 3 numbers";
  if (!v.is_array() || v.size() != 3) return json_field_error(what, field, v, expected);
  for (int i = 0; i < 3; ++i) {
    if (std::is_integral_v<T> ? !v[i].is_number_integer() : !v[i].is_number()) {
      return json_field_error(what, field, v, expected);
    }
    (*out)[i] = v[i].get<T>();
  }
  return absl::OkStatus();
}

// The fields of other Cosmos models that add weights or inputs this port
// does not have: each must hold the value named, or be absent where
// upstream's default is that value.
absl::Status cosmos_refuse_others(const json& root, absl::string_view what) {
  // Upstream's default is "learnable": a config must say null.
  if (!root.contains("extra_pos_embed_type") || !root.at("extra_pos_embed_type").is_null()) {
    const std::string got = root.contains("extra_pos_embed_type")
                                ? bounded(root.at("extra_pos_embed_type").dump())
                                : std::string("absent (upstream's default \"learnable\")");
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": extra_pos_embed_type is ", got,
                     "; only Cosmos without the learnable positional embedding (null, as Anima) is supported"));
  }
  for (const char* field : {"controlnet_block_every_n", "img_context_dim_in"}) {
    if (root.contains(field) && !root.at(field).is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " is ", bounded(root.at(field).dump()),
                                                     "; only the text-to-image Cosmos transformer (", field,
                                                     " null, as Anima) is supported"));
    }
  }
  if (root.contains("use_crossattn_projection") && root.at("use_crossattn_projection") != json(false)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": use_crossattn_projection is ",
                                                   bounded(root.at("use_crossattn_projection").dump()),
                                                   "; only false (as Anima) is supported"));
  }
  return absl::OkStatus();
}

}  // namespace

std::array<int64_t, 3> CosmosConfig::rope_axes_dims() const {
  const int64_t hw = attention_head_dim / 6 * 2;
  return {attention_head_dim - 2 * hw, hw, hw};
}

absl::Status CosmosConfig::validate() const {
  // Bounds first: they size the parameter table.
  DIFFUSIOND_RETURN_IF_ERROR(
      check_int_fields("Cosmos", {{"in_channels", in_channels, 1, kMaxConfigChannels},
                                  {"out_channels", out_channels, 1, kMaxConfigChannels},
                                  {"num_attention_heads", num_attention_heads, 1, kMaxConfigHeads},
                                  {"attention_head_dim", attention_head_dim, 6, kMaxConfigHeadDim},
                                  {"num_layers", num_layers, 1, kMaxConfigLayers},
                                  {"text_embed_dim", text_embed_dim, 1, kMaxConfigWidth},
                                  {"adaln_lora_dim", adaln_lora_dim, 1, kMaxConfigWidth},
                                  {"max_size[0]", max_size[0], 1, kMaxConfigPositions},
                                  {"max_size[1]", max_size[1], 1, kMaxConfigPositions},
                                  {"max_size[2]", max_size[2], 1, kMaxConfigPositions},
                                  {"patch_size[0]", patch_size[0], 1, kMaxConfigPatch},
                                  {"patch_size[1]", patch_size[1], 1, kMaxConfigPatch},
                                  {"patch_size[2]", patch_size[2], 1, kMaxConfigPatch}}));
  DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Cosmos", "mlp_ratio", mlp_ratio));
  for (int a = 0; a < 3; ++a) {
    DIFFUSIOND_RETURN_IF_ERROR(check_positive_real("Cosmos", a == 0 ? "rope_scale[0]" : a == 1 ? "rope_scale[1]"
                                                                                               : "rope_scale[2]",
                                                   rope_scale[a]));
  }
  if (hidden_size() > kMaxConfigWidth || ffn_dim() > kMaxConfigWidth || ffn_dim() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("Cosmos config: hidden ", hidden_size(), " (num_attention_heads * ",
                                                   "attention_head_dim) and its FFN width ", ffn_dim(),
                                                   " (mlp_ratio ", mlp_ratio, ") must lie in [1, ", kMaxConfigWidth,
                                                   "]"));
  }
  // Each axis' NTK exponent dim / (dim - 2) needs at least 4 channels, and
  // rotate-half pairs need an even count.
  const std::array<int64_t, 3> axes = rope_axes_dims();
  for (int a = 0; a < 3; ++a) {
    if (axes[a] < 4 || axes[a] % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("Cosmos config: attention_head_dim ", attention_head_dim,
                                                     " splits into RoPE axes ", absl::StrJoin(axes, "/"),
                                                     " (t/h/w); each must be even and at least 4"));
    }
  }
  return absl::OkStatus();
}

std::string CosmosConfig::describe() const {
  return absl::StrCat("Cosmos: ", num_layers, " layers, ", num_attention_heads, " heads x ", attention_head_dim,
                      ", mlp_ratio ", mlp_ratio, ", text_embed_dim ", text_embed_dim, ", adaln_lora_dim ",
                      adaln_lora_dim, ", in/out channels ", in_channels, "/", out_channels, ", patch ",
                      absl::StrJoin(patch_size, "x"), ", rope_scale ", absl::StrJoin(rope_scale, "/"),
                      concat_padding_mask ? ", padding-mask channel" : "");
}

absl::StatusOr<CosmosConfig> parse_cosmos_config(absl::string_view text, absl::string_view what) {
  DIFFUSIOND_ASSIGN_OR_RETURN(const json root, parse_json_strict(text, what));
  return cosmos_config_from_json(root, what);
}

absl::StatusOr<CosmosConfig> cosmos_config_from_json(const nlohmann::json& root, absl::string_view what) {
  DIFFUSIOND_RETURN_IF_ERROR(check_config_class(root, what, kCosmosClassName));
  DIFFUSIOND_RETURN_IF_ERROR(cosmos_refuse_others(root, what));
  CosmosConfig c;
  DIFFUSIOND_RETURN_IF_ERROR(read_config_fields(root, what, kCosmosFields, &c));
  DIFFUSIOND_RETURN_IF_ERROR(cosmos_read_triple(root, "max_size", what, &c.max_size));
  DIFFUSIOND_RETURN_IF_ERROR(cosmos_read_triple(root, "patch_size", what, &c.patch_size));
  DIFFUSIOND_RETURN_IF_ERROR(cosmos_read_triple(root, "rope_scale", what, &c.rope_scale));
  if (absl::Status s = c.validate(); !s.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", s.message()));
  return c;
}

nlohmann::json to_json(const CosmosConfig& config) {
  json root = {{"_class_name", kCosmosClassName}};
  write_config_fields(config, kCosmosFields, &root);
  root["max_size"] = config.max_size;
  root["patch_size"] = config.patch_size;
  root["rope_scale"] = config.rope_scale;
  root["extra_pos_embed_type"] = nullptr;
  root["use_crossattn_projection"] = false;
  root["controlnet_block_every_n"] = nullptr;
  root["img_context_dim_in"] = nullptr;
  return root;
}

absl::StatusOr<CosmosConfig> infer_cosmos_config(
    const std::function<std::optional<std::vector<int64_t>>(absl::string_view)>& shape_of,
    const std::vector<std::string>& names, absl::string_view what) {
  const auto need = [&](absl::string_view name) -> absl::StatusOr<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> shape = shape_of(name);
    if (!shape.has_value() || shape->size() != (absl::EndsWith(name, "norm_q.weight") ? 1u : 2u)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": cannot infer the Cosmos config: tensor '", name, "' is missing or misshapen"));
    }
    return *shape;
  };
  for (const std::string& name : names) {
    if (absl::StartsWith(name, "learnable_pos_embed.") || absl::StartsWith(name, "crossattn_proj.") ||
        absl::StartsWith(name, "img_context_proj.")) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": holds '", name,
                                                     "', a Cosmos variant other than Anima's text-to-image DiT"));
    }
  }
  CosmosConfig c;
  c.patch_size = {1, 2, 2};
  c.rope_scale = {1.0, 4.0, 4.0};
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> patch, need("patch_embed.proj.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> head, need("transformer_blocks.0.attn1.norm_q.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> text, need("transformer_blocks.0.attn2.to_k.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> lora, need("transformer_blocks.0.norm1.linear_1.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> ffn, need("transformer_blocks.0.ff.net.0.proj.weight"));
  DIFFUSIOND_ASSIGN_OR_RETURN(const std::vector<int64_t> out, need("proj_out.weight"));
  const int64_t hidden = patch[0];
  c.attention_head_dim = head[0];
  c.num_attention_heads = c.attention_head_dim > 0 ? hidden / c.attention_head_dim : 0;
  if (c.num_attention_heads * c.attention_head_dim != hidden) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the Cosmos width ", hidden,
                                                   " is not a multiple of norm_q's head_dim ", head[0]));
  }
  c.text_embed_dim = text[1];
  c.adaln_lora_dim = lora[0];
  c.mlp_ratio = static_cast<double>(ffn[0]) / static_cast<double>(hidden);
  c.out_channels = out[0] / c.patch_volume();
  // The input features are (in_channels + the mask) x the patch: the mask
  // channel is there when they exceed the output's channels by one.
  const int64_t in_total = patch[1] / c.patch_volume();
  c.concat_padding_mask = in_total == c.out_channels + 1;
  c.in_channels = c.concat_padding_mask ? in_total - 1 : in_total;
  c.num_layers = count_indexed_blocks(names, "transformer_blocks.");
  if (patch[1] % c.patch_volume() != 0 || out[0] % c.patch_volume() != 0 || c.ffn_dim() != ffn[0]) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the Cosmos patch embedding [", absl::StrJoin(patch, ", "),
                                                   "], output [", absl::StrJoin(out, ", "), "] or FFN [",
                                                   absl::StrJoin(ffn, ", "),
                                                   "] do not fit the assumed patch 1x2x2; name a config.json"));
  }
  if (absl::Status s = c.validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": inferred ", s.message()));
  }
  return c;
}

std::string cosmos_assumed_values(const CosmosConfig& c) {
  return absl::StrCat("patch ", absl::StrJoin(c.patch_size, "x"), ", rope_scale ", absl::StrJoin(c.rope_scale, "/"),
                      ", max_size ", absl::StrJoin(c.max_size, "/"), " (Anima's); name a config.json to override");
}

ScheduleOptions cosmos_default_schedule() {
  ScheduleOptions o = flow_match_euler_defaults();
  o.solver = FlowSolver::kEuler;
  o.float64_linspace = true;
  o.dynamic_shift = false;
  o.shift = 3.0;
  return o;
}

}  // namespace diffusiond
